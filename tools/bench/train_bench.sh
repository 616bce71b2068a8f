#!/usr/bin/env bash
# train_bench.sh -- c4train's part of `make bench` (g):
#   1. CPU tokens/s of one rank (one OpenBLAS thread), the share of its compute spent in GEMM
#      (the matmul ops), and its in-step GEMM rate against OpenBLAS's own sgemm on the same
#      shapes (c4-sgemm-rate), measured in the same run;
#   2. four ranks over the plugin with --slow 2:2.0: tokens/s with the straggler planner's
#      re-split against without it (target >= 1.5x), and against the planner's bound: the
#      tokens/s its split allows at the measured per-micro-batch pace, communication and
#      optimizer left out (target >= 0.95 of it). Each rank stands for a GPU of its own, so
#      each gets its own CPU quota (nproc/4 of a core, a cgroup; needs root): ranks sharing
#      cores freely would hand a sleeping straggler's CPU to the others, and no split could
#      then gain or lose anything. Both over the last 20 of 60 steps, once the plan has moved
#      the work (the whole runs, and the step it moved at, printed beside).
#   3. the straggler heals: the same four ranks with rank 2 at 3x in steps 21-60 of 100: tokens/s
#      over steps 76-80 (16 to 20 steps after it healed) against steps 11-20 (before the fault,
#      the even split the planner returns to: its bound), target >= 0.97; and how many steps
#      after the heal the split was even again;
#   4. no fault, 1,000 steps of the default model on four confined ranks: steps whose split was
#      not even (target 0); and again with brief bursts of CPU starvation on one rank at a time
#      (its quota cut to a quarter for 0.2 to 2 s every 3 to 6 s): a burst moves no work (target
#      0; trainer/resplit.h's persistence wait);
#   5. a pipeline of 4 stages (--pp 4, 16 layers, 8 micro-batches a step) on the four confined
#      ranks: the share of the stages' time spent waiting against 1F1B's (P - 1) / (m + P - 1)
#      = 3/11 (target: within 10% of it), and against 1F1B's share at the stages' measured
#      times. (P - 1) / (m + P - 1) is the idle share of equal stages; the last stage also runs
#      the head, so 4 layers a stage, where the head is a smaller share of a stage than with 2
#      (8 layers: that stage 10% slower than the rest, and 1F1B itself then idles 0.31, 1.13x
#      of 3/11, docs/benchmarks.md);
#   6. the same four confined ranks as 4 stages of 16 layers (micro-batches of 4 sequences: with 2,
#      a pass's compute was near the ~15 ms a stage-to-stage message takes on 2 shared cores,
#      which the planner's bound counts as nothing) with stage 1 at 2x: tokens/s with
#      the pipeline planner's re-split (layers move off stage 1) against --no-resplit (target
#      >= 1.3x), and against the planner's bound: its plan's predicted step at the measured
#      healthy pace (target >= 0.95); both over the last 20 of 60 steps, once the plan has moved
#      the layers (the whole runs, and the step they moved at, printed beside).
# Medians of $C4_BENCH_RUNS runs (default 3) for 1, 2, 5 and 6, one run each of 3 and 4. Writes
# BUILD/bench-train.json.
# Usage: tools/bench/train_bench.sh [BUILD_DIR]
set -uo pipefail
BUILD=${1:-build}
RUNS=${C4_BENCH_RUNS:-3}
BIN="$PWD/$BUILD/bin"
export C4_DEBUG=${C4_DEBUG:-NONE}
[ -x "$BIN/c4train" ] && [ -x "$BIN/c4-sgemm-rate" ] || { echo "train bench: build $BUILD first" >&2; exit 2; }

. "$(dirname "$0")/lib/figures.sh" # median, ratio, verdict, num, confine, release
field() { sed -n 's/.*"event":"end".*"'"$1"'":\([0-9.]*\).*/\1/p'; } # from the end line

# 1. one rank
ONE=(--layers 4 --width 256 --heads 4 --context 128 --micro-batch 4 --microbatches 4 --steps 8
  --eval-windows 0 --threads 1 --json)
