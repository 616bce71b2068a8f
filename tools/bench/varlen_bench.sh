#!/usr/bin/env bash
# varlen_bench.sh -- c4train on documents of variable length, part of `make bench` (j):
#   a long-tailed synthetic corpus (c4train --synth-corpus: Pareto lengths from 32, most under 128,
#   a tail to --max-context, 1,024 by default: C4_BENCH_MAXCTX), 4 ranks of one CPU quota each
#   (nproc/4 of a core, a cgroup; needs root, as in train_bench.sh), 16 micro-batches of 1 x
#   max-context positions a step:
#   1. tokens/s with the sequences assigned by the cost model against by token count in the order
#      they come, a data loader's packing (target >= 1.3x), and against the cost model's bound:
#      the tokens/s its own predicted step time allows, communication and optimizer left out
#      (target >= 0.95); beside them, against token counts balanced longest first (a stronger
#      baseline, no target), and the gains the cost model predicts for the same steps;
#   2. the same with rank 2 at half speed (--slow 2:2.0): cost-balanced against the straggler
#      planner alone, which balances token counts by the measured speeds (target >= 1.3x);
#   3. for reference, fixed windows of max-context (c4train without --max-context: windows cut
#      across documents, each position attending to the whole window), the same positions a step.
# The runs alternate (cost, tokens, tokens-sorted, cost, ...) so that the machine's drift hits both alike;
# figures are medians over the steps assigned by a fitted model, of C4_BENCH_VARLEN_RUNS runs
# (default 1). Writes BUILD/bench-varlen.json.
# Usage: tools/bench/varlen_bench.sh [BUILD_DIR]
set -uo pipefail
BUILD=${1:-build}
RUNS=${C4_BENCH_VARLEN_RUNS:-1}
MAXCTX=${C4_BENCH_MAXCTX:-1024}
STEPS=${C4_BENCH_VARLEN_STEPS:-30}
BIN="$PWD/$BUILD/bin"
export C4_DEBUG=${C4_DEBUG:-NONE}
[ -x "$BIN/c4train" ] || { echo "varlen bench: build $BUILD first" >&2; exit 2; }
echo
echo "j. variable-length sequences ..."

. "$(dirname "$0")/lib/figures.sh" # median, ratio, verdict, num, confine, release
if [ "$(id -u)" -ne 0 ] || [ -z "$cg_root" ]; then
  echo "varlen bench: needs root and a cgroup cpu controller (one CPU quota per rank); skipped" >&2
  exit 0
fi
share=$(awk -v c="$(nproc)" 'BEGIN {s = c / 4; if (s > 1) s = 1; print s}')
end_field() { # file, field[, key]: from the end line
  python3 -c 'import json, sys
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("event") == "end":
        v = e.get(sys.argv[2], "nan")
        print(v.get(sys.argv[3], "nan") if len(sys.argv) > 3 else v)' "$@"
}
confined() { # out file, c4train args...
  local out=$1
  shift
  "$BIN/c4train" "$@" >"$out" &
  local pid=$!
  confine "$pid" 4 "$share" c4varlen-rank
  wait "$pid"
  release c4varlen-rank
}

corpus="$BUILD/bench-varlen-corpus.jsonl"
"$BIN/c4train" --max-context "$MAXCTX" --synth-corpus "$corpus" --synth-docs 4000 || exit 1
"$BIN/c4train" --max-context "$MAXCTX" --data "$corpus" --data-stats | sed -n 2p
MODEL=(--local-ranks 4 --layers 2 --width 64 --heads 4 --micro-batch 1 --microbatches 16
  --steps "$STEPS" --eval-windows 0 --json)
DOCS=("${MODEL[@]}" --max-context "$MAXCTX" --data "$corpus")
declare -A tps ctps bound pred
for _ in $(seq "$RUNS"); do
  for slow in none 2:2.0; do
    for policy in cost tokens tokens-sorted; do
      extra=()
      [ "$slow" != none ] && extra=(--slow "$slow")
      f="$BUILD/bench-varlen-$policy-$slow.out"
      confined "$f" "${DOCS[@]}" --assign "$policy" "${extra[@]}"
      tps[$policy.$slow]+="$(end_field "$f" tokens_per_s) "
      ctps[$policy.$slow]+="$(end_field "$f" compute_tokens_per_s) "
      bound[$policy.$slow]+="$(end_field "$f" bound_tokens_per_s) "
      if [ "$policy" = cost ]; then # the cost model's bounds of every policy on the same steps
        for p in tokens tokens-sorted; do
          pred[$p.$slow]+="$(ratio "$(end_field "$f" bound_tokens_per_s)" "$(end_field "$f" policy_bounds "$p")") "
        done
      fi
    done
  done
