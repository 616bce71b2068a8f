#!/usr/bin/env bash
# detect_live.sh -- c4mon detecting real faults, live: four ranks of c4perf's ring allreduce over
# the c4 plugin, each in its own network namespace and UTS namespace (its own host name), stream
# to a c4mon in a fifth; all five hang off one bridge. Then, mid-run: host h2's link is rate
# limited with tc tbf (c4mon must name h2's NIC or its link), rank 3 is SIGSTOPped (a non-comm
# hang naming rank 3), and rank 1 is killed (rank 1 lost). Needs root (namespaces, tc); says
# "skipped" and passes without it. Usage: detect_live.sh [BUILD_DIR] (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
C4PERF="$BUILD/bin/c4perf"
C4MON="$BUILD/bin/c4mon"
PLUGIN="$BUILD/lib/libnccl-net-c4.so"

if [ "$(id -u)" -ne 0 ] || ! ip netns list >/dev/null 2>&1 || ! command -v unshare >/dev/null; then
  echo "detect_live: skipped: needs CAP_NET_ADMIN (root), ip netns and unshare"
  exit 0
fi
command -v jq >/dev/null || { echo "detect_live: jq is missing (make deps)"; exit 1; }
for f in "$C4PERF" "$C4MON" "$PLUGIN"; do
  [ -e "$f" ] || { echo "detect_live: $f is missing (build first)"; exit 1; }
done

P=c4dl$$ # names unique to this run
NET=198.18.77
MON_ADDR=$NET.100:7741
WORK=$(mktemp -d /tmp/c4-detect-live-XXXXXX)
EVENTS=$WORK/events.jsonl
declare -a RANK_PIDS=()
MON_PID=

cleanup() {
  for p in "${RANK_PIDS[@]}"; do kill -CONT "$p" 2>/dev/null; kill -9 "$p" 2>/dev/null; done
  [ -n "$MON_PID" ] && kill "$MON_PID" 2>/dev/null
  wait 2>/dev/null
  for n in sw mon h0 h1 h2 h3; do ip netns del "$P-$n" 2>/dev/null; done
  rm -rf "$WORK"
}
trap cleanup EXIT

fail() {
  echo "detect_live: FAILED: $*"
  echo "--- events:"
  cat "$EVENTS" 2>/dev/null
  echo "--- c4mon:"
  tail -20 "$WORK/mon.err" 2>/dev/null
  exit 1
}

# one namespace per host plus a switch: eth0 in each host, its peer on the switch's bridge
ip netns add "$P-sw" || fail "cannot add namespaces"
ip -n "$P-sw" link add br0 type bridge
ip -n "$P-sw" link set br0 up
attach() { # name, address
  local ns=$P-$1
  ip netns add "$ns"
  ip link add "v$$$1" type veth peer name "w$$$1"
  ip link set "v$$$1" netns "$ns"
  ip link set "w$$$1" netns "$P-sw"
  ip -n "$ns" link set "v$$$1" name eth0
  ip -n "$ns" addr add "$2/24" dev eth0
  ip -n "$ns" link set eth0 up
  ip -n "$ns" link set lo up
  ip -n "$P-sw" link set "w$$$1" master br0
  ip -n "$P-sw" link set "w$$$1" up
}
attach mon $NET.100
for r in 0 1 2 3; do attach "h$r" "$NET.$((r + 1))"; done

ip netns exec "$P-mon" "$C4MON" serve --listen "$MON_ADDR" --token live-token --job live \
  --events "$EVENTS" --hang-ms 3000 >"$WORK/mon.out" 2>"$WORK/mon.err" &
MON_PID=$!
sleep 0.5

for r in 0 1 2 3; do
  ip netns exec "$P-h$r" unshare --uts sh -c "hostname h$r && exec env \
    C4_MONITOR=$MON_ADDR C4_TOKEN=live-token C4_JOB=live C4_HEARTBEAT_MS=250 \
    NCCL_SOCKET_IFNAME=eth0 C4_DEBUG=NONE C4_COLL_TIMEOUT_MS=120000 \
    '$C4PERF' --plugin '$PLUGIN' --mode allreduce -b 4M -e 4M -n 100000000 -w 0 --no-check \
    --timeline '$WORK/timeline' --rank $r --world 4 --master $NET.1:29517" >"$WORK/rank$r.out" 2>&1 &
  RANK_PIDS+=($!)
done

FROM=1 # events before this line of the file belong to an earlier step

# waits up to $1 seconds for an event line, from line FROM on, matching every pattern that follows
wait_event() {
  local secs=$1
  shift
  local end=$((SECONDS + secs))
  while [ $SECONDS -lt $end ]; do
    local line
    line=$(tail -n +"$FROM" "$EVENTS" 2>/dev/null | grep -F -- "$1" | {
      local l
      while IFS= read -r l; do
        local ok=1
        for p in "${@:2}"; do [[ $l == *"$p"* ]] || ok=0; done
        [ $ok -eq 1 ] && { echo "$l"; break; }
      done
    })
    [ -n "$line" ] && { echo "$line"; return 0; }
    sleep 0.2
  done
  return 1
}

