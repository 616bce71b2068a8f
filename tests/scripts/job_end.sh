#!/usr/bin/env bash
# job_end.sh -- a job that ends cleanly is seen to end by a live c4mon: a job_end event names it,
# `c4mon status` shows none of its verdicts and says it ended, and once --forget-ms has passed
# /metrics has no series of it (while c4mon's own series stay). Usage: job_end.sh [BUILD_DIR]
# (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
BIN=$BUILD/bin
# shellcheck source=tests/lib/c4mon_serve.sh
source "$(dirname "$0")/../lib/c4mon_serve.sh"
WORK=$(mktemp -d /tmp/c4-job-end-XXXXXX)
mon=
cleanup() {
  [ -n "$mon" ] && kill "$mon" 2>/dev/null && wait "$mon"
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "job_end: FAILED: $*"
  exit 1
}

c4mon_serve "$BIN/c4mon" /dev/null "$WORK/mon.err" --listen 127.0.0.1:0 --metrics 127.0.0.1:0 \
  --token t --forget-ms 3000 --events "$WORK/events"
started=$?
mon=$MON_PID ranks=$MON_RANKS metrics=$MON_METRICS
[ "$started" = 0 ] || fail "c4mon did not start"

C4_MONITOR=$ranks C4_TOKEN=t C4_JOB=lifejob C4_HEARTBEAT_MS=100 \
  "$BIN/c4perf" --spawn 2 -b 64K -e 256K -n 20 >/dev/null 2>"$WORK/perf.err" ||
  fail "c4perf: $(cat "$WORK/perf.err")"
for _ in $(seq 40); do # the ends reach c4mon, then its next liveness pass (0.5 s)
  [ "$(jq -c 'select(.kind == "job_end" and .job == "lifejob")' "$WORK/events" | wc -l)" = 1 ] && break
  sleep 0.1
done
jq -e -s '[.[] | select(.kind == "job_end" and .job == "lifejob")] | length == 1 and
  .[0].ranks == [0, 1] and (.[0].wall | test("^[0-9-]+T[0-9:.]+Z$"))' "$WORK/events" \
  >/dev/null || fail "no job_end of lifejob naming ranks 0 and 1: $(cat "$WORK/events")"
# said as where its ranks were, not as a place named "job"
"$BIN/c4mon" events "$WORK/events" --text | grep -q "job_end  *on hosts [^ ]*,[^ ]*, ranks 0,1, job lifejob" ||
  fail "job_end in text: $("$BIN/c4mon" events "$WORK/events" --text)"
C4_TOKEN=t "$BIN/c4mon" status --connect "$ranks" --json >"$WORK/status" || fail "status"
jq -e '[.detect.verdicts[] | select(.job == "lifejob")] | length == 0' "$WORK/status" >/dev/null ||
  fail "verdicts of the ended job in status: $(jq -c .detect.verdicts "$WORK/status")"
# the text says the job ended, though its ranks are no longer connected (they vanished at once)
C4_TOKEN=t "$BIN/c4mon" status --connect "$ranks" >"$WORK/status.txt" || fail "status (text)"
grep -q "^job lifejob: 2 rank(s) ended, 0 lost" "$WORK/status.txt" ||
  fail "status does not say lifejob ended: $(cat "$WORK/status.txt")"
# a job name is the ranks' to choose: c4mon takes its control characters as '?', so that status,
# top, events --text and timeline never print them raw
C4_MONITOR=$ranks C4_TOKEN=t C4_JOB=$'two\nlines' C4_HEARTBEAT_MS=100 \
  "$BIN/c4perf" --spawn 2 -b 64 -e 64 -n 2 >/dev/null 2>"$WORK/perf.err" || fail "c4perf: $(cat "$WORK/perf.err")"
for _ in $(seq 40); do
  C4_TOKEN=t "$BIN/c4mon" status --connect "$ranks" >"$WORK/status.txt" 2>&1
  grep -q 'two?lines: 2 rank(s) ended' "$WORK/status.txt" && break
  sleep 0.1
