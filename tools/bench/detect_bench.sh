#!/usr/bin/env bash
# detect_bench.sh -- scores c4mon's detection on generated fault scenarios (c4scen) at 16, 256,
# 4,096 and 16,384 ranks: every fault class (a slow GPU at 1.2x to 5x, NIC TX and RX at 50% and
# 25%, one link at 30%, one congested path, comm hang, non-comm hang, rank lost), each trace with
# one-off blips that must not alarm; then an hour of healthy trace, and the replay speed of a
# 16,384-rank trace. Traces are streamed from c4scen into c4mon replay (binary form), so nothing
# large touches the disk except the replay-speed trace.
# Then the same fault classes once per tracer variant (c4scen gen --variant: full, minimal, send,
# recv, wrap) at 64 and 4,096 ranks, with the share of slowdowns whose factor is within 20% of
# the injected one and the verdicts past one a fault, and the smallest NIC and link slowdown each
# variant finds at 64 ranks, and the slow faults at 256 ranks at 10 down to 1 collective a second.
# Prints tables and writes BUILD/bench-detect.json. Usage: detect_bench.sh [BUILD_DIR]
# Env: C4_DETECT_SCALES (default "16 256 4096 16384"), C4_DETECT_SEEDS (traces per class at
# 16 and 256 ranks, default 3), C4_DETECT_VARIANTS (default "full minimal send recv wrap"),
# C4_DETECT_VARIANT_SCALES (default "64 4096").
set -uo pipefail
BUILD=${1:-build}
BIN="$PWD/$BUILD/bin"
SCALES=${C4_DETECT_SCALES:-16 256 4096 16384}
SEEDS=${C4_DETECT_SEEDS:-3}
VARIANTS=${C4_DETECT_VARIANTS:-full minimal send recv wrap}
VSCALES=${C4_DETECT_VARIANT_SCALES:-64 4096}
VARIANT=full # the tracer variant scenario() writes
WORK=$(mktemp -d /tmp/c4-detect-bench-XXXXXX)
[ -n "${C4_DETECT_KEEP:-}" ] && echo "detect bench: keeping $WORK" || trap 'rm -rf "$WORK"' EXIT
for b in c4scen c4mon; do [ -x "$BIN/$b" ] || { echo "detect bench: build $BUILD first" >&2; exit 2; }; done

shape() { # ranks -> "hosts gpus"
  case $1 in 16) echo "4 4" ;; 256) echo "32 8" ;; 4096) echo "512 8" ;; 16384) echo "2048 8" ;;
  *) echo "$(($1 / 8)) 8" ;; esac
}

# one scenario: gen | replay, then score; appends the scorer's per-fault rows and the events
# count, false alarms and factor_right to $WORK/rows-KEY and $WORK/counts-KEY (KEY: $KEY, else
# the scale)
scenario() { # scale seed seconds fault...
  local scale=$1 seed=$2 secs=$3
  shift 3
  read -r hosts gpus <<<"$(shape "$scale")"
  local tag="$WORK/s$scale-$seed-$RANDOM"
  "$BIN/c4scen" gen --hosts "$hosts" --gpus "$gpus" --seconds 1 --spines 8 --plan "$tag.plan" \
    --truth /dev/null --out /dev/null 2>/dev/null # the plan first: replay reads it at start
  "$BIN/c4scen" gen --hosts "$hosts" --gpus "$gpus" --seconds "$secs" --seed "$seed" --blips 4 \
    --spines 8 --plan "$tag.plan2" --truth "$tag.truth" --variant "$VARIANT" --bin --out - "$@" 2>/dev/null |
    "$BIN/c4mon" replay - --plan "$tag.plan" --events "$tag.ev" 2>/dev/null
  "$BIN/c4scen" score --truth "$tag.truth" --events "$tag.ev" >"$tag.score" 2>&1 || return 1
  awk '$1 ~ /^[0-9]+$/ && NF >= 7' "$tag.score" >>"$WORK/rows-${KEY:-$scale}"
  local events fa fr
  events=$(grep -vc '"kind":"recovered"' "$tag.ev" 2>/dev/null) || events=0
  fa=$(summary_field false_alarms <"$tag.score")
  fr=$(summary_field factor_right <"$tag.score")
  echo "$events ${fa:-0} ${fr:--}" >>"$WORK/counts-${KEY:-$scale}"
}