tps=() share=() rate=() ref=()
for _ in $(seq "$RUNS"); do
  out=$("$BIN/c4train" "${ONE[@]}")
  tps+=("$(field tokens_per_s <<<"$out")")
  share+=("$(field gemm_share <<<"$out")")
  rate+=("$(field gemm_gflops <<<"$out")")
  ref+=("$("$BIN/c4-sgemm-rate" 512 256 256 1)")
done
tps1=$(printf '%s\n' "${tps[@]}" | median)
share1=$(printf '%s\n' "${share[@]}" | median)
rate1=$(printf '%s\n' "${rate[@]}" | median)
ref1=$(printf '%s\n' "${ref[@]}" | median)

confined_run() { # c4train args...: the end line
  "$BIN/c4train" "$@" >"$BUILD/bench-train.out" &
  local pid=$!
  confine "$pid" 4 "$share" c4bench-rank
  wait "$pid"
  release c4bench-rank
  grep '"event":"end"' "$BUILD/bench-train.out"
}

# Work moves once the planner's window has a rank's reading and the reading has stood
# --straggler-wait (3 s): parts 2 and 6 compare the job as the plan leaves it, tokens/s over the
# last 20 of 60 steps of either run, and print the whole runs' figures and the step the work
# moved at beside it.
settled() { # KEY: of the last run, the median tokens/s of its last 20 steps, and the first step
  # whose KEY (split, layers) is not the first step's ("never")
  python3 -c '
import json, statistics, sys
steps = [e for e in map(json.loads, open(sys.argv[1])) if e.get("event") == "step"]
k = sys.argv[2]
tps = "%.1f" % statistics.median(e["tokens_per_s"] for e in steps[-20:]) if len(steps) >= 20 else "nan"
print(tps, next((e["step"] for e in steps if e.get(k) != steps[0].get(k)), "never"))' "$BUILD/bench-train.out" "$1"
}
# 2. four ranks, rank 2 at half speed
FOUR=(--local-ranks 4 --layers 2 --width 128 --heads 4 --context 64 --micro-batch 4
  --microbatches 32 --steps 60 --eval-windows 0 --slow 2:2.0 --json)
with=() without=() predicted=() bound=() with_run=() without_run=() moved=()
share=$(awk -v c="$(nproc)" 'BEGIN {s = c / 4; if (s > 1) s = 1; print s}')
if [ "$(id -u)" -eq 0 ] && [ -n "$cg_root" ]; then
  for _ in $(seq "$RUNS"); do
    out=$(confined_run "${FOUR[@]}")
    with_run+=("$(field tokens_per_s <<<"$out")")
    predicted+=("$(field planned_speedup <<<"$out")")
    bound+=("$(field bound_tokens_per_s <<<"$out")")
    read -r tps at < <(settled split)
    with+=("$tps")
    moved+=("$at")
    without_run+=("$(confined_run "${FOUR[@]}" --no-resplit | field tokens_per_s)")
    read -r tps _ < <(settled split)
    without+=("$tps")
  done
else
  echo "train bench: the 4-rank re-split figures need root and a cgroup cpu controller (one CPU quota per rank); skipped" >&2