done
confined "$BUILD/bench-varlen-windows.out" "${MODEL[@]}" --context "$MAXCTX"
windows=$(end_field "$BUILD/bench-varlen-windows.out" tokens_per_s | awk '{printf "%.0f\n", $1}')

m() { median_mean %.0f <<<"${tps[$1]}"; }
mb() { median_mean %.0f <<<"${bound[$1]}"; }
mc() { median_mean %.0f <<<"${ctps[$1]}"; }
c=$(m cost.none) t=$(m tokens.none) ts=$(m tokens-sorted.none) cb=$(mb cost.none)
sc=$(m cost.2:2.0) st=$(m tokens.2:2.0) sts=$(m tokens-sorted.2:2.0) scb=$(mb cost.2:2.0)
p() { median_mean %.3f <<<"${pred[$1]}"; }
cc=$(mc cost.none) scc=$(mc cost.2:2.0)
row() { printf '%-66s %10s %10s %8s %s\n' "$@"; }
printf '\n%-66s %10s %10s %8s %s\n' "c4train, documents (max $MAXCTX), 4 ranks, tokens/s" "c4" "reference" "ratio" "target"
row "cost-balanced vs token counts in order (a data loader's packing)" "$c" "$t" "$(ratio "$c" "$t")" ">= 1.3 $(verdict "$(ratio "$c" "$t")" 1.3)"
row "  the cost model's predicted gain on the same steps" "" "" "$(p tokens.none)" ""
row "cost-balanced vs token counts longest first" "$c" "$ts" "$(ratio "$c" "$ts")" ""
row "  the cost model's predicted gain on the same steps" "" "" "$(p tokens-sorted.none)" ""
row "cost-balanced vs the cost model's bound" "$c" "$cb" "$(ratio "$c" "$cb")" ">= 0.95 $(verdict "$(ratio "$c" "$cb")" 0.95)"
row "  over the slowest rank's compute alone (what the bound models)" "$cc" "$cb" "$(ratio "$cc" "$cb")" ""
row "--slow 2:2.0: cost-balanced vs the straggler planner alone (in order)" "$sc" "$st" "$(ratio "$sc" "$st")" ">= 1.3 $(verdict "$(ratio "$sc" "$st")" 1.3)"
row "  the cost model's predicted gain on the same steps" "" "" "$(p tokens.2:2.0)" ""
row "--slow 2:2.0: cost-balanced vs token counts longest first" "$sc" "$sts" "$(ratio "$sc" "$sts")" ""
row "  the cost model's predicted gain on the same steps" "" "" "$(p tokens-sorted.2:2.0)" ""
row "--slow 2:2.0: cost-balanced vs the cost model's bound" "$sc" "$scb" "$(ratio "$sc" "$scb")" ">= 0.95 $(verdict "$(ratio "$sc" "$scb")" 0.95)"
row "  over the slowest rank's compute alone (what the bound models)" "$scc" "$scb" "$(ratio "$scc" "$scb")" ""
row "fixed windows of $MAXCTX across documents (no --max-context)" "$windows" "" "" ""
printf '{"runs": %s, "max_context": %s, "steps": %s, "cost": %s, "tokens": %s, "tokens_sorted": %s, "cost_bound": %s, "cost_compute": %s, "predicted_gain_tokens": %s, "predicted_gain_tokens_sorted": %s, "slow_cost": %s, "slow_tokens": %s, "slow_tokens_sorted": %s, "slow_cost_bound": %s, "slow_cost_compute": %s, "slow_predicted_gain_tokens": %s, "slow_predicted_gain_tokens_sorted": %s, "windows": %s}\n' \
  "$RUNS" "$MAXCTX" "$STEPS" "$(num "$c")" "$(num "$t")" "$(num "$ts")" "$(num "$cb")" "$(num "$cc")" "$(num "$(p tokens.none)")" "$(num "$(p tokens-sorted.none)")" \
  "$(num "$sc")" "$(num "$st")" "$(num "$sts")" "$(num "$scb")" "$(num "$scc")" "$(num "$(p tokens.2:2.0)")" "$(num "$(p tokens-sorted.2:2.0)")" "$(num "$windows")" >"$BUILD/bench-varlen.json"
