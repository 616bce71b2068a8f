#!/usr/bin/env bash
# cli.sh -- every c4 tool keeps the command-line convention of docs/cli.md: --version and --help
# exit 0 on stdout; a bad flag, value or subcommand is one stderr line naming it, exit 2; a file
# that cannot be read is "PROG: PATH: reason", exit 1; no message carries a source place.
# Usage: cli.sh [BUILD_DIR] (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
BIN=$BUILD/bin
WORK=$(mktemp -d /tmp/c4-cli-test-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
failed=0
fail() {
  echo "cli: FAILED: $*"
  failed=1
}

# expect STATUS NEEDLE CMD...: runs CMD; its exit status must be STATUS, its stderr one line (for
# 2) or ending in one line (for 1) that holds NEEDLE, and no line may name a source file.
expect() {
  local want=$1 needle=$2
  shift 2
  "$@" >"$WORK/out" 2>"$WORK/err" </dev/null
  local got=$?
  local what="'$*'"
  [ "$got" = "$want" ] || fail "$what exited $got, not $want: $(head -c 300 "$WORK/err")"
  if [ "$want" = 2 ]; then
    [ "$(wc -l <"$WORK/err")" = 1 ] || fail "$what: the usage error is not one line: $(cat "$WORK/err")"
  fi
  [ "$want" = 0 ] || grep -qF -- "$needle" <(tail -n 1 "$WORK/err") ||
    fail "$what: stderr does not name '$needle': $(cat "$WORK/err")"
  ! grep -qE '[a-z_]+\.c:[0-9]+' "$WORK/err" || fail "$what: a source place in: $(cat "$WORK/err")"
}

for tool in c4mon c4plan c4cap c4train c4perf c4scen; do
  expect 0 "" "$BIN/$tool" --version
  grep -qx "$tool [0-9][0-9.]*" "$WORK/out" || fail "$tool --version printed: $(cat "$WORK/out")"
  expect 0 "" "$BIN/$tool" --help
  grep -q "usage" "$WORK/out" || fail "$tool --help printed no usage on stdout"
done

# Bad flags, values and subcommands: exit 2, one line naming what was wrong
expect 2 "'--bogus'" "$BIN/c4mon" serve --bogus
expect 2 "'frob'" "$BIN/c4mon" frob
expect 2 "--listen" "$BIN/c4mon" serve
expect 2 "127.0.0.1:99999" "$BIN/c4mon" serve --listen 127.0.0.1:99999
expect 2 "--png" "$BIN/c4mon" matrix --trace x.jsonl
expect 2 "'--bogus'" "$BIN/c4plan" assign --bogus
expect 2 "'frob'" "$BIN/c4plan" frob
expect 2 "'--bogus'" "$BIN/c4cap" --bogus
expect 2 "'--bogus'" "$BIN/c4train" --bogus
expect 2 "--layers" "$BIN/c4train" --layers many
# an option of a mode not asked for would be ignored: refused, naming what it needs
expect 2 "--assign needs --max-context" "$BIN/c4train" --assign tokens
expect 2 "--ckpt-every needs --ckpt-dir" "$BIN/c4train" --ckpt-every 5
expect 2 "--ckpt-strict needs --ckpt-dir" "$BIN/c4train" --ckpt-strict
expect 2 "--probe-steps needs --layout auto" "$BIN/c4train" --probe-steps 8
expect 2 "'frob'" "$BIN/c4perf" --mode frob
expect 2 "'1X'" "$BIN/c4perf" -b 1X
# output that cannot be written (a full disk) is exit 1, said, never a silent success
for cmd in "c4train --steps 2 --layers 1 --width 8 --heads 1 --context 8 --eval-windows 0" \
  "c4perf --spawn 2 -e 64 --json" "c4mon --help" "c4plan --version" "c4scen --help" "c4cap --help" \
  "c4plan flows --help"; do
  $BIN/$cmd >/dev/full 2>"$WORK/err"
  [ $? = 1 ] && grep -q "standard output: " "$WORK/err" ||
    fail "$cmd >/dev/full: $(cat "$WORK/err")"
done
"$BIN/c4train" --steps 2 --layers 1 --width 8 --heads 1 --context 8 --eval-windows 0 \
  --json-out /dev/full >/dev/null 2>"$WORK/err"
[ $? = 1 ] && grep -q -- "--json-out /dev/full: " "$WORK/err" ||
  fail "c4train --json-out /dev/full: $(cat "$WORK/err")"
"$BIN/c4perf" --spawn 2 --mode allreduce -e 64 --timeline /dev/full >/dev/null 2>"$WORK/err"
[ $? = 1 ] && grep -q -- "--timeline /dev/full: a write failed" "$WORK/err" ||
  fail "c4perf --timeline /dev/full: $(cat "$WORK/err")"
# a configuration no restart mends is exit 1, not the lost peer's 75 that asks a launcher for one
expect 1 "net plugin /etc/passwd" "$BIN/c4train" --plugin /etc/passwd --steps 1
expect 1 "an address that does not resolve" env RANK=0 WORLD_SIZE=2 MASTER_ADDR=no-such-host.invalid \
  MASTER_PORT=29540 "$BIN/c4train" --steps 1
expect 2 "--min-bytes must be at least 1" "$BIN/c4perf" --spawn 2 -b 0 -e 1K
# a size past the plugin's largest message is refused before anything is sent (it spun for a
# minute on refused isends); buffers that cannot be had are said
"$BIN/c4perf" --spawn 2 -b 1025M -e 1025M >/dev/null 2>"$WORK/err"
[ $? = 2 ] && grep -q "above the plugin's largest message (1073741824)" "$WORK/err" ||
  fail "c4perf -e 1025M: $(cat "$WORK/err")"
# (4 TB, which no machine gives, and ASan too returns NULL for; a limit on the address space
# would stop ASan's own start)
ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}allocator_may_return_null=1" \
  expect 1 "cannot allocate buffers of 4294967296000 bytes" \
  "$BIN/c4perf" --spawn 2 --mode allreduce -b 4000G -e 4000G
