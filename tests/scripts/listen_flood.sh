#!/usr/bin/env bash
# listen_flood.sh -- the socket transport's listeners under a stranger's flood, short: 100 silent
# or truncated connections a second to each of 4 loopback listeners for 4 s, while a real
# connector connects every second and the first pair moves 200 MiB checked byte for byte
# (c4-listen-flood). Passes when every real connect got through and every byte arrived; the
# delay the flood costs is a figure of `make bench` (tools/bench/hostile_bench.sh), not checked
# here. Usage: listen_flood.sh [BUILD_DIR] (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
out=$(C4_DEBUG=NONE "$BUILD/bin/c4-listen-flood" 4 100 4 200 2>&1)
rc=$?
echo "$out"
[ $rc -eq 0 ] || { echo "listen_flood: FAILED (exit $rc)"; exit 1; }
grep -q "failed 0," <<<"$out" || { echo "listen_flood: FAILED: a real connect failed"; exit 1; }
grep -q "200 of 200 MiB intact" <<<"$out" || { echo "listen_flood: FAILED: data lost"; exit 1; }
echo "listen_flood: ok"
