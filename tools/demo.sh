#!/usr/bin/env bash
# demo.sh -- `make demo`, the README's first command. On this machine, without root: c4mon, and a
# 4-rank c4train whose gradients go over loopback through the c4 NCCL net plugin, each rank
# reporting as a host of its own (C4_HOSTNAME=node-%r) and streaming its timings to c4mon.
# Two faults are injected:
#   - steps 41-100: rank 3 computes 3x slower (c4train --slow 3:3.0:41:100, a slow GPU);
#   - seconds 24-32 of the run: the connection from rank 1 to rank 2 is limited to 80 Mbit/s
#     inside the plugin (C4_FAULT, docs/fault.md, a bad link).
# c4mon's verdicts print as they come, beside c4train's steps and the straggler planner's
# re-splits; at the end, tokens/s before, during and after the straggler, and two pictures in
# OUT (default demo-out/): the delay matrix while the link is slow (PNG) and a throughput
# timeline with the faults and verdicts marked (SVG). About 60-90 s.
# Usage: tools/demo.sh [BUILD_DIR]
set -eu
BUILD=${1:-build}
BIN="$PWD/$BUILD/bin"
OUT=${C4_DEMO_OUT:-$PWD/demo-out}
STEPS=${C4_DEMO_STEPS:-220}
[ -x "$BIN/c4train" ] && [ -x "$BIN/c4mon" ] || { echo "demo: build first (make)" >&2; exit 2; }
mkdir -p "$OUT"
rm -f "$OUT"/events.jsonl "$OUT"/train.jsonl "$OUT"/matrix.png "$OUT"/timeline.svg "$OUT"/marks
touch "$OUT/events.jsonl" "$OUT/train.jsonl" "$OUT/marks"

free_port() { # a port nothing listens on, below the ephemeral range
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 12000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
  echo 29611
}
MON=$(free_port)
SUB=$(free_port)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; }
trap cleanup EXIT

echo "c4 demo: c4mon and a 4-rank c4train over the c4 plugin on $(hostname), no root"
echo "  rank 3 computes 3x slower in steps 41-100; rank 1 -> rank 2 limited to 80 Mbit/s at 24-32 s"
echo
"$BIN/c4mon" serve --listen "127.0.0.1:$MON" --token demo --subscribe "127.0.0.1:$SUB" \
  --events "$OUT/events.jsonl" 2>"$OUT/c4mon.log" &
pids+=($!)
sleep 0.3

# c4train: rank 0 writes one JSON line per step; the plugin streams every rank to c4mon.
C4_HOSTNAME=node-%r C4_MONITOR="127.0.0.1:$MON" C4_TOKEN=demo C4_JOB=demo C4_DEBUG=NONE \
  C4_FAULT="rate:rank=1,peer=2,mbps=80,after_s=24,for_s=8" \
  "$BIN/c4train" --local-ranks 4 --steps "$STEPS" --slow 3:3.0:41:100 \
  --monitor "127.0.0.1:$SUB" --eval-windows 16 --json >"$OUT/train.jsonl" 2>"$OUT/c4train.log" &
train=$!
pids+=($train)

