#!/usr/bin/env bash
# fabric_bench.sh -- `make bench-fabric` (root): the traffic planner and the plugin's multipath
# weights on a namespace leaf-spine fabric with real Linux ECMP (tools/fabric/fabric: 4 hosts, 2
# leaves, 2 spines, every link RATE, L4 hashing at the leaves). Host i hangs off leaf i % 2, so
# every edge of the ring 0 -> 1 -> 2 -> 3 -> 0 crosses the spines, two flows each way between the
# leaves. Two workloads through c4perf over the c4 plugin:
#   allreduce: a 4-rank ring allreduce, one rank per host (the figure: bus bandwidth, the rate of
#              each ring edge, so the slowest edge sets it);
#   bidir:     four bandwidth streams at once, h0 <-> h1 and h2 <-> h3 in both directions (the
#              figure: their mean rate).
# Three ways to place the flows:
#   ecmp:    plain ECMP, one data socket per connection from a random source port (C4_NSOCKS=1,
#            no plan; the mean of ECMP_TRIALS runs, each hashing afresh);
#   static:  one data socket per connection, pinned by c4plan's plan (probe maps for the listen
#            port, then c4plan assign) so the two flows of each direction take distinct spines,
#            even chunks (C4_PATH_WEIGHTS=0);
#   dynamic: two data sockets per connection, pinned to distinct spines by the plan, with chunks
#            weighted by each socket's measured rate (C4_PATH_WEIGHTS=1).
# Healthy, then with one leaf-spine link (l0-s0) degraded to a quarter of RATE with tc. The bound
# is the max-flow bound: per direction between the leaves, what the spines can carry (each
# spine's leaf-to-leaf path at its slower link), shared by the direction's two flows, and at most
# a host link. Targets (issue 6): degraded, dynamic >= 0.9 of the bound and >= 1.3x plain ECMP;
# healthy, the plan >= 0.95 of the bound. Prints a table and writes BUILD/bench-fabric.json.
# Needs root (namespaces, tc) and CAP_NET_RAW (the prober): says so and exits 2 without.
# Usage: tools/bench/fabric_bench.sh [BUILD_DIR]   (default build)
set -u
BUILD=${1:-build}
BIN="$PWD/$BUILD/bin"
PLUGIN="$PWD/$BUILD/lib/libnccl-net-c4.so"
RATE_MBIT=${C4_FABRIC_RATE_MBIT:-200}
DEGRADED_MBIT=$((RATE_MBIT / 4))
SECS=${C4_FABRIC_SECS:-5}
ECMP_TRIALS=${C4_FABRIC_ECMP_TRIALS:-3}
LPORT=29600 # every listener's port (C4_LISTEN_PORTS): ECMP hashes it, so the probes use it too
MSG=4M

if [ "$(id -u)" -ne 0 ] || ! ip netns list >/dev/null 2>&1; then
  echo "bench-fabric: needs root (network namespaces, tc, raw sockets for the prober)" >&2
  exit 2
fi
for f in "$BIN/c4perf" "$BIN/c4plan" "$PLUGIN"; do
  [ -e "$f" ] || { echo "bench-fabric: $f is missing (make first)" >&2; exit 2; }
done
command -v python3 >/dev/null || { echo "bench-fabric: needs python3 (make deps)" >&2; exit 2; }

P=fb$$
WORK=$(mktemp -d /tmp/c4-fabric-bench-XXXXXX)
TOPO=$WORK/topo.json
FABRIC=tools/fabric/fabric
fab() { "$FABRIC" --name "$P" --out "$TOPO" "$@"; }
cleanup() {
  pkill -f -- "--master 198.18.[0-9]*.2:2[0-9]*.*$P" 2>/dev/null
  fab down >/dev/null 2>&1
  [ -n "${C4_FABRIC_KEEP:-}" ] || rm -rf "$WORK"
}
trap cleanup EXIT
die() {
  echo "bench-fabric: FAILED: $*" >&2
  exit 1
}
addr() { echo "198.18.$1.2"; } # host i's eth0 (docs/topology.md)

fab --hosts 4 --ports 1 --leaves 2 --spines 2 --rate "${RATE_MBIT}mbit" up >/dev/null ||
  die "fabric up"