fi
# 3 and 4: the step lines of one confined run, read with python3's json (tokens/s per step and
# whether the split is the first step's, the even one).
# bursts: while pid runs, every 3 to 6 s one random rank's quota is cut to a quarter for 0.2 to
# 2 s (the machine's other work landing on one rank's core, briefly): the same quota over a
# period four times as long (confine's quota is already the least the kernel takes).
bursts() { # launcher pid, share
  local pid=$1 period quota g
  period=$(confine_period "$2")
  quota=$(awk -v s="$2" -v p="$period" 'BEGIN {printf "%d", s * p}')
  while kill -0 "$pid" 2>/dev/null; do
    sleep "$(awk -v r=$RANDOM 'BEGIN {print 3 + 3 * r / 32768}')"
    g=$cg_root/c4bench-rank$((RANDOM % 4))
    [ -d "$g" ] || continue
    if [ -f "$g/cpu.max" ]; then echo "$quota $((period * 4))" >"$g/cpu.max"; else echo $((period * 4)) >"$g/cpu.cfs_period_us"; fi 2>/dev/null
    sleep "$(awk -v r=$RANDOM 'BEGIN {print 0.2 + 1.8 * r / 32768}')"
    if [ -f "$g/cpu.max" ]; then echo "$quota $period" >"$g/cpu.max"; else echo "$period" >"$g/cpu.cfs_period_us"; fi 2>/dev/null
  done
}
steps_of() { # c4train args...: "step tokens_per_s even(0/1)" per line ($BURSTS=1: with bursts)
  "$BIN/c4train" "$@" >"$BUILD/bench-train.out" &
  local pid=$! bp=""
  confine "$pid" 4 "$share" c4bench-rank
  if [ "${BURSTS:-0}" = 1 ]; then
    bursts "$pid" "$share" &
    bp=$!
  fi
  wait "$pid"
  [ -n "$bp" ] && wait "$bp"
  release c4bench-rank
  python3 -c '
import json, sys
even = None
for line in open(sys.argv[1]):
    e = json.loads(line)
    if e.get("event") == "step":
        even = even or e["split"]  # the first step runs the even split
        print(e["step"], e["tokens_per_s"], int(e["split"] == even))' "$BUILD/bench-train.out"
}
window() { awk -v a="$1" -v b="$2" '$1 >= a && $1 <= b {print $2}' | median; } # first last
heal_before=nan heal_after=nan heal_even=nan nofault_uneven=nan bursts_uneven=nan
if [ "$(id -u)" -eq 0 ] && [ -n "$cg_root" ]; then
  HEAL=(--local-ranks 4 --layers 2 --width 128 --heads 4 --context 64 --micro-batch 4
    --microbatches 32 --steps 100 --eval-windows 0 --slow 2:3.0:21:60 --json)
  steps_of "${HEAL[@]}" >"$BUILD/bench-heal.steps"
  heal_before=$(window 11 20 <"$BUILD/bench-heal.steps")
  heal_after=$(window 76 80 <"$BUILD/bench-heal.steps")
  heal_even=$(awk '$1 > 60 && $3 == 1 {print $1 - 60; exit}' "$BUILD/bench-heal.steps")
  steps_of --local-ranks 4 --steps 1000 --eval-windows 0 --json >"$BUILD/bench-nofault.steps"
  if [ "$(wc -l <"$BUILD/bench-nofault.steps")" -eq 1000 ]; then
    nofault_uneven=$(awk '$3 == 0' "$BUILD/bench-nofault.steps" | wc -l)
  fi
  BURSTS=1 steps_of --local-ranks 4 --steps 1000 --eval-windows 0 --json >"$BUILD/bench-bursts.steps"
  if [ "$(wc -l <"$BUILD/bench-bursts.steps")" -eq 1000 ]; then
    bursts_uneven=$(awk '$3 == 0' "$BUILD/bench-bursts.steps" | wc -l)
  fi
fi
heal_ratio=$(ratio "$heal_after" "$heal_before")

bubbles=() bubble_bounds=()
if [ "$(id -u)" -eq 0 ] && [ -n "$cg_root" ]; then
  PIPE=(--local-ranks 4 --pp 4 --layers 16 --width 128 --heads 4 --context 64 --micro-batch 4
    --microbatches 8 --steps 16 --eval-windows 0 --json)
  for _ in $(seq "$RUNS"); do
    out=$(confined_run "${PIPE[@]}")
    bubbles+=("$(field pipeline_bubble <<<"$out")")
    bubble_bounds+=("$(field pipeline_bubble_bound <<<"$out")")
  done
fi

