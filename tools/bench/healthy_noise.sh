#!/usr/bin/env bash
# healthy_noise.sh -- c4mon's false alarms on healthy live jobs, counted: ROUNDS rounds of three
# fault-free 4-rank c4train jobs over loopback through the plugin (each rank a host of its own),
# c4mon serving each (tests/live/lib/train_job.sh): 600 data-parallel steps of the default
# model; 280 steps of a 4-stage pipeline (--pp 4, 8 layers); 300 steps of a 2-stage pipeline
# (--pp 2, 4 layers of width 64). LOAD busy loops run beside them the whole time (a shared
# machine: with 2 cores and LOAD 4 the load is 7 to 9). Every event but job_end and recovered is
# a false alarm: each is printed with the job, and the total is given per hour of job time.
# Keeps each job's recording (trace.jsonl, replayable with c4mon replay), events and steps in
# OUT. Not part of make bench: a round takes about 1.5 minutes on 2 idle cores, 4 beside 4 busy
# loops. No root needed. BUILD_DIR and OUT are taken from the repository's root.
# Usage: tools/bench/healthy_noise.sh [BUILD_DIR] [ROUNDS (3)] [LOAD (4)] [OUT (a new /tmp dir)]
set -u
BUILD=${1:-build}
ROUNDS=${2:-3}
LOAD=${3:-4}
OUT=${4:-$(mktemp -d /tmp/c4-healthy-noise-XXXXXX)}
cd "$(dirname "$0")/../.." || exit 2
# shellcheck source=tests/live/lib/train_job.sh
. tests/live/lib/train_job.sh
for f in "$BUILD/bin/c4mon" "$BUILD/bin/c4train" "$BUILD/lib/libnccl-net-c4.so"; do
  [ -e "$f" ] || { echo "healthy_noise: $f is missing (build first)" >&2; exit 2; }
done
command -v jq >/dev/null || { echo "healthy_noise: jq is missing (make deps)" >&2; exit 2; }

busy=()
stop_busy() { [ ${#busy[@]} -eq 0 ] || kill "${busy[@]}" 2>/dev/null; }
trap stop_busy EXIT
for _ in $(seq "$LOAD"); do
  bash -c 'while :; do :; done' &
  busy+=($!)
done

alarms=0 seconds=0
# one job: its recording in OUT/NAME, its false alarms counted
job() {
  local name=$1 dir="$OUT/$1" n s
  shift
  mkdir -p "$dir"
  train_job "$dir" "$@" || { echo "healthy_noise: $name: c4train failed:"; tail -3 "$dir/c4train.log"; return; }
  n=$(jq -s '[.[] | select(.kind != "job_end" and .kind != "recovered")] | length' "$dir/events.jsonl")
  s=$(jq -s '[.[] | select(.event == "step")] | (.[-1].t_ns - .[0].t_start_ns) / 1e9' "$dir/train.jsonl")
  if ! [[ "$n" =~ ^[0-9]+$ && "$s" =~ ^[0-9.]+$ ]]; then
    echo "healthy_noise: $name: unreadable events or steps in $dir (not counted)"
    return
  fi
  printf 'healthy_noise: %-8s %5.0f s  load %s  false alarms %d\n' "$name" "$s" \
    "$(cut -d' ' -f1 /proc/loadavg)" "$n"
  jq -c 'select(.kind != "job_end" and .kind != "recovered") | {kind, where, ranks, factor, detail}' \
    "$dir/events.jsonl" | sed 's/^/    /'
  alarms=$((alarms + n))
  seconds=$(jq -n "$seconds + $s")
}

echo "healthy_noise: $ROUNDS round(s), $LOAD busy loop(s) beside, $(nproc) cores; recordings in $OUT"
for r in $(seq "$ROUNDS"); do
  job "dp$r" 600
  job "pp4_$r" 280 --pp 4 --layers 8 --width 32 --heads 2 --context 32
  job "pp2_$r" 300 --pp 2 --layers 4 --width 64 --heads 2 --context 32
done
jq -n -r "\"healthy_noise: \($alarms) false alarm(s) in \($seconds / 60 * 10 | round / 10) min of jobs: \
\(if $seconds > 0 then $alarms * 3600 / $seconds * 10 | round / 10 else 0 end) an hour\""
