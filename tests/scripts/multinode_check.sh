#!/usr/bin/env bash
# multinode_check.sh -- tools/multinode_check/multinode_check.sh without a cluster: its node-list
# handling (Slurm's compressed lists, hostfiles, --hosts), its usage errors, that it says what is
# missing and exits 2 where there is no launcher, the launch lines it builds for Open MPI, MPICH
# and srun (--dry-run), and one whole run through a stand-in mpirun that starts the "nodes'"
# ranks on this machine over loopback: c4perf over the plugin, iperf3, c4mon seeing every rank
# and raising nothing. Usage: multinode_check.sh [BUILD_DIR] (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
MNC=tools/multinode_check/multinode_check.sh
WORK=$(mktemp -d /tmp/c4-mnc-test-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() {
  echo "multinode_check: FAILED: $*"
  exit 1
}
lib() { bash -c "source $MNC && $1" 2>&1; } # a function of the script, in a shell of its own

# Node lists
[ "$(lib 'expand_nodelist "gpu[01-03,07],login1,n[8-10]x" | paste -sd" "')" = "gpu01 gpu02 gpu03 gpu07 login1 n8x n9x n10x" ] ||
  fail "expand_nodelist: $(lib 'expand_nodelist "gpu[01-03,07],login1,n[8-10]x"')"
[ "$(lib 'expand_nodelist "a1" | paste -sd" "')" = "a1" ] || fail "expand_nodelist of one name"
for bad in "a[3-1]" "a[x]" "a[1-2]b[3]" "a,,b"; do
  out=$(lib "expand_nodelist '$bad'") && fail "expand_nodelist '$bad' did not fail: $out"
  [[ $out == *multinode-check:* ]] || fail "expand_nodelist '$bad' without a message: $out"
done
printf '# the nodes\nnode1 slots=8\n\nnode2   slots=8 # second\nnode1\n' >"$WORK/hostfile"
[ "$(lib "read_hostfile $WORK/hostfile | unique | paste -sd' '")" = "node1 node2" ] ||
  fail "read_hostfile: $(lib "read_hostfile $WORK/hostfile")"
[ "$(lib 'split_hosts "a:4,b,c:2" | paste -sd" "')" = "a b c" ] || fail "split_hosts"
echo "multinode_check: node lists ok"

# No cluster: the missing parts said at once, exit 2; usage errors exit 2
out=$(MPIRUN=/nonexistent/mpirun SRUN=/nonexistent/srun SLURM_JOB_NODELIST="" bash $MNC "$BUILD" 2>&1)
[ $? -eq 2 ] || fail "without a launcher and nodes: exit $?, want 2: $out"
[[ $out == *"mpirun is not on PATH"* && $out == *"at least 2 nodes (got 0"* ]] || fail "what is missing: $out"
out=$(MPIRUN=/nonexistent/mpirun bash $MNC --hosts onlyone "$BUILD" 2>&1)
[[ $? -eq 2 && $out == *"got 1"* ]] || fail "one node: $out"
for args in "--bogus" "--launcher pbs" "--mon-port 0" "--gpus x" "--min-ratio abc" "--hosts a,b --hostfile $WORK/hostfile"; do
  # shellcheck disable=SC2086
  bash $MNC $args "$BUILD" >/dev/null 2>&1
  [ $? -eq 2 ] || fail "'$args' did not exit 2"
done
bash $MNC --help | grep -q -- '--hostfile' || fail "--help"
echo "multinode_check: missing parts and usage errors exit 2"

# The launch lines
dry() { bash $MNC --dry-run --mon-addr head "$@" "$BUILD" 2>&1; }
out=$(MPI_FLAVOR=openmpi dry --hostfile "$WORK/hostfile")
[[ $out == *"mpirun -np 2 --host node1:1\\,node2:1 --map-by ppr:1:node"* ]] || fail "Open MPI line: $out"
[[ $out == *"--rank-exec C4_MONITOR=head:7400 "*"C4_JOB=c4perf-bw -- "*"c4perf --mode bw"* ]] || fail "the rank side: $out"
out=$(MPI_FLAVOR=hydra dry --hosts x,y,z --ifname ib0)
[[ $out == *"mpirun -n 3 -ppn 1 -hosts x\\,y\\,z"* && $out == *"C4_SOCKET_IFNAME==ib0 NCCL_SOCKET_IFNAME==ib0"* ]] ||
  fail "MPICH line: $out"
out=$(SLURM_JOB_NODELIST="c[1-2]" SLURM_JOB_ID=7 SRUN=/bin/true dry --launcher-args "--mpi=pmix")
[[ $out == *"srun --nodes=2 --ntasks=2 --ntasks-per-node=1 --nodelist=c1\\,c2 --mpi=pmix"* || $out == *"/bin/true --nodes=2"* ]] ||
  fail "srun line: $out"
echo "multinode_check: launch lines ok"

# The rank side maps the launcher's variables
out=$(OMPI_COMM_WORLD_RANK=3 OMPI_COMM_WORLD_SIZE=4 bash $MNC --rank-exec A=1 -- sh -c 'echo $RANK $WORLD_SIZE $A')
[ "$out" = "3 4 1" ] || fail "--rank-exec under Open MPI: $out"
out=$(env -u RANK -u WORLD_SIZE SLURM_PROCID=1 SLURM_NTASKS=2 bash $MNC --rank-exec -- sh -c 'echo $RANK $WORLD_SIZE')
[ "$out" = "1 2" ] || fail "--rank-exec under Slurm: $out"

# A whole run, two "nodes" on this machine through a stand-in Open MPI mpirun
cat >"$WORK/mpirun" <<'FAKE'
#!/usr/bin/env bash
# a stand-in for Open MPI's mpirun: -np N copies of the command here, with its rank variables
[ "${1:-}" = --version ] && { echo "mpirun (Open MPI) 4.1.5"; exit 0; }
np=1
while [ $# -gt 0 ]; do
  case $1 in
  -np) np=$2 && shift 2 ;;
  --host | --map-by | --bind-to) shift 2 ;;
  --allow-run-as-root) shift ;;
  *) break ;;
  esac