# The screen: every 10th step, each re-split, each verdict (with the step it came in).
last_step() { sed -n 's/.*"event":"step","step":\([0-9]*\).*/\1/p' "$OUT/train.jsonl" | tail -1; }
shown_steps=0 shown_events=0 prev_split="" matrix_taken=0
show() {
  local line step split tps
  while IFS= read -r line; do
    step=$(sed -n 's/.*"event":"step","step":\([0-9]*\),.*/\1/p' <<<"$line")
    [ -n "$step" ] || continue
    split=$(sed -n 's/.*"split":\[\([0-9,]*\)\].*/\1/p' <<<"$line")
    tps=$(sed -n 's/.*"tokens_per_s":\([0-9.]*\).*/\1/p' <<<"$line")
    if [ -n "$prev_split" ] && [ "$split" != "$prev_split" ]; then
      printf '  step %3d  c4train: the planner re-splits the micro-batches: [%s] -> [%s]\n' "$step" "$prev_split" "$split"
      echo "$step resplit" >>"$OUT/marks"
    fi
    prev_split=$split
    if [ $((step % 10)) -eq 0 ]; then
      printf '  step %3d  %7.0f tokens/s  split [%s]\n' "$step" "$tps" "$split"
    fi
  done
  return 0
}
show_events() {
  local line kind where ranks link factor step
  while IFS= read -r line; do
    # the first occurrence of each field: a recovered event repeats them under "cleared"
    kind=$(grep -o '"kind":"[a-z_]*"' <<<"$line" | head -1 | cut -d'"' -f4)
    where=$(grep -o '"where":"[a-z_]*"' <<<"$line" | head -1 | cut -d'"' -f4)
    ranks=$(grep -o '"ranks":\[[0-9,]*\]' <<<"$line" | head -1 | sed 's/.*\[\(.*\)\]/\1/')
    link=$(grep -o '"link":\["[^"]*","[^"]*"\]' <<<"$line" | head -1 | sed 's/.*\["\([^"]*\)","\([^"]*\)"\]/\1 -> \2/')
    factor=$(grep -o '"factor":[0-9.]*' <<<"$line" | head -1 | cut -d: -f2)
    step=$(last_step)
    case $kind in
    recovered) printf '  step %3s  c4mon: recovered: %s at %s, rank(s) [%s]%s\n' "${step:-0}" \
      "$(grep -o '"cleared":{"kind":"[a-z_]*"' <<<"$line" | cut -d'"' -f6)" "$where" "$ranks" "${link:+, link $link}" ;;
    *) printf '  step %3s  c4mon: %s at %s, rank(s) [%s]%s, %.2fx\n' "${step:-0}" "$kind" "$where" "$ranks" \
      "${link:+, link $link}" "${factor:-0}" ;;
    esac
    echo "${step:-0} $kind" >>"$OUT/marks"
    if [ "$kind" = comm_slow ] && [ "$matrix_taken" -eq 0 ]; then
      if C4_TOKEN=demo "$BIN/c4mon" matrix --connect "127.0.0.1:$MON" --png "$OUT/matrix.png" 2>/dev/null; then
        matrix_taken=1
      fi
    fi
  done
  return 0
}
while kill -0 "$train" 2>/dev/null; do
  n=$(wc -l <"$OUT/train.jsonl")
  if [ "$n" -gt "$shown_steps" ]; then
    sed -n "$((shown_steps + 1)),${n}p" "$OUT/train.jsonl" >"$OUT/.new"
    show <"$OUT/.new"
    shown_steps=$n
  fi
  e=$(wc -l <"$OUT/events.jsonl")
  if [ "$e" -gt "$shown_events" ]; then
    sed -n "$((shown_events + 1)),${e}p" "$OUT/events.jsonl" >"$OUT/.new"
    show_events <"$OUT/.new"
    shown_events=$e
  fi
  sleep 0.2
done
wait "$train" || { echo "demo: c4train failed; see $OUT/c4train.log" >&2; exit 1; }
sed -n "$((shown_steps + 1)),\$p" "$OUT/train.jsonl" >"$OUT/.new"
show <"$OUT/.new"
sleep 1 # the last verdicts (recoveries) reach c4mon's file
sed -n "$((shown_events + 1)),\$p" "$OUT/events.jsonl" >"$OUT/.new"
show_events <"$OUT/.new"
rm -f "$OUT/.new"