expect 2 "RANK" env RANK=abc WORLD_SIZE=2 "$BIN/c4perf"
expect 2 "'--bogus'" "$BIN/c4scen" gen --bogus
for tool in c4mon c4plan c4scen; do
  "$BIN/$tool" >/dev/null 2>&1
  [ $? = 2 ] || fail "$tool without a command does not exit 2"
done

# Files that cannot be read: exit 1, "PROG: PATH: reason"
NOFILE=/nonexistent/c4-cli-test
expect 1 "c4mon replay: $NOFILE.jsonl: No such file or directory" "$BIN/c4mon" replay "$NOFILE.jsonl"
expect 1 "c4mon matrix: $NOFILE.jsonl: No such file or directory" \
  "$BIN/c4mon" matrix --trace "$NOFILE.jsonl" --png "$WORK/m.png"
expect 1 "c4plan assign: $NOFILE.json: No such file or directory" \
  "$BIN/c4plan" assign --topo "$NOFILE.json" --flows "$NOFILE.flows"
expect 1 "c4cap: $NOFILE.pcap: No such file or directory" "$BIN/c4cap" -r "$NOFILE.pcap"
# c4cap: one capture file; an interface once (twice, its packets counted twice); --seconds live
expect 2 "-r given twice" "$BIN/c4cap" -r "$NOFILE.pcap" -r "$NOFILE-2.pcap"
expect 2 "-i lo given twice" "$BIN/c4cap" -i lo -i lo
expect 2 "--seconds is for live capture" "$BIN/c4cap" -r "$NOFILE.pcap" --seconds 2
# without --topo, c4plan assign reads $C4_TOPO (then the fabric's own file), as probe does
C4_TOPO="$NOFILE-env.json" expect 1 "c4plan assign: $NOFILE-env.json: No such file or directory" \
  "$BIN/c4plan" assign --flows "$NOFILE.flows"
expect 1 "$NOFILE.txt: No such file or directory" \
  "$BIN/c4train" --data "$NOFILE.txt" --steps 1 --layers 1 --width 8 --heads 1 --context 8
expect 1 "c4scen score: $NOFILE.json: No such file or directory" \
  "$BIN/c4scen" score --truth "$NOFILE.json" --events "$NOFILE.jsonl"

# A variable the plugin cannot use is refused aloud, and the run goes on with the default.
C4_DEBUG=WARN C4_NSOCKS=lots "$BIN/c4perf" --spawn 2 -b 64 -e 64 -n 2 >/dev/null 2>"$WORK/err" ||
  fail "c4perf with C4_NSOCKS=lots failed: $(cat "$WORK/err")"
