#!/usr/bin/env bash
# path_loop.sh -- the closed loop on the namespace fabric (tools/fabric: 4 hosts, 2 leaves, 2
# spines, RATE links, host i on leaf i % 2, so every hop of the ring h0 -> h1 -> h2 -> h3 -> h0
# crosses the spines), c4mon on a fifth host. c4plan places each hop's two data sockets on the two
# spines; c4mon serves with that plan and pushes it (the ranks set no C4_PLAN). A 4-rank c4perf ring
# allreduce of 8 MiB runs with c4's defaults, writing each iteration's time (--timeline); mid-run
# the leaf-spine link l0-s1 drops to a quarter of RATE, then is restored. Checked: c4mon names the
# path (`comm_slow` at path s1) while it is slow, pushes a plan that avoids it (a `plan` event
# whose moved flows include both directions' hops) and lets it back after it heals (a `plan`
# event, action restore); the plugin logs that it moved sockets off the path; healed, the ring runs
# at its healthy rate again. Measured (printed, and as JSON in OUT/loop.json): the ring's bus
# bandwidth healthy, degraded and healed; from the degrade, the time until every iteration runs at
# >= 0.9 of the degraded steady rate and of the max-flow bound (125 of 200 with RATE's quarter on
# one spine link); from the heal, the time until every iteration runs at >= 0.9 of the healthy
# figure (reported, not asserted: one slow iteration in a noisy phase says "never"); the same two
# times for the median of each 3 iterations in a row, since the healthy phase's own iterations
# fall under 0.9 of its median now and then (1 in 16 in the runs of 2026-11-27: it would fail the
# every-iteration test itself), and how often they did in this run. A bench, not
# a suite test (40 s on the namespace fabric). Half of its runs once stalled at the degrade: a
# packet queued under the old rate's tbf bucket was bigger than the new one's and wedged the link
# (docs/multipath.md); the fabric's bucket is now the same at every rate.
# Needs root: says "skipped" and passes without it. Usage: tools/bench/path_loop.sh [BUILD_DIR]
# (default $C4_BUILD_DIR, else build).
# OUT: $C4_LOOP_OUT (default a temporary directory, removed).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
BIN=$BUILD/bin
HERE=$(cd "$(dirname "$0")" && pwd)
FABRIC=$HERE/../fabric/fabric
# shellcheck source=tools/fabric/ring_plan.sh
. "$HERE/../fabric/ring_plan.sh"

if [ "$(id -u)" -ne 0 ] || ! ip netns list >/dev/null 2>&1; then
  echo "path_loop: skipped: needs CAP_NET_ADMIN (root) and ip netns"
  exit 0
fi
for f in "$BIN/c4perf" "$BIN/c4mon" "$BIN/c4plan" "$BUILD/lib/libnccl-net-c4.so"; do
  [ -e "$f" ] || { echo "path_loop: $f is missing (build first)"; exit 1; }
