#!/usr/bin/env bash
# hostile_bench.sh -- what strangers cost: the delay a listener flood adds to a real connect
# (100 silent or truncated connections a second to each of 4 loopback listeners for 30 s while a
# real peer connects every second and moves 200 MiB; c4-listen-flood). Target: at most 1 s.
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
[ $rc -eq 0 ]
