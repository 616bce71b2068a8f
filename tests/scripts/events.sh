#!/usr/bin/env bash
# events.sh -- `c4mon events` on an events file written here: each filter keeps what it names,
# --count, --active and --summary count what they should (in a file several c4mon runs appended
# to too), --text names places in words (each run from its start), --follow
# prints lines appended after it started, --score exits 0 when every expected verdict is answered
# and nothing else was raised and 1 on a false alarm or a miss, a bad line is named with its
# number; and `c4plan flows` prints a plan's flows. Usage: events.sh [BUILD_DIR].
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
C4MON=$BUILD/bin/c4mon
WORK=$(mktemp -d /tmp/c4-events-test-XXXXXX)
FOLLOW=
trap '[ -n "$FOLLOW" ] && kill "$FOLLOW" 2>/dev/null; rm -rf "$WORK"' EXIT
failed=0
fail() {
  echo "events: FAILED: $*"
  failed=1
}
# same WHAT GOT WANT
same() { [ "$2" = "$3" ] || fail "$1: got '$2', want '$3'"; }

E=$WORK/events.jsonl
cat >"$E" <<'JSONL'
{"v":1,"id":1,"kind":"straggler","t":11000000000,"job":"j","where":"gpu","ranks":[3],"hosts":["n3"],"factor":2.5,"confidence":1.0}
{"v":1,"id":2,"kind":"comm_slow","t":12000000000,"job":"j","where":"link","ranks":[1],"hosts":["n1","n2"],"link":["n1","n2"],"link_devs":[0,0],"factor":4.0,"confidence":1.0}
{"v":1,"id":3,"kind":"recovered","t":13000000000,"job":"j","where":"gpu","clears":1,"cleared":{"kind":"straggler","where":"gpu","ranks":[3],"hosts":["n3"]},"factor":0,"confidence":0}
{"v":1,"id":4,"kind":"straggler","t":20000000000,"job":"k","where":"gpu","ranks":[0],"hosts":["n0"],"factor":1.2,"confidence":0.6,"wall_ns":1764000000000000000}
JSONL

