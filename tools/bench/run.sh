#!/usr/bin/env bash
# run.sh -- `make bench`: c4's plugin against references measured in the same run, on the same path.
#   a. bandwidth, loopback: c4perf bw (64 MiB messages, C4_NSOCKS=S data sockets) vs iperf3 -P S;
#   b. the same over a veth pair between two network namespaces it creates (needs root);
#   c. 8-byte round trip: c4perf lat vs c4-tcp-pingpong (blocking; also busy-polling, and
#      busy-polling with one connection per direction, the shape of NCCL's send and receive comms);
#   d. bandwidth with timing on (the default) vs C4_TIMING=0;
#   e. the hot-path cost of timing one request (c4-ring-bench), and c4mon's ingest rate;
#   f. detection scored on fault scenarios at 16 to 16,384 ranks (detect_bench.sh);
#   g. c4train: CPU tokens/s and GEMM share against OpenBLAS's sgemm, and the straggler
#      planner's re-split on 4 ranks with one at half speed (train_bench.sh);
#   h. the traffic planner: 1,024 hosts x 8 ports, max link load over the lower bound for
#      c4plan's placement and for random hashing, and the time to plan (c4-plan-bench);
#   i. hostile input: the connect delay a listener flood costs (hostile_bench.sh);
#   j. c4train on documents of variable length: cost-balanced against token-count assignment
#      (varlen_bench.sh);
#   k. c4train --layout auto against an exhaustive sweep of the layouts (layout_bench.sh).
# Every figure is the median of $C4_BENCH_RUNS runs (default 5). Prints a table with targets and
# writes it as JSON to BUILD/bench.json. Exit 0 when every figure was measured (a missed target
# is reported, not an error), 1 when a measurement failed, 2 on bad usage.
# Usage: tools/bench/run.sh [BUILD_DIR]   (default build)
set -uo pipefail
BUILD=${1:-build}
RUNS=${C4_BENCH_RUNS:-5}
STREAMS=${C4_BENCH_STREAMS:-2}
BIN="$PWD/$BUILD/bin"
PLUGIN="$PWD/$BUILD/lib/libnccl-net-c4.so"
export C4_DEBUG=${C4_DEBUG:-NONE}
[ -x "$BIN/c4perf" ] && [ -f "$PLUGIN" ] || { echo "bench: build $BUILD first (make)" >&2; exit 2; }
command -v iperf3 >/dev/null || { echo "bench: iperf3 not found; run make deps" >&2; exit 2; }

. "$(dirname "$0")/lib/figures.sh" # median, ratio, verdict, num, confine, release
port() { echo $((20000 + RANDOM % 12000)); } # below the ephemeral range (32768..)
repeat() { for _ in $(seq "$RUNS"); do "$@"; done | median; }

# c4perf bandwidth in GB/s at 64 MiB (~100 messages, one to a few seconds).
# $1 = command prefix for rank 0 (the sender), $2 for rank 1, $3 = rank 0's address.
c4_bw_once() {
  local p; p=$(port)
  local args=(--plugin "$PLUGIN" -b 64M -e 64M -n "${C4_BENCH_MSGS:-100}" -w 3 --no-check)
  $2 env RANK=1 WORLD_SIZE=2 MASTER_ADDR="$3" MASTER_PORT=$p "$BIN/c4perf" "${args[@]}" >/dev/null &
  $1 env RANK=0 WORLD_SIZE=2 MASTER_ADDR="$3" MASTER_PORT=$p "$BIN/c4perf" "${args[@]}" |
    awk '!/^#/ {print $4}'
  wait
}

# iperf3 -P $STREAMS for 3 s in GB/s, as the receiver counted it; $1 server prefix, $2 client
# prefix, $3 server address. The client retries while the server is still starting.
iperf_once() {
  local p; p=$(port)
  $1 iperf3 -s -1 -p "$p" >/dev/null 2>&1 &
  local srv=$! out=""
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    sleep 0.2
    out=$($2 iperf3 -c "$3" -p "$p" -P "$STREAMS" -t 3 -f m 2>/dev/null) && break
  done
  kill "$srv" 2>/dev/null
  wait "$srv" 2>/dev/null
  awk '/receiver/ {v=$(NF-2)} END {if (v > 0) printf "%.3f\n", v / 8000; else print "nan"}' <<<"$out"
}

