#!/usr/bin/env bash
# demo.sh -- `make demo`, the README's first command. On this machine, without root: c4mon, and a
# 4-rank c4train whose gradients go over loopback through the c4 NCCL net plugin, each rank
# reporting as a host of its own (C4_HOSTNAME=node-%r) and streaming its timings to c4mon.
# Two faults, keyed to training steps so that they happen on any machine, fast or slow:
#   - steps 41-100: rank 3 computes 3x slower (c4train --slow 3:3.0:41:100, a slow GPU);
#   - steps 131-180: rank 1's sends to rank 2 are limited to 80 Mbit/s inside the plugin
#     (C4_FAULT rate ... from_step=131,to_step=180, docs/fault.md: a bad link).
# c4mon's verdicts print as they come (c4mon events --follow), beside c4train's steps and the
# straggler planner's re-splits (read from c4train's JSON step log with jq); at the end c4train's
# tokens/s before, during and after the slow steps, the delay matrix as a picture (OUT/matrix.png:
# taken at c4mon's first comm_slow verdict in the slow-link steps, else at the end), the run's
# timeline (OUT/timeline.png, c4mon timeline: each rank's tokens/s by step, the faults shaded
# under their names, c4mon's verdicts from raised to cleared), and the score: c4mon's events against the faults injected
# (tools/demo-expected.json, c4mon events --score): each must be found with its class and place,
# and nothing else raised. Exits 1 on a miss or a false alarm. About 60 s.
# Usage: tools/demo.sh [BUILD_DIR]   (OUT: $C4_DEMO_OUT, default demo-out/)
set -eu
BUILD=${1:-build}
BIN="$PWD/$BUILD/bin"
HERE=$(cd "$(dirname "$0")" && pwd)
OUT=${C4_DEMO_OUT:-$PWD/demo-out}
STEPS=220 # the faults end at step 180; the rest shows the recovery
[ -x "$BIN/c4train" ] && [ -x "$BIN/c4mon" ] || { echo "demo: build first (make)" >&2; exit 2; }
command -v jq >/dev/null || { echo "demo: jq not found; run make deps" >&2; exit 2; }
mkdir -p "$OUT"
rm -f "$OUT"/events.jsonl "$OUT"/train.jsonl "$OUT"/matrix.png "$OUT"/score.json "$OUT"/timeline.png
touch "$OUT/events.jsonl" "$OUT/train.jsonl"

free_port() { # a port nothing listens on, below the ephemeral range
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 12000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
  echo 29611
}
MON=$(free_port)
SUB=$(free_port)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

echo "c4 demo: c4mon and a 4-rank c4train over the c4 plugin on $(hostname), no root"
echo "  rank 3 computes 3x slower in steps 41-100; rank 1 -> rank 2 limited to 80 Mbit/s in steps 131-180"
echo
"$BIN/c4mon" serve --listen "127.0.0.1:$MON" --token demo --subscribe "127.0.0.1:$SUB" \
  --events "$OUT/events.jsonl" 2>"$OUT/c4mon.log" &
pids+=($!)
sleep 0.3

# c4train: rank 0 writes a JSON line per step to train.jsonl (shown every 10th, and each step
# that follows a re-split; the steps' times place the score's windows); the plugin streams every
# rank to c4mon and paces rank 1's sends in steps 131-180.
C4_HOSTNAME=node-%r C4_MONITOR="127.0.0.1:$MON" C4_TOKEN=demo C4_JOB=demo C4_DEBUG=NONE \
  C4_FAULT="rate:rank=1,peer=2,mbps=80,from_step=131,to_step=180" \
  "$BIN/c4train" --local-ranks 4 --steps "$STEPS" --slow 3:3.0:41:100 \
  --monitor "127.0.0.1:$SUB" --eval-windows 16 --json-out "$OUT/train.jsonl" \
  >"$OUT/c4train.out" 2>"$OUT/c4train.log" &
