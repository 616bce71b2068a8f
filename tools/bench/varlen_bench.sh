#!/usr/bin/env bash
# varlen_bench.sh -- c4train on documents of variable length, part of `make bench` (j):
#   the issue's long-tailed lengths (c4train --synth-corpus: Pareto lengths from 32, 78% under
#   128, a tail to --max-context, 2,048 by default: C4_BENCH_MAXCTX), 4 ranks of one CPU quota
#   each (nproc/4 of a core, a cgroup; needs root, as in train_bench.sh), 8 micro-batches of 1 x
#   max-context positions a step. Each run is c4train --assign rotate: the three policies take
#   the steps in turn (cost, tokens, tokens-sorted, cost, ...), so that the machine's load, which
#   other jobs change from second to second here, hits them alike, and every ratio is taken
#   within one run: each draw of sequences runs three steps in a row, once by each policy, and a
#   policy's gain is the median over the draws of its step's time over the cost-balanced one's on
#   the same sequences. The figures are the medians over C4_BENCH_VARLEN_RUNS runs (default 3) of
#   each run's ratio, its lowest and highest beside it:
#   1. tokens/s with the sequences assigned by the cost model against by token count in the order
#      they come, a data loader's packing (target >= 1.3x), and against the cost model's bound:
#      the tokens/s its own predicted step time allows (target >= 0.95), as predicted and at each
#      step's measured load; beside them, against token counts balanced longest first (a stronger
#      baseline, no target), and the gains the cost model predicts for the same steps;
#   2. the same with rank 2 at half speed (--slow 2:2.0): cost-balanced against the straggler
#      planner alone, which balances token counts by the measured speeds (target >= 1.3x);
#   3. for reference, fixed windows of max-context (c4train without --max-context: windows cut
#      across documents, each position attending to the whole window), the same positions a step.
# Writes BUILD/bench-varlen.json.
# Usage: tools/bench/varlen_bench.sh [BUILD_DIR]
set -uo pipefail
BUILD=${1:-build}
RUNS=${C4_BENCH_VARLEN_RUNS:-3}
MAXCTX=${C4_BENCH_MAXCTX:-2048}
STEPS=${C4_BENCH_VARLEN_STEPS:-45}
BIN="$PWD/$BUILD/bin"
export C4_DEBUG=${C4_DEBUG:-NONE}
[ -x "$BIN/c4train" ] || { echo "varlen bench: build $BUILD first" >&2; exit 2; }
echo
echo "j. variable-length sequences ..."

. "$(dirname "$0")/lib/figures.sh" # verdict, num, confine, release
if [ "$(id -u)" -ne 0 ] || [ -z "$cg_root" ]; then
  echo "varlen bench: needs root and a cgroup cpu controller (one CPU quota per rank); skipped" >&2
  exit 0
