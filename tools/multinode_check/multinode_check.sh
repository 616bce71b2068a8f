#!/usr/bin/env bash
# multinode_check.sh -- `make multinode-check`, for a real cluster (this project's machine has
# none, so it has never run past its preflight; without a launcher and nodes it says what is
# missing and exits 2). Run it on a login or head node, from a checkout on a file system every
# node mounts at the same path, with c4 built (make). Across the nodes, one rank per node:
#   1. c4mon on this node (--mon-addr: the address the nodes reach it at); every rank below
#      streams to it (C4_MONITOR);
#   2. c4perf over the c4 plugin: bandwidth from node 0 to node 1 (largest GB/s of 1 MiB to
#      256 MiB messages) and a ring allreduce across all nodes (bus bandwidth);
#   3. references measured in the same run where installed: iperf3 -P 2 from node 0 to node 1,
#      and nccl-tests' all_reduce_perf on the GPUs of every node through c4 (NCCL_NET_PLUGIN=c4,
#      NCCL_NET=c4, with c4's profiler) against NCCL's own socket transport (NCCL_NET=Socket);
#   4. c4mon's view: every rank of every run above reached it and left cleanly, and it raised no
#      verdict (the runs are healthy, so any verdict is a false alarm).
# Fails (exit 1) when a run fails, c4 is below --min-ratio of a reference, or c4mon missed a rank
# or raised a verdict. Writes OUT/multinode.json (default multinode-out/).
#
# Usage: tools/multinode_check/multinode_check.sh [options] [BUILD_DIR]
#   --hosts H1,H2,...   the nodes (at least 2); or --hostfile FILE (Open MPI's format: "host
#                       [slots=N]" lines, # comments); inside a Slurm allocation the default is
#                       its nodes ($SLURM_JOB_NODELIST)
#   --launcher L        mpirun or srun (default: srun inside a Slurm allocation, else mpirun)
#   --launcher-args A   extra arguments for the launcher (e.g. "--mpi=pmix", "-x PATH")
#   --ifname IF         the interface c4 and NCCL use on every node (C4_SOCKET_IFNAME,
#                       NCCL_SOCKET_IFNAME); default: their own choice
#   --mon-addr ADDR     the address of this node the others reach (default: hostname -f)
#   --mon-port P        c4mon's port (default 7400)
#   --nccl-tests DIR    where all_reduce_perf is (default $NCCL_TESTS_DIR, else PATH)
#   --gpus N            GPUs per node for nccl-tests (default: nvidia-smi -L on node 0)
#   --min-ratio X       c4 against each reference must reach X (default 0.9)
#   --dry-run           print the nodes and the c4perf launch commands, run nothing
# Environment: MPIRUN, SRUN (the launcher programs), MPI_FLAVOR (openmpi or hydra: how mpirun is
# driven, else from `mpirun --version`), C4_MULTINODE_OUT (the output directory).
# Exit: 0 ok, 1 a check failed, 2 bad usage or no cluster here.
set -euo pipefail

SELF=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/$(basename "${BASH_SOURCE[0]}")
MPIRUN=${MPIRUN:-mpirun}
SRUN=${SRUN:-srun}

usage() {
  sed -n '/^# Usage:/,/^# Exit:/p' "$SELF" | sed 's/^# \{0,1\}//'
}

