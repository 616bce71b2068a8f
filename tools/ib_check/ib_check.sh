#!/usr/bin/env bash
# ib_check.sh -- `make ib-check`, for two hosts with RDMA NICs (InfiniBand or RoCE). This
# project's machines have none, so it has never run past step 0; without an RDMA device it says
# so and exits 2. On two RDMA hosts it runs, as it is:
#   0. checks: an RDMA device here (/sys/class/infiniband), c4's build, perftest's ib_write_bw;
#   1. c4perf bw between the two hosts through c4's verbs transport (checking from c4perf's JSON
#      that the plugin offered the RDMA device, not a socket), at 64 MiB;
#   2. spreading: c4perf bw again with one QP per connection and with --qps QPs, the plugin's
#      log at INFO: each QP's flow label and UDP source port (RoCE) or LID path bits
#      (InfiniBand), the part of the bytes it carried, its rate and weight, and the bandwidth
#      with --qps QPs over the bandwidth with one;
#   3. ib_write_bw (perftest) between the same two ports, same message size;
#   4. where nccl-tests' all_reduce_perf is found (NCCL_TESTS_DIR or PATH) and mpirun or srun
#      launches: NCCL's own IB transport (NCCL_NET=IB) against NCCL over c4 (NCCL_NET_PLUGIN).
# It fails (exit 1) when c4 reaches less than IB_CHECK_MIN_RATIO (default 0.8) of a reference
# (step 2: of itself with one QP, so spreading must not cost).
#
# Usage: tools/ib_check/ib_check.sh [BUILD_DIR] [--hosts HOST_A,HOST_B] [--launcher ssh|mpirun|srun]
#                                   [--qps N]
#   --hosts      the two hosts (default: IB_CHECK_HOSTS; under Slurm, the allocation's first two)
#   --launcher   how ranks start (default: srun inside a Slurm allocation of 2+ nodes, else mpirun
#                when found, else ssh). ssh and mpirun need the build at the same path on both
#                hosts (a shared file system, or the same checkout built on each).
#   --qps N      QPs per connection for step 2's spread run, 2..16 (default IB_CHECK_QPS, else 4)
#   IB_CHECK_DEV  the RDMA device (default: the first in /sys/class/infiniband), passed as
#                 C4_IB_HCA, NCCL_IB_HCA and ib_write_bw -d.
#   NCCL_IB_GID_INDEX  (RoCE) the GID index for all three (ib_write_bw -x); unset, each picks.
# Exit: 0 ok, 1 c4 below the ratio or a run failed, 2 no RDMA device, missing tools, bad usage.
set -euo pipefail
SELF=$(readlink -f "$0")
cd "$(dirname "$SELF")/../.."

# ---- a rank of a launched job: set RANK from the launcher and run the command; only rank 0's
# output is kept ----
if [ "${1:-}" = "--rank-exec" ]; then
  shift
  export RANK=${RANK:-${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-${PMI_RANK:-}}}}
  [ "$RANK" = 0 ] || exec >/dev/null
  case "$1" in
  ib_write_bw) # rank 1 serves, rank 0 connects to it
    shift
    if [ "$RANK" = 1 ]; then exec ib_write_bw "$@"; fi
    sleep 2
    exec ib_write_bw "$@" "$MASTER_PEER"
    ;;
  *) exec "$@" ;;
  esac
fi

BUILD=build
HOSTS=${IB_CHECK_HOSTS:-}
LAUNCHER=${IB_CHECK_LAUNCHER:-}
QPS=${IB_CHECK_QPS:-4}
while [ $# -gt 0 ]; do
  case "$1" in
  --hosts) HOSTS=${2:-}; shift $(($# > 1 ? 2 : 1)) ;;
  --launcher) LAUNCHER=${2:-}; shift $(($# > 1 ? 2 : 1)) ;;
  --qps) QPS=${2:-}; shift $(($# > 1 ? 2 : 1)) ;;
  -h | --help) sed -n '2,/^set -euo/p' "$SELF" | grep '^#' | sed 's/^# \{0,1\}//'; exit 0 ;;
  -*) echo "ib-check: unknown option $1 (see --help)" >&2; exit 2 ;;
  *) BUILD=$1; shift ;;
  esac
done
BIN="$PWD/$BUILD/bin"
LIB="$PWD/$BUILD/lib"
RATIO=${IB_CHECK_MIN_RATIO:-0.8}
SIZE=$((64 << 20))
if ! [[ $QPS =~ ^[0-9]+$ ]] || [ "$QPS" -lt 2 ] || [ "$QPS" -gt 16 ]; then
  echo "ib-check: --qps must be a whole number 2..16 (the QPs a connection spreads over), not \"$QPS\"" >&2
  exit 2
fi
case "$LAUNCHER" in
"" | ssh | mpirun | srun) ;;
*) echo "ib-check: --launcher must be ssh, mpirun or srun, not \"$LAUNCHER\"" >&2; exit 2 ;;
esac