summary_field() { # name: its value on the scorer's summary line (standard input)
  awk -v k="$1" '/^precision/ {for (i = 1; i < NF; i++) if ($i == k) print $(i + 1)}'
}

# the fault of class c, variant v (0..), on a job of h hosts x g GPUs, starting at t seconds
fault() { # class v h g t
  local c=$1 v=$2 h=$3 g=$4 t=$5
  local host=$(((v * 7 + 3) % h)) dev=$((v % g)) rank=$((((v * 7 + 3) % h) * g + v % g))
  local factors=(1.2 1.5 2 3 5)
  case $c in
  straggler) echo "straggler:rank=$rank:factor=${factors[$((v % 5))]}:t=$t" ;;
  nic_tx) echo "nic_tx:host=$host:dev=$dev:rate=$([ $((v % 2)) -eq 0 ] && echo 0.5 || echo 0.25):t=$t" ;;
  nic_rx) echo "nic_rx:host=$host:dev=$dev:rate=$([ $((v % 2)) -eq 0 ] && echo 0.25 || echo 0.5):t=$t" ;;
  link) echo "link:src=$host:dst=$(((host + 1) % h)):dev=$dev:rate=0.3:t=$t" ;;
  path) # odd spines carry ring traffic; on 4 hosts spine3 carries half of it, no minority to find
    local ids=(1 5 1 5); [ "$h" -gt 4 ] && ids=(1 3 5 7); echo "path:id=spine${ids[$((v % 4))]}:rate=0.5:t=$t" ;;
  comm_hang) echo "comm_hang:src=$host:dst=$(((host + 1) % h)):dev=$dev:t=$t" ;;
  noncomm_hang) echo "noncomm_hang:rank=$rank:t=$t" ;;
  rank_lost) echo "rank_lost:rank=$rank:t=$t" ;;
  esac
}

median() { sort -g | awk '{v[NR]=$1} END {if (NR) printf "%.3f", (NR % 2 ? v[(NR+1)/2] : (v[NR/2] + v[NR/2+1]) / 2); else print "nan"}'; }

echo "detection: scenarios at ${SCALES// /, } ranks (c4scen | c4mon replay | c4scen score) ..."
json_scales=()
echo "targets: precision, recall >= 0.99; location >= 0.95; median flag <= 2 s (slow), <= 1 s after the threshold (hangs)"
printf '%-7s %7s %9s %7s %9s %10s %10s %8s %6s\n' ranks faults precision recall location \
  flag_slow_s flag_hang_s false_al secs