# expand_nodelist LIST: Slurm's compressed node list ("gpu[01-03,07],login1") one name a line.
# One bracket group per name, ranges keep their zero padding. Fails on what it cannot read.
expand_nodelist() {
  local list=$1 item rest prefix body suffix part lo hi w i
  while [ -n "$list" ]; do
    # the next item: up to a comma outside brackets
    if [[ $list =~ ^([^,\[]*\[[^]]*\][^,]*)(,(.*))?$ ]] || [[ $list =~ ^([^,]*)(,(.*))?$ ]]; then
      item=${BASH_REMATCH[1]} rest=${BASH_REMATCH[3]}
    fi
    [ -n "$item" ] || { echo "multinode-check: empty name in node list '$1'" >&2; return 1; }
    if [[ $item =~ ^([^\[]*)\[([^]]*)\](.*)$ ]]; then
      prefix=${BASH_REMATCH[1]} body=${BASH_REMATCH[2]} suffix=${BASH_REMATCH[3]}
      [[ $suffix != *[\[\]]* ]] || { echo "multinode-check: cannot read node list '$1'" >&2; return 1; }
      for part in ${body//,/ }; do
        if [[ $part =~ ^([0-9]+)-([0-9]+)$ ]]; then
          lo=${BASH_REMATCH[1]} hi=${BASH_REMATCH[2]} w=${#BASH_REMATCH[1]}
          ((10#$lo <= 10#$hi)) || { echo "multinode-check: range $part runs backwards in '$1'" >&2; return 1; }
          for ((i = 10#$lo; i <= 10#$hi; i++)); do printf '%s%0*d%s\n' "$prefix" "$w" "$i" "$suffix"; done
        elif [[ $part =~ ^[0-9]+$ ]]; then
          printf '%s%s%s\n' "$prefix" "$part" "$suffix"
        else
          echo "multinode-check: cannot read '$part' in node list '$1'" >&2
          return 1
        fi
      done
    elif [[ $item == *[\[\]]* ]]; then
      echo "multinode-check: cannot read node list '$1'" >&2
      return 1
    else
      echo "$item"
    fi
    list=$rest
  done
}

# read_hostfile FILE: the hosts of an Open MPI hostfile (or one name a line), one a line.
read_hostfile() {
  [ -r "$1" ] || { echo "multinode-check: cannot read hostfile $1" >&2; return 1; }
  sed -e 's/#.*//' "$1" | awk 'NF { print $1 }'
}

# split_hosts LIST: "h1,h2:4,h3" (Open MPI's host:slots allowed; slots are ignored) one a line.
split_hosts() {
  local h
  for h in ${1//,/ }; do echo "${h%%:*}"; done
}

# unique: the lines of stdin, first occurrence of each, in order.
unique() { awk 'NF && !seen[$0]++'; }

# mpi_flavor: openmpi or hydra (MPICH, Intel MPI, MVAPICH), from `mpirun --version`.
mpi_flavor() {
  if "$MPIRUN" --version 2>&1 | grep -qiE 'open mpi|openrte|prrte'; then echo openmpi; else echo hydra; fi
}

# launch_cmd NP PPN HOSTS(comma) -- CMD...: the launcher's command line (one word a line) that
# runs NP ranks, PPN per node, on HOSTS, each as CMD.
launch_cmd() {
  local np=$1 ppn=$2 hosts=$3 h slots=
  shift 4
  case $LAUNCHER in
  srun)
    printf '%s\n' "$SRUN" "--nodes=$(split_hosts "$hosts" | wc -l)" "--ntasks=$np" \
      "--ntasks-per-node=$ppn" "--nodelist=$hosts" ${LAUNCHER_ARGS:-} "$@"
    ;;
  mpirun)
    if [ "$FLAVOR" = openmpi ]; then
      for h in $(split_hosts "$hosts"); do slots+="${slots:+,}$h:$ppn"; done
      printf '%s\n' "$MPIRUN" -np "$np" --host "$slots" --map-by "ppr:$ppn:node" --bind-to none
      [ "$(id -u)" -ne 0 ] || echo --allow-run-as-root
    else
      printf '%s\n' "$MPIRUN" -n "$np" -ppn "$ppn" -hosts "$hosts"
    fi
    printf '%s\n' ${LAUNCHER_ARGS:-} "$@"
    ;;
  esac
}

# The rank side: multinode_check.sh --rank-exec VAR=VALUE... -- CMD...: sets the variables, then
# RANK and WORLD_SIZE from the launcher's own (Open MPI, Slurm, PMI) when they are not set, and
# runs CMD. Every launcher runs the same command this way, whatever its flags for environment.
rank_exec() {
  while [ $# -gt 0 ] && [ "$1" != -- ]; do
    export "${1?}"
    shift
  done
  [ "${1:-}" = -- ] || { echo "multinode-check: --rank-exec VAR=VALUE... -- CMD" >&2; exit 2; }
  shift
  export RANK=${RANK:-${OMPI_COMM_WORLD_RANK:-${SLURM_PROCID:-${PMI_RANK:-}}}}
  export WORLD_SIZE=${WORLD_SIZE:-${OMPI_COMM_WORLD_SIZE:-${SLURM_NTASKS:-${PMI_SIZE:-}}}}
  [ -n "$RANK" ] && [ -n "$WORLD_SIZE" ] ||
    { echo "multinode-check: no rank from the launcher (OMPI_COMM_WORLD_RANK, SLURM_PROCID, PMI_RANK)" >&2; exit 2; }
  exec "$@"
}

# --- the check ---------------------------------------------------------------------------------
main() {
  local hosts='' hostfile='' dry=0 gpus='' min_ratio=0.9 mon_port=7400 mon_addr='' ifname=''
  local nccl_dir=${NCCL_TESTS_DIR:-}
  BUILD=build LAUNCHER='' LAUNCHER_ARGS=''
  while [ $# -gt 0 ]; do
    case $1 in
    --hosts) hosts=${2:?--hosts needs a list} && shift ;;
    --hostfile) hostfile=${2:?--hostfile needs a file} && shift ;;
    --launcher) LAUNCHER=${2:?--launcher needs mpirun or srun} && shift ;;
    --launcher-args) LAUNCHER_ARGS=${2?} && shift ;;
    --ifname) ifname=${2:?--ifname needs an interface} && shift ;;
    --mon-addr) mon_addr=${2:?--mon-addr needs an address} && shift ;;
    --mon-port) mon_port=${2:?--mon-port needs a port} && shift ;;
    --nccl-tests) nccl_dir=${2:?--nccl-tests needs a directory} && shift ;;
    --gpus) gpus=${2:?--gpus needs a number} && shift ;;
    --min-ratio) min_ratio=${2:?--min-ratio needs a number} && shift ;;
    --dry-run) dry=1 ;;
    --rank-exec) shift && rank_exec "$@" ;;
    -h | --help) usage && exit 0 ;;
    -*) echo "multinode-check: unknown option $1" >&2 && usage >&2 && exit 2 ;;
    *) BUILD=$1 ;;
    esac
    shift
  done
  case $LAUNCHER in "" | mpirun | srun) ;; *) echo "multinode-check: --launcher mpirun or srun, not $LAUNCHER" >&2 && exit 2 ;; esac
  [[ $mon_port =~ ^[0-9]+$ ]] && ((mon_port >= 1 && mon_port <= 65535)) ||
    { echo "multinode-check: --mon-port $mon_port: want 1-65535" >&2 && exit 2; }
  [[ $min_ratio =~ ^[0-9]*\.?[0-9]+$ ]] || { echo "multinode-check: --min-ratio $min_ratio: want a number" >&2 && exit 2; }
  [ -z "$gpus" ] || [[ $gpus =~ ^[1-9][0-9]*$ ]] || { echo "multinode-check: --gpus $gpus: want a positive integer" >&2 && exit 2; }
  [ -z "$hosts" ] || [ -z "$hostfile" ] || { echo "multinode-check: give --hosts or --hostfile, not both" >&2 && exit 2; }
  case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac

  # The nodes and the launcher; everything missing is said at once.
  local missing=() nodes
  if [ -n "$hosts" ]; then
    nodes=$(split_hosts "$hosts" | unique)
  elif [ -n "$hostfile" ]; then
    nodes=$(read_hostfile "$hostfile" | unique) || exit 2
  elif [ -n "${SLURM_JOB_NODELIST:-}" ]; then
    if command -v scontrol >/dev/null; then
      nodes=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | unique)
    else
      nodes=$(expand_nodelist "$SLURM_JOB_NODELIST" | unique) || exit 2
    fi
  else
    nodes=
  fi
  local nnodes
  nnodes=$(grep -c . <<<"$nodes" || true)
  if [ -z "$LAUNCHER" ]; then
    if [ -n "${SLURM_JOB_ID:-}" ] && command -v "$SRUN" >/dev/null; then LAUNCHER=srun; else LAUNCHER=mpirun; fi
  fi
  local prog=$MPIRUN
  [ "$LAUNCHER" = srun ] && prog=$SRUN
  FLAVOR=${MPI_FLAVOR:-}
  if [ "$dry" = 0 ]; then
    command -v "$prog" >/dev/null || missing+=("$LAUNCHER ($prog is not on PATH; install Open MPI, MPICH or Slurm, or set MPIRUN/SRUN)")
  fi
  if [ "$LAUNCHER" = mpirun ] && [ -z "$FLAVOR" ]; then
    FLAVOR=openmpi
    ! command -v "$prog" >/dev/null || FLAVOR=$(mpi_flavor)
  fi
  [ "$nnodes" -ge 2 ] || missing+=("at least 2 nodes (got $nnodes: give --hosts H1,H2, --hostfile FILE, or run inside a Slurm allocation)")
  local f
  for f in "$BUILD/bin/c4perf" "$BUILD/bin/c4mon" "$BUILD/lib/libnccl-net-c4.so"; do
    [ -e "$f" ] || missing+=("$f (build first: make)")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    echo "multinode-check: cannot run here; missing:" >&2
    printf '  - %s\n' "${missing[@]}" >&2
    echo "(this is a script for a cluster: run it on a head node with c4 built on a shared file system)" >&2
    exit 2
  fi
  local hostlist first second
  hostlist=$(paste -sd, - <<<"$nodes")
  first=$(sed -n 1p <<<"$nodes")
  second=$(sed -n 2p <<<"$nodes")
  mon_addr=${mon_addr:-$(hostname -f 2>/dev/null || hostname)}
  local out=${C4_MULTINODE_OUT:-$PWD/multinode-out} token=mnc-$$-$RANDOM
  local envs=(C4_MONITOR="$mon_addr:$mon_port" C4_TOKEN="$token" C4_DEBUG=WARN
    MASTER_ADDR="$first" MASTER_PORT=$((29500 + RANDOM % 1000)))
  [ -z "$ifname" ] || envs+=(C4_SOCKET_IFNAME="=$ifname" NCCL_SOCKET_IFNAME="=$ifname")

  # run NAME NP PPN HOSTS -- CMD...: one launch, its output in OUT/NAME.out
  run() {
    local name=$1 np=$2 ppn=$3 on=$4
    shift 5
    local cmd
    mapfile -t cmd < <(launch_cmd "$np" "$ppn" "$on" -- bash "$SELF" --rank-exec "${envs[@]}" C4_JOB="$name" -- "$@")
    if [ "$dry" = 1 ]; then
      printf '%q ' "${cmd[@]}"
      echo
      return 0
    fi
    echo "== $name: $np rank(s) on $on"
    "${cmd[@]}" >"$out/$name.out" 2>&1
  }

  echo "multinode-check: $nnodes nodes ($hostlist), $LAUNCHER${FLAVOR:+ ($FLAVOR)}, c4mon at $mon_addr:$mon_port"
  [ "$LAUNCHER" = mpirun ] || FLAVOR=
  if [ "$dry" = 1 ]; then
    run c4perf-bw 2 1 "$first,$second" -- "$BUILD/bin/c4perf" --mode bw -b 1M -e 256M -f 4 --json
    run c4perf-allreduce "$nnodes" 1 "$hostlist" -- "$BUILD/bin/c4perf" --mode allreduce -b 1M -e 256M -f 4 --json
    return 0
  fi

  mkdir -p "$out"
  rm -f "$out"/*.out "$out/events.jsonl" "$out/record.jsonl" "$out/multinode.json"
  "$BUILD/bin/c4mon" serve --listen "0.0.0.0:$mon_port" --token "$token" --events "$out/events.jsonl" \
    --record "$out/record.jsonl" >"$out/c4mon.out" 2>"$out/c4mon.log" &
  local mon_pid=$!
  trap 'kill '"$mon_pid"' 2>/dev/null || true' EXIT
  sleep 0.5
  kill -0 "$mon_pid" 2>/dev/null || { echo "multinode-check: c4mon did not start: $(cat "$out/c4mon.log")" >&2; exit 1; }

  local failed=0 rows=() jobs=()
  check() { # what, c4, reference, unit: a row, failing below min_ratio
    local r verdict
    r=$(awk -v a="$2" -v b="$3" 'BEGIN {if (b > 0) printf "%.3f", a / b; else print "-"}')
    verdict=$(awk -v r="$r" -v m="$min_ratio" 'BEGIN {if (r == "-") print "no reference"; else if (r + 0 >= m) print "ok"; else print "BELOW " m}')
    [[ $verdict != BELOW* ]] || failed=1
    rows+=("$1|$2|$3|$r|$verdict")
  }
  maxfield() { { grep -o "\"$1\": *[0-9.eE+-]*" "$2" 2>/dev/null || true; } | awk -F: '$2 + 0 > m {m = $2 + 0} END {printf "%.3f", m}'; }

  # 2. c4perf over the plugin
  if run c4perf-bw 2 1 "$first,$second" -- "$BUILD/bin/c4perf" --mode bw -b 1M -e 256M -f 4 --json; then
    jobs+=("c4perf-bw:2:2")
  else
    echo "   failed: $(tail -5 "$out/c4perf-bw.out")"
    failed=1
  fi
  local bw
  bw=$(maxfield GBps "$out/c4perf-bw.out")
  if run c4perf-allreduce "$nnodes" 1 "$hostlist" -- "$BUILD/bin/c4perf" --mode allreduce -b 1M -e 256M -f 4 --json; then
    jobs+=("c4perf-allreduce:$nnodes:$nnodes")
  else
    echo "   failed: $(tail -5 "$out/c4perf-allreduce.out")"
    failed=1
  fi
  local busbw
  busbw=$(maxfield busbw_GBps "$out/c4perf-allreduce.out")

  # 3a. iperf3 from node 0 to node 1, where both have it
  local ip=
  if run iperf3-probe 2 1 "$first,$second" -- sh -c 'command -v iperf3 >/dev/null'; then
    local port=$((5201 + RANDOM % 500))
    run iperf3-server 1 1 "$second" -- iperf3 -s -1 -p "$port" &
    local spid=$!
    sleep 2
    if run iperf3-client 1 1 "$first" -- iperf3 -c "$second" -p "$port" -P 2 -t 5 -f g; then
      ip=$(awk '/SUM.*receiver/ {for (i = 1; i < NF; i++) if ($(i + 1) == "Gbits/sec") printf "%.3f", $i / 8}' "$out/iperf3-client.out")
    fi
    wait "$spid" 2>/dev/null || true
  fi
  if [ -n "$ip" ]; then check "c4perf bw node 0 -> 1 vs iperf3 -P 2 (GB/s)" "$bw" "$ip"; else
    rows+=("c4perf bw node 0 -> 1 (GB/s)|$bw|-|-|iperf3 not on both nodes")
  fi
  rows+=("c4perf ring allreduce, $nnodes nodes, bus bw (GB/s)|$busbw|-|-|")

  # 3b. nccl-tests: c4 under NCCL against NCCL's socket transport
  local arp=
  if [ -n "$nccl_dir" ] && [ -x "$nccl_dir/all_reduce_perf" ]; then arp=$nccl_dir/all_reduce_perf; fi
  [ -n "$arp" ] || arp=$(command -v all_reduce_perf || true)
  if [ -z "$gpus" ] && [ -n "$arp" ]; then
    run gpu-count 1 1 "$first" -- sh -c 'nvidia-smi -L' && gpus=$(grep -c '^GPU' "$out/gpu-count.out" || true)
  fi
  if [ -n "$arp" ] && [ "${gpus:-0}" -ge 1 ]; then
    local np=$((nnodes * gpus)) lib=$BUILD/lib bus_c4='' bus_sock=''
    envs+=(LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH:-}" NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS="INIT,NET")
    if run nccl-c4 "$np" "$gpus" "$hostlist" -- env NCCL_NET_PLUGIN=c4 NCCL_NET=c4 NCCL_PROFILER_PLUGIN=c4 \
      "$arp" -b 8M -e 512M -f 2 -g 1; then
      jobs+=("nccl-c4:$np:$nnodes")
      grep -q 'Using network c4' "$out/nccl-c4.out" || { echo "   NCCL did not use the c4 plugin (no 'Using network c4' in $out/nccl-c4.out)"; failed=1; }
      bus_c4=$(awk -F: '/Avg bus bandwidth/ {printf "%.3f", $2}' "$out/nccl-c4.out")
    else
      echo "   failed: $(tail -5 "$out/nccl-c4.out")"
      failed=1
    fi
    if run nccl-socket "$np" "$gpus" "$hostlist" -- env NCCL_NET_PLUGIN=none NCCL_NET=Socket "$arp" -b 8M -e 512M -f 2 -g 1; then
      grep -q 'Using network Socket' "$out/nccl-socket.out" || { echo "   NCCL did not use its socket transport"; failed=1; }
      bus_sock=$(awk -F: '/Avg bus bandwidth/ {printf "%.3f", $2}' "$out/nccl-socket.out")
    else
      echo "   failed: $(tail -5 "$out/nccl-socket.out")"
      failed=1
    fi
    local nr
    nr=$(grep -c '^#  *Rank  *[0-9]' "$out/nccl-c4.out" || true)
    [ "$nr" = "$np" ] || { echo "   all_reduce_perf ran $nr rank(s), not $np: was it built with MPI=1?"; failed=1; }
    check "nccl-tests all_reduce_perf avg bus bw, c4 vs NCCL Socket (GB/s)" "${bus_c4:-0}" "${bus_sock:-0}"
  else
    rows+=("nccl-tests all_reduce_perf, c4 vs NCCL Socket|-|-|-|not run: $([ -z "$arp" ] && echo "no all_reduce_perf (--nccl-tests DIR)" || echo "no GPU on $first")")
  fi

  # 4. c4mon: every rank of every run reached it and ended cleanly; no verdict at all
  sleep 2
  kill "$mon_pid" 2>/dev/null || true
  wait "$mon_pid" 2>/dev/null || true
  local j name n nh seen hostsn unclean verdicts
  ends() { grep '"type":"end"' "$out/record.jsonl" 2>/dev/null | grep -F "\"job\":\"$1\"" || true; }
  for j in "${jobs[@]}"; do # name:ranks:hosts
    IFS=: read -r name n nh <<<"$j"
    seen=$(ends "$name" | grep -o '"rank":[0-9]*' | sort -u | wc -l || true)
    hostsn=$(ends "$name" | grep -o '"host":"[^"]*"' | sort -u | wc -l || true)
    unclean=$(ends "$name" | grep -c '"clean":false' || true)
    if [ "$seen" -ne "$n" ] || [ "$hostsn" -ne "$nh" ] || [ "$unclean" -ne 0 ]; then
      rows+=("c4mon saw $name's ranks|$seen of $n on $hostsn of $nh hosts|-|-|MISSED ($unclean ended unclean)")
      failed=1
    else
      rows+=("c4mon saw $name's ranks|$n of $n on $nh hosts|-|-|ok")
    fi
  done
  # every event but job_end (a job that ended cleanly: not a verdict) is a false alarm here
  verdicts=$(grep '"kind"' "$out/events.jsonl" 2>/dev/null | grep -vc '"kind":"job_end"' || true)
  rows+=("c4mon verdicts on healthy runs (false alarms)|${verdicts:-0}|-|-|$([ "${verdicts:-0}" -eq 0 ] && echo ok || echo FAILED)")
  [ "${verdicts:-0}" -eq 0 ] || failed=1

  echo
  printf '%-62s %16s %10s %7s %s\n' measure c4 reference ratio verdict
  local r
  for r in "${rows[@]}"; do
    IFS='|' read -r a b c d e <<<"$r"
    printf '%-62s %16s %10s %7s %s\n' "$a" "$b" "$c" "$d" "$e"
  done
  {
    printf '{"v":1,"nodes":%d,"launcher":"%s","rows":[' "$nnodes" "$LAUNCHER"
    local sep=
    for r in "${rows[@]}"; do
      IFS='|' read -r a b c d e <<<"$r"
      printf '%s{"measure":"%s","c4":"%s","reference":"%s","ratio":"%s","verdict":"%s"}' "$sep" "$a" "$b" "$c" "$d" "$e"
      sep=,
    done
    printf '],"ok":%s}\n' "$([ $failed -eq 0 ] && echo true || echo false)"
  } >"$out/multinode.json"
  echo "outputs: $out (each run's output, c4mon's events and record, multinode.json)"
  [ $failed -eq 0 ] && echo "multinode-check: ok" && return 0
  echo "multinode-check: FAILED" >&2
  return 1
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then main "$@"; fi