train=$!
pids+=($train)
tail --pid="$train" -s 0.2 -n +1 -f "$OUT/train.jsonl" | jq --unbuffered -rn '
  def pad($n): tostring | if length < $n then " " * ($n - length) + . else . end;
  def split: map(tostring) | join(",");
  foreach (inputs | select(.event == "step")) as $s ({}; {prev: .now, now: $s};
    .prev as $p | .now |
    select(.step % 10 == 0 or ($p != null and $p.split != .split)) |
    "step \(.step | pad(4))   c4train: loss \(.loss * 1e4 | round / 1e4 | pad(6))" +
    "  \(.tokens_per_s | round | pad(6)) tok/s  \(.step_ms * 10 | round / 10 | pad(6)) ms" +
    "  split \(.split | split)" +
    (if $p != null and $p.split != .split then "  (re-split from \($p.split | split))" else "" end))' &
pids+=($!)
# c4mon's verdicts as they come, each with the step it came in
"$BIN/c4mon" events "$OUT/events.jsonl" --follow --text --steps "$OUT/train.jsonl" &
pids+=($!)

matrix_taken=0
picture() { # the delay matrix from the running c4mon
  C4_TOKEN=demo "$BIN/c4mon" matrix --connect "127.0.0.1:$MON" --png "$OUT/matrix.png" >/dev/null 2>&1 && matrix_taken=1
}
while kill -0 "$train" 2>/dev/null; do
  # the picture at c4mon's first comm_slow verdict in the slow-link steps (before step 131 has
  # begun the query fails, and no picture is taken)
  if [ "$matrix_taken" = 0 ] && n=$("$BIN/c4mon" events "$OUT/events.jsonl" --kind comm_slow \
    --since step:131 --steps "$OUT/train.jsonl" --count 2>/dev/null) && [ "$n" -gt 0 ]; then
    picture
  fi
  sleep 0.5
done
wait "$train" || { echo "demo: c4train failed; see $OUT/c4train.log" >&2; exit 1; }
sleep 1.5 # the last verdicts (recoveries) reach c4mon's file and the screen
[ "$matrix_taken" = 1 ] || { picture; echo "  (no comm_slow verdict came: the matrix picture is c4mon's state at the end)"; }

echo
jq -r 'select(.event == "end") |
  "c4train: \(.steps) steps, loss \(.loss * 1e4 | round / 1e4), eval loss " +
  "\(.eval_loss_start * 1e4 | round / 1e4) -> \(.eval_loss * 1e4 | round / 1e4), " +
  "\(.tokens_per_s | round) tok/s, split \(.split | map(tostring) | join(","))",
  (.slow_phases // empty | "tokens/s (median of the steps): \(.before | round) before the slow " +
  "steps, \(.during | round) in steps 41-100, \(.after | round) after")' "$OUT/train.jsonl"
"$BIN/c4mon" timeline "$OUT/events.jsonl" --steps "$OUT/train.jsonl" --expect "$HERE/demo-expected.json" \
  --png "$OUT/timeline.png" >/dev/null || echo "  (no timeline: c4mon timeline failed, above)"
echo "pictures: $OUT/timeline.png (the run by step: each rank's tokens/s, the faults, c4mon's verdicts)"
echo "          $OUT/matrix.png (the delay matrix$([ "$matrix_taken" = 1 ] && echo " at c4mon's first comm_slow verdict in the slow-link steps"))"
echo
echo "the faults injected against c4mon's verdicts ($HERE/demo-expected.json):"
"$BIN/c4mon" events "$OUT/events.jsonl" --score "$HERE/demo-expected.json" --steps "$OUT/train.jsonl" \
  >"$OUT/score.json" || true
rc=0
"$BIN/c4mon" events "$OUT/events.jsonl" --score "$HERE/demo-expected.json" --steps "$OUT/train.jsonl" --text || rc=$?
echo "(c4mon's events: $OUT/events.jsonl; the score as JSON: $OUT/score.json)"
exit $rc
