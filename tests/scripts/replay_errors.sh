#!/usr/bin/env bash
# replay_errors.sh -- `c4mon replay` on input it cannot use: a file with no valid record, an empty
# file, a directory, a binary trace cut short, one of an unknown version, one with a record out
# of range, and a missing file. Each must exit 1 with the file, the place where there is one,
# and the reason on stderr; an intact trace still exits 0, a second replay into one --events
# file says that it appends, and per-process files concatenated (out of time order) are
# replayed with a warning.
# Usage: replay_errors.sh [BUILD_DIR] (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
BIN="$BUILD/bin"
W=$(mktemp -d /tmp/c4-replay-err-XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "replay_errors: FAILED: $*"; exit 1; }
# expect FILE PATTERN...: replay exits 1 and stderr has every pattern
expect() {
  local f=$1 err rc
  shift
  err=$("$BIN/c4mon" replay "$f" --events /dev/null 2>&1 >/dev/null)
  rc=$?
  [ $rc -eq 1 ] || fail "replay $f exited $rc: $err"
  for p in "$@"; do grep -q -- "$p" <<<"$err" || fail "replay $f: no '$p' in: $err"; done
  echo "ok: $f: $(tail -1 <<<"$err")"
}

"$BIN/c4scen" gen --hosts 2 --gpus 2 --truth "$W/truth.json" --bin --out "$W/good.bin" 2>/dev/null ||
  fail "c4scen could not write a trace"
"$BIN/c4mon" replay "$W/good.bin" --events /dev/null 2>/dev/null || fail "an intact trace did not replay"
printf 'garbage\n{"v":9}\n' >"$W/novalid.jsonl"
: >"$W/empty.jsonl"
mkdir "$W/dir"
size=$(stat -c %s "$W/good.bin")
head -c $((size - 7)) "$W/good.bin" >"$W/trunc.bin"
cp "$W/good.bin" "$W/version.bin"
printf '\011' | dd of="$W/version.bin" bs=1 seek=7 conv=notrunc 2>/dev/null
printf '{"v":1,"type":"xfer","comm":null,"rank":0,"peer":1,"host":"a","peer_host":"b","dir":"send","bytes":8,"t_post":18446744073709551615,"t_first":null,"t_done":null,"conn":"01","seq":0,"tag":0,"status":"ok","pid":1,"peer_pid":2,"dev":0,"peer_dev":0}\n' >"$W/range.jsonl"

expect "$W/novalid.jsonl" "novalid.jsonl: line 1:" "no valid record (2 bad lines)"
expect "$W/empty.jsonl" "empty.jsonl: no valid record"
expect "$W/dir" "dir: is a directory"
expect "$W/trunc.bin" "trunc.bin: byte [0-9]*: truncated record" "the rest was not read"
expect "$W/version.bin" "version.bin: byte 7: a binary trace of stream protocol version 9"
expect "$W/range.jsonl" "range.jsonl: line 1:" "no valid record"
expect "$W/missing.jsonl" "missing.jsonl: No such file"
# a second replay into one --events file appends: it says so (its ids start at 1 again)
"$BIN/c4scen" gen --hosts 2 --gpus 2 --seconds 12 --fault straggler:rank=1:factor=3:t=6 \
  --truth "$W/t2.json" --out "$W/slow.jsonl" 2>/dev/null || fail "c4scen could not write a trace"
"$BIN/c4mon" replay "$W/slow.jsonl" --events "$W/ev.jsonl" 2>"$W/first.err" || fail "first replay"
[ -s "$W/ev.jsonl" ] || fail "the straggler trace raised nothing"
grep -q "holds events already" "$W/first.err" && fail "a new file was said to hold events"
"$BIN/c4mon" replay "$W/slow.jsonl" --events "$W/ev.jsonl" 2>"$W/second.err" || fail "second replay"
grep -q "ev.jsonl holds events already" "$W/second.err" ||
  fail "a second replay into one file said nothing: $(cat "$W/second.err")"
# per-process files concatenated, not merged by time: replayed, with a warning saying how many
# records came behind and why; the same records in time order: no warning
"$BIN/c4scen" gen --hosts 2 --gpus 2 --seconds 12 --truth "$W/t3.json" --out "$W/ordered.jsonl" \
  2>/dev/null || fail "c4scen could not write a trace"
for r in 0 1 2 3; do grep "\"rank\":$r," "$W/ordered.jsonl"; done >"$W/concat.jsonl"
"$BIN/c4mon" replay "$W/ordered.jsonl" --events /dev/null 2>"$W/ordered.err" || fail "ordered replay"
grep -q "behind the newest" "$W/ordered.err" && fail "a trace in time order was warned about"
"$BIN/c4mon" replay "$W/concat.jsonl" --events /dev/null 2>"$W/concat.err" ||
  fail "a concatenated trace did not replay"
