#!/usr/bin/env bash
# train_healthy.sh -- c4mon stays silent on a healthy job: c4mon serve and a 4-rank c4train over
# loopback through the c4 plugin (each rank its own host), 600 steps, no fault injected; any
# verdict is a false alarm and fails the test. The machine may be loaded by others: the noise
# model must hold anyway. No root needed. Usage: train_healthy.sh [BUILD_DIR].
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
. "$(dirname "$0")/lib/train_job.sh"
command -v jq >/dev/null || { echo "train_healthy: jq is missing (make deps)"; exit 1; }
for f in "$BUILD/bin/c4mon" "$BUILD/bin/c4train" "$BUILD/lib/libnccl-net-c4.so"; do
  [ -e "$f" ] || { echo "train_healthy: $f is missing (build first)"; exit 1; }
done
WORK=$(mktemp -d /tmp/c4-train-healthy-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

train_job "$WORK" 600 || { echo "train_healthy: FAILED: c4train failed:"; tail -5 "$WORK/c4train.log"; exit 1; }
steps=$(jq -s '[.[] | select(.event == "step")] | length' "$WORK/train.jsonl")
# every event but the job's own end (job_end, when its ranks say goodbye) is a verdict
verdicts=$(jq -s '[.[] | select(.kind != "job_end")] | length' "$WORK/events.jsonl")
echo "train_healthy: $steps steps, $verdicts verdict(s)"
[ "$steps" -eq 600 ] || { echo "train_healthy: FAILED: c4train ran $steps steps, not 600"; exit 1; }
if [ "$verdicts" -ne 0 ]; then
  echo "train_healthy: FAILED: false alarms on a healthy job:"
  jq -c 'select(.kind != "job_end") | {kind, where, ranks, hosts, factor, confidence, detail}' \
    "$WORK/events.jsonl"
  exit 1
fi
echo "train_healthy: ok"
