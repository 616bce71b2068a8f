#!/usr/bin/env bash
# run.sh -- detection end to end on every scenario here, in every tracer variant (c4scen gen
# --variant: full, minimal, send, recv, wrap): c4scen writes the trace (JSON lines), c4mon
# replays it, c4scen scores the events; in every variant every fault must be found, at the right
# place, with no false alarm (precision, recall and location 1), and each variant must give the
# same verdicts as the full trace (each fault found, at the right place, alike). In the full
# trace slowdowns must be flagged within 2 s of their onset and hangs within 1 s of their
# threshold; the other variants' times are printed (tools/bench/detect_bench.sh holds their
# medians to the same targets over many scenarios: a single scenario's time moves in steps of
# the matrix's half-second evaluations).
# Usage: run.sh [BUILD_DIR] (default $C4_BUILD_DIR, else build); C4_SCENARIO_VARIANTS picks
# variants (default all five).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
DIR=$(cd "$(dirname "$0")" && pwd)
VARIANTS=${C4_SCENARIO_VARIANTS:-full minimal send recv wrap}
WORK=$(mktemp -d /tmp/c4-scenarios-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
failed=0

# the scorer's per-fault rows without the time to flag: what a verdict found, and where
verdicts() { awk '$1 ~ /^[0-9]+$/ && NF >= 7 {$NF = ""; print}' "$1"; }

for f in "$DIR"/*.args; do
  name=$(basename "$f" .args)
  read -r -a args <"$f"
  for v in $VARIANTS; do
    w="$WORK/$name.$v"
    if ! "$BUILD/bin/c4scen" gen "${args[@]}" --variant "$v" --out "$w.jsonl" --truth "$w.truth" \
      --plan "$w.plan" 2>"$w.err" ||
      ! "$BUILD/bin/c4mon" replay "$w.jsonl" --plan "$w.plan" --events "$w.events" 2>>"$w.err" ||
      ! "$BUILD/bin/c4scen" score --truth "$w.truth" --events "$w.events" >"$w.score" 2>>"$w.err"; then
      echo "scenario $name ($v): could not run: $(tail -3 "$w.err")"
      failed=1
      continue
    fi
    summary=$(tail -1 "$w.score")
    verdict=$(awk -v timed="$([ "$v" = full ] && echo 1 || echo 0)" '{for (i = 1; i < NF; i += 2) v[$i] = $(i + 1)}
      END {ok = v["precision"] == "1.000" && v["recall"] == "1.000" && v["false_alarms"] == "0" &&
           (v["location"] == "1.000" || v["location"] == "-") &&
           (!timed || v["median_flag_slow_s"] == "-" || v["median_flag_slow_s"] <= 2.0) &&
           (!timed || v["median_flag_hang_s"] == "-" || v["median_flag_hang_s"] <= 1.0)
           print ok ? "ok" : "FAILED"}' <<<"$summary")
    if [ "$v" != full ] && [ -f "$WORK/$name.full.score" ] &&
      [ "$(verdicts "$w.score")" != "$(verdicts "$WORK/$name.full.score")" ]; then
      verdict="FAILED (verdicts differ from the full trace's)"
    fi
    echo "scenario $name ($v): $verdict: $summary"
    if [ "$verdict" != ok ]; then
      failed=1
      sed 's/^/  /' "$w.score"
      sed 's/^/  event: /' "$w.events" | cut -c1-240
    fi
    rm -f "$w.jsonl"
  done
done
exit $failed