rtt_c4_once() {
  C4_SOCKET_IFNAME=lo "$BIN/c4perf" --plugin "$PLUGIN" --spawn 2 --mode lat -b 8 -e 8 -n 20000 -w 500 |
    awk '!/^#/ {print $3}'
}

rtt_tcp_once() { # $@ = flags for c4-tcp-pingpong
  local p; p=$(port)
  "$BIN/c4-tcp-pingpong" "$@" server "$p" &
  "$BIN/c4-tcp-pingpong" "$@" client 127.0.0.1 "$p" --size 8 --iters 20000 | awk '/median/ {print $2}'
  wait
}

echo "c4 bench: $RUNS runs per figure, medians; $STREAMS TCP streams (C4_NSOCKS=$STREAMS);" \
  "$(nproc) cores; $(uname -r)"
export C4_NSOCKS=$STREAMS
t_start=$SECONDS

echo "a. bandwidth over loopback ..."
lo_c4=$(C4_SOCKET_IFNAME=lo repeat c4_bw_once "" "" 127.0.0.1)
lo_ip=$(repeat iperf_once "" "" 127.0.0.1)

echo "b. bandwidth over veth between namespaces ..."
ns_c4=nan ns_ip=nan ns_note=""
if [ "$(id -u)" -eq 0 ] && command -v ip >/dev/null; then
  cleanup() { ip netns del c4b0 2>/dev/null; ip netns del c4b1 2>/dev/null; }
  trap cleanup EXIT
  cleanup
  if ip netns add c4b0 && ip netns add c4b1 &&
    ip link add c4b0v type veth peer name c4b1v &&
    ip link set c4b0v netns c4b0 && ip link set c4b1v netns c4b1 &&
    ip -n c4b0 addr add 198.18.0.1/30 dev c4b0v && ip -n c4b1 addr add 198.18.0.2/30 dev c4b1v &&
    ip -n c4b0 link set c4b0v up && ip -n c4b1 link set c4b1v up &&
    ip -n c4b0 link set lo up && ip -n c4b1 link set lo up; then
    ns_c4=$(C4_SOCKET_IFNAME=c4b repeat c4_bw_once "ip netns exec c4b0" "ip netns exec c4b1" 198.18.0.1)
    ns_ip=$(repeat iperf_once "ip netns exec c4b1" "ip netns exec c4b0" 198.18.0.2)
  else
    ns_note="could not create the namespaces"
    echo "   $ns_note" >&2
  fi
  cleanup
else
  ns_note="skipped: needs CAP_NET_ADMIN"
  echo "   veth between namespaces: $ns_note (run make bench as root)"
fi

echo "c. 8-byte round trip ..."
rtt_c4=$(repeat rtt_c4_once)
rtt_blk=$(repeat rtt_tcp_once)
rtt_spin=$(repeat rtt_tcp_once --spin)
rtt_two=$(repeat rtt_tcp_once --spin --two)

# d. Timing on vs off: one rank per core (less scheduler noise), interleaved so drift hits both
# alike, more runs than the others; the median of the per-pair ratios is reported beside.
echo "d. bandwidth with timing on vs C4_TIMING=0 ..."
pin0="" pin1=""
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then pin0="taskset -c 0" pin1="taskset -c 1"; fi
on=() off=() pair=()
for _ in $(seq "${C4_BENCH_TIMING_RUNS:-7}"); do
  o=$(C4_TIMING=0 C4_SOCKET_IFNAME=lo c4_bw_once "$pin0" "$pin1" 127.0.0.1)
  n=$(C4_TIMING=1 C4_SOCKET_IFNAME=lo c4_bw_once "$pin0" "$pin1" 127.0.0.1)
  off+=("$o") on+=("$n") pair+=("$(ratio "$n" "$o")")
done
bw_on=$(printf '%s\n' "${on[@]}" | median)
bw_off=$(printf '%s\n' "${off[@]}" | median)
pair_ratio=$(printf '%s\n' "${pair[@]}" | median)
best() { grep -E '^[0-9.]+$' | sort -g | tail -1; } # interference only ever slows a run down
best_ratio=$(ratio "$(printf '%s\n' "${on[@]}" | best)" "$(printf '%s\n' "${off[@]}" | best)")
spread=$(printf '%s\n' "${off[@]}" | grep -E '^[0-9.]+$' | sort -g |
  awk '{v[NR]=$1} END {if (NR) printf "%.2f-%.2f", v[1], v[NR]; else print "nan"}')

