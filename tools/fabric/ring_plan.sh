# ring_plan.sh -- sourced by the scripts that run a ring job on the namespace fabric
# (tools/drill/drill.sh, tools/bench/path_loop.sh): the traffic plan of a 4-host ring.
#
# ring_plan BIN NAME TOPO LPORT OUT H0 H1 H2 H3: the ring H0 -> H1 -> H2 -> H3 -> H0 sends two
# 1 MiB flows a hop (C4_NSOCKS=2 data sockets), written to OUT/flows.json; each hop's source ports
# are probed from its sender's namespace (NAME-HOST, BIN/c4plan probe on topology TOPO towards the
# receiver's port LPORT, into OUT/probe-A-B.json), then BIN/c4plan assign places the flows in
# OUT/plan.json (its log in OUT/assign.log). Returns 1 and sets RING_PLAN_ERR to what failed.
ring_plan() {
  local bin=$1 name=$2 topo=$3 lport=$4 out=$5 r a b rc sep=
  shift 5
  local hosts=("$@") probes=()
  RING_PLAN_ERR=
  {
    printf '{"v":1,"flows":['
    for r in 0 1 2 3; do
      a=${hosts[r]} b=${hosts[(r + 1) % 4]}
      for _ in 1 2; do
        printf '%s{"src":"%s","dst":"%s","bytes":1048576}' "$sep" "$a" "$b"
        sep=,
      done
    done
    printf ']}\n'
  } >"$out/flows.json"
  for r in 0 1 2 3; do
    a=${hosts[r]} b=${hosts[(r + 1) % 4]}
    # exit 1: some source ports stayed unmapped (a lost ICMP reply); the plan uses the others
    rc=0
    ip netns exec "$name-$a" "$bin/c4plan" probe --topo "$topo" --dst "$b" --dst-port "$lport" \
      --json >"$out/probe-$a-$b.json" 2>"$out/probe.log" || rc=$?
    if [ $rc -gt 1 ] || [ ! -s "$out/probe-$a-$b.json" ]; then
      RING_PLAN_ERR="c4plan probe $a -> $b (exit $rc): $(cat "$out/probe.log")"
      return 1
    fi
    probes+=(--probe "$out/probe-$a-$b.json")
  done
  "$bin/c4plan" assign --topo "$topo" --flows "$out/flows.json" "${probes[@]}" \
    --out "$out/plan.json" >"$out/assign.log" 2>&1 && return 0
  RING_PLAN_ERR="c4plan assign: $(cat "$out/assign.log")"
  return 1
}
