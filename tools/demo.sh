#!/usr/bin/env bash
# demo.sh -- the README's first command (make demo): two ranks on this machine exchange data through
# the c4 NCCL net plugin over loopback; prints bandwidth and latency, and shows the timing records
# the plugin wrote for every request.
set -euo pipefail
BUILD=${1:-build}
PERF="$BUILD/bin/c4perf"
PLUGIN="$PWD/$BUILD/lib/libnccl-net-c4.so"
TRACE_DIR=$(mktemp -d /tmp/c4-demo.XXXXXX)
trap 'rm -rf "$TRACE_DIR"' EXIT
export C4_SOCKET_IFNAME=${C4_SOCKET_IFNAME:-lo}
export C4_TRACE="$TRACE_DIR/trace.jsonl"

echo "c4 demo: 2 ranks on $(hostname), loopback, through $PLUGIN"
echo
echo "== bandwidth, 8 requests in flight (like NCCL's proxy), sizes 8 B .. 64 MiB"
"$PERF" --plugin "$PLUGIN" --spawn 2 --mode bw -b 8 -e 64M -f 8
echo
echo "== latency, ping-pong"
"$PERF" --plugin "$PLUGIN" --spawn 2 --mode lat -b 8 -e 64K -f 8 -n 5000 -w 200
echo
echo "== allreduce over the plugin, 4 ranks (bus bandwidth as nccl-tests defines it)"
"$PERF" --plugin "$PLUGIN" --spawn 4 --mode allreduce -b 1K -e 16M -f 16
echo
n=$(wc -l <"$C4_TRACE")
echo "== timing: the plugin wrote $n JSON lines to C4_TRACE (docs/trace-format.md); two of them:"
grep '"type":"xfer"' "$C4_TRACE" | grep '"dir":"send"' | tail -1
grep '"type":"xfer"' "$C4_TRACE" | grep '"dir":"recv"' | tail -1
grep '"type":"summary"' "$C4_TRACE" | tail -1