# Tokens/s per phase: medians of the steps' own figures.
phase() { # first last
  sed -n 's/.*"step":\([0-9]*\),.*"tokens_per_s":\([0-9.]*\).*/\1 \2/p' "$OUT/train.jsonl" |
    awk -v a="$1" -v b="$2" '$1 >= a && $1 <= b {print $2}' | sort -g |
    awk '{v[NR] = $1} END {if (NR) printf "%.0f", v[int((NR + 1) / 2)]; else print "-"}'
}
before=$(phase 11 40)
during_even=$(phase 41 43)
during=$(phase 46 100)
after=$(phase 111 "$STEPS")
echo
echo "tokens/s (median per phase):"
printf '  before the straggler (steps 11-40)            %8s\n' "$before"
printf '  straggler, before the re-split (steps 41-43)  %8s\n' "$during_even"
printf '  straggler, after the re-split (steps 46-100)  %8s\n' "$during"
printf '  after it recovered (steps 111-%d)            %8s\n' "$STEPS" "$after"
echo "verdicts: $(grep -c '"kind"' "$OUT/events.jsonl") (c4mon's events: $OUT/events.jsonl)"
grep '"event":"end"' "$OUT/train.jsonl" | sed 's/.*"eval_loss_start":\([0-9.]*\),"eval_loss":\([0-9.]*\).*/loss on held-out text: \1 -> \2/'

# The timeline: tokens/s per step, the straggler's steps shaded, verdicts and re-splits marked.
awk -v steps="$STEPS" -v marks="$OUT/marks" '
  BEGIN { W = 900; H = 320; L = 60; T = 30; PW = W - L - 20; PH = H - T - 50 }
  /"event":"step"/ {
    match($0, /"step":[0-9]+/); s = substr($0, RSTART + 7, RLENGTH - 7) + 0
    match($0, /"tokens_per_s":[0-9.]+/); v = substr($0, RSTART + 15, RLENGTH - 15) + 0
    y[s] = v; if (v > max) max = v; n = s
  }
  END {
    if (!max) max = 1
    max *= 1.15
    printf "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" font-family=\"sans-serif\" font-size=\"12\">\n", W, H
    printf "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n"
    printf "<text x=\"%d\" y=\"18\" font-size=\"14\">c4 demo: tokens/s per step (4 ranks over the c4 plugin)</text>\n", L
    x0 = L + 41 * PW / steps; x1 = L + 100 * PW / steps
    printf "<rect x=\"%.1f\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#fde2c8\"/>\n", x0, T, x1 - x0, PH
    printf "<text x=\"%.1f\" y=\"%d\" fill=\"#a05000\">rank 3 at 1/3 speed</text>\n", x0 + 4, T + 14
    pts = ""
    for (s = 1; s <= n; s++) if (s in y) pts = pts sprintf("%.1f,%.1f ", L + s * PW / steps, T + PH - y[s] * PH / max)
    printf "<polyline fill=\"none\" stroke=\"#1f5fbf\" stroke-width=\"1.5\" points=\"%s\"/>\n", pts
    while ((getline line < marks) > 0) {
      split(line, f, " "); s = f[1]; k = f[2]; x = L + s * PW / steps
      c = k == "resplit" ? "#2a9d2a" : k == "recovered" ? "#888888" : "#d62828"
      printf "<line x1=\"%.1f\" y1=\"%d\" x2=\"%.1f\" y2=\"%d\" stroke=\"%s\" stroke-dasharray=\"3,2\"/>\n", x, T, x, T + PH, c
      printf "<text x=\"%.1f\" y=\"%d\" fill=\"%s\" transform=\"rotate(-90 %.1f %d)\">%s</text>\n", x - 2, T + PH - 4, c, x - 2, T + PH - 4, k
    }
    printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", L, T + PH, L + PW, T + PH
    printf "<line x1=\"%d\" y1=\"%d\" x2=\"%d\" y2=\"%d\" stroke=\"black\"/>\n", L, T, L, T + PH
    for (i = 0; i <= 4; i++) printf "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%.0f</text>\n", L - 4, T + PH - i * PH / 4 + 4, max * i / 4
    for (s = 0; s <= steps; s += 20) printf "<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">%d</text>\n", L + s * PW / steps, T + PH + 16, s
    printf "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">step</text>\n", L + PW / 2, H - 8
    printf "</svg>\n"
  }' "$OUT/train.jsonl" >"$OUT/timeline.svg"
echo "pictures: $OUT/timeline.svg (throughput, faults and verdicts)$([ -f "$OUT/matrix.png" ] && echo ", $OUT/matrix.png (the delay matrix while the link was slow)")"