fi
share=$(awk -v c="$(nproc)" 'BEGIN {s = c / 4; if (s > 1) s = 1; print s}')
# Each run's ratios from its end line: name=value words.
run_ratios() { # file
  python3 -c 'import json, sys
e = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")][-1]
t, b, lb = e["policy_tokens_per_s"], e["policy_bounds"], e["policy_bounds_at_step_load"]
pr = e["paired_time_ratio"]
def r(a, b):
    return "%.3f" % (a / b) if a and b else "nan"
print("tokens=%s sorted=%s bound=%s loadbound=%s ptokens=%s psorted=%s cost=%.0f err=%.3f errq=%.3f load=%s" % (
    r(pr["tokens"], 1), r(pr["tokens-sorted"], 1), r(t["cost"], b["cost"]),
    r(t["cost"], lb["cost"]), r(b["cost"], b["tokens"]), r(b["cost"], b["tokens-sorted"]), t["cost"],
    e["cost_model"]["fit_error"], e["cost_model"]["fit_error_quadratic"], open("/proc/loadavg").read().split()[0]))' "$1"
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

# median, lowest and highest of the numbers on stdin: "m (lo-hi)"
spread() { tr ' ' '\n' | grep -E '^[0-9.]+$' | sort -g | awk '{v[NR]=$1} END {if (NR) printf "%.3f (%.2f-%.2f)\n", (v[int((NR+1)/2)] + v[int(NR/2)+1]) / 2, v[1], v[NR]; else print "nan"}'; }
corpus="$BUILD/bench-varlen-corpus.jsonl"
"$BIN/c4train" --max-context "$MAXCTX" --synth-corpus "$corpus" --synth-docs 4000 || exit 1
"$BIN/c4train" --max-context "$MAXCTX" --data "$corpus" --data-stats | sed -n 2p
MODEL=(--local-ranks 4 --layers 2 --width 64 --heads 4 --micro-batch 1 --microbatches 8
  --steps "$STEPS" --eval-windows 0 --json)
DOCS=("${MODEL[@]}" --max-context "$MAXCTX" --data "$corpus" --assign rotate)
declare -A got
for run in $(seq "$RUNS"); do
  for slow in none 2:2.0; do
    extra=()
    [ "$slow" != none ] && extra=(--slow "$slow")
    f="$BUILD/bench-varlen-$slow-$run.out"
    confined "$f" "${DOCS[@]}" "${extra[@]}"
    words=$(run_ratios "$f")
    echo "   run $run, slow $slow: $words"
    for w in $words; do got[$slow.${w%%=*}]+="${w#*=} "; done
  done
done
confined "$BUILD/bench-varlen-windows.out" "${MODEL[@]}" --context "$MAXCTX"
windows=$(python3 -c 'import json, sys
e = [json.loads(l) for l in open(sys.argv[1]) if l.startswith("{")][-1]
print("%.0f" % e["tokens_per_s"])' "$BUILD/bench-varlen-windows.out")

g() { spread <<<"${got[$1]}"; }
first() { local v; v=$(g "$1"); echo "${v%% *}"; }
row() { printf '%-72s %-20s %s\n' "$@"; }
printf '\n%-72s %-20s %s\n' "c4train, documents (max $MAXCTX), 4 ranks, --assign rotate, $RUNS runs" "ratio (lo-hi)" "target"
for slow in none 2:2.0; do
  tag=""
  [ "$slow" != none ] && tag="--slow 2:2.0: "
  base="token counts in order (a data loader's packing)"
  [ "$slow" != none ] && base="the straggler planner alone (token counts in order, by speed)"
  row "${tag}cost-balanced vs $base" "$(g $slow.tokens)" ">= 1.3 $(verdict "$(first $slow.tokens)" 1.3)"
  row "  the cost model's predicted gain on the same steps" "$(g $slow.ptokens)" ""
  row "${tag}cost-balanced vs token counts longest first" "$(g $slow.sorted)" ""
  row "  the cost model's predicted gain on the same steps" "$(g $slow.psorted)" ""
  row "${tag}cost-balanced vs the cost model's bound, at each step's measured load" "$(g $slow.loadbound)" ">= 0.95 $(verdict "$(first $slow.loadbound)" 0.95)"
  row "  vs the bound as predicted (the machine's load changes left in)" "$(g $slow.bound)" ""
  row "  the fit's RMS error per rank and step, and the quadratic alone's" "$(g $slow.err) / $(g $slow.errq)" ""
done
row "tokens/s: cost-balanced (healthy; slow rank) and fixed windows of $MAXCTX" "$(spread <<<"${got[none.cost]}" | awk '{printf "%.0f", $1}'); $(spread <<<"${got[2:2.0.cost]}" | awk '{printf "%.0f", $1}'); $windows" ""
printf '{"runs": %s, "max_context": %s, "steps": %s, "gain_tokens": %s, "gain_tokens_sorted": %s, "bound_at_load": %s, "bound": %s, "predicted_gain_tokens": %s, "slow_gain_tokens": %s, "slow_gain_tokens_sorted": %s, "slow_bound_at_load": %s, "slow_bound": %s, "slow_predicted_gain_tokens": %s, "windows": %s}\n' \
  "$RUNS" "$MAXCTX" "$STEPS" "$(num "$(first none.tokens)")" "$(num "$(first none.sorted)")" "$(num "$(first none.loadbound)")" "$(num "$(first none.bound)")" "$(num "$(first none.ptokens)")" \
  "$(num "$(first 2:2.0.tokens)")" "$(num "$(first 2:2.0.sorted)")" "$(num "$(first 2:2.0.loadbound)")" "$(num "$(first 2:2.0.bound)")" "$(num "$(first 2:2.0.ptokens)")" "$(num "$windows")" >"$BUILD/bench-varlen.json"