grep -q "concat.jsonl: warning: [0-9]* of [0-9]* records came more than 2 s behind" "$W/concat.err" ||
  fail "a concatenated trace replayed without a warning: $(cat "$W/concat.err")"
echo "ok: $(grep -o 'concat.jsonl: warning: [0-9]* of [0-9]* records' "$W/concat.err")"
# what a time-ordered recording holds out of order by nature is not counted: a transfer written
# as pending (at the end, its time its post) and a process's header line (its time its start)
t0=$(grep -m1 -o '"t_post":[0-9]*' "$W/ordered.jsonl" | cut -d: -f2)
[ -n "$t0" ] || fail "no transfer's post time in $W/ordered.jsonl"
{
  cat "$W/ordered.jsonl"
  echo "{\"v\":1,\"type\":\"xfer\",\"rank\":0,\"peer\":1,\"host\":\"h0000\",\"peer_host\":\"h0000\",\"dir\":\"send\",\"bytes\":4096,\"t_post\":$t0,\"t_done\":null}"
  echo "{\"v\":1,\"type\":\"header\",\"host\":\"h0001\",\"pid\":3,\"rank\":3,\"mono_ns\":$t0}"
} >"$W/pending.jsonl"
"$BIN/c4mon" replay "$W/pending.jsonl" --events /dev/null 2>"$W/pending.err" ||
  fail "a recording ending with a pending transfer did not replay"
grep -q "behind the newest" "$W/pending.err" &&
  fail "a pending transfer or a header line was counted out of order: $(cat "$W/pending.err")"
# a file of garbage: the first 100 bad lines said one by one, the rest counted
for i in $(seq 150); do echo "garbage $i"; done >"$W/garbage.jsonl"
expect "$W/garbage.jsonl" "garbage.jsonl: line 100:" "50 more bad lines or records, not said" \
  "no valid record (150 bad lines)"
"$BIN/c4mon" replay "$W/garbage.jsonl" --events /dev/null 2>&1 | grep -q "line 101:" &&
  fail "bad line 101 was said one by one"
# one line whose time is far ahead (a wrong field, here an hour on) is said and dropped, and
# detection goes on: the same verdicts as without it; a header line's time (its process's
# start) is not a record's and moves nothing
"$BIN/c4scen" gen --hosts 2 --gpus 2 --seconds 40 --fault link:src=0:dst=1:dev=0:rate=0.3:t=20 \
  --truth "$W/link.truth" --out "$W/link.jsonl" 2>/dev/null || fail "c4scen could not write a trace"
"$BIN/c4mon" replay "$W/link.jsonl" --events "$W/link.ev" 2>/dev/null || fail "the link trace did not replay"
grep -q '"kind":"comm_slow"' "$W/link.ev" || fail "the link fault was not found in the trace as written"
n=$(wc -l <"$W/link.jsonl")
python3 - "$W/link.jsonl" "$W/ahead.jsonl" "$W/header.jsonl" "$((n / 3))" "$W/first.jsonl" <<'PY' || fail "could not write the shifted traces"
import json, sys
lines = open(sys.argv[1]).read().splitlines()
at = int(sys.argv[4])
r = json.loads(lines[at])
for k in ("t_post", "t_first", "t_done", "t_arrive"):
    if r.get(k):
        r[k] += 3600 * 10**9
open(sys.argv[2], "w").write("\n".join(lines[:at] + [json.dumps(r)] + lines[at:]) + "\n")
first = json.loads(lines[0])
first["t"] += 3600 * 10**9
open(sys.argv[5], "w").write("\n".join([json.dumps(first)] + lines[1:]) + "\n")
hdr = {"v": 1, "type": "header", "host": "h0000", "pid": 1, "rank": 0, "mono_ns": 4 * 10**18}
open(sys.argv[3], "w").write("\n".join([json.dumps(hdr)] + lines) + "\n")
PY
"$BIN/c4mon" replay "$W/ahead.jsonl" --events "$W/ahead.ev" 2>"$W/ahead.err" ||
  fail "a trace with one line an hour ahead did not replay: $(cat "$W/ahead.err")"
grep -q "ahead.jsonl: line $((n / 3 + 1)): its time is 3600 s ahead" "$W/ahead.err" ||
  fail "the line an hour ahead was not named: $(cat "$W/ahead.err")"
grep -q "behind the newest" "$W/ahead.err" && fail "one line ahead made the rest late: $(cat "$W/ahead.err")"
cmp -s <(jq -c '[.kind, .where, .ranks, .hosts]' "$W/link.ev") \
  <(jq -c '[.kind, .where, .ranks, .hosts]' "$W/ahead.ev") ||
  fail "one line ahead changed the verdicts: $(cat "$W/ahead.ev")"
