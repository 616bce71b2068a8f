#!/usr/bin/env bash
# promtool.sh -- c4mon's /metrics, with a job streaming to it, passes `promtool check metrics`
# (Prometheus's own linter: names, types, HELP, units, counters ending in _total), every series
# about a job carries its job label, and docs/alerts.yml passes `promtool check rules`.
# Usage: promtool.sh [BUILD_DIR] (default $C4_BUILD_DIR). promtool comes from Debian's prometheus
# package (make deps).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
BIN=$BUILD/bin
# shellcheck source=tests/lib/c4mon_serve.sh
source "$(dirname "$0")/../lib/c4mon_serve.sh"
WORK=$(mktemp -d /tmp/c4-promtool-XXXXXX)
mon=
cleanup() {
  [ -n "$mon" ] && kill "$mon" 2>/dev/null && wait "$mon"
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "promtool: FAILED: $*"
  exit 1
}
command -v promtool >/dev/null || fail "promtool is missing (Debian package prometheus: make deps)"

promtool check rules docs/alerts.yml >"$WORK/rules" 2>&1 || fail "docs/alerts.yml: $(cat "$WORK/rules")"

c4mon_serve "$BIN/c4mon" "$WORK/events" "$WORK/mon.err" --listen 127.0.0.1:0 \
  --metrics 127.0.0.1:0 --token t
started=$?
mon=$MON_PID ranks=$MON_RANKS metrics=$MON_METRICS
[ "$started" = 0 ] || fail "c4mon did not start"

C4_MONITOR=$ranks C4_TOKEN=t C4_JOB=promjob C4_HEARTBEAT_MS=100 \
  "$BIN/c4perf" --spawn 2 -b 64K -e 1M -n 20 >/dev/null 2>"$WORK/perf.err" ||
  fail "c4perf: $(cat "$WORK/perf.err")"
sleep 1.5 # a publish (once a second) after the last heartbeat
curl -sf "$metrics" >"$WORK/metrics" || fail "no answer at $metrics"
promtool check metrics <"$WORK/metrics" >"$WORK/lint" 2>&1 || fail "promtool: $(cat "$WORK/lint")"
for family in c4_rank_heartbeat_age_seconds c4_rank_collectives_done_total c4_link_samples \
  c4_events_total c4_verdicts_active; do
  grep -q "^$family{job=\"promjob\"," "$WORK/metrics" ||
    fail "no $family series of job promjob in: $(grep "^$family" "$WORK/metrics" | head -3)"
done
grep -q '^c4_build_info{version="[0-9.]*"} 1$' "$WORK/metrics" || fail "no c4_build_info"
echo "promtool: /metrics and docs/alerts.yml pass promtool ($(grep -vc '^#' "$WORK/metrics") series)"
