#!/usr/bin/env bash
# fault.sh -- C4_FAULT does what docs/fault.md says, measured with c4perf over two local ranks:
# rate:peer=1,mbps=100 on rank 0 brings rank 0 -> 1 bandwidth to 100 Mbit/s (within 20%),
# delay:peer=1,us=2000 adds ~2 ms to an 8-byte round trip, a stall window holds every request
# until it closes, and a malformed clause is logged and ignored. No root needed; ~10 s.
# Usage: fault.sh [BUILD_DIR] (default $C4_BUILD_DIR, else build).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
C4PERF="$BUILD/bin/c4perf"
[ -x "$C4PERF" ] || { echo "fault: $C4PERF is missing (build first)"; exit 1; }
[ -e "$BUILD/lib/libnccl-net-c4.so" ] || { echo "fault: the plugin is missing"; exit 1; }
WORK=$(mktemp -d /tmp/c4-fault-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
export C4_SOCKET_IFNAME=lo # loopback: the fault, not the machine's network, sets the figures

fail() {
  echo "fault: FAILED: $*"
  tail -20 "$WORK/out" 2>/dev/null
  exit 1
}

# perf ARGS...: runs c4perf on two spawned ranks, prints the last table row.
perf() {
  timeout 60 "$C4PERF" --spawn 2 "$@" >"$WORK/out" 2>&1 || fail "c4perf $* exited $?"
  grep -v '^#' "$WORK/out" | grep -E '^ +[0-9]' | tail -1
}

# 1. rate: one request in flight, so the figure is the pacer's, not queued requests' overlap.
row=$(C4_FAULT="rate:peer=1,mbps=100,rank=0" perf --mode bw -b 1M -e 1M -n 12 -w 2 --inflight 1)
mbps=$(awk '{printf "%.1f", $1 * 8 / $3}' <<<"$row")
echo "fault: rate:peer=1,mbps=100 -> $mbps Mbit/s"
awk -v m="$mbps" 'BEGIN { exit !(m >= 80 && m <= 120) }' || fail "rate gave $mbps Mbit/s, not 100 +- 20%"

# 2. delay: median 8-byte round trip with and without the clause.
base=$(perf --mode lat -b 8 -e 8 -n 200 | awk '{print $3}')
slow=$(C4_FAULT="delay:peer=1,us=2000,rank=0" perf --mode lat -b 8 -e 8 -n 200 | awk '{print $3}')
added=$(awk -v a="$slow" -v b="$base" 'BEGIN {printf "%.0f", a - b}')
echo "fault: delay:peer=1,us=2000 -> round trip $base us -> $slow us (+$added us)"
awk -v d="$added" 'BEGIN { exit !(d >= 1600 && d <= 2600) }' || fail "delay added $added us, not ~2000"

# 3. stall: rank 0 makes no progress for the first 1.5 s after the plugin's init: its first
# requests stay pending until then, so the run (tens of ms without it) cannot finish sooner.
t0=$(date +%s%N)
perf --mode lat -b 8 -e 8 -n 20 -w 1 >/dev/null
free_ms=$(( ($(date +%s%N) - t0) / 1000000 ))
t0=$(date +%s%N)
C4_FAULT="stall:rank=0,after_s=0,for_s=1.5" perf --mode lat -b 8 -e 8 -n 20 -w 1 >/dev/null
ms=$(( ($(date +%s%N) - t0) / 1000000 ))
echo "fault: stall:after_s=0,for_s=1.5 -> run took $ms ms (without it: $free_ms ms)"
[ "$ms" -ge 1400 ] && [ "$free_ms" -lt 1000 ] || fail "the stalled run took $ms ms, the free one $free_ms ms"

# 4. a malformed clause is logged with what and where, ignored, and the run goes on.
C4_DEBUG=WARN C4_FAULT="rate:peer=x;delay:peer=1,us=0" perf --mode lat -b 8 -e 8 -n 10 >/dev/null
grep -q 'C4_FAULT clause 1 "rate:peer=x": peer is not an integer' "$WORK/out" ||
  fail "the malformed clause was not reported"
echo "fault: malformed clause reported and ignored"
echo "fault: ok"
