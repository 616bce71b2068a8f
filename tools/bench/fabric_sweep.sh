#!/usr/bin/env bash
# fabric_sweep.sh -- the plugin's tunables measured on the namespace leaf-spine fabric (root):
# tools/fabric/fabric with 4 hosts, 2 leaves, 2 spines, every link RATE, and a ring allreduce
# through c4perf over the plugin with one rank per host (host i on leaf i % 2, so every ring edge
# crosses the spines). Each CONFIG runs REPS times healthy, then REPS times with leaf-spine link
# l0-s0 at a quarter of RATE; no plan, so the sockets hash onto the spines as ECMP puts them, a
# fresh draw each run. Prints each run's bus bandwidth (Mbit/s) and the median. This is how
# docs/multipath.md's fabric columns were measured.
# CONFIG: LABEL=VAR=VALUE,VAR=VALUE,...  (LABEL= alone: the plugin's defaults, no C4_* tuning)
# Usage: fabric_sweep.sh BUILD_DIR REPS CONFIG...
#   e.g. fabric_sweep.sh build 3 defaults= ecmp=C4_NSOCKS=1 n4t2=C4_NSOCKS=4,C4_NTHREADS=2
# Environment: C4_FABRIC_RATE_MBIT (200), C4_FABRIC_SECS (5, about a run's length), C4_SWEEP_MSG
# (4M), C4_SWEEP_CONDITIONS ("healthy degraded"), C4_SWEEP_LOG (a file the ranks' output is
# appended to, e.g. with C4_DEBUG=INFO in a CONFIG).
set -u
BUILD=${1:?usage: fabric_sweep.sh BUILD_DIR REPS CONFIG...}
REPS=${2:?usage: fabric_sweep.sh BUILD_DIR REPS CONFIG...}
shift 2
BIN="$PWD/$BUILD/bin"
PLUGIN="$PWD/$BUILD/lib/libnccl-net-c4.so"
RATE_MBIT=${C4_FABRIC_RATE_MBIT:-200}
SECS=${C4_FABRIC_SECS:-5}
MSG=${C4_SWEEP_MSG:-4M}
CONDITIONS=${C4_SWEEP_CONDITIONS:-healthy degraded}

if [ "$(id -u)" -ne 0 ] || ! ip netns list >/dev/null 2>&1; then
  echo "fabric-sweep: needs root (network namespaces, tc)" >&2
  exit 2
fi
P=fs$$
WORK=$(mktemp -d /tmp/c4-fabric-sweep-XXXXXX)
# the programs as they are now: a rebuild during the sweep does not change what it measures
mkdir -p "$WORK/bin" "$WORK/lib"
cp "$BIN/c4perf" "$WORK/bin/" && cp "$PLUGIN" "$WORK/lib/" || { echo "fabric-sweep: build first" >&2; exit 2; }
BIN=$WORK/bin PLUGIN=$WORK/lib/libnccl-net-c4.so
fab() { tools/fabric/fabric --name "$P" --out "$WORK/topo.json" "$@"; }
cleanup() {
  fab down >/dev/null 2>&1
  rm -rf "$WORK"
}
trap cleanup EXIT
die() {
  echo "fabric-sweep: FAILED: $*" >&2
  exit 1
}

fab --hosts 4 --ports 1 --leaves 2 --spines 2 --rate "${RATE_MBIT}mbit" up >/dev/null || die "fabric up"
msg_bytes=$(numfmt --from=iec "$MSG")
# iterations for about SECS at the healthy per-edge bound (RATE / 2: two flows share the spines)
n=$(awk -v r="$RATE_MBIT" -v s="$SECS" -v m="$msg_bytes" \
  'BEGIN {n = int(r / 2 * 1e6 / 8 * s / m / 1.5); print (n < 4 ? 4 : n)}')

once() { # ENV (comma-separated): one ring allreduce, its bus bandwidth in Mbit/s
  local mport=$((21000 + RANDOM % 4000)) r rc
  local -a env=() pids=()
  [ -n "$1" ] && IFS=, read -r -a env <<<"$1"
  for r in 3 2 1 0; do
    ip netns exec "$P-h$r" env C4_DEBUG=NONE "${env[@]}" C4_HOSTNAME="h$r" NCCL_SOCKET_IFNAME=eth0 \
      RANK=$r WORLD_SIZE=4 MASTER_ADDR=198.18.0.2 \
      MASTER_PORT=$mport "$BIN/c4perf" --plugin "$PLUGIN" --no-check -b "$MSG" -e "$MSG" \
      --mode allreduce -n "$n" -w 2 >"$WORK/ar$r.out" 2>&1 &
    pids+=($!)
  done
  rc=0
  for r in "${pids[@]}"; do wait "$r" || rc=1; done
  [ $rc -eq 0 ] || { echo "fabric-sweep: a run failed: $(tail -n 3 "$WORK"/ar?.out)" >&2; return 1; }
  [ -n "${C4_SWEEP_LOG:-}" ] && cat "$WORK"/ar?.out >>"$C4_SWEEP_LOG"
  awk '$1 ~ /^[0-9.]+$/ && NF == 5 && $3 > 0 {printf "%.1f\n", $1 * 1.5 * 8 / $3}' "$WORK/ar0.out"
}

echo "fabric-sweep: 4 hosts, 2 leaves, 2 spines at ${RATE_MBIT} Mbit/s, ${MSG}B ring allreduce, $n iterations a run; load $(cut -d' ' -f1-3 /proc/loadavg); TCP congestion control $(cat /proc/sys/net/ipv4/tcp_congestion_control) (C4_TCP_CONGESTION: ${C4_TCP_CONGESTION:-unset})"
for cond in $CONDITIONS; do
  if [ "$cond" = degraded ]; then
    fab degrade l0-s0 "$((RATE_MBIT / 4))mbit" >/dev/null || die "degrade l0-s0"
  else
    fab restore >/dev/null || die "restore"
  fi
  for cfg in "$@"; do
    label=${cfg%%=*} env=${cfg#*=}
    runs=()
    for _ in $(seq "$REPS"); do
      v=$(once "$env") || v=fail
      runs+=("$v")
    done
    med=$(printf '%s\n' "${runs[@]}" | grep -v fail | sort -n | awk '{a[NR] = $1} END {print (NR ? a[int((NR + 1) / 2)] : "-")}')
    printf 'fabric-sweep: %-8s %-10s runs %s median %s Mbit/s\n' "$cond" "$label" "${runs[*]}" "$med"
  done
done