done
grep -q '^job two?lines: 2 rank(s) ended' "$WORK/status.txt" && ! grep -q '^lines' "$WORK/status.txt" ||
  fail "a job name with a newline in status: $(cat "$WORK/status.txt")"
sleep 1.2 # a publish (once a second) since the job's records came
curl -sf "$metrics" >"$WORK/before" || fail "no answer at $metrics"
grep -q 'job="lifejob"' "$WORK/before" || fail "no series of lifejob while it is remembered"
sleep 4.5 # past --forget-ms (3 s from job_end), its 0.5 s pass and a publish
curl -sf "$metrics" >"$WORK/after" || fail "no answer at $metrics"
! grep 'job="lifejob"' "$WORK/after" || fail "series of lifejob stayed past --forget-ms"
grep -q '^c4_records_total ' "$WORK/after" || fail "c4mon's own series went too"
# nor bytes that are not UTF-8, nor C1's CSI: each is a '?', and the job's end is still an event
# (jansson refuses a string that is not UTF-8: the event was lost, and the job left no trace)
C4_MONITOR=$ranks C4_TOKEN=t C4_JOB=$'j\xff-\xc2\x9b[2J' C4_HEARTBEAT_MS=100 \
  "$BIN/c4perf" --spawn 2 -b 64 -e 64 -n 2 >/dev/null 2>"$WORK/perf.err" || fail "c4perf: $(cat "$WORK/perf.err")"
for _ in $(seq 40); do
  [ "$(jq -c 'select(.kind == "job_end" and .job == "j?-??[2J")' "$WORK/events" | wc -l)" = 1 ] && break
  sleep 0.1
done
jq -e -s '[.[] | select(.kind == "job_end" and .job == "j?-??[2J")] | length == 1' "$WORK/events" \
  >/dev/null || fail "no job_end of a job named with bytes not UTF-8: $(cat "$WORK/events")"
C4_TOKEN=t "$BIN/c4mon" status --connect "$ranks" >"$WORK/status.txt" 2>&1
grep -qF 'job j?-??[2J: 2 rank(s) ended' "$WORK/status.txt" ||
  fail "status of a job named with bytes not UTF-8: $(cat -A "$WORK/status.txt")"
# two jobs under one C4_JOB: c4mon cannot part them, and status says so, not only its log
twins=()
for _ in 1 2; do
  C4_MONITOR=$ranks C4_TOKEN=t C4_JOB=twinjob C4_HEARTBEAT_MS=50 \
    "$BIN/c4perf" --spawn 2 -b 1M -e 1M -n 400 >/dev/null 2>&1 &
  twins+=($!)
done
wait "${twins[@]}"
C4_TOKEN=t "$BIN/c4mon" status --connect "$ranks" >"$WORK/status.txt" 2>&1
grep -q "^warning: [0-9]* rank number(s) streamed by two processes at once" "$WORK/status.txt" ||
  fail "status says nothing of two jobs under one name: $(head -3 "$WORK/status.txt")"
# a hang-up (the terminal of a shell that started it with & went away) stops c4mon as SIGTERM
# does, said, its verdicts cleared; it used to die at once without a word
kill -HUP "$mon"
wait "$mon"
rc=$?
mon=
[ "$rc" = 0 ] && grep -q "stopping on SIGHUP" "$WORK/mon.err" ||
  fail "SIGHUP: exit $rc, $(tail -2 "$WORK/mon.err")"
# started with SIGHUP ignored (nohup), it keeps running through one
(trap '' HUP && exec "$BIN/c4mon" serve --listen 127.0.0.1:0 --token t --events /dev/null) \
  2>"$WORK/nohup.err" &
mon=$!
sleep 0.5
kill -HUP "$mon"
sleep 0.3
kill -0 "$mon" 2>/dev/null || fail "a c4mon started with SIGHUP ignored stopped on one"
echo "job_end: the ended job's verdicts closed and its series left /metrics after --forget-ms"
