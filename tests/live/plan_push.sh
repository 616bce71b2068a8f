#!/usr/bin/env bash
# plan_push.sh -- a traffic plan pushed by c4mon pins the plugin's data sockets, end to end: c4mon
# serve --plan FILE, two c4perf ranks over loopback streaming to it with no C4_PLAN, and the
# data sockets must come from the plan's source ports (seen with ss). Then a rewritten plan is
# pushed and a new run follows it. No root needed; a few seconds.
# Usage: plan_push.sh [BUILD_DIR] (default $C4_BUILD_DIR, else build).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
for f in "$BUILD/bin/c4perf" "$BUILD/bin/c4mon" "$BUILD/lib/libnccl-net-c4.so"; do
  [ -e "$f" ] || { echo "plan_push: $f is missing (build first)"; exit 1; }
done
command -v ss >/dev/null || { echo "plan_push: FAILED: needs ss (iproute2)"; exit 1; }
WORK=$(mktemp -d /tmp/c4-plan-push-XXXXXX)
MON_PID=
cleanup() {
  [ -n "$MON_PID" ] && kill "$MON_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "plan_push: FAILED: $*"
  tail -5 "$WORK/mon.err" "$WORK/perf.out" 2>/dev/null
  exit 1
}
port() { echo $((20000 + RANDOM % 6000)); }
MON=127.0.0.1:$(port)
# the plan's source ports: BASE, BASE+1, then BASE+5, BASE+6; below the kernel's ephemeral range
# (32768 up), where another socket (a connection of an earlier suite in TIME_WAIT) can hold one:
# a CI run's pushed ports 34940 and 34941 gave no data socket
BASE=$((26000 + RANDOM % 500 * 10))

plan() { # P0 P1: a plan for host push-host to itself (a temporary file renamed over the plan)
  printf '{"v":1,"paths":[],"flows":[{"src":"push-host","dst":"push-host","src_port":%d},{"src":"push-host","dst":"push-host","src_port":%d},{"src":"elsewhere","dst":"push-host","src_port":%d}]}\n' \
    "$1" "$2" $((BASE + 9)) >"$WORK/plan.tmp"
  mv "$WORK/plan.tmp" "$WORK/plan.json"
}

# run P0 P1: two ranks stream to c4mon while ss looks for data sockets from P0 and P1
run() {
  C4_HOSTNAME=push-host C4_MONITOR=$MON C4_TOKEN=pt C4_SOCKET_IFNAME=lo C4_DEBUG=INFO \
    timeout 60 "$BUILD/bin/c4perf" --spawn 2 --mode bw -b 64M -e 64M -n 400 -w 2 --no-check \
    >"$WORK/perf.out" 2>&1 &
  local perf=$! seen=""
  for _ in $(seq 100); do
    seen=$(ss -tnH state established "( sport = :$1 or sport = :$2 )" | wc -l)
    [ "$seen" -ge 2 ] && break
    sleep 0.05
  done
  wait "$perf" || fail "c4perf failed"
  [ "$seen" -ge 2 ] || fail "no data sockets from the pushed ports $1 and $2"
  grep -q "c4mon pushed a plan: 1 host pairs" "$WORK/perf.out" || fail "the plugin did not log the push"
}

plan "$BASE" $((BASE + 1))
"$BUILD/bin/c4mon" serve --listen "$MON" --token pt --plan "$WORK/plan.json" --events /dev/null \
  2>"$WORK/mon.err" &
MON_PID=$!
sleep 0.3
run "$BASE" $((BASE + 1))
echo "plan_push: data sockets from the pushed ports $BASE and $((BASE + 1))"
plan $((BASE + 5)) $((BASE + 6))
sleep 1.2 # c4mon looks at the file every second
run $((BASE + 5)) $((BASE + 6))
echo "plan_push: after a rewrite, from $((BASE + 5)) and $((BASE + 6))"
echo "plan_push: ok"
