#!/usr/bin/env bash
# fabric.sh -- tools/fabric and `c4plan probe` on a real namespace leaf-spine fabric: 4 hosts,
# 2 leaves, 2 spines. Checks status and the topology JSON, a ping across leaves, that a second
# `up` changes nothing, that probing 64 source ports from h0 to h3 (other leaf) finds both spines,
# the same spine twice for the same port, and the spine a real UDP flow on that port crosses;
# then degrade/restore one link's rate in tc, and `down` leaving nothing behind. Needs root;
# says "skipped" and passes without it. Usage: fabric.sh [BUILD_DIR] (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
C4PLAN="$BUILD/bin/c4plan"
FABRIC=tools/fabric/fabric

if [ "$(id -u)" -ne 0 ] || ! ip netns list >/dev/null 2>&1; then
  echo "fabric: skipped: needs CAP_NET_ADMIN (root) and ip netns"
  exit 0
fi
[ -x "$C4PLAN" ] || { echo "fabric: $C4PLAN is missing (build first)"; exit 1; }
command -v ping >/dev/null || { echo "fabric: FAILED: needs ping (apt-get install iputils-ping)"; exit 1; }

P=c4t$$ # a prefix of this run's own, so no other test's namespaces are touched
WORK=$(mktemp -d /tmp/c4-fabric-test-XXXXXX)
TOPO=$WORK/topo.json
fab() { "$FABRIC" --name "$P" --out "$TOPO" "$@"; }
cleanup() {
  fab down >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "fabric: FAILED: $*"
  exit 1
}
step() { echo "fabric: $*"; }

fab --hosts 4 --ports 1 --leaves 2 --spines 2 --rate 1gbit up || fail "up"
fab status >"$WORK/status" || fail "status after up: $(cat "$WORK/status")"
grep -q "l1-s1 .*1Gbit" "$WORK/status" || fail "status has no 1Gbit l1-s1: $(cat "$WORK/status")"

# The JSON: valid, the documented fields, h3 on the other leaf than h0.
python3 - "$TOPO" <<'EOF' || fail "topology JSON"
import json, sys
t = json.load(open(sys.argv[1]))
assert t["v"] == 1 and len(t["hosts"]) == 4 and len(t["leaves"]) == 2 and len(t["spines"]) == 2, t
p = t["hosts"][3]["ports"][0]
assert p["addr"] == "198.18.3.2" and p["leaf"] == "l1" and p["gbps"] == 1.0, p
ids = sorted(l["id"] for l in t["links"])
assert ids == ["h0p0-l0", "h1p0-l1", "h2p0-l0", "h3p0-l1", "l0-s0", "l0-s1", "l1-s0", "l1-s1"], ids
for l in t["links"]:
    assert all(k in l for k in ("a", "b", "gbps", "a_if", "b_if", "a_addr", "b_addr")), l
EOF
step "up, status and topology JSON ok"

ip netns exec "$P-h0" ping -c 2 -i 0.2 -W 2 198.18.3.2 >/dev/null || fail "ping h0 -> h3 across leaves"
fab up >/dev/null || fail "second up"
fab status >"$WORK/status2" || fail "status after the second up"
diff -u <(sed 1,2d "$WORK/status") <(sed 1,2d "$WORK/status2") || fail "second up changed the links"
for h in 0 1 2 3; do
  [ "$(ip -n "$P-h$h" -br addr show eth0 | awk '{ print $3 }')" = "198.18.$h.2/30" ] ||
    fail "h$h's address after the second up"
done
[ "$(ip -n "$P-l0" route show 198.18.3.0/30 | grep -c nexthop)" = 2 ] || fail "l0's ECMP route"
step "ping across leaves ok; a second up is idempotent"

# Probe 64 source ports, twice: both spines, and each port on the same spine both times.
probe() { ip netns exec "$P-h0" "$C4PLAN" probe --topo "$TOPO" --dst h3 --json "$@"; }
probe --proto tcp >"$WORK/p1.json" || fail "probe (tcp): $(cat "$WORK/p1.json")"
probe --proto tcp >"$WORK/p2.json" || fail "second probe (tcp)"
probe --proto udp >"$WORK/u1.json" || fail "probe (udp)"
python3 - "$WORK/p1.json" "$WORK/p2.json" "$WORK/u1.json" <<'EOF' >"$WORK/summary" || fail "probe maps: $(cat "$WORK/summary")"
import json, sys
a, b, u = (json.load(open(f)) for f in sys.argv[1:])
assert a["src"] == "h0" and a["dst"] == "h3" and a["proto"] == "tcp" and len(a["map"]) == 64, a
assert u["proto"] == "udp" and u["dst_port"] == 4791, u
for m in (a, u):
    counts = {}
    for e in m["map"]:
        counts[e["path"]] = counts.get(e["path"], 0) + 1
    print(m["proto"], "ports per spine:", dict(sorted(counts.items())))
    assert set(counts) == {"s0", "s1"}, counts
diff = [x["src_port"] for x, y in zip(a["map"], b["map"]) if x["path"] != y["path"]]
assert not diff, "ports on another spine the second time: %s" % diff
# one UDP source port per spine, for the real-flow check below
print(" ".join("%d:%s" % (next(e["src_port"] for e in u["map"] if e["path"] == s), s) for s in ("s0", "s1")))
EOF
head -2 "$WORK/summary" | sed 's/^/fabric: /'
step "probe: both spines, the same spine for the same port twice"

# A real UDP flow from a probed port must cross the spine the probe named.
for ps in $(tail -1 "$WORK/summary"); do
  port=${ps%%:*} spine=${ps##*:}
  before=$(ip netns exec "$P-$spine" cat /sys/class/net/l0/statistics/rx_packets)
  ip netns exec "$P-h0" python3 -c '
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("198.18.0.2", int(sys.argv[1])))
for _ in range(200): s.sendto(b"x" * 64, ("198.18.3.2", 4791))
' "$port" || fail "sending the UDP flow from port $port"
  after=$(ip netns exec "$P-$spine" cat /sys/class/net/l0/statistics/rx_packets)
  [ $((after - before)) -ge 200 ] ||
    fail "UDP flow from port $port: $spine's l0 got $((after - before)) packets, want >= 200"
done
step "real UDP flows cross the spines the probe named"

fab degrade l0-s1 250mbit >/dev/null || fail "degrade l0-s1"
tc -n "$P-l0" qdisc show dev s1 | grep -q "rate 250Mbit" || fail "l0's s1 not at 250Mbit after degrade"
tc -n "$P-s1" qdisc show dev l0 | grep -q "rate 250Mbit" || fail "s1's l0 not at 250Mbit after degrade"
fab restore >/dev/null || fail "restore"
tc -n "$P-l0" qdisc show dev s1 | grep -q "rate 1Gbit" || fail "l0's s1 not back at 1Gbit after restore"
step "degrade and restore ok"

fab down >/dev/null || fail "down"
fab down >/dev/null || fail "down when already down"
left=$(ip netns list | awk '{ print $1 }' | grep "^$P-" | tr '\n' ' ')
[ -z "$left" ] || fail "namespaces left after down: $left"
[ ! -e "$TOPO" ] || fail "topology file left after down"
fab status >/dev/null && fail "status says up after down"
step "down leaves nothing; ok"
