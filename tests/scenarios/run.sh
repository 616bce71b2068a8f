#!/usr/bin/env bash
# run.sh -- detection end to end on every scenario here: c4scen writes the trace (JSON lines),
# c4mon replays it, c4scen scores the events; every fault must be found, at the right place, with
# no false alarm (precision, recall and location 1), slowdowns within 2 s of their onset and hangs
# within 1 s of their threshold. Usage: run.sh [BUILD_DIR] (default $C4_BUILD_DIR, else build).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
DIR=$(cd "$(dirname "$0")" && pwd)
WORK=$(mktemp -d /tmp/c4-scenarios-XXXXXX)
trap 'rm -rf "$WORK"' EXIT
failed=0
for f in "$DIR"/*.args; do
  name=$(basename "$f" .args)
  read -r -a args <"$f"
  w="$WORK/$name"
  if ! "$BUILD/bin/c4scen" gen "${args[@]}" --out "$w.jsonl" --truth "$w.truth" --plan "$w.plan" 2>"$w.err" ||
    ! "$BUILD/bin/c4mon" replay "$w.jsonl" --plan "$w.plan" --events "$w.events" 2>>"$w.err" ||
    ! "$BUILD/bin/c4scen" score --truth "$w.truth" --events "$w.events" >"$w.score" 2>>"$w.err"; then
    echo "scenario $name: could not run: $(tail -3 "$w.err")"
    failed=1
    continue
  fi
  summary=$(tail -1 "$w.score")
  verdict=$(awk '{for (i = 1; i < NF; i += 2) v[$i] = $(i + 1)}
    END {ok = v["precision"] == "1.000" && v["recall"] == "1.000" && v["false_alarms"] == "0" &&
         (v["location"] == "1.000" || v["location"] == "-") &&
         (v["median_flag_slow_s"] == "-" || v["median_flag_slow_s"] <= 2.0) &&
         (v["median_flag_hang_s"] == "-" || v["median_flag_hang_s"] <= 1.0)
         print ok ? "ok" : "FAILED"}' <<<"$summary")
  echo "scenario $name: $verdict: $summary"
  if [ "$verdict" != ok ]; then
    failed=1
    sed 's/^/  /' "$w.score"
    sed 's/^/  event: /' "$w.events" | cut -c1-240
  fi
done
exit $failed