echo "e. hot-path cost and c4mon ingest ..."
hot=nan enc=nan
if [ -x "$BIN/c4-ring-bench" ]; then
  ringout=$("$BIN/c4-ring-bench")
  hot=$(awk '/timing_ns_per_request/ {print $2}' <<<"$ringout")
  enc=$(awk '/reporter_encode_ns/ {print $2}' <<<"$ringout")
fi

# c4mon ingest: 16,384 rank connections from a load generator; records decoded per second of
# c4mon's own CPU time while they stream (decode and count; no --record), checked against the
# count c4mon reports.
ingest_once() {
  local p; p=$(port)
  "$BIN/c4mon" serve --listen 127.0.0.1:$p --token bench 2>/dev/null &
  local mon=$!
  for _ in $(seq 30); do # until it answers (3 s at most)
    C4_TOKEN=bench "$BIN/c4mon" status --connect 127.0.0.1:$p >/dev/null 2>&1 && break
    sleep 0.1
  done
  local out; out=$("$BIN/c4-mon-load" 127.0.0.1:$p bench "${C4_BENCH_RANKS:-16384}" 3 $mon)
  local sent; sent=$(awk '/records_sent/ {print $2}' <<<"$out")
  local got; got=$(C4_TOKEN=bench "$BIN/c4mon" status --connect 127.0.0.1:$p --json | sed 's/.*"records":\([0-9]*\).*/\1/')
  kill $mon 2>/dev/null; wait $mon 2>/dev/null
  sleep 1
  if [ -n "$sent" ] && [ "$sent" = "$got" ]; then awk '/records_per_core_s/ {print $2}' <<<"$out"; else echo nan; fi
}
ingest=nan
if [ -x "$BIN/c4mon" ] && [ -x "$BIN/c4-mon-load" ]; then
  ingest=$(for _ in 1 2 3; do ingest_once; done | median)
fi

# The table: measure, c4, reference, ratio, target, verdict.
row_verdict() { # ratio, op (ge|le), bound: ok, MISSED or - (not measured)
  awk -v r="$1" -v op="$2" -v b="$3" 'BEGIN {
    if (r !~ /^[0-9.]+$/) print "-"; else if ((op == "ge" && r >= b) || (op == "le" && r <= b)) print "ok";
    else print "MISSED" }'
}
rows_json=()
row() { # label, key, c4, reference, op, bound
  local r; r=$(ratio "$3" "$4")
  local sym; sym=$([ "$5" = ge ] && echo ">=" || echo "<=")
  printf '%-54s %10s %10s %8s %8s %s\n' "$1" "$3" "$4" "$r" "$sym $6" "$(row_verdict "$r" "$5" "$6")"
  rows_json+=("$(printf '{"measure": "%s", "c4": %s, "reference": %s, "ratio": %s, "target": "%s %s", "met": %s}' \
    "$2" "$(num "$3")" "$(num "$4")" "$(num "$r")" "$sym" "$6" \
    "$(met "$(row_verdict "$r" "$5" "$6")")")")
}
met() { if [ "$1" = ok ]; then echo true; elif [ "$1" = MISSED ]; then echo false; else echo null; fi; }

echo
printf '%-54s %10s %10s %8s %8s %s\n' "measure" "c4" "reference" "ratio" "target" ""
row "bandwidth GB/s, loopback, 64 MiB vs iperf3 -P $STREAMS" bw_loopback "$lo_c4" "$lo_ip" ge 0.95
row "bandwidth GB/s, veth across namespaces vs iperf3 -P $STREAMS" bw_veth "$ns_c4" "$ns_ip" ge 0.95
[ -n "$ns_note" ] && printf '  %s\n' "$ns_note"
row "8 B round trip us vs blocking TCP ping-pong" rtt8_vs_tcp_blocking "$rtt_c4" "$rtt_blk" le 1.3
row "8 B round trip us vs busy-polling TCP, 1 socket" rtt8_vs_tcp_spin "$rtt_c4" "$rtt_spin" le 1.3
row "8 B round trip us vs busy-polling TCP, 1 per direction" rtt8_vs_tcp_spin_two "$rtt_c4" "$rtt_two" le 1.3
row "bandwidth GB/s, timing on vs C4_TIMING=0 (pinned)" bw_timing_on_vs_off "$bw_on" "$bw_off" ge 0.99
printf '%-54s %10s %10s %8s\n' "  same, median of per-pair ratios; C4_TIMING=0 range" "" "$spread" "$pair_ratio"
printf '%-54s %10s %10s %8s\n' "  same, best run on vs best run off" "" "" "$best_ratio"
row "c4mon ingest, records/s per core, ${C4_BENCH_RANKS:-16384} ranks" c4mon_ingest "$ingest" 5000000 ge 1
printf '%-54s %10s\n' "timing cost, ns per request (clocks + record + push)" "$hot"
printf '%-54s %10s\n' "reporter, ns per record on c4's thread (encode)" "$enc"
echo "($((SECONDS - t_start)) s)"