echo "== 0. RDMA device, build and tools"
devs=$(ls /sys/class/infiniband 2>/dev/null || true)
if [ -z "$devs" ]; then
  echo "ib-check: no RDMA device on $(hostname): /sys/class/infiniband is empty or missing (no" >&2
  echo "  InfiniBand/RoCE NIC, or its kernel driver is not loaded). Nothing was measured." >&2
  exit 2
fi
DEV=${IB_CHECK_DEV:-$(echo "$devs" | head -n 1)}
[ -e "/sys/class/infiniband/$DEV" ] || { echo "ib-check: no RDMA device $DEV here (have: $devs)" >&2; exit 2; }
if [ ! -x "$BIN/c4perf" ] || [ ! -f "$LIB/libnccl-net-c4.so" ]; then
  echo "ib-check: build $BUILD first (make)" >&2
  exit 2
fi
command -v ib_write_bw >/dev/null || { echo "ib-check: ib_write_bw not found (apt-get install perftest)" >&2; exit 2; }
echo "   device $DEV; ports: $(cat /sys/class/infiniband/"$DEV"/ports/*/state 2>/dev/null | tr '\n' ' ')"

if [ -z "$HOSTS" ] && [ -n "${SLURM_JOB_NODELIST:-}" ]; then
  HOSTS=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 2 | paste -sd, -)
fi
IFS=, read -r HOST_A HOST_B <<<"$HOSTS"
if [ -z "${HOST_A:-}" ] || [ -z "${HOST_B:-}" ]; then
  echo "ib-check: name the two hosts: --hosts HOST_A,HOST_B (or IB_CHECK_HOSTS, or run inside a" >&2
  echo "  Slurm allocation of two nodes)" >&2
  exit 2
fi
if [ -z "$LAUNCHER" ]; then
  if [ "${SLURM_JOB_NUM_NODES:-0}" -ge 2 ] && command -v srun >/dev/null; then LAUNCHER=srun
  elif command -v mpirun >/dev/null; then LAUNCHER=mpirun
  else LAUNCHER=ssh; fi
fi
echo "   hosts $HOST_A (rank 0) and $HOST_B (rank 1), launched with $LAUNCHER"

PORT=$((20000 + RANDOM % 20000))
ENVS=(C4_IB_HCA="=$DEV" NCCL_IB_HCA="=$DEV" MASTER_ADDR="$HOST_A" MASTER_PORT="$PORT"
      MASTER_PEER="$HOST_B" WORLD_SIZE=2 LD_LIBRARY_PATH="$LIB:${LD_LIBRARY_PATH:-}")
GID_ARGS=()
if [ -n "${NCCL_IB_GID_INDEX:-}" ]; then
  ENVS+=(NCCL_IB_GID_INDEX="$NCCL_IB_GID_INDEX")
  GID_ARGS=(-x "$NCCL_IB_GID_INDEX")
fi
MPI_ENVS=()
for e in "${ENVS[@]}"; do MPI_ENVS+=(-x "$e"); done

# Runs "$@" as two ranks, one per host; rank 0's stdout is the output.
launch() {
  case "$LAUNCHER" in
  srun) srun -N 2 -n 2 --ntasks-per-node=1 -w "$HOST_A,$HOST_B" --export=ALL \
          env "${ENVS[@]}" bash "$SELF" --rank-exec "$@" ;;
  mpirun) mpirun -np 2 --host "$HOST_A,$HOST_B" "${MPI_ENVS[@]}" bash "$SELF" --rank-exec "$@" ;;
  ssh) # the command line is built here, on purpose: both hosts run this checkout's paths
    local cmd
    cmd="cd $(printf %q "$PWD") && env $(printf '%q ' "${ENVS[@]}")"
    # shellcheck disable=SC2029
    ssh "$HOST_B" "$cmd RANK=1 bash $(printf '%q ' "$SELF" --rank-exec "$@")" &
    local peer=$!
    # shellcheck disable=SC2029
    ssh "$HOST_A" "$cmd RANK=0 bash $(printf '%q ' "$SELF" --rank-exec "$@")"
    wait "$peer"
    ;;
  *) echo "ib-check: --launcher must be ssh, mpirun or srun" >&2; exit 2 ;;
  esac
}

ge() { awk -v a="$1" -v b="$2" -v r="$RATIO" 'BEGIN { exit !(a >= r * b) }'; }
fails=0

echo "== 1. c4perf bw through c4's verbs transport ($((SIZE >> 20)) MiB messages)"
c4=$(launch "$BIN/c4perf" --plugin "$LIB/libnccl-net-c4.so" -b $SIZE -e $SIZE --json | tr -d '\n ')
c4_dev=$(sed -n 's/.*"device":"\([^"]*\)".*/\1/p' <<<"$c4")
c4_gbps=$(grep -o '"GBps":[0-9.eE+-]*' <<<"$c4" | tail -n 1 | cut -d: -f2)
echo "   device as NCCL sees it: $c4_dev; $c4_gbps GB/s"
if [ "$c4_dev" != "$DEV" ]; then
  echo "ib-check: the plugin offered \"$c4_dev\", not the RDMA device $DEV: the verbs transport is" >&2
  echo "  off (run with C4_DEBUG=INFO to see why: libibverbs, port state, GID, C4_IB_HCA)" >&2
  exit 1