for scale in $SCALES; do
  start=$SECONDS
  read -r hosts gpus <<<"$(shape "$scale")"
  seeds=$SEEDS
  [ "$scale" -ge 4096 ] && seeds=1
  : >"$WORK/rows-$scale"
  : >"$WORK/counts-$scale"
  for seed in $(seq "$seeds"); do
    for c in straggler nic_tx nic_rx link path; do # slow faults: one at a time, 12 s each
      v=$((seed - 1))
      scenario "$scale" "$seed" 30 --fault "$(fault $c $v "$hosts" "$gpus" 14)" || echo "   $c failed" >&2
    done
    for c in comm_hang noncomm_hang rank_lost; do
      scenario "$scale" "$seed" 24 --fault "$(fault $c $((seed - 1)) "$hosts" "$gpus" 12)" || echo "   $c failed" >&2
    done
  done
  rows="$WORK/rows-$scale"
  faults=$(wc -l <"$rows")
  detected=$(awk '$(NF-2) == "yes"' "$rows" | wc -l)
  right=$(awk '$(NF-2) == "yes" && $(NF-1) == "right"' "$rows" | wc -l)
  events=$(awk '{e += $1; f += $2} END {print e + 0}' "$WORK/counts-$scale")
  falarms=$(awk '{f += $2} END {print f + 0}' "$WORK/counts-$scale")
  precision=$(awk -v e="$events" -v f="$falarms" 'BEGIN {if (e) printf "%.3f", (e - f) / e; else print "nan"}')
  recall=$(awk -v d="$detected" -v n="$faults" 'BEGIN {if (n) printf "%.3f", d / n; else print "nan"}')
  location=$(awk -v r="$right" -v d="$detected" 'BEGIN {if (d) printf "%.3f", r / d; else print "nan"}')
  slow=$(awk '$(NF-2) == "yes" && ($2 == "straggler" || $2 == "comm_slow") {print $NF}' "$rows" | median)
  hang=$(awk '$(NF-2) == "yes" && ($2 == "comm_hang" || $2 == "noncomm_hang") {print $NF}' "$rows" | median)
  met=$(awk -v p="$precision" -v r="$recall" -v l="$location" -v s="$slow" -v h="$hang" 'BEGIN {
    ok = p >= 0.99 && r >= 0.99 && l >= 0.95 && (s == "nan" || s <= 2) && (h == "nan" || h <= 1)
    print ok ? "ok" : "MISSED" }')
  printf '%-7s %7s %9s %7s %9s %10s %10s %8s %6s %s\n' "$scale" "$faults" "$precision" "$recall" \
    "$location" "$slow" "$hang" "$falarms" "$((SECONDS - start))" "$met"
  json_scales+=("$(printf '{"ranks": %s, "faults": %s, "events": %s, "precision": %s, "recall": %s, "location": %s, "median_flag_slow_s": %s, "median_flag_hang_s": %s, "false_alarms": %s}' \
    "$scale" "$faults" "$events" "$precision" "$recall" "$location" "$slow" "$hang" "$falarms" | sed 's/nan/null/g')")
done

# scores the rows and counts of one key as "faults precision recall location false_alarms
# factor_right"
score_scale() { # key
  local rows="$WORK/rows-$1" counts="$WORK/counts-$1"
  awk -v rows="$rows" 'BEGIN {
      while ((getline l < rows) > 0) {
        n = split(l, f, " "); faults++
        if (f[n-2] == "yes") { det++; if (f[n-1] == "right") right++ } }
    }
    { ev += $1; fa += $2; if ($3 != "-") { nf++; fok += $3 } }
    END {
      printf "%d %s %s %s %s %d\n", faults, (ev ? sprintf("%.3f", (ev - fa) / ev) : "nan"),
        (faults ? sprintf("%.3f", det / faults) : "nan"), (det ? sprintf("%.3f", right / det) : "nan"),
        fa " " (nf ? sprintf("%.3f", fok / nf) : "nan"), ev - fa - det }' "$counts"
}

echo "detection by tracer variant at ${VSCALES// /, } ranks (every slowdown 1.5x or more) ..."
echo "targets: precision, recall >= 0.99; location >= 0.95; median flag <= 2 s (slow); factor within 20%;"
echo "one verdict per fault (extra: verdicts inside a fault's window past its first, which the scorer"
echo "counts as the fault's)"
printf '%-8s %-7s %7s %9s %7s %9s %10s %10s %8s %9s %6s %6s\n' variant ranks faults precision recall \
  location flag_slow_s flag_hang_s false_al factor_ok extra secs