# the same for the first line (a communicator's), with no newest time to judge it by
"$BIN/c4mon" replay "$W/first.jsonl" --events "$W/first.ev" 2>"$W/first.err" ||
  fail "a trace whose first line is an hour ahead did not replay: $(cat "$W/first.err")"
grep -q "first.jsonl: line 1: its time is 3600 s ahead of the records after it" "$W/first.err" ||
  fail "the first line an hour ahead was not named: $(cat "$W/first.err")"
cmp -s <(jq -c '[.kind, .where, .ranks, .hosts]' "$W/link.ev") \
  <(jq -c '[.kind, .where, .ranks, .hosts]' "$W/first.ev") ||
  fail "a first line ahead changed the verdicts: $(cat "$W/first.ev")"
"$BIN/c4mon" replay "$W/header.jsonl" --events /dev/null 2>"$W/header.err" || fail "the header trace did not replay"
grep -q "behind the newest" "$W/header.err" && fail "a header line's time made records late: $(cat "$W/header.err")"
echo "ok: one line far ahead named and dropped, detection as without it"

# a host name with a control character (an escape sequence that would reach an operator's
# terminal through events --text) is a bad line, named; nothing of it reaches the events
sed 's/"host":"h0001"/"host":"h0001\\u001b[2J\\u001b[H"/' "$W/link.jsonl" >"$W/esc.jsonl"
"$BIN/c4mon" replay "$W/esc.jsonl" --events "$W/esc.ev" 2>"$W/esc.err"
grep -q 'esc.jsonl: line [0-9]*: field "host": a control character' "$W/esc.err" ||
  fail "a host with an escape sequence was not named: $(head -3 "$W/esc.err")"
grep -q '\\u001b' "$W/esc.ev" && fail "an escape sequence reached the events: $(cat "$W/esc.ev")"
# so is one with C1's CSI (U+009B, ESC [ to some terminals)
sed 's/"host":"h0001"/"host":"h0001\\u009b2J"/' "$W/link.jsonl" >"$W/csi.jsonl"
"$BIN/c4mon" replay "$W/csi.jsonl" --events "$W/csi.ev" 2>"$W/csi.err"
grep -q 'csi.jsonl: line [0-9]*: field "host": a control character' "$W/csi.err" ||
  fail "a host with C1's CSI was not named: $(head -3 "$W/csi.err")"
# the field is named: a peer's host is "peer_host"
sed 's/"peer_host":"h0001"/"peer_host":"h0001\\u0007"/' "$W/link.jsonl" >"$W/bel.jsonl"
"$BIN/c4mon" replay "$W/bel.jsonl" --events /dev/null 2>"$W/bel.err"
grep -q 'bel.jsonl: line [0-9]*: field "peer_host": a control character' "$W/bel.err" ||
  fail "a peer host with a control character was not named by its field: $(head -3 "$W/bel.err")"
echo "ok: a host name with a control character is a bad line"

# --out the trace itself would empty it before it is read: refused, the trace intact
cp "$W/link.jsonl" "$W/self.jsonl"
ln -s "$W/self.jsonl" "$W/self-link.jsonl"
for out in "$W/self.jsonl" "$W/self-link.jsonl"; do
  "$BIN/c4mon" replay "$W/self.jsonl" --out "$out" --events /dev/null 2>"$W/self.err"
  rc=$?
  [ $rc -eq 2 ] && grep -q "is the trace being replayed" "$W/self.err" ||
    fail "--out $out (the trace itself) exited $rc: $(cat "$W/self.err")"
  cmp -s "$W/self.jsonl" "$W/link.jsonl" || fail "--out $out changed the trace"
done
"$BIN/c4mon" replay "$W/link.jsonl" --out - --events /dev/null 2>/dev/null | cmp -s - <("$BIN/c4mon" replay "$W/link.jsonl" --out "$W/out.jsonl" --events /dev/null 2>/dev/null; cat "$W/out.jsonl") ||
  fail "--out - did not write the trace to standard output"
[ -e ./- ] && fail "--out - wrote a file named -"
echo "ok: --out the trace itself refused, --out - is standard output"
# a replay stopped by SIGINT says so and exits 1: its counts are not the trace's
"$BIN/c4mon" replay "$W/link.jsonl" --speed 1 --events /dev/null 2>"$W/int.err" &
pid=$!
sleep 1
kill -INT $pid
wait $pid
rc=$?
[ $rc -eq 1 ] && grep -q "link.jsonl: interrupted after [0-9]* records" "$W/int.err" ||
  fail "an interrupted replay exited $rc: $(cat "$W/int.err")"
echo "ok: an interrupted replay exits 1"
echo "replay_errors: ok"