same "all" "$("$C4MON" events "$E" --count)" 4
same "--kind" "$("$C4MON" events "$E" --kind straggler --count)" 2
same "--kind list" "$("$C4MON" events "$E" --kind straggler,comm_slow --count)" 3
# a misspelt kind is a usage error naming it, not an empty answer
out=$("$C4MON" events "$E" --kind straggler,stragler --count 2>&1)
same "--kind misspelt: exit" "$?" 2
case $out in *"'stragler' is not an event kind"*) ;; *) fail "--kind misspelt: said '$out'" ;; esac
same "--where" "$("$C4MON" events "$E" --where link --count)" 1
out=$("$C4MON" events "$E" --where nic --count 2>&1)
same "--where misspelt: exit" "$?" 2
case $out in *"'nic' is not a place"*) ;; *) fail "--where misspelt: said '$out'" ;; esac
# a time of the wrong form is bad usage (2); one no file holds is a failure (1)
out=$("$C4MON" events "$E" --since 5s --count 2>&1)
same "--since 5s: exit" "$?" 2
case $out in *"--since: '5s' is not a time"*) ;; *) fail "--since 5s: said '$out'" ;; esac
out=$("$C4MON" events "$E" --since step:3 --count 2>&1)
same "--since step:3 without --steps: exit" "$?" 2 # a usage error, as a missing value is
case $out in *"--since step:3 needs the trainer's lines (--steps FILE)"*) ;; *) fail "--since step:3: said '$out'" ;; esac
same "--rank" "$("$C4MON" events "$E" --rank 3 --count)" 1
same "--host in a link" "$("$C4MON" events "$E" --host n2 --count)" 1
same "--job" "$("$C4MON" events "$E" --job k --count)" 1
same "--since/--until" "$("$C4MON" events "$E" --since 12000000000 --until 13000000000 --count)" 2
same "--active" "$("$C4MON" events "$E" --active --count)" 2
same "JSON lines as they are" "$("$C4MON" events "$E" --kind comm_slow)" "$(sed -n 2p "$E")"
same "--summary" "$("$C4MON" events "$E" --summary | grep -o '"verdicts":[0-9]*')" '"verdicts":3'
# two c4mon runs appended to one file, each numbering from 1: a recovery clears its own run's
# verdict, and a job's end is no verdict (by id alone, run 2's recovery of its #1 cleared run 1's
# rank_lost, and --active listed the job_end)
cat >"$WORK/runs.jsonl" <<'JSONL'
{"v":1,"id":1,"kind":"rank_lost","t":5000000000,"job":"j","where":"gpu","ranks":[2],"hosts":["n2"],"factor":0,"confidence":1}
{"v":1,"id":2,"kind":"job_end","t":9000000000,"job":"j","where":"job","ranks":[0,1],"hosts":["n0","n1"],"confidence":1}
{"v":1,"id":1,"kind":"straggler","t":3000000000,"job":"j","where":"gpu","ranks":[1],"hosts":["n1"],"factor":2,"confidence":1}
{"v":1,"id":2,"kind":"recovered","t":4000000000,"job":"j","where":"gpu","clears":1,"factor":0,"confidence":0}
JSONL
same "--active over runs" "$("$C4MON" events "$WORK/runs.jsonl" --active | grep -o '"kind":"[a-z_]*"')" '"kind":"rank_lost"'
same "--summary over runs" "$("$C4MON" events "$WORK/runs.jsonl" --summary | grep -o '"verdicts":[0-9]*')" '"verdicts":2'
# --text reads each run's times from its own first event, and says where a run begins (from the
# file's first event, run 2's read -2 s)
text=$("$C4MON" events "$WORK/runs.jsonl" --text)
grep -q -- "-[0-9.]* s" <<<"$text" && fail "--text over runs: a negative time: $text"
same "--text over runs: run 2's first line" "$(sed -n 4p <<<"$text" | grep -o '^ *0.000 s #1')" "   0.000 s #1"
same "--text over runs: the line between" "$(sed -n 3p <<<"$text")" \
  "-- another c4mon run appended here: ids and times from its start"
text=$("$C4MON" events "$E" --text)
grep -q "#2 .*comm_slow.*link n1 -> n2 (dev 0 -> 0).*4.00x.*job j" <<<"$text" || fail "--text: $text"
grep -q "#3 .*recovered.*#1 straggler at rank 3 (n3) has cleared" <<<"$text" || fail "--text: $text"

# --follow prints what is appended after it started, and stops on SIGTERM
"$C4MON" events "$E" --follow --kind comm_slow >"$WORK/followed" &
FOLLOW=$!
sleep 0.5
printf '%s' '{"v":1,"id":5,"kind":"comm_slow","t":21000000000,"where":"path","path":"s1","hosts":[],"factor":3.0}' >>"$E"
sleep 0.5 # half a line: not yet an event
same "--follow before the line ends" "$(wc -l <"$WORK/followed")" 1
echo >>"$E"
for _ in $(seq 20); do [ "$(wc -l <"$WORK/followed")" = 2 ] && break; sleep 0.1; done
kill -TERM "$FOLLOW"
wait "$FOLLOW"
same "--follow stops on SIGTERM" "$?" 0
FOLLOW=
same "--follow printed the appended line" "$(tail -1 "$WORK/followed" | grep -o '"path":"s1"')" '"path":"s1"'

