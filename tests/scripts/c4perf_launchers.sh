#!/usr/bin/env bash
# c4perf_launchers.sh -- c4perf finds its rank, world and rendezvous from each launcher's
# variables as c4train does (torchrun, Slurm, Open MPI, PMI): 2 ranks under each run a latency
# sweep to the end, rank 0 says where it waits, and a malformed variable is refused.
# Usage: c4perf_launchers.sh [BUILD_DIR] (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
PERF=$BUILD/bin/c4perf
WORK=$(mktemp -d /tmp/c4-perf-launch-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
failed=0
fail() {
  echo "c4perf_launchers: FAILED: $*"
  failed=1
}

# The variables launcher L gives rank R of 2 (Slurm and PMI find rank 0's address their own way).
vars() {
  case $1 in
  torchrun) echo "RANK=$2 WORLD_SIZE=2 LOCAL_RANK=$2 MASTER_ADDR=127.0.0.1" ;;
  slurm) echo "SLURM_PROCID=$2 SLURM_NTASKS=2 SLURM_LOCALID=$2 SLURM_LAUNCH_NODE_IPADDR=127.0.0.1" ;;
  openmpi) echo "OMPI_COMM_WORLD_RANK=$2 OMPI_COMM_WORLD_SIZE=2 OMPI_COMM_WORLD_LOCAL_RANK=$2 OMPI_COMM_WORLD_LOCAL_SIZE=2" ;;
  pmi) echo "PMI_RANK=$2 PMI_SIZE=2 MPI_LOCALRANKID=$2 MPI_LOCALNRANKS=2" ;;
  esac
}

for launcher in torchrun slurm openmpi pmi; do
  port=$((20000 + RANDOM % 12000)) # below the ephemeral range: no self-connect
  for r in 0 1; do
    # shellcheck disable=SC2046 # the words of vars are NAME=VALUE pairs for env
    env -u RANK -u WORLD_SIZE -u MASTER_ADDR $(vars $launcher $r) MASTER_PORT=$port \
      C4_BOOTSTRAP_TIMEOUT_MS=20000 timeout 60 "$PERF" --mode lat -b 8 -e 64 -n 5 --json \
      >"$WORK/$launcher.$r.out" 2>"$WORK/$launcher.$r.err" &
  done
  wait %1
  s0=$?
  wait %2
  s1=$?
  [ "$s0" = 0 ] && [ "$s1" = 0 ] ||
    fail "$launcher: ranks exited $s0 and $s1: $(cat "$WORK/$launcher".*.err)"
  jq -e '.ok and .world == 2 and (.results | length) == 4' "$WORK/$launcher.0.out" >/dev/null || fail "$launcher: rank 0's report: $(head -c 400 "$WORK/$launcher.0.out")"
  grep -q "c4perf: rank 0: waiting for 2 ranks at 127.0.0.1:$port" "$WORK/$launcher.0.err" ||
    fail "$launcher: rank 0 did not say where it waits: $(cat "$WORK/$launcher.0.err")"
done

for bad in "RANK=abc WORLD_SIZE=2" "SLURM_PROCID=2 SLURM_NTASKS=2" "PMI_RANK=0"; do
  # shellcheck disable=SC2086
  env $bad "$PERF" --mode lat >/dev/null 2>"$WORK/bad.err" </dev/null
  s=$?
  [ "$s" = 2 ] || fail "'$bad' exited $s, not 2"
  grep -q "${bad%%=*}" "$WORK/bad.err" || fail "'$bad' not named: $(cat "$WORK/bad.err")"
done

[ "$failed" = 0 ] && echo "c4perf_launchers: 2 ranks ran under torchrun, Slurm, Open MPI and PMI variables"
exit "$failed"
