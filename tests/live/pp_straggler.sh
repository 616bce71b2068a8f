#!/usr/bin/env bash
# pp_straggler.sh -- the pipeline's straggler loop, live: c4mon and a c4train of 4 pipeline stages
# (--pp 4, one replica, 8 layers) over loopback through the c4 plugin, each rank a host of its own,
# c4mon's verdicts fed back (--monitor), stage 1 (rank 1) 4x slow in steps 300..400 of 490. Pass:
# while stage 1 is slow, c4mon names rank 1 and no other rank a straggler (the stages that wait
# for it in receives are not named); layers move off stage 1 within 2 s of the verdict (without
# --monitor the trainer's own reading must first stand --straggler-wait: that run fails here);
# rank 1's verdict is recovered; the layers are back to the even split after the heal and stay
# there to the end. c4mon judges a pipeline stage against its own baseline (stages differ by
# design), and with stage 1 slow the median of the four stages' compute is the last stage's,
# heavier by design: 3x reads about 2x over stage 1's usual share, 4x about 2.5x. Begun at step 90,
# against a young baseline (19 samples), the sanitizer build beside two busy loops named 3x in 6 of
# 9 runs and 4x in 13 of 14 (one CI run missed 3x too); begun at step 300 (a full window of 64),
# 3x in 4 of 4 (1.1 to 6.9 s) and 4x in 4 of 4 (2.1 to 2.7 s), the margin this test keeps
# (docs/events.md). The trainer's own wait is 30 s here, not its default 3 s: its own reading moved
# the layers first when c4mon was slow, the stage was then no longer slow, and nobody was named: a
# race the test is not about. The time c4mon took is printed.
# Known and not asserted: after the heal, until the layers move back, the stage that took stage
# 1's layers computes more than the median rank than it did while stage 1 was slow (c4mon judges a
# rank against the median rank), and c4mon may name it for a few seconds (printed as a note).
# No root needed. Usage: pp_straggler.sh [BUILD_DIR] [extra c4train flags].
set -u
SLOW_FROM=300 HEAL=400 STEPS=490
BUILD=${1:-${C4_BUILD_DIR:-build}}
shift
MONITOR=${PP_STRAGGLER_MONITOR:-1} # 0: run without --monitor (to see the test fail)
. "$(dirname "$0")/lib/train_job.sh"
# shellcheck source=tests/lib/c4mon_serve.sh
. "$(dirname "$0")/../lib/c4mon_serve.sh"
command -v jq >/dev/null || { echo "pp_straggler: jq is missing (make deps)"; exit 1; }
for f in "$BUILD/bin/c4mon" "$BUILD/bin/c4train" "$BUILD/lib/libnccl-net-c4.so"; do
  [ -e "$f" ] || { echo "pp_straggler: $f is missing (build first)"; exit 1; }
done
WORK=$(mktemp -d /tmp/c4-pp-straggler-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() {
  echo "pp_straggler: FAILED: $*"
  jq -c '{kind, ranks, t, factor, detail}' "$WORK/events.jsonl"
  jq -c 'select(.event == "step") | [.step, .t_ns, .layers, .pipe_slowdown[1]]' \
    "$WORK/train.jsonl" | awk 'NR % 10 == 1'
  exit 1
}

mon_subscribed "$WORK" || { echo "pp_straggler: skipped: c4mon could not start"; exit 0; }
feed=()
[ "$MONITOR" = 1 ] && feed=(--monitor "127.0.0.1:$MON_SUB")
C4_HOSTNAME=node-%r C4_MONITOR="$MON_RANKS" C4_TOKEN=live C4_JOB=live C4_DEBUG=NONE \
  "$BUILD/bin/c4train" --local-ranks 4 --pp 4 --layers 8 --width 32 --heads 2 --context 32 \
  --steps "$STEPS" --eval-windows 4 --json --slow "1:4.0:$SLOW_FROM:$HEAL" --straggler-wait 30 \
  "${feed[@]}" "$@" \
  >"$WORK/train.jsonl" 2>"$WORK/c4train.log"
rc=$?
mon_stop "$WORK"
[ $rc -eq 0 ] || { echo "pp_straggler: FAILED: c4train failed:"; tail -5 "$WORK/c4train.log"; exit 1; }

# the events while the job ran: those before its end (job_end closes what is open)
jq -s -c '(map(.kind == "job_end") | index(true)) as $stop | .[: ($stop // length)] | .[]' \
  "$WORK/events.jsonl" >"$WORK/running.jsonl"
steps=$(jq -s -c '[.[] | select(.event == "step") | {step, t: .t_ns, l: .layers}]' "$WORK/train.jsonl")
heal=$(jq -n --argjson s "$steps" "[\$s[] | select(.step == $HEAL)] | .[0].t")
named=$(jq -s -c "[.[] | select(.kind == \"straggler\" and .t <= $heal) | .ranks[]] | unique" \
  "$WORK/running.jsonl")
[ "$named" = "[1]" ] || fail "stragglers named while stage 1 was slow: $named, not rank 1 alone"
later=$(jq -s -c "[.[] | select(.kind == \"straggler\" and .t > $heal) | .ranks[]]" \
  "$WORK/running.jsonl")
[ "$later" = "[]" ] || echo "pp_straggler: note: named after the heal (the shares moved back): $later"
flagged=$(jq -s '[.[] | select(.kind == "straggler")] | .[0].t' "$WORK/running.jsonl")
jq -e -s 'any(.[]; .kind == "recovered" and .ranks == [1])' "$WORK/running.jsonl" >/dev/null ||
  fail "rank 1's verdict was never recovered"
moved=$(jq -n -c --argjson s "$steps" '[$s[] | select(.l[1] < 2)] | .[0] // empty')
[ -n "$moved" ] || fail "no layer ever moved off stage 1"
after=$(jq -n --argjson m "$moved" "(\$m.t - $flagged) / 1e9")
slow=$(jq -n --argjson s "$steps" "[\$s[] | select(.step == $SLOW_FROM)] | .[0].t")
printf 'pp_straggler: rank 1 named %.2f s after step %s; layers %s at step %s, %.2f s after the verdict\n' \
  "$(jq -n "($flagged - $slow) / 1e9")" "$SLOW_FROM" "$(jq -c .l <<<"$moved")" "$(jq .step <<<"$moved")" "$after"
jq -e -n "$after <= 2" >/dev/null || fail "layers moved $after s after the verdict, not within 2 s"
back=$(jq -n --argjson s "$steps" "[\$s[] | select(.step > $HEAL and .l == [2,2,2,2])] | .[0].step // 0")
last=$(jq -n -c --argjson s "$steps" '$s[-1].l')
[ "$back" -gt 0 ] && [ "$last" = "[2,2,2,2]" ] ||
  fail "layers not back to even after the heal (first even step after $HEAL: $back, last: $last)"
printf 'pp_straggler: back to the even split at step %s (heal at %s)\n' "$back" "$HEAL"
echo "pp_straggler: ok"
