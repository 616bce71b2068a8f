#!/usr/bin/env bash
# merge.sh -- `c4mon merge` puts per-process trace files on one clock and in time order. The
# files are written here by hand as another host's tracer would (each process's CLOCK_MONOTONIC,
# a header pairing it with the wall clock), not by c4: 8 ranks on 8 hosts whose monotonic clocks
# start up to 40 s apart, a ring allreduce every 100 ms, rank 3 computing 2x slower from its
# 20th second. Merged by their times as written the ranks are seconds apart and nothing is named;
# merged by c4mon merge the straggler is rank 3 at about 2x, and nothing else. Also: a file
# without a header among files with one is refused by name (--as-written takes it), a bad line
# is named by file and number and skipped, --out naming an input, a file given twice, a
# directory and a missing file are refused, a file holding two runs puts each on its own
# header's clock, a byte order mark hides no header, and a binary trace cut short is exit 1.
# Usage: merge.sh [BUILD_DIR] (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
BIN="$BUILD/bin"
W=$(mktemp -d /tmp/c4-merge-XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "merge: FAILED: $*"; exit 1; }
command -v python3 >/dev/null || fail "python3 is missing (make deps)"

python3 - "$W" <<'EOF' || fail "writing the per-process files"
import json, math, random, sys
out, n, rng = sys.argv[1], 8, random.Random(5)
wall0 = 1795338000 * 10**9           # the wall clock when the job starts
boot = [rng.randrange(1, 40) * 10**9 + rng.randrange(10**9) for _ in range(n)]  # mono at start
files = [open(f"{out}/rank{r}.jsonl", "w") for r in range(n)]
for r, f in enumerate(files):
    f.write(json.dumps({"v": 1, "type": "header", "host": f"host{r}", "pid": 100 + r, "rank": r,
                        "wall_ns": wall0, "mono_ns": boot[r]}) + "\n")
t, seq, ready = 0, 0, [0] * n        # job time, ns
while t < 40 * 10**9:
    arrive = [ready[r] + int(50e6 * math.exp(rng.gauss(0, 0.03)) * (2 if r == 3 and ready[r] >= 20e9 else 1))
              for r in range(n)]
    done = max(arrive) + int(8e6 * math.exp(rng.gauss(0, 0.03)))
    for r in range(n):
        files[r].write(json.dumps({"v": 1, "type": "coll", "comm": "00000000000000c4", "rank": r,
                                   "nranks": n, "seq": seq, "func": "AllReduce", "bytes": 1 << 24,
                                   "t_arrive": arrive[r] + boot[r], "t_done": done + boot[r]}) + "\n")
        ready[r] = done
    seq, t = seq + 1, done
EOF

"$BIN/c4mon" merge "$W"/rank*.jsonl --out "$W/merged.jsonl" 2>"$W/err" || fail "merge: $(cat "$W/err")"
grep -q "times on the wall clock" "$W/err" || fail "merge did not say its clock: $(cat "$W/err")"
jq -s -e '[.[] | select(.type == "coll") | .t_done] as $t | ($t | length) > 3000 and $t == ($t | sort)' \
  "$W/merged.jsonl" >/dev/null || fail "the merged records are not in time order"
"$BIN/c4mon" replay "$W/merged.jsonl" --events "$W/merged.ev" 2>"$W/err" || fail "replay: $(cat "$W/err")"
jq -s -e '[.[] | select(.kind != "recovered")] as $v | ($v | length) == 1 and $v[0].kind == "straggler"
  and $v[0].ranks == [3] and $v[0].factor > 1.7 and $v[0].factor < 2.3' "$W/merged.ev" >/dev/null ||
  fail "merged: not one straggler, rank 3 at about 2x: $(jq -c '[.kind, .ranks, .factor]' "$W/merged.ev")"

"$BIN/c4mon" merge --as-written "$W"/rank*.jsonl --out "$W/raw.jsonl" 2>/dev/null || fail "merge --as-written"
"$BIN/c4mon" replay "$W/raw.jsonl" --events "$W/raw.ev" 2>/dev/null
[ "$(jq -s '[.[] | select(.kind == "straggler" and .ranks == [3])] | length' "$W/raw.ev")" -eq 0 ] ||
  fail "the clocks as written named the straggler: the test no longer shows what merge is for"