json_variants=()
for VARIANT in $VARIANTS; do
  for scale in $VSCALES; do
    start=$SECONDS
    read -r hosts gpus <<<"$(shape "$scale")"
    seeds=$SEEDS
    [ "$scale" -ge 4096 ] && seeds=1
    KEY="$VARIANT-$scale"
    : >"$WORK/rows-$KEY"
    : >"$WORK/counts-$KEY"
    for seed in $(seq "$seeds"); do
      for c in straggler nic_tx nic_rx link path; do # straggler factors 1.5, 2, 3 (not 1.2)
        scenario "$scale" "$seed" 30 --fault "$(fault $c "$seed" "$hosts" "$gpus" 14)" || echo "   $VARIANT $c failed" >&2
      done
      for c in comm_hang noncomm_hang rank_lost; do
        scenario "$scale" "$seed" 24 --fault "$(fault $c "$seed" "$hosts" "$gpus" 12)" || echo "   $VARIANT $c failed" >&2
      done
    done
    read -r faults precision recall location falarms factor_ok extra <<<"$(score_scale "$KEY")"
    rows="$WORK/rows-$KEY"
    slow=$(awk '$(NF-2) == "yes" && ($2 == "straggler" || $2 == "comm_slow") {print $NF}' "$rows" | median)
    hang=$(awk '$(NF-2) == "yes" && ($2 == "comm_hang" || $2 == "noncomm_hang") {print $NF}' "$rows" | median)
    met=$(awk -v p="$precision" -v r="$recall" -v l="$location" -v s="$slow" -v f="$factor_ok" -v x="$extra" 'BEGIN {
      ok = p >= 0.99 && r >= 0.99 && l >= 0.95 && (s == "nan" || s <= 2) && (f == "nan" || f >= 0.99) && x == 0
      print ok ? "ok" : "MISSED" }')
    printf '%-8s %-7s %7s %9s %7s %9s %10s %10s %8s %9s %6s %6s %s\n' "$VARIANT" "$scale" "$faults" \
      "$precision" "$recall" "$location" "$slow" "$hang" "$falarms" "$factor_ok" "$extra" "$((SECONDS - start))" "$met"
    json_variants+=("$(printf '{"variant": "%s", "ranks": %s, "faults": %s, "precision": %s, "recall": %s, "location": %s, "median_flag_slow_s": %s, "median_flag_hang_s": %s, "false_alarms": %s, "factor_right": %s, "extra_verdicts": %s}' \
      "$VARIANT" "$scale" "$faults" "$precision" "$recall" "$location" "$slow" "$hang" "$falarms" "$factor_ok" "$extra" | sed 's/nan/null/g')")
  done
done

# The smallest slowdown found: NIC TX and link faults from 1.1x up, 64 ranks, until one is found
# at the right place with no false alarm (the noise it is found at is the scenario's: 2% per
# transfer, 3% per compute, blips).
echo "smallest slowdown found at 64 ranks (NIC TX, link; 2% transfer noise, 4 blips):"
json_smallest=()
for VARIANT in $VARIANTS; do
  line="   $VARIANT:"
  for c in nic_tx link; do
    found=null
    for f in 1.1 1.15 1.2 1.25 1.3 1.4 1.5 1.75 2 3; do
      rate=$(awk -v f="$f" 'BEGIN {printf "%.4f", 1 / f}')
      KEY="smallest-$VARIANT-$c-$f"
      : >"$WORK/rows-$KEY"
      : >"$WORK/counts-$KEY"
      spec=$(fault "$c" 1 8 8 14 | sed "s/rate=[0-9.]*/rate=$rate/")
      scenario 64 1 30 --fault "$spec" || continue
      read -r _ _ recall location falarms _ <<<"$(score_scale "$KEY")"
      if [ "$recall" = 1.000 ] && [ "$location" = 1.000 ] && [ "$falarms" = 0 ]; then
        found=$f
        break
      fi
    done
    line+=" $c ${found}x"
    json_smallest+=("$(printf '{"variant": "%s", "fault": "%s", "smallest_factor": %s}' "$VARIANT" "$c" "$found")")
  done
  echo "$line"
done
KEY=
VARIANT=full