fi
c4_gbit=$(awk -v g="$c4_gbps" 'BEGIN { printf "%.2f", g * 8 }')

echo "== 2. spreading: c4perf bw with $QPS QPs per connection against 1 QP"
LOGS=$(mktemp -d /tmp/c4-ib-check-XXXXXX)
trap 'rm -rf "$LOGS"' EXIT
declare -A spread_gbps
for n in 1 "$QPS"; do
  if ! out=$(launch env C4_IB_QPS="$n" C4_DEBUG=INFO "$BIN/c4perf" --plugin "$LIB/libnccl-net-c4.so" \
               -b $SIZE -e $SIZE --json 2>"$LOGS/qps$n.log" | tr -d '\n '); then
    echo "ib-check: c4perf with C4_IB_QPS=$n failed; the end of its log:" >&2
    tail -n 20 "$LOGS/qps$n.log" >&2
    exit 1
  fi
  spread_gbps[$n]=$(grep -o '"GBps":[0-9.eE+-]*' <<<"$out" | tail -n 1 | cut -d: -f2)
  echo "   $n QP(s) per connection: ${spread_gbps[$n]} GB/s; the sender's QPs:"
  awk -f tools/ib_check/qp_table.awk "$LOGS/qps$n.log" ||
    echo "   (no per-QP lines in the plugin's log: the sending rank's stderr did not reach here)"
done
one=${spread_gbps[1]}
many=${spread_gbps[$QPS]}
echo "   $QPS QPs over 1 QP: $(awk -v a="$many" -v b="$one" 'BEGIN { printf "%.2f", b > 0 ? a / b : 0 }')"
if ge "$many" "$one"; then echo "   ok: $QPS QPs reach at least $RATIO of one QP"
else echo "   FAILED: $QPS QPs below $RATIO of one QP"; fails=$((fails + 1)); fi

echo "== 3. ib_write_bw (perftest) on the same ports"
ref=$(launch ib_write_bw -d "$DEV" "${GID_ARGS[@]}" -F --report_gbits -s $SIZE -D 5 -p $((PORT + 1)))
ref_gbit=$(awk -v s=$SIZE '$1 == s { v = $4 } END { print v }' <<<"$ref")
[ -n "$ref_gbit" ] || { echo "ib-check: could not read ib_write_bw's result:" >&2; echo "$ref" >&2; exit 1; }
echo "   ib_write_bw $ref_gbit Gbit/s, c4 $c4_gbit Gbit/s"
if ge "$c4_gbit" "$ref_gbit"; then echo "   ok: c4 reaches at least $RATIO of ib_write_bw"
else echo "   FAILED: c4 below $RATIO of ib_write_bw"; fails=$((fails + 1)); fi

echo "== 4. NCCL's IB transport against NCCL over c4 (nccl-tests)"
AR=${NCCL_TESTS_DIR:+$NCCL_TESTS_DIR/all_reduce_perf}
AR=${AR:-$(command -v all_reduce_perf || true)}
if [ -z "$AR" ] || [ ! -x "$AR" ] || [ "$LAUNCHER" = ssh ]; then
  echo "   skipped: needs nccl-tests' all_reduce_perf (NCCL_TESTS_DIR) built with MPI, and mpirun or srun"
else
  busbw() { awk '/Avg bus bandwidth/ { print $NF }'; }
  nccl=$(launch env NCCL_NET=IB NCCL_NET_PLUGIN=none "$AR" -b 64M -e 64M -g 1)
  ours=$(launch env NCCL_NET=c4 NCCL_NET_PLUGIN="$LIB/libnccl-net-c4.so" NCCL_DEBUG=INFO \
           "$AR" -b 64M -e 64M -g 1)
  grep -q "Using network c4" <<<"$ours" || { echo "ib-check: NCCL did not use c4 (no \"Using network c4\")" >&2; exit 1; }
  n_bw=$(busbw <<<"$nccl")
  c_bw=$(busbw <<<"$ours")
  echo "   all_reduce 64 MiB bus bandwidth: NCCL IB $n_bw GB/s, NCCL over c4 $c_bw GB/s"
  if ge "$c_bw" "$n_bw"; then echo "   ok: c4 reaches at least $RATIO of NCCL's IB transport"
  else echo "   FAILED: c4 below $RATIO of NCCL's IB transport"; fails=$((fails + 1)); fi
fi

[ "$fails" -eq 0 ] || { echo "ib-check: $fails comparison(s) failed"; exit 1; }
echo "ib-check: ok"
