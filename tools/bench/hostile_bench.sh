#!/usr/bin/env bash
# hostile_bench.sh -- what strangers cost: the delay a listener flood adds to a real connect
# (100 silent or truncated connections a second to each of 4 loopback listeners for 30 s while a
# real peer connects every second and moves 200 MiB; c4-listen-flood; target: at most 1 s), and
# c4mon's memory under 2,000 unauthenticated connections each claiming a 64 KiB HELLO while a
# rank streams (c4-mon-flood; targets: grows < 32 MB, keeps < 4 MB of it 7 s later).
# Usage: tools/bench/hostile_bench.sh [BUILD_DIR]   (default build)
set -uo pipefail
BUILD=${1:-build}
BIN="$PWD/$BUILD/bin"
echo
echo "i. hostile input ..."
out=$(C4_DEBUG=NONE "$BIN/c4-listen-flood" "${C4_BENCH_FLOOD_S:-30}" 100 4 200 2>&1)
rc=$?
sed 's/^/   /' <<<"$out"
delay=$(awk '/^delay_s/ {print $2}' <<<"$out")
verdict=$(awk -v d="$delay" 'BEGIN { if (d == "" || d < 0) print "FAILED"; else if (d <= 1) print "ok"; else print "MISSED" }')
printf '%-54s %10s %8s %s\n' "listener flood: added connect delay, s" "${delay:-nan}" "<= 1" "$verdict"

# c4mon: 2,000 unauthenticated connections each claiming a 64 KiB HELLO while a rank streams.
p=$((20000 + RANDOM % 12000))
C4_TOKEN=bench "$BIN/c4mon" serve --listen 127.0.0.1:$p --events /dev/null 2>/dev/null &
mon=$!
for _ in $(seq 30); do C4_TOKEN=bench "$BIN/c4mon" status --connect 127.0.0.1:$p >/dev/null 2>&1 && break; sleep 0.1; done
mout=$(C4_DEBUG=NONE "$BIN/c4-mon-flood" 127.0.0.1:$p bench 2000 $mon 2>&1)
mrc=$?
kill $mon 2>/dev/null; wait $mon 2>/dev/null
sed 's/^/   /' <<<"$mout"
growth=$(awk '/^growth_mb/ {print $2}' <<<"$mout")
kept=$(awk '/^kept_after_mb/ {print $2}' <<<"$mout")
v() { awk -v x="$1" -v b="$2" 'BEGIN { if (x == "") print "FAILED"; else if (x < b) print "ok"; else print "MISSED" }'; }
printf '%-54s %10s %8s %s\n' "c4mon flood: memory growth, MB" "${growth:-nan}" "< 32" "$(v "$growth" 32)"
printf '%-54s %10s %8s %s\n' "c4mon flood: memory kept 7 s after, MB" "${kept:-nan}" "< 4" "$(v "$kept" 4)"
[ $rc -eq 0 ] && [ $mrc -eq 0 ]