# ---- the plans: probe each directed pair the workloads use, then assign ----------------------
PAIRS="0:1 1:2 2:3 3:0 1:0 3:2"
probes=()
for pr in $PAIRS; do
  s=${pr%:*} d=${pr#*:}
  ip netns exec "$P-h$s" "$BIN/c4plan" probe --topo "$TOPO" --dst "h$d" --proto tcp \
    --dst-port $LPORT --sports 50000-50063 --json >"$WORK/probe-$s-$d.json" 2>"$WORK/probe.err" ||
    die "probe h$s -> h$d: $(cat "$WORK/probe.err")"
  probes+=(--probe "$WORK/probe-$s-$d.json")
done
flows() { # PER_PAIR: the flows file, each pair PER_PAIR times
  python3 - "$1" "$PAIRS" <<'EOF'
import json, sys
per, pairs = int(sys.argv[1]), sys.argv[2].split()
fl = [{"src": "h" + p.split(":")[0], "dst": "h" + p.split(":")[1], "bytes": 1 << 30}
      for p in pairs for _ in range(per)]
print(json.dumps({"v": 1, "flows": fl}))
EOF
}
flows 1 >"$WORK/flows1.json"
flows 2 >"$WORK/flows2.json"
"$BIN/c4plan" assign --topo "$TOPO" --flows "$WORK/flows1.json" "${probes[@]}" \
  --out "$WORK/static.plan" >"$WORK/assign1.out" 2>&1 || die "assign (one flow a pair): $(cat "$WORK/assign1.out")"
"$BIN/c4plan" assign --topo "$TOPO" --flows "$WORK/flows2.json" "${probes[@]}" \
  --out "$WORK/dynamic.plan" >"$WORK/assign2.out" 2>&1 || die "assign (two flows a pair): $(cat "$WORK/assign2.out")"
# the plans must do what the bench assumes: in each direction between the leaves, the static
# plan's two flows on distinct spines; each pair's two dynamic flows on distinct spines
python3 - "$WORK/static.plan" "$WORK/dynamic.plan" <<'EOF' || die "the plans are not as assumed"
import json, sys
st, dy = (json.load(open(f))["flows"] for f in sys.argv[1:])
for f in st + dy:
    assert f["src_port"], "a flow without a probed source port: %s" % f
by_dir = {}
for f in st:
    by_dir.setdefault(int(f["src"][1]) % 2, []).append(f["path"])
for d, paths in by_dir.items():
    ring = paths[:2]  # the ring's two flows of this direction come first in the file
    assert len(set(ring)) == 2, "static: direction from leaf %d uses %s" % (d, ring)
pairs = {}
for f in dy:
    pairs.setdefault((f["src"], f["dst"]), set()).add(f["path"])
for p, s in pairs.items():
    assert len(s) == 2, "dynamic: %s -> %s on %s" % (p[0], p[1], s)
EOF

# ---- one measurement ----------------------------------------------------------------------------
mode_env() { # MODE: the plugin's environment for a placement
  case $1 in
  ecmp) echo "C4_NSOCKS=1" ;;
  static) echo "C4_NSOCKS=1 C4_PLAN=$WORK/static.plan C4_PATH_WEIGHTS=0" ;;
  dynamic) echo "C4_NSOCKS=2 C4_NTHREADS=2 C4_PLAN=$WORK/dynamic.plan C4_PATH_WEIGHTS=1" ;;
  esac
}
# ITERS for about SECS at the rate the bound allows (busbw ~ edge rate; 4 MiB each)
iters() { awk -v r="$1" -v s="$SECS" 'BEGIN {n = int(r * 1e6 / 8 * s / 4194304 / 1.5); print (n < 4 ? 4 : n)}'; }

# rank R of WORLD in host H's namespace; the rest of the arguments go to c4perf
perf_rank() {
  local h=$1 r=$2 world=$3 mport=$4 master=$5 mode=$6
  shift 6
  # shellcheck disable=SC2046 # the mode's variables, split on purpose
  ip netns exec "$P-h$h" env $(mode_env "$mode") C4_HOSTNAME="h$h" C4_LISTEN_PORTS=$LPORT \
    NCCL_SOCKET_IFNAME=eth0 C4_DEBUG=NONE RANK=$r WORLD_SIZE=$world MASTER_ADDR="$master" \
    MASTER_PORT="$mport" "$BIN/c4perf" --plugin "$PLUGIN" --no-check -b $MSG -e $MSG "$@"
}

allreduce_once() { # MODE BOUND_MBIT: the ring's bus bandwidth in Mbit/s
  local n mport=$((21000 + RANDOM % 4000))
  n=$(iters "$2")
  for r in 1 2 3; do
    perf_rank "$r" "$r" 4 "$mport" "$(addr 0)" "$1" --mode allreduce -n "$n" -w 2 \
      >"$WORK/ar$r.out" 2>&1 &
  done
  perf_rank 0 0 4 "$mport" "$(addr 0)" "$1" --mode allreduce -n "$n" -w 2 >"$WORK/ar0.out" 2>&1
  local rc=$?
  wait
  [ $rc -eq 0 ] || die "allreduce ($1): $(tail -3 "$WORK/ar0.out")"
  awk '!/^#/ && NF == 5 {printf "%.1f\n", $5 * 8000}' "$WORK/ar0.out"
}

