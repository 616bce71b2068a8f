#!/usr/bin/env bash
# timeline.sh -- `c4mon timeline` draws a real c4train run's step log with verdicts and faults
# placed on it: a PNG 1280 px wide whose height holds a lane per rank; missing options exit 2 and
# name the option, an unreadable file or a bad line exit 1 naming the file (and line).
# Usage: timeline.sh [BUILD_DIR] (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
BIN=$BUILD/bin
WORK=$(mktemp -d /tmp/c4-timeline-test-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() {
  echo "timeline: FAILED: $*"
  exit 1
}
command -v jq >/dev/null || fail "jq not found (make deps installs it)"

# png_size FILE: "WIDTH HEIGHT" from the PNG's IHDR chunk
png_size() {
  [ "$(head -c 8 "$1" | od -An -tx1 | tr -d ' \n')" = 89504e470d0a1a0a ] || { echo "not a PNG"; return; }
  od -An -tu1 -j16 -N8 "$1" | awk '{print $1 * 16777216 + $2 * 65536 + $3 * 256 + $4, $5 * 16777216 + $6 * 65536 + $7 * 256 + $8}'
}

C4_DEBUG=NONE "$BIN/c4train" --local-ranks 2 --steps 12 --layers 1 --width 16 --heads 1 \
  --context 16 --json-out "$WORK/train.jsonl" >/dev/null 2>"$WORK/train.err" ||
  fail "c4train: $(cat "$WORK/train.err")"
[ "$(jq -s '[.[] | select(.event == "step") | .rank_tokens_per_s | length] | unique' "$WORK/train.jsonl")" = "[
  2
]" ] || fail "the step lines do not give both ranks' tokens/s: $(head -3 "$WORK/train.jsonl")"

# a verdict raised in step 4 and cleared in step 9, from the run's own times
jq -c 'select(.event == "step" and (.step == 4 or .step == 9)) |
  if .step == 4 then {v: 1, id: 1, kind: "straggler", t: (.t_start_ns + 1), job: "t", where: "gpu",
    ranks: [1], hosts: ["h1"], factor: 1.8}
  else {v: 1, id: 2, kind: "recovered", t: (.t_start_ns + 1), clears: 1} end' \
  "$WORK/train.jsonl" >"$WORK/events.jsonl"
echo '{"v":1,"expect":[{"name":"rank 1 slow","kind":"straggler","where":"gpu","ranks":[1],
  "from":"step:3","to":"step:8"}]}' >"$WORK/expect.json"
"$BIN/c4mon" timeline "$WORK/events.jsonl" --steps "$WORK/train.jsonl" --expect "$WORK/expect.json" \
  --png "$WORK/t.png" >"$WORK/out" 2>"$WORK/err" || fail "c4mon timeline: $(cat "$WORK/err")"
grep -qF "wrote $WORK/t.png" "$WORK/out" || fail "c4mon timeline did not say where: $(cat "$WORK/out")"
read -r w h < <(png_size "$WORK/t.png")
[ "$w" = 1280 ] || fail "the picture is $w px wide, not 1280"
# EVENTS - reads standard input: the same picture
"$BIN/c4mon" timeline - --steps "$WORK/train.jsonl" --expect "$WORK/expect.json" \
  --png "$WORK/t-stdin.png" <"$WORK/events.jsonl" >/dev/null 2>"$WORK/err" ||
  fail "c4mon timeline - (events on standard input): $(cat "$WORK/err")"
cmp -s "$WORK/t.png" "$WORK/t-stdin.png" || fail "the picture from standard input differs"
# the same run with four ranks is taller by two rank lanes
C4_DEBUG=NONE "$BIN/c4train" --local-ranks 4 --steps 6 --layers 1 --width 16 --heads 1 \
  --context 16 --json-out "$WORK/train4.jsonl" >/dev/null 2>&1 || fail "c4train with 4 ranks"
"$BIN/c4mon" timeline "$WORK/events.jsonl" --steps "$WORK/train4.jsonl" --png "$WORK/t4.png" \
  >/dev/null 2>"$WORK/err" || fail "c4mon timeline (4 ranks): $(cat "$WORK/err")"
read -r w4 h4 < <(png_size "$WORK/t4.png")
[ "$((h4 - h))" -ge 100 ] || fail "4 ranks' picture ($h4 px) is not taller than 2 ranks' ($h px) by their lanes"

expect() { # STATUS NEEDLE CMD...
  local want=$1 needle=$2 got
  shift 2
  "$@" >/dev/null 2>"$WORK/err"
  got=$?
  [ "$got" = "$want" ] || fail "'$*' exited $got, not $want: $(cat "$WORK/err")"
  grep -qF -- "$needle" "$WORK/err" || fail "'$*' did not say '$needle': $(cat "$WORK/err")"
}
expect 2 "--steps" "$BIN/c4mon" timeline "$WORK/events.jsonl" --png "$WORK/x.png"
expect 2 "--png" "$BIN/c4mon" timeline "$WORK/events.jsonl" --steps "$WORK/train.jsonl"
expect 2 "EVENTS" "$BIN/c4mon" timeline --steps "$WORK/train.jsonl" --png "$WORK/x.png"
expect 1 "c4mon timeline: $WORK/none.jsonl: No such file or directory" \
  "$BIN/c4mon" timeline "$WORK/none.jsonl" --steps "$WORK/train.jsonl" --png "$WORK/x.png"
printf '{"event":"start","ranks":2}\n{"event":"step",\n' >"$WORK/bad.jsonl"
expect 1 "$WORK/bad.jsonl:2:" \
  "$BIN/c4mon" timeline "$WORK/events.jsonl" --steps "$WORK/bad.jsonl" --png "$WORK/x.png"
expect 1 "$WORK/nodir/x.png: No such file or directory" \
  "$BIN/c4mon" timeline "$WORK/events.jsonl" --steps "$WORK/train.jsonl" --png "$WORK/nodir/x.png"
[ ! -e "$WORK/x.png" ] || fail "a failed run left a picture behind"
echo "timeline: ok (2 ranks: ${w}x$h px, 4 ranks: ${w4}x$h4 px)"
