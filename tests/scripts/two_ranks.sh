#!/usr/bin/env bash
# two_ranks.sh -- a 2-rank job (one link each way) with one way at a quarter of its rate from 15
# to 30 s: one verdict, on that way, at about 4x, cleared, and nothing else. With two cells the
# delay matrix has no median cell: against one, the slow way read 16x, and live, after a long
# fault, the healthy way was named (699x) until the job ended. Three seeds.
# Usage: two_ranks.sh [BUILD_DIR] (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
BIN="$BUILD/bin"
W=$(mktemp -d /tmp/c4-two-ranks-XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "two_ranks: FAILED: $*"; exit 1; }

for seed in 1 2 3; do
  "$BIN/c4scen" gen --hosts 2 --gpus 1 --seconds 50 --seed $seed --truth "$W/t.truth" \
    --fault link:src=0:dst=1:dev=0:rate=0.25:t=15:end=30 --out "$W/$seed.jsonl" 2>/dev/null ||
    fail "c4scen gen (seed $seed)"
  "$BIN/c4mon" replay "$W/$seed.jsonl" --events "$W/$seed.ev" 2>"$W/err" ||
    fail "replay: $(cat "$W/err")"
  jq -e -s '[.[] | select(.kind != "recovered")] as $v | ($v | length) == 1
    and $v[0].where == "link" and $v[0].link == ["h0000", "h0001"]
    and ($v[0].factor > 3.2 and $v[0].factor < 4.8) and $v[0].cost < 1
    and ([.[] | select(.kind == "recovered")] | length) == 1' "$W/$seed.ev" >/dev/null ||
    fail "seed $seed: $(jq -c '[.kind, .where, .link, .factor, .t]' "$W/$seed.ev")"
done
echo "two_ranks: a 2-rank job's slow way is one verdict at its slowdown, cleared, nothing else"