done
pids=()
for ((r = 0; r < np; r++)); do # each copy stands for a node of its own
  OMPI_COMM_WORLD_RANK=$r OMPI_COMM_WORLD_SIZE=$np C4_HOSTNAME=node$r "$@" &
  pids+=($!)
done
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
exit $rc
FAKE
chmod +x "$WORK/mpirun"
port=$((21000 + RANDOM % 8000))
out=$(MPIRUN=$WORK/mpirun C4_MULTINODE_OUT=$WORK/out PATH="/nonexistent-gpu-tools:$PATH" \
  bash $MNC --hosts 127.0.0.1,localhost --mon-addr 127.0.0.1 --mon-port "$port" --ifname lo \
  --min-ratio 0.05 --nccl-tests /nonexistent "$BUILD" 2>&1)
rc=$?
# c4mon's events go with a failure: the outputs leave with $WORK (a CI run once counted 2 false
# alarms there and did not say which)
[ $rc -eq 0 ] || fail "the run through a stand-in mpirun exited $rc: $out
c4mon's events: $(cat "$WORK/out/events.jsonl" 2>/dev/null)"
for want in "c4mon saw c4perf-bw's ranks  *2 of 2 on 2 hosts" "c4mon saw c4perf-allreduce's ranks  *2 of 2 on 2 hosts" \
  "false alarms)  *0" "nccl-tests all_reduce_perf.*not run"; do
  grep -q "$want" <<<"$out" || fail "no '$want' in: $out"
done
grep -qE 'c4perf bw node 0 -> 1 .* [0-9]+\.[0-9]{3} ' <<<"$out" || fail "no bandwidth figure: $out"
python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); assert d["ok"] and d["nodes"] == 2, d' \
  "$WORK/out/multinode.json" || fail "multinode.json: $(cat "$WORK/out/multinode.json")"
echo "multinode_check: a whole run through a stand-in mpirun ok"
echo "multinode_check: ok"