# the process of rank r (the shell exec'd into c4perf inside unshare's child)
rank_pid() { pgrep -f -- "--rank $1 --world 4 --master $NET.1:29517" | head -1; }

sleep 20 # warm-up: the ring connects, and each cell has the 12 half-windows (plus 3 held back) its noise baseline needs before a fault (docs/events.md)
for r in 0 1 2 3; do kill -0 "${RANK_PIDS[$r]}" 2>/dev/null || fail "rank $r died at start: $(tail -3 "$WORK/rank$r.out")"; done
# A verdict before any fault is a false alarm. On this 2-core VM under ASan c4mon raises one
# now and then (a single cell 1.5-2x slow in warm-up); it is reported, and must have cleared
# before the first fault, whose own verdict is then looked for only in the lines that follow.
if [ -s "$EVENTS" ]; then
  echo "detect_live: note: c4mon raised $(grep -vc '"kind":"recovered"' "$EVENTS") verdict(s) in the warm-up, before any fault:"
  sed 's/^/  /' "$EVENTS" | cut -c1-200
  for _ in $(seq 75); do
    raised=$(grep -vc '"kind":"recovered"' "$EVENTS")
    [ "$(grep -c '"kind":"recovered"' "$EVENTS")" -ge "$raised" ] && break
    sleep 0.2
  done
  [ "$(grep -c '"kind":"recovered"' "$EVENTS")" -ge "$(grep -vc '"kind":"recovered"' "$EVENTS")" ] ||
    fail "a false alarm before any fault did not clear within 15 s"
fi

# The fault is sized from the rate the ring reached here, not fixed: on a loaded machine, or under
# ASan, the ring may run below a fixed limit, which then slows nothing (no verdict is then right).
# Each rank sends 2(n-1)/n of the 4 MiB buffer per allreduce; h2's link is cut to a quarter of the
# rate its last 16 iterations ran at (median), and to 200 Mbit/s at most.
ring_mbit=$(tail -n 16 "$WORK/timeline" 2>/dev/null | awk '{ print $2 }' | sort -n |
  awk '{ v[NR] = $1 } END { if (NR) printf "%d", 1.5 * 4194304 * 8 / v[int((NR + 1) / 2)] }')
[ -n "$ring_mbit" ] && [ "$ring_mbit" -gt 0 ] || fail "the ring wrote no timeline in the warm-up"
limit=$((ring_mbit / 4))
((limit > 200)) && limit=200
((limit < 1)) && limit=1
FROM=$(($(wc -l <"$EVENTS") + 1))
echo "detect_live: the ring ran at $ring_mbit Mbit/s a link; h2's link limited to $limit Mbit/s"
T0=$SECONDS
ip netns exec "$P-h2" tc qdisc add dev eth0 root tbf rate "${limit}mbit" burst 64kb latency 100ms
ev=$(wait_event 20 '"kind":"comm_slow"' '"h2"') || fail "no comm_slow naming h2 within 20 s"
echo "detect_live: flagged in $((SECONDS - T0)) s: $ev"
ip netns exec "$P-h2" tc qdisc del dev eth0 root
# every comm_slow raised since the fault (a link may have given way to its NIC) is cleared
slow_open() {
  tail -n +"$FROM" "$EVENTS" | jq -s '(map(select(.kind == "comm_slow")) | length)
    - (map(select(.kind == "recovered" and .cleared.kind == "comm_slow")) | length)'
}
for _ in $(seq 100); do
  [ "$(slow_open)" -le 0 ] && break
  sleep 0.2
done
[ "$(slow_open)" -le 0 ] || fail "the slow link did not recover within 20 s"

FROM=$(($(wc -l <"$EVENTS") + 1))
echo "detect_live: rank 3 stopped"
pid3=$(rank_pid 3)
[ -n "$pid3" ] || fail "cannot find rank 3"
T0=$SECONDS
kill -STOP "$pid3"
ev=$(wait_event 15 '"kind":"noncomm_hang"' '"ranks":[3]') || fail "no noncomm_hang naming rank 3"
echo "detect_live: flagged in $((SECONDS - T0)) s: $ev"
kill -CONT "$pid3"
wait_event 15 '"kind":"recovered"' '"noncomm_hang"' >/dev/null || fail "the hang did not recover"

echo "detect_live: rank 1 killed"
pid1=$(rank_pid 1)
[ -n "$pid1" ] || fail "cannot find rank 1"
T0=$SECONDS
kill -9 "$pid1"
ev=$(wait_event 10 '"kind":"rank_lost"' '"ranks":[1]') || fail "no rank_lost naming rank 1"
echo "detect_live: flagged in $((SECONDS - T0)) s: $ev"
if grep -F '"kind":"straggler"' "$EVENTS"; then fail "a straggler was reported, and there was none"; fi
echo "detect_live: ok"