grep -q "C4_NSOCKS=lots refused" "$WORK/err" || fail "C4_NSOCKS=lots was not refused aloud"
# a misspelt C4_DEBUG is said, not quietly taken as WARN
C4_DEBUG=INF0 "$BIN/c4mon" events --now >/dev/null 2>"$WORK/err"
grep -q "C4_DEBUG=INF0 refused" "$WORK/err" || fail "C4_DEBUG=INF0 was not refused: $(cat "$WORK/err")"
# c4train's own defaults stand in for what it refuses, not the plugin's minute
C4_DEBUG=WARN C4_COLL_TIMEOUT_MS=lots "$BIN/c4train" --steps 1 --layers 1 --width 8 --heads 1 --context 8 \
  >/dev/null 2>"$WORK/err"
grep -q "C4_COLL_TIMEOUT_MS=lots refused.*using 15000" "$WORK/err" ||
  fail "c4train with C4_COLL_TIMEOUT_MS=lots: $(cat "$WORK/err")"
# decimal only (010 is ten, not octal eight): signs, blanks and hex are refused
for v in +2 0x3 " 2"; do
  C4_DEBUG=WARN C4_NSOCKS="$v" "$BIN/c4perf" --spawn 2 -b 64 -e 64 -n 2 >/dev/null 2>"$WORK/err"
  grep -q "C4_NSOCKS=$v refused" "$WORK/err" || fail "C4_NSOCKS='$v' was not refused: $(cat "$WORK/err")"
done

# A daemon says where it listens, on a timestamped line.
echo right-token >"$WORK/token"
C4_DEBUG=WARN "$BIN/c4mon" serve --listen 127.0.0.1:0 --token-file "$WORK/token" >/dev/null 2>"$WORK/err" &
pid=$!
for _ in $(seq 300); do # up to 30 s: an ASan c4mon on a loaded machine starts slowly
  grep -q "listening" "$WORK/err" && break
  sleep 0.1
done
grep -qE '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:.]+Z NOTE c4mon: listening for ranks on 127\.0\.0\.1:[1-9][0-9]*$' \
  "$WORK/err" || fail "c4mon serve did not say where it listens: $(cat "$WORK/err")"
port=$(sed -n 's/.*listening for ranks on 127\.0\.0\.1:\([0-9]*\)$/\1/p' "$WORK/err")
# a refused token is said once a rank, not on every retry (it was said 32 times in 52 s)
C4_DEBUG=WARN C4_MONITOR=127.0.0.1:$port C4_TOKEN=wrong-token "$BIN/c4perf" --spawn 2 --mode lat \
  -b 8 -e 8 -n 100000 >/dev/null 2>"$WORK/perf-err" # seconds: retries every 0.1 s, doubling
said=$(grep -c "refused this job" "$WORK/perf-err")
[ "$said" -ge 1 ] && [ "$said" -le 2 ] || fail "a refused token was said $said times: $(head -5 "$WORK/perf-err")"
kill "$pid"
wait "$pid"
# a C4_MONITOR that nothing answers is said (the job ran unmonitored without a word)
# (and heartbeats slower than c4mon's lost threshold allows are refused)
C4_DEBUG=WARN C4_MONITOR=127.0.0.1:1 C4_HEARTBEAT_MS=20000 "$BIN/c4perf" --spawn 2 -b 64 -e 64 -n 2 \
  >/dev/null 2>"$WORK/perf-err"
grep -q "c4mon at 127.0.0.1:1: cannot connect: Connection refused" "$WORK/perf-err" ||
  fail "an unreachable C4_MONITOR was not said: $(cat "$WORK/perf-err")"
grep -q "C4_HEARTBEAT_MS=20000 refused: not an integer from 10 to 4000" "$WORK/perf-err" ||
  fail "C4_HEARTBEAT_MS=20000 was not refused: $(cat "$WORK/perf-err")"

# --token-file names why it could not be read: a directory is not "empty"
expect 1 "--token-file $WORK: Is a directory" "$BIN/c4mon" status --connect 127.0.0.1:1 --token-file "$WORK"
expect 1 "--token-file $NOFILE: No such file or directory" \
  "$BIN/c4mon" status --connect 127.0.0.1:1 --token-file "$NOFILE"
: >"$WORK/empty-token"
expect 1 "--token-file $WORK/empty-token: empty" \
  "$BIN/c4mon" status --connect 127.0.0.1:1 --token-file "$WORK/empty-token"