bidir_once() { # MODE BOUND_MBIT: the mean rate of the four streams in Mbit/s
  local n k=0 pids=()
  n=$(iters "$2")
  for pr in 0:1 1:0 2:3 3:2; do
    local s=${pr%:*} d=${pr#*:} mport=$((25000 + RANDOM % 4000 + k))
    k=$((k + 1))
    perf_rank "$d" 1 2 "$mport" "$(addr "$s")" "$1" --mode bw -n "$n" -w 2 >"$WORK/bw$s$d.r" 2>&1 &
    pids+=($!)
    perf_rank "$s" 0 2 "$mport" "$(addr "$s")" "$1" --mode bw -n "$n" -w 2 >"$WORK/bw$s$d.out" 2>&1 &
    pids+=($!)
  done
  local bad=0
  for p in "${pids[@]}"; do wait "$p" || bad=1; done
  [ $bad -eq 0 ] || die "bidir ($1): $(tail -2 "$WORK"/bw*.out)"
  cat "$WORK"/bw01.out "$WORK"/bw10.out "$WORK"/bw23.out "$WORK"/bw32.out |
    awk '!/^#/ && NF == 4 {s += $4 * 8000; n++} END {if (n == 4) printf "%.1f\n", s / 4}'
}

measure() { # WORKLOAD MODE BOUND: ECMP's mean over its trials, else one run
  local trials=1 v sum=0
  [ "$2" = ecmp ] && trials=$ECMP_TRIALS
  for _ in $(seq "$trials"); do
    v=$("$1_once" "$2" "$3")
    [ -n "$v" ] || die "$1 ($2): no figure"
    sum=$(awk -v a="$sum" -v b="$v" 'BEGIN {print a + b}')
  done
  awk -v s="$sum" -v t="$trials" 'BEGIN {printf "%.1f", s / t}'
}

# the max-flow bound per flow (Mbit/s) from the topology's link rates now
bound() {
  python3 - "$TOPO" "$RATE_MBIT" "$1" <<'EOF'
import json, sys
t, rate, degraded = json.load(open(sys.argv[1])), float(sys.argv[2]), sys.argv[3]
cap = {l["id"]: rate for l in t["links"]}
if degraded != "-":
    cap[degraded] = rate / 4
per_dir = []
for a, b in (("l0", "l1"), ("l1", "l0")):
    across = sum(min(cap["%s-%s" % (a, s["name"])], cap["%s-%s" % (b, s["name"])])
                 for s in t["spines"])
    per_dir.append(min(rate, across / 2))  # two flows each way, each at most a host link
print("%.1f" % min(per_dir))
EOF
}

declare -A R
run_condition() { # LABEL DEGRADED_LINK(-)
  local b
  b=$(bound "$2") || die "bound"
  R[$1,bound]=$b
  for w in allreduce bidir; do
    for m in ecmp static dynamic; do
      R[$1,$w,$m]=$(measure "$w" "$m" "$b")
      echo "bench-fabric: $1 $w $m: ${R[$1,$w,$m]} Mbit/s (bound $b)"
    done
  done
}

echo "bench-fabric: 4 hosts, 2 leaves, 2 spines, links ${RATE_MBIT} Mbit/s; ${MSG}B messages, ~${SECS} s a run"
run_condition healthy -
fab degrade l0-s0 "${DEGRADED_MBIT}mbit" >/dev/null || die "degrade l0-s0"
run_condition degraded l0-s0

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {printf "%.3f", (b > 0 ? a / b : 0)}'; }
verdict() { awk -v v="$1" -v t="$2" 'BEGIN {print (v >= t ? "ok" : "MISSED")}'; }
echo
printf '%-9s %-10s %9s %9s %9s %9s   %s\n' condition workload ecmp static dynamic bound "of bound (ecmp static dynamic)"
for c in healthy degraded; do
  for w in allreduce bidir; do
    printf '%-9s %-10s %9s %9s %9s %9s   %s %s %s\n' "$c" "$w" "${R[$c,$w,ecmp]}" "${R[$c,$w,static]}" \
      "${R[$c,$w,dynamic]}" "${R[$c,bound]}" "$(ratio "${R[$c,$w,ecmp]}" "${R[$c,bound]}")" \
      "$(ratio "${R[$c,$w,static]}" "${R[$c,bound]}")" "$(ratio "${R[$c,$w,dynamic]}" "${R[$c,bound]}")"
  done
done
echo
json="{\"rate_mbit\": $RATE_MBIT, \"degraded_mbit\": $DEGRADED_MBIT"
for w in allreduce bidir; do
  hs=$(ratio "${R[healthy,$w,static]}" "${R[healthy,bound]}")
  dd=$(ratio "${R[degraded,$w,dynamic]}" "${R[degraded,bound]}")
  de=$(ratio "${R[degraded,$w,dynamic]}" "${R[degraded,$w,ecmp]}")
  echo "targets, $w: healthy plan $hs of bound (>= 0.95: $(verdict "$hs" 0.95)); degraded dynamic $dd of bound (>= 0.9: $(verdict "$dd" 0.9)), ${de}x plain ECMP (>= 1.3: $(verdict "$de" 1.3))"
  for c in healthy degraded; do
    for m in ecmp static dynamic; do json+=", \"${c}_${w}_${m}_mbit\": ${R[$c,$w,$m]}"; done
  done
  json+=", \"${w}_healthy_plan_of_bound\": $hs, \"${w}_degraded_dynamic_of_bound\": $dd, \"${w}_degraded_dynamic_over_ecmp\": $de"
done
json+=", \"healthy_bound_mbit\": ${R[healthy,bound]}, \"degraded_bound_mbit\": ${R[degraded,bound]}}"
echo "$json" >"$BUILD/bench-fabric.json"
echo "bench-fabric: written to $BUILD/bench-fabric.json"