# a file emptied while followed (logrotate's copytruncate) is read again from its start
F=$WORK/rotated.jsonl
head -1 "$E" >"$F"
"$C4MON" events "$F" --follow >"$WORK/rotated.out" 2>"$WORK/rotated.err" &
FOLLOW=$!
for _ in $(seq 20); do [ "$(wc -l <"$WORK/rotated.out")" = 1 ] && break; sleep 0.1; done
: >"$F"
sleep 0.5
sed -n 2p "$E" >>"$F"
for _ in $(seq 20); do [ "$(wc -l <"$WORK/rotated.out")" = 2 ] && break; sleep 0.1; done
kill -TERM "$FOLLOW"
wait "$FOLLOW"
FOLLOW=
same "--follow after a truncation: the line written after it" "$(tail -1 "$WORK/rotated.out" | jq -r .id)" 2
grep -q "was truncated" "$WORK/rotated.err" || fail "--follow did not say the file was truncated"

# without --follow, a last line without its newline (\$(cat ...) drops it) is still an event,
# a UTF-8 BOM before the first is an editor's, and a line cut short is said, not taken
head -3 "$E" >"$WORK/nonl.jsonl"
printf '%s' "$(cat "$WORK/nonl.jsonl")" >"$WORK/nonl2.jsonl"
same "a last line without newline" "$("$C4MON" events "$WORK/nonl2.jsonl" --count)" 3
same "--active with the clearing line last, without newline" \
  "$("$C4MON" events "$WORK/nonl2.jsonl" --active --kind straggler --count)" 0
{ printf '\xef\xbb\xbf'; head -3 "$E"; } >"$WORK/bom.jsonl"
same "a BOM before the first line" "$("$C4MON" events "$WORK/bom.jsonl" --count)" 3
{ head -2 "$E"; sed -n 3p "$E" | head -c 40; } >"$WORK/cut.jsonl"
same "a line cut short" "$("$C4MON" events "$WORK/cut.jsonl" --count 2>"$WORK/cut.err")" 2
grep -q "line 3 is unfinished" "$WORK/cut.err" || fail "a line cut short was not said: $(cat "$WORK/cut.err")"

# --score: marks and a table; the straggler on rank 0 (job k) and the path are not expected
printf 'slow_on 10500000000\nslow_off 12500000000\nlink_on 11500000000\nlink_off 12500000000\n' >"$WORK/marks"
cat >"$WORK/expect.json" <<'JSON'
{"v":1,"expect":[
 {"name":"rank 3","kind":"straggler","where":"gpu","ranks":[3],"from":"mark:slow_on","to":"mark:slow_off"},
 {"name":"link","kind":"comm_slow","where":"link","link":["n1","n2"],"from":"mark:link_on","to":"mark:link_off"}]}
JSON
head -3 "$E" >"$WORK/good.jsonl"
"$C4MON" events "$WORK/good.jsonl" --score "$WORK/expect.json" --marks "$WORK/marks" >"$WORK/score.json"
same "--score, all found and nothing else" "$?" 0
grep -q '"ok": true' "$WORK/score.json" || fail "--score JSON: $(cat "$WORK/score.json")"
"$C4MON" events "$E" --score "$WORK/expect.json" --marks "$WORK/marks" --text >"$WORK/score.txt"
same "--score with false alarms" "$?" 1
grep -q "2 of 2 expected verdicts found, 2 false alarms" "$WORK/score.txt" || fail "--score --text: $(cat "$WORK/score.txt")"
head -1 "$E" >"$WORK/miss.jsonl"
"$C4MON" events "$WORK/miss.jsonl" --score "$WORK/expect.json" --marks "$WORK/marks" >/dev/null
same "--score with a miss" "$?" 1
"$C4MON" events "$WORK/good.jsonl" --score "$WORK/expect.json" 2>"$WORK/err" >/dev/null
same "--score without the marks" "$?" 1
grep -q 'expect\[0\].from: "mark:slow_on" needs the marks file' "$WORK/err" || fail "no marks: $(cat "$WORK/err")"

