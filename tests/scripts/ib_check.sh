#!/usr/bin/env bash
# ib_check.sh -- tools/ib_check/ib_check.sh where there is no RDMA NIC (this machine): its usage
# errors exit 2 with what is wrong, --help names its options, it says there is no RDMA device and
# exits 2, and its per-QP table (qp_table.awk) reads the lines the verbs transport really logs at
# close, taken from the fake-device tests run at INFO. The measuring steps need two RDMA hosts and
# do not run here. Usage: ib_check.sh [BUILD_DIR] (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
IBC=tools/ib_check/ib_check.sh
WORK=$(mktemp -d /tmp/c4-ibc-test-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() {
  echo "ib_check: FAILED: $*"
  exit 1
}

# Usage errors, before anything is looked for
for args in "--bogus" "--qps 1" "--qps 17" "--qps x" "--qps" "--launcher pbs"; do
  # shellcheck disable=SC2086
  out=$(bash $IBC $args "$BUILD" 2>&1)
  rc=$?
  [ $rc -eq 2 ] || fail "'$args' exit $rc, want 2: $out"
  # shellcheck disable=SC2086
  out=$(bash $IBC "$BUILD" $args 2>&1) # the option last, its value missing or last
  rc=$?
  [ $rc -eq 2 ] || fail "'$args' exit $rc, want 2: $out"
  opt=${args%% *}
  [[ $out == *"$opt"* ]] || fail "'$args' does not say what is wrong: $out"
done
bash $IBC --help | grep -q -- '--qps N' || fail "--help does not name --qps"
echo "ib_check: usage errors exit 2"

# No RDMA device: says so, exit 2
if [ -e /sys/class/infiniband ] && [ -n "$(ls /sys/class/infiniband)" ]; then
  echo "ib_check: this machine has an RDMA device; the no-device check is skipped"
else
  out=$(bash $IBC --hosts a,b "$BUILD" 2>&1)
  rc=$?
  [ $rc -eq 2 ] || fail "without an RDMA device: exit $rc, want 2: $out"
  [[ $out == *"no RDMA device"* && $out == *"Nothing was measured"* ]] || fail "no-device message: $out"
  echo "ib_check: no RDMA device, exit 2"
fi

# The per-QP table, from the transport's own close lines
awk -f tools/ib_check/qp_table.awk /dev/null && fail "qp_table.awk found QPs in nothing"
spread=$BUILD/tests/test_ib_spread
[ -x "$spread" ] || fail "$spread is missing (make unit-bins builds it)"
C4_DEBUG=INFO "$spread" >"$WORK/out" 2>"$WORK/log" || fail "$spread failed: $(tail -n 5 "$WORK/out")"
table=$(awk -f tools/ib_check/qp_table.awk "$WORK/log") || fail "no per-QP lines in the log: $(head -n 5 "$WORK/log")"
roce=$(grep -c "UDP port" <<<"$table")
ib=$(grep -c "path bits" <<<"$table")
if [ "$roce" -lt 8 ] || [ "$ib" -lt 4 ]; then
  fail "want RoCE and InfiniBand QP rows, got $roce and $ib: $table"
fi
# each comm's shares add up to 100% (of what it carried), or 0 when it carried nothing
sums=$(awk 'NR > 1 { sub(/%/, "", $(NF - 2)); s[$1] += $(NF - 2) } END { for (c in s) print s[c] }' <<<"$table")
while read -r s; do
  awk -v s="$s" 'BEGIN { exit !(s == 0 || (s > 99.5 && s < 100.5)) }' || fail "shares add up to $s%: $table"
done <<<"$sums"
echo "ib_check: per-QP table from the transport's log ($roce RoCE and $ib InfiniBand QP rows)"