# c4plan assign --trace (the README's form) on docs/topology.md's example fabric: the plan has
# the trace's flow (it crashed on the first flow of any trace); a directory is no trace
awk '/^```json/ {f = 1; next} /^```/ {if (f) exit} f' docs/topology.md >"$WORK/topo.json"
echo '{"v":1,"type":"xfer","rank":0,"peer":1,"host":"h0","peer_host":"h1","dir":"send","bytes":1048576,"t_post":1000,"t_done":3000}' >"$WORK/two.jsonl"
"$BIN/c4plan" assign --topo "$WORK/topo.json" --trace "$WORK/two.jsonl" --out "$WORK/plan.json" >/dev/null 2>"$WORK/err" ||
  fail "c4plan assign --trace exited $?: $(cat "$WORK/err")"
[ "$(jq -c '[.flows[] | [.src, .dst, .bytes]]' "$WORK/plan.json" 2>/dev/null)" = '[["h0","h1",1048576]]' ] ||
  fail "c4plan assign --trace: the plan lacks the trace's flow: $(cat "$WORK/plan.json")"
# --out - is standard output (the report then on stderr), not a file named "-"
(bin=$(realpath "$BIN") && cd "$WORK" && "$bin/c4plan" assign --topo topo.json --trace two.jsonl --out - >stdout.json 2>report) ||
  fail "c4plan assign --out - exited $?: $(cat "$WORK/report")"
[ ! -e "$WORK/-" ] && [ "$(jq -c . "$WORK/stdout.json")" = "$(jq -c . "$WORK/plan.json")" ] && grep -q "x bound" "$WORK/report" ||
  fail "c4plan assign --out -: plan $(head -c 200 "$WORK/stdout.json"), report $(cat "$WORK/report")"
expect 2 "--out - and --json both write to standard output" \
  "$BIN/c4plan" assign --topo "$WORK/topo.json" --trace "$WORK/two.jsonl" --out - --json
# hosts that no spine joins: the error names them
jq -c '.links |= map(select(.id != "l0-s1" and .id != "l1-s0"))' "$WORK/topo.json" >"$WORK/split.json"
expect 1 "$WORK/split.json: no path from h0 to h1" \
  "$BIN/c4plan" assign --topo "$WORK/split.json" --trace "$WORK/two.jsonl"
# a host with a port on each leaf reaches the other host through the leaf they share: random
# hashing picks among the pairs of ports that reach each other, whatever the seed (it picked any
# pair, and half the seeds failed as "out of memory")
jq -c '.hosts[0].ports += [{"port":1,"ifname":"eth1","addr":"198.18.1.3","leaf":"l1","gbps":1}]' \
  "$WORK/split.json" >"$WORK/twoports.json"
for seed in 1 2 3 4 5 6; do
  "$BIN/c4plan" assign --topo "$WORK/twoports.json" --trace "$WORK/two.jsonl" --seed $seed \
    >/dev/null 2>"$WORK/err" || fail "c4plan assign --seed $seed on two ports: $(cat "$WORK/err")"
done
# c4plan probe: a host is no path to itself; ports on one leaf are not probed, and say so
expect 1 "--dst h0 is the source host h0 itself" \
  "$BIN/c4plan" probe --topo "$WORK/topo.json" --src h0 --dst h0
jq -c '.hosts[1].ports[0].leaf = "l0"' "$WORK/topo.json" >"$WORK/oneleaf.json"
"$BIN/c4plan" probe --topo "$WORK/oneleaf.json" --src h0 --dst h1 --sports 49152-49153 >"$WORK/out" 2>&1 &&
  [ "$(grep -c 'l0 .*(not probed: both ends on this leaf)' "$WORK/out")" = 2 ] ||
  fail "c4plan probe within one leaf: $(cat "$WORK/out")"
mkdir "$WORK/adir"
expect 1 "c4plan assign: $WORK/adir: Is a directory" \
  "$BIN/c4plan" assign --topo "$WORK/topo.json" --trace "$WORK/adir" --out "$WORK/plan2.json"
expect 1 "c4plan assign: $NOFILE.jsonl: No such file or directory" \
  "$BIN/c4plan" assign --topo "$WORK/topo.json" --trace "$NOFILE.jsonl" --out "$WORK/plan2.json"

# a picture that cannot be written says why
"$BIN/c4mon" matrix --trace "$WORK/two.jsonl" --png "$NOFILE.png" >/dev/null 2>"$WORK/err"
[ $? = 1 ] && grep -q "$NOFILE.png: No such file or directory" "$WORK/err" ||
  fail "matrix --png to a missing directory: $(cat "$WORK/err")"

[ "$failed" = 0 ] && echo "cli: every tool keeps the convention"
exit "$failed"
