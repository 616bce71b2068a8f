#!/usr/bin/env bash
# drill.sh -- `make drill` as a live suite: c4train on 4 hosts of a namespace leaf-spine fabric
# with c4mon on a fifth, and real faults one after another (a congested spine under the traffic
# planner's plan, a degraded host link, a SIGSTOPped rank, a killed rank the job goes on without);
# tools/drill/drill.sh fails unless c4mon names each with the right class and place. Here with
# its small model (C4_DRILL_QUICK=1, about a minute); then its JSON table is checked. Needs root;
# says "skipped" and passes without it. Usage: drill.sh [BUILD_DIR] (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}

if [ "$(id -u)" -ne 0 ] || ! ip netns list >/dev/null 2>&1; then
  echo "drill: skipped: needs CAP_NET_ADMIN (root) and ip netns"
  exit 0
fi
WORK=$(mktemp -d /tmp/c4-drill-test-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() {
  echo "drill: FAILED: $*"
  exit 1
}

C4_DRILL_QUICK=1 C4_DRILL_OUT=$WORK bash tools/drill/drill.sh "$BUILD" || fail "tools/drill/drill.sh exited $?"
python3 - "$WORK/drill.json" <<'PY' || fail "the drill's table: $(cat "$WORK/drill.json")"
import json, sys
d = json.load(open(sys.argv[1]))
want = [("congested spine", "comm_slow"), ("degraded link", "comm_slow"),
        ("SIGSTOP", "noncomm_hang"), ("killed", "rank_lost")]
rows = d["rows"]
assert d["v"] == 1 and len(rows) == len(want), rows
for r, (fault, cls) in zip(rows, want):
    assert r["fault"].startswith(fault) and r["detected"] and r["class"] == cls, r
    assert 0 <= r["detect_s"] < 20, r
    t = r["tokens_per_s"]
    assert t["before"] > 0 and t["after"] > 0, r
assert rows[2]["place"].endswith("rank 1 (h1)") and rows[3]["place"].endswith("rank 2 (h3)"), rows
assert rows[3]["tokens_per_s"]["during"] == 0, rows[3]
PY
echo "drill: ok"
