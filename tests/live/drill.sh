#!/usr/bin/env bash
# drill.sh -- `make drill` as a live suite: c4train on 4 hosts of a namespace leaf-spine fabric
# with c4mon on a fifth, and real faults one after another (a congested spine under the traffic
# planner's plan, a degraded host link, a SIGSTOPped rank, a killed rank the job goes on without);
# tools/drill/drill.sh scores c4mon's events against its table of expected verdicts
# (tools/drill/expected.json) and fails on a miss or a false alarm, or when the job did not go
# on. Here quick (C4_DRILL_QUICK=1: shorter windows, about a minute and a half). Needs root; says
# "skipped" and passes without it. Usage: drill.sh [BUILD_DIR] (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}

if [ "$(id -u)" -ne 0 ] || ! ip netns list >/dev/null 2>&1; then
  echo "drill: skipped: needs CAP_NET_ADMIN (root) and ip netns"
  exit 0
fi
WORK=$(mktemp -d /tmp/c4-drill-test-XXXXXX)
trap 'rm -rf "$WORK"' EXIT

if ! C4_DRILL_QUICK=1 C4_DRILL_OUT=$WORK bash tools/drill/drill.sh "$BUILD"; then
  echo "drill: FAILED: tools/drill/drill.sh failed (its score above)"
  exit 1
fi
[ -s "$WORK/score.json" ] || { echo "drill: FAILED: no score written"; exit 1; }
echo "drill: ok"
