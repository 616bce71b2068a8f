#!/usr/bin/env bash
# two_jobs.sh -- one c4mon, two jobs: a slow link of one job is one verdict, under that job.
# Two generated traces, each of 8 ranks on 4 hosts, are given job names, hosts and connections
# of their own and merged by time; job B's link g0001 -> g0002 runs at 0.3 of its rate from 15
# to 30 s. The delay matrix is the fabric's, shared by the jobs: named by the newest record's
# job, that one fault was raised under both jobs, and live each new verdict cleared the other's.
# Usage: two_jobs.sh [BUILD_DIR] (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
BIN="$BUILD/bin"
W=$(mktemp -d /tmp/c4-two-jobs-XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "two_jobs: FAILED: $*"; exit 1; }

"$BIN/c4scen" gen --hosts 4 --gpus 2 --seconds 40 --seed 3 --truth "$W/a.truth" \
  --out "$W/a.jsonl" 2>/dev/null || fail "c4scen gen (job A)"
"$BIN/c4scen" gen --hosts 4 --gpus 2 --seconds 40 --seed 4 --truth "$W/b.truth" \
  --fault link:src=1:dst=2:dev=0:rate=0.3:t=15:end=30 --out "$W/b.jsonl" 2>/dev/null ||
  fail "c4scen gen (job B)"
sed 's/^{/{"job":"jobA",/' "$W/a.jsonl" >"$W/a2.jsonl"
# job B: hosts g0000.., and connection ids of its own (the generator derives them from the ranks)
sed 's/^{/{"job":"jobB",/; s/"h000\([0-9]\)"/"g000\1"/g; s/"conn":"../"conn":"bb/' \
  "$W/b.jsonl" >"$W/b2.jsonl"
paste -d'\n' "$W/a2.jsonl" "$W/b2.jsonl" | grep . >"$W/ab.jsonl" # the same clock: in time order
"$BIN/c4mon" replay "$W/ab.jsonl" --events "$W/ab.ev" 2>"$W/err" || fail "replay: $(cat "$W/err")"
jq -e -s '[.[] | select(.kind != "recovered")] as $v | ($v | length) == 1 and $v[0].job == "jobB"
  and $v[0].where == "link" and $v[0].link == ["g0001", "g0002"]
  and ($v[0].factor > 2.6 and $v[0].factor < 4.0)' "$W/ab.ev" >/dev/null ||
  fail "not one verdict of job B's link: $(jq -c '[.kind, .job, .where, .link, .factor]' "$W/ab.ev")"
echo "two_jobs: one fault of one of two jobs is one verdict, under its job"
