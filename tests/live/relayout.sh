#!/usr/bin/env bash
# relayout.sh -- `--layout auto` chooses again when c4mon names a straggler: a 4-rank c4train over
# loopback through the c4 plugin and c4mon (each rank its own host), the layout probed at the
# start, rank 2 computing 3x slower from step SLOW_FROM, c4mon's verdicts followed (--monitor)
# and a checkpoint dir. Pass: c4mon names rank 2; the launcher stops the ranks after one step, all
# of them, at a checkpoint of that step; the layouts are probed again (a second table, the probes
# a job of their own to c4mon, never the job's); the job resumes from that checkpoint, its
# trained state kept (the first loss after it near the last before it, far under the first
# step's) and runs every step once to the end, its attempts each one job to c4mon; and it is
# never laid out again for rank 2 twice, though c4mon names it again in the resumed job. No root
# needed.
# RELAYOUT_DOCS=1 (relayout_docs.sh): the same on documents of varied lengths (--max-context).
# Usage: relayout.sh [BUILD_DIR].
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
STEPS=${RELAYOUT_STEPS:-90}
SLOW_FROM=${RELAYOUT_SLOW_FROM:-25}
NAME=relayout
[ "${RELAYOUT_DOCS:-0}" = 1 ] && NAME=relayout_docs
. "$(dirname "$0")/lib/train_job.sh"
# shellcheck source=tests/lib/c4mon_serve.sh
. "$(dirname "$0")/../lib/c4mon_serve.sh"
command -v jq >/dev/null || { echo "$NAME: jq is missing (make deps)"; exit 1; }
for f in "$BUILD/bin/c4mon" "$BUILD/bin/c4train" "$BUILD/lib/libnccl-net-c4.so"; do
  [ -e "$f" ] || { echo "$NAME: $f is missing (build first)"; exit 1; }
