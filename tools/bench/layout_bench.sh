#!/usr/bin/env bash
# layout_bench.sh -- `c4train --layout auto`, part of `make bench` (k): on 4 local ranks of the
# default model (2 layers: pipelines of 1 or 2 stages; a global batch of 64 sequences: micro-batch
# sizes 1 to 32), a run of C4_BENCH_LAYOUT_STEPS steps (default 1,000) with --layout auto, then
# the exhaustive sweep: every candidate layout trained for C4_BENCH_SWEEP_STEPS steps (default
# 100). Prints the sweep's table, the layout auto chose and its tokens/s in the sweep against the
# sweep's best (target >= 0.95), and the probing's share of the whole run (target <= 0.10). The
# ranks share the machine's cores unconfined (a probe job's ranks are its own launcher's
# children, which the cgroup confinement of the other parts cannot follow), in the auto run and
# in the sweep alike. Writes BUILD/bench-layout.json.
# Usage: tools/bench/layout_bench.sh [BUILD_DIR]
set -uo pipefail
BUILD=${1:-build}
STEPS=${C4_BENCH_LAYOUT_STEPS:-1000}
SWEEP=${C4_BENCH_SWEEP_STEPS:-100}
BIN="$PWD/$BUILD/bin"
export C4_DEBUG=${C4_DEBUG:-NONE}
[ -x "$BIN/c4train" ] || { echo "layout bench: build $BUILD first" >&2; exit 2; }
. "$(dirname "$0")/lib/figures.sh" # median, ratio, verdict, num, confine, release
echo
echo "k. --layout auto against an exhaustive sweep ..."
MODEL=(--local-ranks 4 --layers 2 --width 64 --heads 4 --context 64 --micro-batch 4
  --microbatches 16 --eval-windows 0)
start=$SECONDS
"$BIN/c4train" "${MODEL[@]}" --steps "$STEPS" --layout auto >"$BUILD/bench-layout-auto.out" || exit 1
auto_s=$((SECONDS - start))
read -r chose_pp chose_mb probe_s < <(sed -n 's/^layout auto: --pp \([0-9]*\) --micro-batch \([0-9]*\) .*probing took \([0-9.]*\) s.*/\1 \2 \3/p' "$BUILD/bench-layout-auto.out")
# the sweep: every row of the auto run's table, trained for SWEEP steps
best=0 best_pp="" best_mb="" chosen_tps=nan
printf '%4s %4s %6s %12s\n' pp dp mb "tokens/s"
while read -r pp dp mb mbs _; do
  tps=$("$BIN/c4train" "${MODEL[@]}" --steps "$SWEEP" --pp "$pp" --micro-batch "$mb" \
    --microbatches "$mbs" --json | python3 -c 'import json, sys
for line in sys.stdin:
    e = json.loads(line)
    if e.get("event") == "end":
        print("%.0f" % e["tokens_per_s"])')
  printf '%4s %4s %6s %12s\n' "$pp" "$dp" "$mb" "$tps"
  if awk -v a="$tps" -v b="$best" 'BEGIN {exit !(a > b)}'; then best=$tps best_pp=$pp best_mb=$mb; fi
  [ "$pp" = "$chose_pp" ] && [ "$mb" = "$chose_mb" ] && chosen_tps=$tps
done < <(awk '/^ *pp +dp/ {on = 1; next} on && NF == 7 && $1 ~ /^[0-9]+$/ {print $1, $2, $3, $4}' "$BUILD/bench-layout-auto.out")
ratio=$(ratio "$chosen_tps" "$best")
share=$(ratio "$probe_s" "$auto_s")
printf '%-62s %10s %10s %8s %s\n' "--layout auto's pick (pp $chose_pp, mb $chose_mb) vs the sweep's best (pp $best_pp, mb $best_mb)" "$chosen_tps" "$best" "$ratio" ">= 0.95 $(verdict "$ratio" 0.95)"
printf '%-62s %10s %10s %8s %s\n' "probing's share of the $STEPS-step run's wall time" "$probe_s" "$auto_s" "$share" "<= 0.10 $(verdict "$share" 0.10 le)"
printf '{"steps": %s, "sweep_steps": %s, "chosen_pp": %s, "chosen_micro_batch": %s, "chosen_tokens_per_s": %s, "best_pp": %s, "best_micro_batch": %s, "best_tokens_per_s": %s, "probe_s": %s, "run_s": %s}\n' \
  "$STEPS" "$SWEEP" "$(num "$chose_pp")" "$(num "$chose_mb")" "$(num "$chosen_tps")" "$(num "$best_pp")" "$(num "$best_mb")" "$(num "$best")" "$(num "$probe_s")" "$(num "$auto_s")" >"$BUILD/bench-layout.json"