# Sparse traffic: the generator writes one transfer per cell and collective, and the delay matrix
# judges one-second windows of a cell's transfers (two at least), so a job of few collectives a
# second leaves it little to judge. The slow faults twice each at 256 ranks, at lower rates, show
# (stragglers at 1.2x and 1.5x, NIC TX at 50% and 25%, NIC RX at 25% and 50%, links at 30%, paths
# at 50%; on two NICs) where NICs, links and paths stop being found (docs/events.md, What the matrix needs). No target:
# c4's own tracers record every chunk, tens to hundreds a collective.
echo "detection by collective rate at 256 ranks (one transfer per cell and collective; no target):"
printf '   %-5s %7s %7s %9s %11s  %s\n' rate faults recall location flag_slow_s "missed or misplaced"
json_rates=()
for rate in 10 6 4 2 1; do
  KEY="rate-$rate"
  : >"$WORK/rows-$KEY"
  : >"$WORK/counts-$KEY"
  for v in 0 1; do
    for c in straggler nic_tx nic_rx link path; do
      scenario 256 1 40 --rate "$rate" --fault "$(fault $c $v 32 8 14)" || echo "   rate $rate $c failed" >&2
    done
  done
  read -r faults _ recall location _ _ _ <<<"$(score_scale "$KEY")"
  rows="$WORK/rows-$KEY"
  slow=$(awk '$(NF-2) == "yes" {print $NF}' "$rows" | median)
  off=$(awk '$(NF-2) != "yes" || $(NF-1) != "right" {printf "%s%s", (n++ ? "," : ""), ($2 == "comm_slow" ? $3 : $2)}' "$rows")
  printf '   %-5s %7s %7s %9s %11s  %s\n' "$rate" "$faults" "$recall" "$location" "$slow" "${off:--}"
  json_rates+=("$(printf '{"collectives_per_s": %s, "faults": %s, "recall": %s, "location": %s, "median_flag_slow_s": %s}' \
    "$rate" "$faults" "$recall" "$location" "$slow" | sed 's/nan/null/g')")
done
KEY=

echo "detection: an hour of healthy trace (16 ranks, 200 blips) ..."
"$BIN/c4scen" gen --hosts 4 --gpus 4 --seconds 3600 --seed 99 --blips 200 --truth "$WORK/hour.truth" \
  --bin --out - 2>/dev/null | "$BIN/c4mon" replay - --events "$WORK/hour.ev" 2>/dev/null
hour_alarms=$(grep -vc '"kind":"recovered"' "$WORK/hour.ev") || hour_alarms=0
echo "   false alarms in an hour: $hour_alarms (target 0: $([ "$hour_alarms" -eq 0 ] && echo ok || echo MISSED))"

echo "detection: replay speed of a 16,384-rank trace (20 s, binary, on one core) ..."
"$BIN/c4scen" gen --hosts 2048 --gpus 8 --seconds 20 --seed 5 --truth "$WORK/speed.truth" \
  --bin --out "$WORK/speed.bin" 2>/dev/null
speeds=()
for _ in 1 2 3; do
  t0=$(date +%s.%N)
  taskset -c 0 "$BIN/c4mon" replay "$WORK/speed.bin" --events /dev/null 2>/dev/null
  t1=$(date +%s.%N)
  speeds+=("$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", 20 / (b - a)}')")
done
speed=$(printf '%s\n' "${speeds[@]}" | median)
size=$(du -h "$WORK/speed.bin" | cut -f1)
rm -f "$WORK/speed.bin"
echo "   replay: ${speed}x real time (median of ${speeds[*]}; trace $size; target >= 10: $(awk -v s="$speed" 'BEGIN {print (s >= 10 ? "ok" : "MISSED")}'))"

{
  printf '{"scales": [\n  %s\n ],\n' "$(IFS=$'\n'; printf '%s' "${json_scales[*]}" | sed '$!s/$/,/')"
  printf ' "variants": [\n  %s\n ],\n' "$(IFS=$'\n'; printf '%s' "${json_variants[*]}" | sed '$!s/$/,/')"
  printf ' "smallest_slowdown": [\n  %s\n ],\n' "$(IFS=$'\n'; printf '%s' "${json_smallest[*]}" | sed '$!s/$/,/')"
  printf ' "by_collective_rate": [\n  %s\n ],\n' "$(IFS=$'\n'; printf '%s' "${json_rates[*]}" | sed '$!s/$/,/')"
  printf ' "healthy_hour_false_alarms": %s, "replay_16384_speedup": %s}\n' "$hour_alarms" "$speed"
} >"$BUILD/bench-detect.json"
echo "detection: written to $BUILD/bench-detect.json"
