#!/usr/bin/env bash
# layout_bench.sh -- `c4train --layout auto`, part of `make bench` (k): on 4 local ranks of the
# default model (2 layers: pipelines of 1 or 2 stages; a global batch of 64 sequences: micro-batch
# sizes 1 to 32), C4_BENCH_LAYOUT_RUNS runs (default 3) of C4_BENCH_LAYOUT_STEPS steps (default
# 1,000) with --layout auto, and between them the exhaustive sweep: every candidate layout
# trained for C4_BENCH_SWEEP_STEPS steps (default 100), forwards, then backwards, ... (one pass
# fewer than the runs, at least two), each layout's figure the median of its passes. Prints the
# sweep's table; for each run the layout auto chose, its tokens/s in the sweep against the
# sweep's best (target >= 0.95) and the probing's share of the run's wall time (target <= 0.10);
# then the median and the worst of both over the runs. The ranks share the machine's cores
# unconfined (a probe job's ranks are its own launcher's children, which the cgroup confinement
# of the other parts cannot follow), in the auto runs and in the sweep alike. Writes
# BUILD/bench-layout.json.
# Usage: tools/bench/layout_bench.sh [BUILD_DIR]
set -uo pipefail
BUILD=${1:-build}
STEPS=${C4_BENCH_LAYOUT_STEPS:-1000}
SWEEP=${C4_BENCH_SWEEP_STEPS:-100}
RUNS=${C4_BENCH_LAYOUT_RUNS:-3}
BIN="$PWD/$BUILD/bin"
export C4_DEBUG=${C4_DEBUG:-NONE}
[ -x "$BIN/c4train" ] || { echo "layout bench: build $BUILD first" >&2; exit 2; }
echo
echo "k. --layout auto against an exhaustive sweep ..."
. "$(dirname "$0")/lib/figures.sh" # median_mean, verdict, num
MODEL=(--local-ranks 4 --layers 2 --width 64 --heads 4 --context 64 --micro-batch 4
  --microbatches 16 --eval-windows 0)
declare -a chose share
declare -A sweep
rows=()
auto_run() { # run number
  local out="$BUILD/bench-layout-auto-$1.out" start=$SECONDS
  "$BIN/c4train" "${MODEL[@]}" --steps "$STEPS" --layout auto >"$out" || return 1
  local wall=$((SECONDS - start)) pp mb probe_s
  read -r pp mb probe_s < <(sed -n 's/^layout auto: --pp \([0-9]*\) --micro-batch \([0-9]*\) .*probing took \([0-9.]*\) s.*/\1 \2 \3/p' "$out")
  chose[$1]="$pp $mb"
  share[$1]=$(awk -v p="$probe_s" -v t="$wall" 'BEGIN {if (t > 0 && p ~ /^[0-9.]+$/) printf "%.3f", p / t; else print "nan"}')
  echo "   auto run $1: --pp $pp --micro-batch $mb, probing $probe_s s of $wall s ($(grep -c '^layout auto: round' "$out") rounds); load $(cut -d' ' -f1 /proc/loadavg)"
  [ ${#rows[@]} -gt 0 ] || mapfile -t rows < <(awk '/^ *pp +dp/ {on = 1; next} on && NF >= 7 && $1 ~ /^[0-9]+$/ {print $1, $2, $3, $4}' "$out")
}
sweep_pass() { # 1 forwards, 0 backwards
  local order=("${rows[@]}")
  [ "$1" = 0 ] && mapfile -t order < <(printf '%s\n' "${rows[@]}" | tac)
  for row in "${order[@]}"; do
    read -r pp dp mb mbs <<<"$row"
    sweep[$pp.$mb]+="$("$BIN/c4train" "${MODEL[@]}" --steps "$SWEEP" --pp "$pp" --micro-batch "$mb" \
      --microbatches "$mbs" --json | python3 -c 'import json, sys
for line in sys.stdin:
    e = json.loads(line)
    if e.get("event") == "end":
        print("%.0f" % e["tokens_per_s"])') "
  done
}
passes=$((RUNS - 1 > 2 ? RUNS - 1 : 2))
pass=0
for run in $(seq "$RUNS"); do
  auto_run "$run" || { echo "layout bench: --layout auto failed" >&2; exit 1; }
  if [ "$run" -lt "$RUNS" ] || [ "$pass" -lt "$passes" ]; then
    sweep_pass $((pass % 2 == 0)) && pass=$((pass + 1))
  fi
done
while [ "$pass" -lt "$passes" ]; do sweep_pass $((pass % 2 == 0)) && pass=$((pass + 1)); done
best=0 best_pp="" best_mb=""
declare -A tps
printf '%4s %4s %6s %12s   %s\n' pp dp mb "tokens/s" "(each pass)"
for row in "${rows[@]}"; do
  read -r pp dp mb mbs <<<"$row"
  tps[$pp.$mb]=$(median_mean %.3f <<<"${sweep[$pp.$mb]}")
  printf '%4s %4s %6s %12.0f   %s\n' "$pp" "$dp" "$mb" "${tps[$pp.$mb]}" "${sweep[$pp.$mb]}"
  if awk -v a="${tps[$pp.$mb]}" -v b="$best" 'BEGIN {exit !(a > b)}'; then best=${tps[$pp.$mb]} best_pp=$pp best_mb=$mb; fi
done
quality=()
for run in $(seq "$RUNS"); do
  read -r pp mb <<<"${chose[$run]}"
  q=$(awk -v a="${tps[$pp.$mb]:-nan}" -v b="$best" 'BEGIN {if (a ~ /^[0-9.]+$/ && b > 0) printf "%.3f", a / b; else print "nan"}')
  quality+=("$q")
  printf '   run %d: pick --pp %s --micro-batch %s, %s of the sweep'"'"'s best (--pp %s --micro-batch %s); probing %s of the run\n' "$run" "$pp" "$mb" "$q" "$best_pp" "$best_mb" "${share[$run]}"
done
qmed=$(median_mean %.3f <<<"${quality[*]}")
qmin=$(tr ' ' '\n' <<<"${quality[*]}" | grep -E '^[0-9.]+$' | sort -g | head -1)
smed=$(median_mean %.3f <<<"${share[*]}")
smax=$(tr ' ' '\n' <<<"${share[*]}" | grep -E '^[0-9.]+$' | sort -g | tail -1)
printf '%-62s %10s %10s %s\n' "--layout auto's pick vs the sweep's best, $RUNS runs" "median" "worst" "target"
printf '%-62s %10s %10s %s\n' "  tokens/s in the sweep, pick over best" "$qmed" "${qmin:-nan}" ">= 0.95 $(verdict "$qmed" 0.95) (worst: $(verdict "${qmin:-nan}" 0.95))"
printf '%-62s %10s %10s %s\n' "  probing's share of the $STEPS-step run's wall time" "$smed" "${smax:-nan}" "<= 0.10 $(verdict "$smed" 0.10 le) (worst: $(verdict "${smax:-nan}" 0.10 le))"
printf '{"runs": %s, "steps": %s, "sweep_steps": %s, "sweep_passes": %s, "pick_quality_median": %s, "pick_quality_worst": %s, "probe_share_median": %s, "probe_share_worst": %s, "best_pp": %s, "best_micro_batch": %s, "best_tokens_per_s": %s}\n' \
  "$RUNS" "$STEPS" "$SWEEP" "$passes" "$(num "$qmed")" "$(num "${qmin:-}")" "$(num "$smed")" "$(num "${smax:-}")" "$(num "$best_pp")" "$(num "$best_mb")" "$(num "$best")" >"$BUILD/bench-layout.json"