# f. Detection, scored on generated fault scenarios (writes $BUILD/bench-detect.json).
echo
echo "f. detection ..."
bash "$(dirname "$0")/detect_bench.sh" "$BUILD" || echo "   the detection bench failed" >&2

# g. The trainer (writes $BUILD/bench-train.json).
bash "$(dirname "$0")/train_bench.sh" "$BUILD" || echo "   the trainer bench failed" >&2

# j. The trainer on documents of variable length (writes $BUILD/bench-varlen.json).
bash "$(dirname "$0")/varlen_bench.sh" "$BUILD" || echo "   the variable-length bench failed" >&2
# k. --layout auto against an exhaustive sweep (writes $BUILD/bench-layout.json).
bash "$(dirname "$0")/layout_bench.sh" "$BUILD" || echo "   the layout bench failed" >&2

# h. The traffic planner (targets: plan <= 1.05 x the bound, <= 100 ms).
echo
"$BIN/c4-plan-bench" || echo "   the planner bench failed" >&2

# i. Hostile input: what a stranger's flood costs the job and c4mon.
bash "$(dirname "$0")/hostile_bench.sh" "$BUILD" || echo "   the hostile-input bench failed" >&2

{
  printf '{"runs": %s, "streams": %s, "seconds": %s,\n' "$RUNS" "$STREAMS" "$((SECONDS - t_start))"
  printf ' "bw_loopback_GBps": {"c4": %s, "iperf3": %s},\n' "$(num "$lo_c4")" "$(num "$lo_ip")"
  printf ' "bw_veth_GBps": {"c4": %s, "iperf3": %s, "note": "%s"},\n' "$(num "$ns_c4")" "$(num "$ns_ip")" "$ns_note"
  printf ' "rtt8_us": {"c4": %s, "tcp_blocking": %s, "tcp_spin": %s, "tcp_spin_two_sockets": %s},\n' \
    "$(num "$rtt_c4")" "$(num "$rtt_blk")" "$(num "$rtt_spin")" "$(num "$rtt_two")"
  printf ' "bw_timing_GBps": {"on": %s, "off": %s, "median_pair_ratio": %s, "best_ratio": %s},\n' \
    "$(num "$bw_on")" "$(num "$bw_off")" "$(num "$pair_ratio")" "$(num "$best_ratio")"
  printf ' "timing_ns_per_request": %s, "reporter_encode_ns": %s,\n' "$(num "$hot")" "$(num "$enc")"
  printf ' "c4mon_ingest_records_per_core_s": %s,\n' "$(num "$ingest")"
  printf ' "table": [\n  %s\n ]}\n' "$(IFS=$'\n'; printf '%s' "${rows_json[*]}" | sed '$!s/$/,/' | sed '2,$s/^/  /')"
} >"$BUILD/bench.json"
echo "wrote $BUILD/bench.json"

# Every figure that should have been measured must have been.
failed=0
for v in "$lo_c4" "$lo_ip" "$rtt_c4" "$rtt_blk" "$bw_on" "$bw_off"; do
  [[ "$v" =~ ^[0-9.]+$ ]] || failed=1
done
if [ -z "$ns_note" ]; then
  for v in "$ns_c4" "$ns_ip"; do [[ "$v" =~ ^[0-9.]+$ ]] || failed=1; done
fi
[ "$failed" -eq 0 ] || echo "bench: some figures could not be measured (nan above)" >&2
exit "$failed"