done
RATE_MBIT=${C4_LOOP_RATE_MBIT:-200}
HEALTHY_S=${C4_LOOP_HEALTHY_S:-10} # seconds of each phase
DEGRADED_S=${C4_LOOP_DEGRADED_S:-14}
HEALED_S=${C4_LOOP_HEALED_S:-12}
MSG=8M
if [ -n "${C4_LOOP_OUT:-}" ]; then
  OUT=$C4_LOOP_OUT
  mkdir -p "$OUT"
  rm -f "$OUT"/*
else
  OUT=$(mktemp -d /tmp/c4-path-loop-XXXXXX)
fi
NAME=c4l$$
TOPO=$OUT/topo.json
LPORT=$((30000 + RANDOM % 2000))
MON=198.18.4.2 # h4
MPORT=$((20000 + RANDOM % 4000))
TOKEN=loop-$$
MON_PID=
PIDS=()
fab() { "$FABRIC" --name "$NAME" --out "$TOPO" "$@"; }
cleanup() {
  local p
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
  [ -n "$MON_PID" ] && kill "$MON_PID" 2>/dev/null
  wait 2>/dev/null
  fab down >/dev/null 2>&1
  [ -n "${C4_LOOP_OUT:-}" ] || rm -rf "$OUT"
}
trap cleanup EXIT
fail() {
  echo "path_loop: FAILED: $*"
  exit 1
}
now() { "$BIN/c4mon" events --now; }

fab --hosts 5 --leaves 2 --spines 2 --rate "${RATE_MBIT}mbit" up >"$OUT/fabric.log" 2>&1 ||
  fail "fabric up: $(tail -3 "$OUT/fabric.log")"
# two flows a hop (C4_NSOCKS=2 data sockets), probed, then placed on the two spines
ring_plan "$BIN" "$NAME" "$TOPO" "$LPORT" "$OUT" h0 h1 h2 h3 || fail "$RING_PLAN_ERR"
jq -e '[.flows[] | select(.path == "s1")] | length == 4' "$OUT/plan.json" >/dev/null ||
  fail "the plan does not put one socket of each hop on s1: $(jq -c '[.flows[] | [.src, .dst, .path]]' "$OUT/plan.json")"

touch "$OUT/events.jsonl"
ip netns exec "$NAME-h4" "$BIN/c4mon" serve --listen "$MON:7400" --token "$TOKEN" --job loop \
  --events "$OUT/events.jsonl" --plan "$OUT/plan.json" >"$OUT/c4mon.out" 2>"$OUT/c4mon.log" &
MON_PID=$!
sleep 0.3
kill -0 "$MON_PID" 2>/dev/null || fail "c4mon did not start: $(cat "$OUT/c4mon.log")"

# about HEALTHY_S + DEGRADED_S + HEALED_S of allreduces at ~0.6 s each, and some to spare
ITERS=$(((HEALTHY_S + DEGRADED_S + HEALED_S) * 3))
for r in 3 2 1 0; do
  ip netns exec "$NAME-h$r" env C4_HOSTNAME="h$r" C4_LISTEN_PORTS="$LPORT" C4_MONITOR="$MON:7400" \
    C4_TOKEN="$TOKEN" C4_JOB=loop C4_DEBUG=INFO RANK=$r WORLD_SIZE=4 MASTER_ADDR=198.18.0.2 \
    MASTER_PORT=$MPORT "$BIN/c4perf" --plugin "$BUILD/lib/libnccl-net-c4.so" --no-check \
    --mode allreduce -b $MSG -e $MSG -n "$ITERS" -w 2 --timeline "$OUT/timeline" \
    >"$OUT/rank$r.out" 2>"$OUT/rank$r.log" &
  PIDS+=($!)
done
alive() { kill -0 "${PIDS[3]}" 2>/dev/null; } # rank 0
# wait_s N: N seconds while rank 0 runs
wait_s() {
  local end=$((SECONDS + $1))
  while [ $SECONDS -lt $end ]; do
    alive || fail "c4perf ended early: $(tail -n 3 "$OUT/rank0.out" "$OUT/rank0.log")"
    sleep 0.2
  done
}
end=$((SECONDS + 60))
until [ -s "$OUT/timeline" ]; do
  [ $SECONDS -lt $end ] && alive || fail "the ring did not start: $(tail -n 3 "$OUT/rank0.out" "$OUT/rank0.log")"
  sleep 0.2
done
wait_s "$HEALTHY_S"
T_DEG=$(now)
fab degrade l0-s1 "$((RATE_MBIT / 4))mbit" >/dev/null
wait_s "$DEGRADED_S"
T_RES=$(now)
fab restore l0-s1 >/dev/null
wait_s "$HEALED_S"
T_END=$(now)
for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
wait "${PIDS[@]}" 2>/dev/null # the ranks only: c4mon goes on
PIDS=()
sleep 1.5 # c4mon's last events

python3 - "$OUT" "$T_DEG" "$T_RES" "$T_END" "$RATE_MBIT" <<'PY' || fail "the measurement (above)"
import json, statistics, sys
out, t_deg, t_res, t_end, rate = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
bits = 8 * 2**20 * 2 * 3 / 4 * 8  # an 8 MiB ring allreduce of 4: each rank sends 1.5x the buffer
its = []
for line in open(out + "/timeline"):
    end, us = line.split()
    end, us = int(end), float(us)
    its.append((end - us * 1e3, end, bits / us))  # start, end (ns), bus bandwidth (Mbit/s)
def med(a, b):
    v = [bw for s, e, bw in its if s >= a and e <= b]
    return (statistics.median(v), len(v)) if v else (0, 0)
healthy, nh = med(0, t_deg)
degraded, nd = med(t_deg + 5e9, t_res)
healed, nr = med(t_res + 5e9, t_end)
bound_deg = min(rate, (rate + rate / 4) / 2)
def settled(t0, t1, floor, run=1):
    """seconds from t0 until, from an iteration at >= floor on, the median of every `run`
    iterations in a row (to t1) is >= floor (run 1: every iteration); None: never. With run 3 one
    iteration's dip, which the healthy phase has too, does not count; three in a row do"""
    after = [(s, e, bw) for s, e, bw in its if e > t0 and s < t1]
    for k in range(len(after)):
        rest = [bw for _, _, bw in after[k:]]
        if len(rest) >= run and rest[0] >= floor and all(
                statistics.median(rest[j:j + run]) >= floor for j in range(len(rest) - run + 1)):
            return max(0.0, (after[k][0] - t0) / 1e9) if k else 0.0
    return None
healthy_its = [bw for s, e, bw in its if e <= t_deg]
r = {"rate_mbit": rate, "bound_healthy": rate, "bound_degraded": bound_deg,
     "healthy_dips": sum(bw < 0.9 * healthy for bw in healthy_its),
     "s3_to_0.9_degraded_bound": settled(t_deg, t_res, 0.9 * bound_deg, 3),
     "s3_to_0.9_healthy_after_heal": settled(t_res, t_end, 0.9 * healthy, 3),
     "healthy_busbw": healthy, "degraded_busbw": degraded, "healed_busbw": healed,
     "iterations": [nh, nd, nr],
     "s_to_0.9_degraded_steady": settled(t_deg, t_res, 0.9 * degraded),
     "s_to_0.9_degraded_bound": settled(t_deg, t_res, 0.9 * bound_deg),
     "s_to_0.9_healthy_after_heal": settled(t_res, t_end, 0.9 * healthy)}
json.dump(r, open(out + "/loop.json", "w"), indent=1)
print("path_loop: ring busbw (Mbit/s, medians): healthy %.1f (bound %.0f), degraded %.1f (bound %.0f), healed %.1f; iterations %s"
      % (healthy, rate, degraded, bound_deg, healed, r["iterations"]))
fmt = lambda x: "never" if x is None else "%.1f s" % x
print("path_loop: from the degrade to every iteration at >= 0.9 of the degraded steady rate: %s, of the bound: %s; from the heal to >= 0.9 of healthy: %s"
      % (fmt(r["s_to_0.9_degraded_steady"]), fmt(r["s_to_0.9_degraded_bound"]), fmt(r["s_to_0.9_healthy_after_heal"])))
print("path_loop: the healthy phase itself had %d of %d iterations under 0.9 of its median; with the median of each 3 iterations in a row: from the degrade to >= 0.9 of the bound: %s; from the heal to >= 0.9 of healthy: %s"
      % (r["healthy_dips"], len(healthy_its), fmt(r["s3_to_0.9_degraded_bound"]), fmt(r["s3_to_0.9_healthy_after_heal"])))
if min(nh, nd, nr) < 3:
    sys.exit("too few iterations in a phase: %s" % r["iterations"])
PY

# c4mon's part: the path named, the plan pushed avoiding it, then letting it back
ev() { jq -c "$1" "$OUT/events.jsonl"; }
verdict=$(ev "select(.kind == \"comm_slow\" and .where == \"path\" and .path == \"s1\" and .t >= $T_DEG and .t <= $T_RES) | .id" | head -1)
[ -n "$verdict" ] || fail "c4mon raised no path verdict on s1 while it was slow: $(cut -c1-300 "$OUT/events.jsonl")"
avoid=$(ev "select(.kind == \"plan\" and .action == \"avoid\" and .path == \"s1\" and .verdict == $verdict)" | head -1)
[ -n "$avoid" ] || fail "no plan event avoiding s1 after verdict #$verdict"
echo "$avoid" | jq -e '(.moved | length) == 4 and .pushed_to > 0' >/dev/null ||
  fail "the plan event does not move the four hops' flows on s1: $avoid"
t_avoid=$(echo "$avoid" | jq .t)
restore=$(ev "select(.kind == \"plan\" and .action == \"restore\" and .path == \"s1\" and .t > $T_RES) | .t" | head -1)
[ -n "$restore" ] || fail "c4mon did not let s1 back after it healed: $(ev 'select(.kind != "comm_slow") | [.id, .kind, .where, .path, .t]' | tr '\n' ' ')"
moved=$(cat "$OUT"/rank*.log | grep -c "kept off its path, which c4mon found congested")
[ "$moved" -ge 1 ] || fail "no rank logged moving a data socket off s1 on c4mon's plan"
awk -v a="$T_DEG" -v b="$t_avoid" -v c="$T_RES" -v d="$restore" -v m="$moved" 'BEGIN {
  printf "path_loop: c4mon avoided s1 %.1f s after the degrade (%d data sockets moved), let it back %.1f s after the heal\n", (b - a) / 1e9, m, (d - c) / 1e9 }'
# healed, the ring is back at its healthy rate: at least 0.8 of it (healthy iterations spread 0.6
# to 0.8 s on this machine, load 4-5: +-15% around their median)
jq -e '.healed_busbw >= 0.8 * .healthy_busbw' "$OUT/loop.json" >/dev/null ||
  fail "the ring did not come back after the heal: $(cat "$OUT/loop.json")"
echo "path_loop: ok"