grep -v '"header"' "$W/rank5.jsonl" >"$W/noheader.jsonl"
"$BIN/c4mon" merge "$W/rank0.jsonl" "$W/noheader.jsonl" >/dev/null 2>"$W/err"
[ $? -eq 1 ] && grep -q "noheader.jsonl has no header line" "$W/err" ||
  fail "a file without a header among files with one: $(cat "$W/err")"
"$BIN/c4mon" merge --as-written "$W/rank0.jsonl" "$W/noheader.jsonl" >/dev/null 2>&1 ||
  fail "--as-written refused a file without a header"

{ head -5 "$W/rank1.jsonl"; echo '{"v":1,"type":"coll","rank":"x"}'; tail -n +6 "$W/rank1.jsonl"; } >"$W/bad.jsonl"
"$BIN/c4mon" merge "$W/rank0.jsonl" "$W/bad.jsonl" >"$W/out.jsonl" 2>"$W/err" || fail "a bad line stopped the merge"
grep -q "bad.jsonl: line 6: " "$W/err" || fail "the bad line was not named by file and line: $(cat "$W/err")"

"$BIN/c4mon" merge "$W/rank0.jsonl" --out "$W/rank0.jsonl" 2>/dev/null
[ $? -eq 2 ] || fail "--out naming an input was not a usage error"
[ -s "$W/rank0.jsonl" ] || fail "--out emptied an input"
"$BIN/c4mon" merge "$W/rank0.jsonl" "$W/./rank0.jsonl" >/dev/null 2>"$W/err"
[ $? -eq 2 ] && grep -q "are one file" "$W/err" || fail "one file given twice: $(cat "$W/err")"
"$BIN/c4mon" merge "$W/rank0.jsonl" "$W" >/dev/null 2>"$W/err"
[ $? -eq 1 ] && grep -q "is a directory" "$W/err" || fail "a directory: $(cat "$W/err")"
"$BIN/c4mon" merge "$W/rank0.jsonl" "$W/nonexistent" >/dev/null 2>"$W/err"
[ $? -eq 1 ] && grep -q "nonexistent: No such file" "$W/err" || fail "a missing file: $(cat "$W/err")"

# one file holding two runs (C4_TRACE appends): each run's records on its own header's clock,
# the second (after a reboot: its monotonic clock low again) placed after the first
{
  echo '{"v":1,"type":"header","host":"a","pid":1,"rank":0,"wall_ns":2000000000000,"mono_ns":900000000000}'
  echo '{"v":1,"type":"coll","comm":null,"rank":0,"nranks":1,"seq":0,"func":"AllReduce","bytes":8,"t_arrive":901000000000,"t_done":901000000100}'
  echo '{"v":1,"type":"header","host":"a","pid":2,"rank":0,"wall_ns":3000000000000,"mono_ns":5000000000}'
  echo '{"v":1,"type":"coll","comm":null,"rank":0,"nranks":1,"seq":0,"func":"AllReduce","bytes":8,"t_arrive":6000000000,"t_done":6000000100}'
} >"$W/two_runs.jsonl"
printf '\xef\xbb\xbf' >"$W/bom.jsonl" # a byte order mark before the header: still a header
cat "$W/rank0.jsonl" >>"$W/bom.jsonl"
"$BIN/c4mon" merge "$W/two_runs.jsonl" "$W/bom.jsonl" --out "$W/runs.jsonl" 2>"$W/err" ||
  fail "two runs in one file, and a file with a byte order mark: $(cat "$W/err")"
jq -s -e '[.[] | select(.type == "coll" and .nranks == 1) | .t_done] == [2001000000100, 3001000000100]' \
  "$W/runs.jsonl" >/dev/null || fail "the second run was not put on its own header's clock: $(grep '"nranks":1' "$W/runs.jsonl")"

# a binary trace cut short is refused, as replay refuses it
"$BIN/c4scen" gen --hosts 2 --gpus 1 --seconds 2 --bin --out "$W/t.bin" --truth /dev/null 2>/dev/null
head -c 3000 "$W/t.bin" >"$W/cut.bin"
"$BIN/c4mon" merge "$W/cut.bin" >/dev/null 2>"$W/err"
[ $? -eq 1 ] && grep -q "the rest of it was not merged" "$W/err" || fail "a cut binary trace: $(cat "$W/err")"
echo "merge: per-host clocks put on the wall clock by their headers; the straggler they hid is named"