# 6. a stage at 2x in a 4-stage pipeline: the layer re-split
pipe_with=() pipe_without=() pipe_bound=() pipe_with_run=() pipe_without_run=() pipe_moved=()
if [ "$(id -u)" -eq 0 ] && [ -n "$cg_root" ]; then
  SLOWPIPE=(--local-ranks 4 --pp 4 --layers 16 --width 96 --heads 4 --context 64 --micro-batch 4
    --microbatches 8 --steps 60 --eval-windows 0 --slow 1:2.0 --json)
  for _ in $(seq "$RUNS"); do
    out=$(confined_run "${SLOWPIPE[@]}")
    pipe_with_run+=("$(field tokens_per_s <<<"$out")")
    pipe_bound+=("$(field bound_tokens_per_s <<<"$out")")
    read -r tps at < <(settled layers)
    pipe_with+=("$tps")
    pipe_moved+=("$at")
    pipe_without_run+=("$(confined_run "${SLOWPIPE[@]}" --no-resplit | field tokens_per_s)")
    read -r tps _ < <(settled layers)
    pipe_without+=("$tps")
  done
fi
pw=$(printf '%s\n' "${pipe_with[@]}" | median)
pwo=$(printf '%s\n' "${pipe_without[@]}" | median)
pwr=$(printf '%s\n' "${pipe_with_run[@]}" | median)
pwor=$(printf '%s\n' "${pipe_without_run[@]}" | median)
pb=$(printf '%s\n' "${pipe_bound[@]}" | median)
pmoved=$(printf '%s\n' "${pipe_moved[@]}" | median)
pipe_gain=$(ratio "$pw" "$pwo")
pipe_of_bound=$(ratio "$pw" "$pb")
bubble=$(printf '%s\n' "${bubbles[@]}" | median)
bubble_at=$(printf '%s\n' "${bubble_bounds[@]}" | median)
bubble_ideal=$(awk 'BEGIN {printf "%.4f", 3 / 11}')
bubble_ratio=$(ratio "$bubble" "$bubble_ideal")

tw=$(printf '%s\n' "${with[@]}" | median)
two=$(printf '%s\n' "${without[@]}" | median)
pred=$(printf '%s\n' "${predicted[@]}" | median)
tb=$(printf '%s\n' "${bound[@]}" | median)
twr=$(printf '%s\n' "${with_run[@]}" | median)
twor=$(printf '%s\n' "${without_run[@]}" | median)
tmoved=$(printf '%s\n' "${moved[@]}" | median)
gain=$(ratio "$tw" "$two")
of_bound=$(ratio "$tw" "$tb")

