#!/usr/bin/env bash
# run.sh -- `make bench`: c4's plugin against references measured in the same run, on the same path.
#   1. bandwidth: c4perf (64 MiB messages, C4_NSOCKS=S data sockets) vs iperf3 -P S, over
#      loopback and over a veth pair between two network namespaces (the latter needs root);
#   2. 8-byte round trip: c4perf lat vs plain TCP ping-pong (blocking; busy-polling; busy-polling
#      with one connection per direction, the shape of NCCL's send and receive comms);
#   3. bandwidth with timing on vs C4_TIMING=0;
#   4. the hot-path cost of timing one request (c4-ring-bench).
# Every figure is the median of $RUNS runs. Prints a table and writes BUILD/bench.json.
set -uo pipefail
BUILD=${1:-build}
RUNS=${C4_BENCH_RUNS:-5}
STREAMS=${C4_BENCH_STREAMS:-2}
BIN="$PWD/$BUILD/bin"
PLUGIN="$PWD/$BUILD/lib/libnccl-net-c4.so"
export C4_DEBUG=${C4_DEBUG:-NONE}
command -v iperf3 >/dev/null || { echo "bench: iperf3 not found; run make deps" >&2; exit 2; }

median() { sort -g | awk '{v[NR]=$1} END {if (NR) print v[int((NR+1)/2)]; else print "nan"}'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN {if (b > 0) printf "%.3f", a / b; else print "nan"}'; }

# c4perf bandwidth in GB/s at 64 MiB; $1 = command prefix for rank 0, $2 for rank 1, $3 master addr.
c4_bw_once() {
  local port=$((30000 + RANDOM % 20000))
  local common=(--plugin "$PLUGIN" -b 64M -e 64M -n 30 -w 3 --no-check)
  $2 env RANK=1 WORLD_SIZE=2 MASTER_ADDR="$3" MASTER_PORT=$port "$BIN/c4perf" "${common[@]}" >/dev/null &
  $1 env RANK=0 WORLD_SIZE=2 MASTER_ADDR="$3" MASTER_PORT=$port "$BIN/c4perf" "${common[@]}" | awk '!/^#/ {print $4}'
  wait
}

iperf_once() { # $1 server prefix, $2 client prefix, $3 server addr -> GB/s
  local port=$((30000 + RANDOM % 20000))
  $1 iperf3 -s -1 -p $port >/dev/null 2>&1 &
  sleep 0.3
  $2 iperf3 -c "$3" -p $port -P "$STREAMS" -t 3 -f m 2>/dev/null |
    awk '/receiver/ {v=$(NF-2)} END {printf "%.3f\n", v / 8000}'
  wait
}

rtt_c4_once() {
  C4_SOCKET_IFNAME=lo "$BIN/c4perf" --plugin "$PLUGIN" --spawn 2 --mode lat -b 8 -e 8 -n 20000 -w 500 |
    awk '!/^#/ {print $3}'
}

rtt_tcp_once() { # $@ = flags for c4-tcp-pingpong
  local port=$((30000 + RANDOM % 20000))
  "$BIN/c4-tcp-pingpong" "$@" server $port &
  "$BIN/c4-tcp-pingpong" "$@" client 127.0.0.1 $port 8 20000 | awk '/median/ {print $2}'
  wait
}

repeat() { for _ in $(seq "$RUNS"); do "$@"; done | median; }

echo "c4 bench: $RUNS runs per figure, medians; $STREAMS TCP streams; $(nproc) cores; $(uname -r)"
export C4_NSOCKS=$STREAMS

lo_c4=$(C4_SOCKET_IFNAME=lo repeat c4_bw_once "" "" 127.0.0.1)
lo_ip=$(repeat iperf_once "" "" 127.0.0.1)

ns_c4=nan ns_ip=nan
if [ "$(id -u)" -eq 0 ]; then
  cleanup() { ip netns del c4b0 2>/dev/null; ip netns del c4b1 2>/dev/null; }
  trap cleanup EXIT
  cleanup
  ip netns add c4b0 && ip netns add c4b1 &&
    ip link add c4b0v type veth peer name c4b1v &&
    ip link set c4b0v netns c4b0 && ip link set c4b1v netns c4b1 &&
    ip -n c4b0 addr add 198.18.2.1/30 dev c4b0v && ip -n c4b1 addr add 198.18.2.2/30 dev c4b1v &&
    ip -n c4b0 link set c4b0v up && ip -n c4b1 link set c4b1v up &&
    ip -n c4b0 link set lo up && ip -n c4b1 link set lo up
  ns_c4=$(C4_SOCKET_IFNAME=c4b repeat c4_bw_once "ip netns exec c4b0" "ip netns exec c4b1" 198.18.2.1)
  ns_ip=$(repeat iperf_once "ip netns exec c4b1" "ip netns exec c4b0" 198.18.2.2)
  cleanup
else
  echo "veth between namespaces: skipped: needs CAP_NET_ADMIN (run make bench as root)"
fi

rtt_c4=$(repeat rtt_c4_once)
rtt_blk=$(repeat rtt_tcp_once)
rtt_spin=$(repeat rtt_tcp_once --spin)
rtt_two=$(repeat rtt_tcp_once --spin --two)

# Timing on vs off: pinned one rank per core (less scheduler noise), interleaved so drift hits
# both alike, more runs; the median of the per-pair ratios is reported beside the medians.
pin0="" pin1=""
if command -v taskset >/dev/null && [ "$(nproc)" -ge 2 ]; then pin0="taskset -c 0" pin1="taskset -c 1"; fi
on=() off=() pair=()
for _ in $(seq "${C4_BENCH_TIMING_RUNS:-9}"); do
  o=$(C4_TIMING=0 C4_SOCKET_IFNAME=lo c4_bw_once "$pin0" "$pin1" 127.0.0.1)
  n=$(C4_TIMING=1 C4_SOCKET_IFNAME=lo c4_bw_once "$pin0" "$pin1" 127.0.0.1)
  off+=("$o") on+=("$n") pair+=("$(ratio "$n" "$o")")
done
bw_on=$(printf '%s\n' "${on[@]}" | median)
bw_off=$(printf '%s\n' "${off[@]}" | median)
pair_ratio=$(printf '%s\n' "${pair[@]}" | median)
spread=$(printf '%s\n' "${off[@]}" | sort -g | awk '{v[NR]=$1} END {printf "%.2f-%.2f", v[1], v[NR]}')
ringout=$("$BIN/c4-ring-bench")
hot=$(awk '/timing_ns_per_request/ {print $2}' <<<"$ringout")
enc=$(awk '/reporter_encode_ns/ {print $2}' <<<"$ringout")

# c4mon ingest: 16,384 rank connections from a load generator; records decoded per second of
# c4mon's own CPU time while they stream (decode and count; no --record), checked against the
# count c4mon reports.
ingest_once() {
  local port=$((20000 + RANDOM % 10000))
  "$BIN/c4mon" serve --listen 127.0.0.1:$port --token bench 2>/dev/null &
  local mon=$!
  sleep 0.3
  local out; out=$("$BIN/c4-mon-load" 127.0.0.1:$port bench "${C4_BENCH_RANKS:-16384}" 3 $mon)
  local sent; sent=$(awk '/records_sent/ {print $2}' <<<"$out")
  local got; got=$("$BIN/c4mon" status --connect 127.0.0.1:$port --json | sed 's/.*"records":\([0-9]*\).*/\1/')
  kill $mon; wait $mon 2>/dev/null
  sleep 1
  if [ "$sent" = "$got" ]; then awk '/records_per_core_s/ {print $2}' <<<"$out"; else echo nan; fi
}
ingest=$(for _ in 1 2 3; do ingest_once; done | median)

printf '\n%-52s %10s %10s %8s %s\n' "measure" "c4" "reference" "ratio" "target"
row() { printf '%-52s %10s %10s %8s %s\n' "$1" "$2" "$3" "$(ratio "$2" "$3")" "$4"; }
row "bandwidth GB/s, loopback, 64 MiB vs iperf3 -P $STREAMS" "$lo_c4" "$lo_ip" ">= 0.95"
row "bandwidth GB/s, veth across namespaces vs iperf3" "$ns_c4" "$ns_ip" ">= 0.95"
row "8 B round trip us vs blocking TCP ping-pong" "$rtt_c4" "$rtt_blk" "<= 1.3"
row "8 B round trip us vs busy-polling TCP, 1 socket" "$rtt_c4" "$rtt_spin" "<= 1.3"
row "8 B round trip us vs busy-polling TCP, 1 per direction" "$rtt_c4" "$rtt_two" "<= 1.3"
row "bandwidth GB/s, timing on vs C4_TIMING=0 (pinned)" "$bw_on" "$bw_off" ">= 0.99"
printf '%-52s %10s %10s %8s\n' "  same, median of per-pair ratios; C4_TIMING=0 range" "" "$spread" "$pair_ratio"
printf '%-52s %10s\n' "timing cost, ns per request (clocks + record + push)" "$hot"
printf '%-52s %10s\n' "reporter, ns per record on c4's thread (encode)" "$enc"
printf '%-52s %10s %10s %8s %s\n' "c4mon ingest, records/s per core, ${C4_BENCH_RANKS:-16384} ranks" "$ingest" "5000000" "$(ratio "$ingest" 5000000)" ">= 1"

cat >"$BUILD/bench.json" <<JSON
{"runs": $RUNS, "streams": $STREAMS,
 "bw_loopback_GBps": {"c4": $lo_c4, "iperf3": $lo_ip},
 "bw_veth_GBps": {"c4": $ns_c4, "iperf3": $ns_ip},
 "rtt8_us": {"c4": $rtt_c4, "tcp_blocking": $rtt_blk, "tcp_spin": $rtt_spin, "tcp_spin_two_sockets": $rtt_two},
 "bw_timing_GBps": {"on": $bw_on, "off": $bw_off, "median_pair_ratio": $pair_ratio},
 "timing_ns_per_request": $hot, "reporter_encode_ns": $enc,
 "c4mon_ingest_records_per_core_s": $ingest}
JSON
echo "wrote $BUILD/bench.json"
