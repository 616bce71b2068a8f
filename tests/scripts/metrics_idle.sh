#!/usr/bin/env bash
# metrics_idle.sh -- c4mon's /metrics while a stranger holds idle connections to it: 100 opened
# from 127.0.0.2 and left silent, a scrape from 127.0.0.1 still answers within 2 s (with room for
# 64 connections in all, the stranger's kept every scraper out for their 10 s timeout), and
# c4mon's log says so in a few lines, not a line a connection. Usage: metrics_idle.sh [BUILD_DIR]
# (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
# shellcheck source=tests/lib/c4mon_serve.sh
source "$(dirname "$0")/../lib/c4mon_serve.sh"
WORK=$(mktemp -d /tmp/c4-metrics-idle-XXXXXX)
mon= idle=
cleanup() {
  [ -n "$idle" ] && kill "$idle" 2>/dev/null
  [ -n "$mon" ] && kill "$mon" 2>/dev/null && wait "$mon"
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "metrics_idle: FAILED: $*"
  exit 1
}
command -v python3 >/dev/null && command -v curl >/dev/null || fail "python3 and curl are needed (make deps)"

c4mon_serve "$BUILD/bin/c4mon" /dev/null "$WORK/mon.err" --listen 127.0.0.1:0 \
  --metrics 127.0.0.1:0 --token t || fail "c4mon did not start"
mon=$MON_PID
port=${MON_METRICS##*:}
port=${port%%/*}
# the stranger: connections from another loopback address, never a byte sent, held 8 s
python3 - "$port" >"$WORK/held" 2>&1 <<'PY' &
import socket, sys, time
held = []
for _ in range(100):
    s = socket.socket()
    s.bind(("127.0.0.2", 0))
    try:
        s.connect(("127.0.0.1", int(sys.argv[1])))
        held.append(s)
    except OSError as e:
        print(e)
print(len(held), "held", flush=True)
time.sleep(8)
PY
idle=$!
for _ in $(seq 50); do grep -q held "$WORK/held" && break; sleep 0.1; done
grep -q "^100 held" "$WORK/held" || fail "the stranger could not connect: $(cat "$WORK/held")"
sleep 0.5 # c4mon accepts them
curl -sf --max-time 2 --interface 127.0.0.1 "$MON_METRICS" >"$WORK/scrape" ||
  fail "no scrape within 2 s beside 100 idle connections"
grep -q '^c4_build_info' "$WORK/scrape" || fail "the scrape is not c4mon's: $(head -3 "$WORK/scrape")"
lines=$(grep -c "connection limit" "$WORK/mon.err")
[ "$lines" -le 3 ] || fail "$lines log lines for the stranger's connections (at most 3 wanted)"
echo "metrics_idle: a scrape answered beside 100 idle connections; $lines log line(s) about them"