printf '\n%-62s %10s %10s %8s %s\n' "c4train" "c4" "reference" "ratio" "target"
printf '%-62s %10s\n' "CPU tokens/s, 1 rank, 1 thread (4 x 256, context 128)" "$tps1"
printf '%-62s %10s\n' "  share of compute in GEMM (matmul ops)" "$share1"
printf '%-62s %10s %10s %8s %s\n' "  in-step GEMM GFLOP/s vs OpenBLAS sgemm, same shapes" "$rate1" "$ref1" "$(ratio "$rate1" "$ref1")" ""
printf '%-62s %10s %10s %8s %s\n' "4 ranks, --slow 2:2.0: tokens/s re-split vs even" "$tw" "$two" "$gain" ">= 1.5 $(verdict "$gain" 1.5)"
printf '%-62s %10s %10s %8s %s\n' "  re-split tokens/s vs the planner's bound" "$tw" "$tb" "$of_bound" ">= 0.95 $(verdict "$of_bound" 0.95)"
printf '%-62s %10s\n' "  the planner's predicted gain over the even split" "$pred"
printf '%-62s %10s %10s %8s\n' "  the same over the whole 60 steps, re-split vs even" "$twr" "$twor" "$(ratio "$twr" "$twor")"
printf '%-62s %10s\n' "  the step the split moved at" "$tmoved"
printf '%-62s %10s %10s %8s %s\n' "rank 2 at 3x in steps 21-60: tokens/s 16-20 steps after vs before" "$heal_after" "$heal_before" "$heal_ratio" ">= 0.97 $(verdict "$heal_ratio" 0.97)"
printf '%-62s %10s %10s %8s %s\n' "  steps after the heal until the split is even again" "${heal_even:-never}" "" "" "<= 20 $(awk -v n="${heal_even:-x}" 'BEGIN {if (n !~ /^[0-9]+$/) print "MISSED"; else if (n <= 20) print "met"; else print "MISSED"}')"
printf '%-62s %10s %10s %8s %s\n' "no fault, 1,000 steps: steps with an uneven split" "$nofault_uneven" "" "" "0 $(awk -v n="$nofault_uneven" 'BEGIN {if (n !~ /^[0-9]+$/) print "not measured"; else if (n == 0) print "met"; else print "MISSED"}')"
printf '%-62s %10s %10s %8s %s\n' "  the same with one rank's CPU cut to 1/4 for 0.2-2 s every 3-6 s" "$bursts_uneven" "" "" "0 $(awk -v n="$bursts_uneven" 'BEGIN {if (n !~ /^[0-9]+$/) print "not measured"; else if (n == 0) print "met"; else print "MISSED"}')"
printf '%-62s %10s %10s %8s %s\n' "pipeline, 4 x 4 layers, 8 micro-batches: idle share vs 3/11" "$bubble" "$bubble_ideal" "$bubble_ratio" "0.9-1.1 $(awk -v r="$bubble_ratio" 'BEGIN {if (r !~ /^[0-9.]+$/) print "not measured"; else if (r >= 0.9 && r <= 1.1) print "met"; else print "MISSED"}')"
printf '%-62s %10s %10s %8s\n' "  idle share vs 1F1B's at the stages' measured times" "$bubble" "$bubble_at" "$(ratio "$bubble" "$bubble_at")"
printf '%-62s %10s %10s %8s %s\n' "pipeline, stage 1 of 4 at 2x: tokens/s layers re-split vs not" "$pw" "$pwo" "$pipe_gain" ">= 1.3 $(verdict "$pipe_gain" 1.3)"
printf '%-62s %10s %10s %8s %s\n' "  re-split tokens/s vs the pipeline planner's bound" "$pw" "$pb" "$pipe_of_bound" ">= 0.95 $(verdict "$pipe_of_bound" 0.95)"
printf '%-62s %10s %10s %8s\n' "  the same over the whole 60 steps, re-split vs not" "$pwr" "$pwor" "$(ratio "$pwr" "$pwor")"
printf '%-62s %10s\n' "  the step the layers moved at" "$pmoved"
printf '{"runs": %s, "cpu_tokens_per_s": %s, "gemm_share": %s, "gemm_gflops": %s, "sgemm_gflops": %s, "resplit_tokens_per_s": %s, "even_tokens_per_s": %s, "resplit_gain": %s, "predicted_gain": %s, "bound_tokens_per_s": %s, "heal_before_tokens_per_s": %s, "heal_after_tokens_per_s": %s, "heal_ratio": %s, "heal_even_after_steps": %s, "nofault_uneven_steps": %s, "bursts_uneven_steps": %s, "pipeline_bubble": %s, "pipeline_bubble_ideal": %s, "pipeline_bubble_bound": %s, "pipe_resplit_tokens_per_s": %s, "pipe_even_tokens_per_s": %s, "pipe_bound_tokens_per_s": %s, "pipe_resplit_run_tokens_per_s": %s, "pipe_even_run_tokens_per_s": %s, "pipe_moved_at_step": %s, "resplit_run_tokens_per_s": %s, "even_run_tokens_per_s": %s, "resplit_moved_at_step": %s}\n' \
  "$RUNS" "$(num "$tps1")" "$(num "$share1")" "$(num "$rate1")" "$(num "$ref1")" "$(num "$tw")" "$(num "$two")" "$(num "$gain")" "$(num "$pred")" "$(num "$tb")" "$(num "$heal_before")" "$(num "$heal_after")" "$(num "$heal_ratio")" "$(num "${heal_even:-x}")" "$(num "$nofault_uneven")" "$(num "$bursts_uneven")" "$(num "$bubble")" "$(num "$bubble_ideal")" "$(num "$bubble_at")" "$(num "$pw")" "$(num "$pwo")" "$(num "$pb")" "$(num "$pwr")" "$(num "$pwor")" "$(num "$pmoved")" "$(num "$twr")" "$(num "$twor")" "$(num "$tmoved")" >"$BUILD/bench-train.json"