# a bad line is named with its number
printf '%s\n' '{"v":1,"id":1,"kind":"straggler","t":1}' 'not json' >"$WORK/bad.jsonl"
"$C4MON" events "$WORK/bad.jsonl" --count >/dev/null 2>"$WORK/err"
same "a bad line" "$?" 1
grep -q "c4mon events: $WORK/bad.jsonl: line 2:" "$WORK/err" || fail "bad line: $(cat "$WORK/err")"
"$C4MON" events "$E" --count --summary >/dev/null 2>&1
same "two modes at once" "$?" 2
t1=$("$C4MON" events --now) t2=$("$C4MON" events --now)
[ "$t2" -ge "$t1" ] && [ "$t1" -gt 0 ] || fail "--now: $t1 then $t2"

# c4plan flows: a plan's flows as "SRC DST PATH SRC_PORT" lines
printf '%s' '{"v":1,"flows":[{"src":"h0","dst":"h1","path":"s1","src_port":40001},{"src":"h1","dst":"h3","path":"l1","src_port":null}]}' >"$WORK/plan.json"
same "c4plan flows" "$("$BUILD/bin/c4plan" flows "$WORK/plan.json" | paste -sd';')" "h0 h1 s1 40001;h1 h3 l1 -"
printf '%s' '{"v":1,"flows":[{"src":"h0"}]}' >"$WORK/badplan.json"
"$BUILD/bin/c4plan" flows "$WORK/badplan.json" >/dev/null 2>"$WORK/err"
same "c4plan flows, a bad flow" "$?" 1
grep -q "badplan.json: flows\[0\].dst is not a host name" "$WORK/err" || fail "c4plan flows: $(cat "$WORK/err")"
# what the plugin would refuse the plan for, in the plugin's reader's words
for bad in '"src_port":70000/src_port' '"src_port":40001,"flow_label":99999999/flow_label'; do
  printf '{"v":1,"flows":[{"src":"h0","dst":"h1","path":"s1",%s}]}' "${bad%/*}" >"$WORK/badplan.json"
  "$BUILD/bin/c4plan" flows "$WORK/badplan.json" >/dev/null 2>"$WORK/err"
  same "c4plan flows, ${bad%/*}" "$?" 1
  grep -q "flows\[0\].${bad#*/} is not an integer" "$WORK/err" || fail "c4plan flows, $bad: $(cat "$WORK/err")"
done

# --steps labels --text by step; a file that holds no step (missing, a directory, a trace) is an
# error naming it, not every event at "step 0"
printf '{"event":"step","step":1,"t_start_ns":10000000000,"t_ns":10500000000}\n{"event":"step","step":2,"t_start_ns":12500000000,"t_ns":13000000000}\n' >"$WORK/steps.jsonl"
out=$("$C4MON" events "$E" --steps "$WORK/steps.jsonl" --text --kind comm_slow)
case $out in "step 1 "*) ;; *) fail "--steps: comm_slow at 12 s labelled '$out', want step 1" ;; esac
out=$("$C4MON" events "$E" --steps "$WORK/steps.jsonl" --text --kind recovered)
case $out in "step 2 "*) ;; *) fail "--steps: recovered at 13 s labelled '$out', want step 2" ;; esac
for bad in "$WORK/no-such.jsonl" "$WORK" "$E"; do
  out=$("$C4MON" events "$E" --steps "$bad" --text 2>&1)
  same "--steps $bad: exit" "$?" 1
  case $out in *"--steps $bad"*) ;; *) fail "--steps $bad: said '$out'" ;; esac
done
# c4train's step log in document mode (--max-context) is a --steps file too: its step lines
# carry t_start_ns and t_ns, as the fixed-window ones do
"$BUILD/bin/c4train" --layers 1 --width 32 --heads 2 --max-context 128 --micro-batch 1 --steps 2 \
  --json-out "$WORK/docs.steps" >/dev/null 2>&1 || fail "c4train --max-context did not run"
"$C4MON" events "$E" --steps "$WORK/docs.steps" --text >/dev/null 2>"$WORK/err" ||
  fail "--steps of a document-mode step log: $(cat "$WORK/err")"

[ "$failed" = 0 ] && echo "events: ok"
exit "$failed"