done
WORK=$(mktemp -d /tmp/c4-relayout-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
fail() {
  echo "$NAME: FAILED: $*"
  grep -v '^ ' "$WORK/c4train.log" | tail -20
  jq -c '{kind, job, ranks, t, factor}' "$WORK/events.jsonl"
  exit 1
}

data=()
if [ "$NAME" = relayout_docs ]; then
  "$BUILD/bin/c4train" --synth-corpus "$WORK/docs.txt" --max-context 128 --synth-docs 2000 \
    >/dev/null || fail "no corpus"
  data=(--data "$WORK/docs.txt" --max-context 128)
fi
mon_subscribed "$WORK" || { echo "$NAME: skipped: c4mon could not start"; exit 0; }
C4_HOSTNAME=node-%r C4_MONITOR="$MON_RANKS" C4_TOKEN=live C4_JOB=live C4_DEBUG=NONE \
  timeout 600 "$BUILD/bin/c4train" --local-ranks 4 --micro-batch 2 --microbatches 8 "${data[@]}" \
  --steps "$STEPS" --eval-windows 4 --json --layout auto \
  --ckpt-dir "$WORK/ckpt" --ckpt-every 1000 --monitor "127.0.0.1:$MON_SUB" \
  --slow "2:3.0:$SLOW_FROM" >"$WORK/train.jsonl" 2>"$WORK/c4train.log"
rc=$?
mon_stop "$WORK"
[ $rc -eq 0 ] || fail "c4train exited $rc"

# the stragglers the job was laid out again for: rank 2 first, no rank twice (c4mon may name
# another rank in a new layout's pipeline on a loaded machine, which is a layout of its own)
for_ranks=$(sed -n 's/^c4train: c4mon names rank \([0-9]*\) a straggler: the ranks stop.*/\1/p' \
  "$WORK/c4train.log" | tr '\n' ' ')
asked=$(wc -w <<<"$for_ranks")
[ "${for_ranks%% *}" = 2 ] || fail "laid out again for ranks [$for_ranks], not rank 2 first"
[ "$(tr ' ' '\n' <<<"$for_ranks" | sed '/^$/d' | sort | uniq -d)" = "" ] ||
  fail "laid out again twice for one rank: [$for_ranks]"
gone_on=$(grep -c '^c4train: going on with 4 ranks from the checkpoint, --pp [0-9]' \
  "$WORK/c4train.log")
# (a request may come too late to take effect: at the last step, or with another's)
[ "$gone_on" -ge 1 ] && [ "$gone_on" -le "$asked" ] ||
  fail "went on from a checkpoint $gone_on times, asked $asked"
tables=$(grep -c '^layout auto: [0-9]* candidates on 4 ranks' "$WORK/c4train.log")
[ "$tables" -eq $((gone_on + 1)) ] || fail "$tables probings of the layouts, not $((gone_on + 1))"
# the job's attempts end once each to c4mon: the probes' ends are a job of their own
ends=$(jq -s '[.[] | select(.kind == "job_end" and .job == "live")] | length' "$WORK/events.jsonl")
[ "$ends" -eq $((gone_on + 1)) ] || fail "$ends ends of job live, not $((gone_on + 1))"
jq -e -s 'any(.[]; .kind == "straggler" and .job == "live" and .ranks == [2])' \
  "$WORK/events.jsonl" >/dev/null || fail "c4mon never named rank 2 in the job"
jq -e -s 'any(.[]; .job == "live-layout-probe")' "$WORK/events.jsonl" >/dev/null ||
  fail "the probes did not report to c4mon as a job of their own"
# the job's runs: the second starts where a checkpoint of the first's last step is
resumed=$(jq -s '[.[] | select(.event == "start")] | .[1].step // empty' "$WORK/train.jsonl")
[ -n "$resumed" ] || fail "the job did not start again"
stopped=$(jq -s '[.[] | select(.event == "stop")] | .[0].step // empty' "$WORK/train.jsonl")
[ "$stopped" = "$resumed" ] || fail "the stop line says step '$stopped', the job resumed at $resumed"
last=$(jq -s '[.[] | select(.event == "start")] | .[-1].step' "$WORK/train.jsonl")
[ -e "$WORK/ckpt/$(printf 'step-%08d.c4ck' "$last")" ] || # the two newest are kept
  fail "no checkpoint of step $last, where the job last resumed"
steps=$(jq -s -c '[.[] | select(.event == "step") | .step]' "$WORK/train.jsonl")
jq -e -n --argjson s "$steps" "\$s == [range(1; $STEPS + 1)]" >/dev/null ||
  fail "the steps run are not 1..$STEPS once each: $steps"
[ "$resumed" -ge "$SLOW_FROM" ] || fail "stopped at step $resumed, before rank 2 was slow"
losses=$(jq -s -c --argjson r "$resumed" '[.[] | select(.event == "step")]
  | {first: .[0].loss, before: .[$r - 1].loss, after: .[$r].loss}' "$WORK/train.jsonl")
jq -e '.after < .first - 1 and (.after - .before | fabs) < 0.5' <<<"$losses" >/dev/null ||
  fail "the trained state was not kept across the new layout: losses $losses"
jq -e -s '.[-1].event == "end"' "$WORK/train.jsonl" >/dev/null || fail "no end line"
# once per rank, exercised: c4mon named rank 2 again in the resumed job, and that asked nothing
# (documents resume with the cost model's speeds, which may keep rank 2 from standing out again)
back=$(jq -s --argjson r "$resumed" \
  '[.[] | select(.event == "step" and .step == $r + 1)][0].t_start_ns' "$WORK/train.jsonl")
again=$(jq -s --argjson b "$back" \
  '[.[] | select(.kind == "straggler" and .job == "live" and .ranks == [2] and .t > $b)] | length' \
  "$WORK/events.jsonl")
[ "$again" -gt 0 ] || [ "$NAME" = relayout_docs ] ||
  fail "c4mon did not name rank 2 again after the resume"
printf '%s: laid out again for ranks [%s]; first stopped after step %s, probed again, ' \
  "$NAME" "${for_ranks% }" "$resumed"
printf 'resumed there; losses %s; rank 2 named %s times after\n' "$losses" "$again"
echo "$NAME: ok"
