#!/usr/bin/env bash
# c4cap.sh -- c4cap's byte counts agree with tcpdump's on the same capture: tcpdump -w records a
# known loopback transfer (TCP, plain UDP, and RoCEv2-shaped UDP to port 4791 on two QPs); then
# per flow (5-tuple) and in total, the packets, wire bytes (tcpdump -e's "length") and IP bytes
# (tcpdump -v's IP "length") that tcpdump -r prints must equal c4cap -r --json's. Needs root and
# tcpdump; says "skipped" and passes without them. Usage: c4cap.sh [BUILD_DIR].
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
C4CAP="$BUILD/bin/c4cap"
if [ "$(id -u)" -ne 0 ] || ! command -v tcpdump >/dev/null || ! command -v python3 >/dev/null; then
  echo "c4cap_live: skipped: needs root (CAP_NET_RAW), tcpdump and python3"
  exit 0
fi
[ -x "$C4CAP" ] || { echo "c4cap_live: $C4CAP is missing (build first)"; exit 1; }
WORK=$(mktemp -d /tmp/c4cap-live-XXXXXX)
TD_PID=
cleanup() {
  [ -n "$TD_PID" ] && kill "$TD_PID" 2>/dev/null
  wait 2>/dev/null
  rm -rf "$WORK"
}
trap cleanup EXIT
fail() {
  echo "c4cap_live: FAILED: $*"
  exit 1
}

PORT=$((20000 + $$ % 20000))
# immediate mode and a big kernel buffer: a loopback burst must be written, not dropped
tcpdump -i lo -nn -U --immediate-mode -B 65536 -w "$WORK/cap.pcap" "tcp port $PORT or udp port $PORT or udp dst port 4791" \
  2>"$WORK/tcpdump.err" &
TD_PID=$!
for _ in $(seq 50); do grep -q listening "$WORK/tcpdump.err" && break; sleep 0.1; done
python3 - "$PORT" <<'PY' || fail "the transfer did not run"
import socket, struct, sys, threading
port = int(sys.argv[1])
srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen()
def sink():
    c, _ = srv.accept()
    while c.recv(1 << 16):
        pass
    c.close()
t = threading.Thread(target=sink)
t.start()
c = socket.create_connection(("127.0.0.1", port))
for _ in range(64):  # 2 MiB in 32 KiB writes
    c.sendall(b"x" * 32768)
c.close()
t.join()
u = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
u.bind(("127.0.0.1", 0))
for i in range(100):
    u.sendto(b"u" * (100 + i), ("127.0.0.1", port))
for i in range(60):  # a BTH (RDMA WRITE, dest QP 0x12 or 0x34) and a payload
    bth = struct.pack("!BBHI I", 0x0A, 0, 0xFFFF, 0x12 if i % 3 else 0x34, i)
    u.sendto(bth + b"r" * 1024, ("127.0.0.1", 4791))
PY
sleep 1.5 # past tcpdump's ring timeout: it does not drain the ring on SIGINT
kill -INT "$TD_PID"
wait "$TD_PID"
TD_PID=
grep -q "^0 packets dropped by kernel" "$WORK/tcpdump.err" || fail "tcpdump dropped packets: $(cat "$WORK/tcpdump.err")"

# tcpdump's view: the first line of each packet has both lengths, the next the addresses
tcpdump -r "$WORK/cap.pcap" -nn -e -v 2>/dev/null | awk '
  /ethertype IPv4/ { match($0, /, length [0-9]+: /); wire = substr($0, RSTART + 9, RLENGTH - 11)
                     match($0, /, length [0-9]+\)/); ip = substr($0, RSTART + 9, RLENGTH - 10); next }
  wire != "" { split($1, s, "."); split($3, d, "."); sub(":", "", d[5])
               k = s[1] "." s[2] "." s[3] "." s[4] " " s[5] " " d[1] "." d[2] "." d[3] "." d[4] " " d[5]
               n[k]++; w[k] += wire; b[k] += ip; wire = "" }
  END { for (k in n) print k, n[k], w[k], b[k] }' | sort >"$WORK/tcpdump.flows"

"$C4CAP" -r "$WORK/cap.pcap" --json >"$WORK/c4cap.json" || fail "c4cap -r failed"
python3 - "$WORK/c4cap.json" >"$WORK/c4cap.flows" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
flows = {}
for f in j["flows"]:  # tcpdump cannot see QPs: sum them per 5-tuple
    k = "%s %d %s %d" % (f["src"], f["sport"], f["dst"], f["dport"])
    a = flows.setdefault(k, [0, 0, 0])
    a[0] += f["packets"]; a[1] += f["wire_bytes"]; a[2] += f["ip_bytes"]
for k in sorted(flows):
    print(k, *flows[k])
PY
sort -o "$WORK/c4cap.flows" "$WORK/c4cap.flows"
diff "$WORK/tcpdump.flows" "$WORK/c4cap.flows" >"$WORK/diff" ||
  fail "per-flow counts differ (< tcpdump, > c4cap): $(cat "$WORK/diff")"
read -r fl pk wi ip < <(awk '{f++; p += $5; w += $6; b += $7} END {print f, p, w, b}' "$WORK/tcpdump.flows")
tp=$(tcpdump -r "$WORK/cap.pcap" 2>/dev/null | wc -l)
[ "$tp" -eq "$pk" ] || fail "tcpdump -r shows $tp packets, its flows $pk"
python3 -c 'import json,sys; t=json.load(open(sys.argv[1]))["totals"]; r=json.load(open(sys.argv[1]))["flows"]
assert t["packets"]==int(sys.argv[2]) and t["wire_bytes"]==int(sys.argv[3]) and t["ip_bytes"]==int(sys.argv[4]), t
assert sorted(f["qp"] for f in r if f["kind"]=="roce")==[0x12,0x34], "RoCEv2 QPs"' \
  "$WORK/c4cap.json" "$pk" "$wi" "$ip" || fail "c4cap's totals or QPs differ from tcpdump's"
[ "$pk" -gt 160 ] || fail "only $pk packets captured"
echo "c4cap_live: ok: $fl flows, $pk packets, $wi wire bytes, $ip IP bytes: c4cap = tcpdump per flow"
