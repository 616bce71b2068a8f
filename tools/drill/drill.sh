#!/usr/bin/env bash
# drill.sh -- `make drill` (root): the demo's job over the namespace fabric with real faults.
# tools/fabric/fabric builds 5 hosts, 2 leaves, 2 spines (hosts h0..h3 train, h4 is the
# management host that runs c4mon); one c4train rank per host namespace, its gradients over the
# c4 plugin across the fabric, its telemetry streamed to c4mon on h4. The ring is h0 -> h1 -> h3
# -> h2 -> h0 (ranks 0..3), so two of its hops cross the spines and two stay in a leaf. Before
# the job starts, `c4plan probe` maps source ports to spines for each crossing hop (the leaves
# hash the headers' 5-tuple; the ranks listen on the probed port, C4_LISTEN_PORTS) and `c4plan
# assign` places the job's flows (two per hop, one per data socket); the ranks follow that plan
# (C4_PLAN), so each crossing hop has one data socket on each spine; c4mon reads the same plan, so
# that it can name a congested path. Then, one after another:
#   1. a congested spine: leaf l0's link to spine s1 is cut to 100 Mbit/s (fabric degrade, tc
#      tbf); the share of one crossing hop's bytes its data socket on s1 carried is measured (the
#      plugin's multipath weights move it off the slow spine: at most 0.40 of the hop's bytes
#      against an even 0.50, checked unless C4_DRILL_QUICK=1 or C4_PATH_WEIGHTS=0);
#   2. a degraded host link: h2's link to its leaf at 200 Mbit/s, both directions;
#   3. a SIGSTOPped rank (rank 1, h1), then SIGCONT;
#   4. a killed rank (rank 2, h3): the survivors stop (exit 75) and this script, their launcher,
#      starts them again as 3 ranks, which resume from the checkpoint.
# The script writes a mark ("NAME T_NS", on c4mon's clock: c4mon events --now) when it injects
# and lifts each fault; at the end c4mon's events are scored against the table of expected
# verdicts, tools/drill/expected.json (c4mon events --score: each fault must be found with its
# class and place, within its window, and nothing else raised). Prints the score and a
# throughput table (tokens/s before, during and after each fault); writes OUT/score.json. Exits 1
# on a miss or a false alarm, when the job did not go on, or the spine's bytes were not moved; 2
# when not root. About two minutes (the quick one: a minute and a quarter).
# Usage: tools/drill/drill.sh [BUILD_DIR]   (OUT: $C4_DRILL_OUT, default drill-out/;
# C4_DRILL_QUICK=1: shorter windows and faults; the ranks inherit the environment, so
# e.g. C4_PATH_WEIGHTS=0 runs the spine fault with even chunks, for comparison)
set -eu
BUILD=${1:-build}
case $BUILD in /*) ;; *) BUILD=$PWD/$BUILD ;; esac
BIN=$BUILD/bin
HERE=$(cd "$(dirname "$0")" && pwd)
FABRIC=$HERE/../fabric/fabric
# shellcheck source=tools/fabric/ring_plan.sh
. "$HERE/../fabric/ring_plan.sh"
OUT=${C4_DRILL_OUT:-$PWD/drill-out}

if [ "$(id -u)" -ne 0 ]; then
  echo "drill: needs root (network namespaces, tc); skipped. Run: sudo make drill" >&2
  exit 2
fi
for f in "$BIN/c4train" "$BIN/c4mon" "$BIN/c4plan" "$BUILD/lib/libnccl-net-c4.so"; do
  [ -x "$f" ] || [ -f "$f" ] || { echo "drill: $f is missing: build first (make)" >&2; exit 2; }
done
for t in ip tc ss; do
  command -v "$t" >/dev/null || { echo "drill: needs $t (iproute2)" >&2; exit 2; }
done

mkdir -p "$OUT"
rm -rf "$OUT/ckpt" "$OUT"/*.log "$OUT"/*.jsonl "$OUT"/*.json "$OUT"/*.out "$OUT"/probe-* "$OUT/marks" 2>/dev/null || true
NAME=c4d$$ # this run's own namespaces: c4d<pid>-h0 ...
TOPO=$OUT/topo.json
EVENTS=$OUT/events.jsonl
MARKS=$OUT/marks
EXPECT=$HERE/expected.json
MON=198.18.4.2 # h4
LPORT=40000    # every rank's plugin listens here (C4_LISTEN_PORTS); the probes use it too
TOKEN=drill-$$
HOSTS=(h0 h1 h3 h2) # rank r runs on ${HOSTS[r]}
RANK_PIDS=()
MON_PID=
fab() { "$FABRIC" --name "$NAME" --out "$TOPO" "$@"; }
evq() { "$BIN/c4mon" events "$EVENTS" "$@"; }

cleanup() {
  local p
  for p in "${RANK_PIDS[@]}"; do
    kill -CONT "$p" 2>/dev/null || true
    kill -9 "$p" 2>/dev/null || true
  done
  [ -n "$MON_PID" ] && kill "$MON_PID" 2>/dev/null || true
  wait 2>/dev/null || true
  fab down >/dev/null 2>&1 || true
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() {
  echo "drill: FAILED: $*" >&2
  exit 1
}
say() { printf "[%3d s] %s\n" $((SECONDS - ${START:-0})) "$*"; }
# mark NAME: the time now on c4mon's clock, under NAME, for the expected table's windows
mark() { echo "$1 $("$BIN/c4mon" events --now)" >>"$MARKS"; }

# The model and the phases. C4_DRILL_QUICK=1 (the CI suite): shorter windows. Not a smaller
# model: with one, each data socket is busy too seldom for its path's rate to stand out of the
# noise within the congested spine's few seconds.
WARM_S=35 # seconds of training before the first fault: c4mon's noise model learns first
MODEL=(--width 128 --microbatches 8)
if [ "${C4_DRILL_QUICK:-0}" = 1 ]; then
  WIN=6     # steps per throughput window
  SPINE_S=6 # the congested spine lasts at least this long (s): its sockets' rates name it
else
  WIN=10
  SPINE_S=8
fi

# --- the fabric, the plan ----------------------------------------------------------------------
START=$SECONDS
echo "c4 drill: c4train on 4 hosts of a namespace leaf-spine fabric, c4mon on a fifth; real faults"
fab --hosts 5 --ports 1 --leaves 2 --spines 2 --rate 1gbit up >"$OUT/fabric.log" 2>&1 ||
  die "fabric up: $(cat "$OUT/fabric.log")"
say "fabric $NAME up: 5 hosts, 2 leaves, 2 spines, 1 Gbit/s links (topology $TOPO)"
# The job's flows: two per ring hop (C4_NSOCKS=2 data sockets), probed, then placed.
ring_plan "$BIN" "$NAME" "$TOPO" "$LPORT" "$OUT" "${HOSTS[@]}" || die "$RING_PLAN_ERR"
# The planned source ports of each crossing hop, by spine: "SRC DST SPINE PORT" lines.
"$BIN/c4plan" flows "$OUT/plan.json" >"$OUT/flows.txt" 2>&1 || die "the plan: $(cat "$OUT/flows.txt")"
awk '$3 ~ /^s/' "$OUT/flows.txt" >"$OUT/pins"
while read -r a b spine port; do
  [ "$port" != - ] || die "the plan gives flow $a -> $b on $spine no source port: $(cat "$OUT/flows.txt")"
done <"$OUT/pins"
for hop in "h0 h1" "h3 h2"; do
  set -- $hop
  [ "$(grep -c "^$1 $2 " "$OUT/pins")" = 2 ] && [ "$(grep "^$1 $2 " "$OUT/pins" | awk '{print $3}' | sort -u | wc -l)" = 2 ] ||
    die "the plan does not put hop $1 -> $2 on both spines: $(cat "$OUT/flows.txt")"
done
say "c4plan: $(grep -c . "$OUT/pins") flows pinned to spines ($(sed -n 2p "$OUT/assign.log" | sed 's/ *(.*//'))"

# --- c4mon and the job -------------------------------------------------------------------------
touch "$EVENTS"
ip netns exec "$NAME-h4" "$BIN/c4mon" serve --listen "$MON:7400" --token "$TOKEN" --job drill \
  --subscribe "$MON:7401" --events "$EVENTS" --record "$OUT/trace.jsonl" --plan "$OUT/plan.json" --hang-ms 3000 \
  >"$OUT/c4mon.out" 2>"$OUT/c4mon.log" &
MON_PID=$!
sleep 0.3
kill -0 "$MON_PID" 2>/dev/null || die "c4mon did not start: $(cat "$OUT/c4mon.log")"

ATTEMPT=0
TRAIN= # rank 0's JSON step log of this attempt (c4train --json-out: a line per step)
# start_ranks HOST...: one rank per host, rank i on the i-th; rank 0's host runs the rendezvous.
start_ranks() {
  local world=$# r=0 h
  ATTEMPT=$((ATTEMPT + 1))
  TRAIN=$OUT/train-$ATTEMPT.jsonl
  RANK_PIDS=()
  RANK_HOSTS=("$@")
  for h in "$@"; do
    ip netns exec "$NAME-$h" env RANK=$r WORLD_SIZE="$world" MASTER_ADDR="198.18.${1#h}.2" \
      MASTER_PORT=29500 C4_SOCKET_IFNAME==eth0 C4_HOSTNAME="$h" C4_MONITOR="$MON:7400" \
      C4_TOKEN="$TOKEN" C4_JOB=drill C4_HEARTBEAT_MS=250 C4_DEBUG=INFO C4_PLAN="$OUT/plan.json" \
      C4_LISTEN_PORTS=$LPORT C4_COLL_TIMEOUT_MS=30000 \
      "$BIN/c4train" --steps 100000 "${MODEL[@]}" --eval-windows 0 --ckpt-dir "$OUT/ckpt" \
      --ckpt-every 5 --monitor "$MON:7401" --json-out "$OUT/train-$ATTEMPT.jsonl" \
      >"$OUT/train-$ATTEMPT-rank$r.out" 2>"$OUT/rank$r-$h-$ATTEMPT.log" &
    RANK_PIDS+=($!)
    r=$((r + 1))
  done
}
alive() {
  local p
  for p in "${RANK_PIDS[@]}"; do kill -0 "$p" 2>/dev/null || return 1; done
}
# rank 0's step log, read with jq (a line being written is skipped: fromjson?)
steps_jq() { jq -Rn "$@" 2>/dev/null <"$TRAIN"; } # no output when the log is not there yet
last_step() { steps_jq '[inputs | fromjson? | select(.event == "step") | .step] | last // 0' || echo 0; }
# wait_steps N [SECS]: until rank 0 has done N more steps (fails after SECS, default 60, or when
# a rank has died)
wait_steps() {
  local want=$(($(last_step) + $1)) end=$((SECONDS + ${2:-60}))
  while [ "$(last_step)" -lt "$want" ]; do
    [ $SECONDS -lt $end ] && alive || return 1
    sleep 0.2
  done
}
# tps A B: tokens/s over rank 0's steps A < step <= B of this attempt (their tokens over their time)
tps() {
  steps_jq --argjson a "$1" --argjson b "$2" '[inputs | fromjson? |
    select(.event == "step" and .step > $a and .step <= $b)] | (map(.step_ms) | add) as $ms |
    if $ms > 0 then (map(.tokens_per_s * .step_ms) | add) / $ms | round else 0 end'
}
# rate N T0 T1: tokens/s of N steps done between two times on c4mon's clock (ns)
rate() { awk -v n="$1" -v a="$2" -v b="$3" -v k="$TOKENS_PER_STEP" 'BEGIN {printf "%.0f", n * k / ((b - a) / 1e9)}'; }
now() { "$BIN/c4mon" events --now; }
# wait_verdict KIND MARK SECS: until c4mon has raised a KIND verdict since MARK, at most SECS
# (which place it names is the score's business, at the end)
wait_verdict() {
  local end=$((SECONDS + $3)) n
  while [ $SECONDS -lt $end ]; do
    n=$(evq --kind "$1" --since "mark:$2" --marks "$MARKS" --count) && [ "$n" -gt 0 ] && return 0
    sleep 0.2
  done
  say "c4mon: no $1 verdict within $3 s"
}
# quiesce: a fault goes onto a quiet job. Waits (at most 20 s) until c4mon has no verdict
# standing (a false alarm standing is scored as one all the same).
quiesce() {
  local end=$((SECONDS + 20))
  while [ "$(evq --active --count)" != 0 ]; do
    if [ $SECONDS -ge $end ]; then
      say "note: verdicts still standing at the fault:"
      evq --active --text | sed 's/^/         /'
      return 0
    fi
    sleep 0.5
  done
}
# bytes the socket from SPORT in host H's namespace to DST has had acknowledged
acked() {
  ip netns exec "$NAME-$1" ss -tniH state established src ":$2" dst "$3" |
    grep -o 'bytes_acked:[0-9]*' | head -1 | cut -d: -f2 | grep . || echo 0
}
# before: tokens/s over the last WIN steps; after N: over WIN steps once N more have passed
before() { local s; s=$(last_step); tps $((s - WIN)) "$s"; }
after() {
  local a
  wait_steps "$1" 60 || die "c4train stopped after the fault was lifted (see $OUT)"
  a=$(last_step)
  wait_steps "$WIN" 60 || die "c4train stopped after the fault was lifted (see $OUT)"
  tps "$a" "$(last_step)"
}

# The throughput, one row per fault: "fault|before|during|after|note".
ROWS=()
FAILED=0

start_ranks "${HOSTS[@]}"
TRAIN_START=$SECONDS
say "4 ranks of c4train started (ring ${HOSTS[*]}), streaming to c4mon at $MON:7400"
wait_steps $((2 * WIN)) 90 || die "c4train did not train (see $OUT/rank0-h0-1.log): $(tail -3 "$OUT/rank0-h0-1.log")"
TOKENS_PER_STEP=$(steps_jq '[inputs | fromjson? | select(.event == "step")][0] | .tokens_per_s * .step_ms / 1000 | round')
# every crossing hop's data sockets are bound to the planned ports
while read -r a b spine port; do
  ip netns exec "$NAME-$a" ss -tnH state established src ":$port" dst "198.18.${b#h}.2:$LPORT" | grep -q . ||
    die "no data socket from $a port $port (planned on $spine) to $b port $LPORT: the plan was not followed"
done <"$OUT/pins"
say "step $(last_step): training, $TOKENS_PER_STEP tokens a step; the crossing hops' data sockets are on their planned ports"
# c4mon judges each signal against its own healthy spread once it has learned it (docs/events.md:
# from 12 evaluations, 6 s of traffic, on; its window is the last 64, 32 s): the faults come after
# the job's start, whose transients (connections opening, the weights settling) have left it.
while [ $((SECONDS - TRAIN_START)) -lt "$WARM_S" ]; do
  alive || die "c4train stopped while c4mon learned its noise (see $OUT)"
  sleep 0.2
done

# --- 1. a congested spine ----------------------------------------------------------------------
# The hops whose traffic crosses l0-s1 are those between the leaves: h0 -> h1 and h3 -> h2.
s_port=$(awk '$1 == "h0" && $2 == "h1" && $3 == "s1" {print $4}' "$OUT/pins")
o_port=$(awk '$1 == "h0" && $2 == "h1" && $3 == "s0" {print $4}' "$OUT/pins")
quiesce
B=$(before)
b_s=$(acked h0 "$s_port" 198.18.1.2) b_o=$(acked h0 "$o_port" 198.18.1.2)
s0=$(last_step) t0=$(now) since=$SECONDS
mark spine_on
fab degrade l0-s1 100mbit >/dev/null
say "fault 1: spine link l0-s1 at 100 Mbit/s (of 1 Gbit/s); tokens/s before: $B"
wait_verdict comm_slow spine_on 20
wait_steps "$WIN" 90 || die "c4train stopped during the congested spine (see $OUT)"
# and SPINE_S seconds at least: the weights take a second or so to move, and the share is counted
# over the whole fault
while [ $((SECONDS - since)) -lt "$SPINE_S" ]; do
  alive || die "c4train stopped during the congested spine (see $OUT)"
  sleep 0.2
done
s1=$(last_step) t1=$(now)
e_s=$(acked h0 "$s_port" 198.18.1.2) e_o=$(acked h0 "$o_port" 198.18.1.2)
fab restore l0-s1 >/dev/null
mark spine_off
D=$(rate $((s1 - s0)) "$t0" "$t1")
share=$(awk -v s=$((e_s - b_s)) -v o=$((e_o - b_o)) 'BEGIN {if (s + o > 0) printf "%.2f", s / (s + o); else print "-"}')
say "restored; tokens/s during: $D; h0 -> h1's data socket on s1 carried $share of the hop's bytes"
# The traffic planner's part: with the weights on, the hop's socket on the congested spine must
# carry clearly less than its even share (at most 0.40 of the hop's bytes, against 0.50). Checked in
# the full drill; the quick one (a small model under ASan in make test) reports it.
MOVED=-
if [ "${C4_PATH_WEIGHTS:-1}" != 0 ] && [ "$share" != - ]; then
  MOVED=$(awk -v s="$share" 'BEGIN {print (s <= 0.40 ? "yes" : "no")}')
  if [ "$MOVED" = no ] && [ "${C4_DRILL_QUICK:-0}" != 1 ]; then
    say "the weights did not move h0 -> h1's bytes off the congested spine ($share > 0.40)"
    FAILED=1
  fi
fi
A=$(after 3)
ROWS+=("congested spine l0-s1 (100 Mbit/s)|$B|$D|$A|h0->h1's data socket on s1 carried $share of its bytes (even split: 0.50)")

# --- 2. a degraded host link -------------------------------------------------------------------
quiesce
B=$(before)
s0=$(last_step) t0=$(now)
mark link_on
fab degrade h2p0-l0 200mbit >/dev/null
say "fault 2: h2's link at 200 Mbit/s (of 1 Gbit/s); tokens/s before: $B"
wait_verdict comm_slow link_on 20
wait_steps $((WIN / 2)) 90 || die "c4train stopped during the slow link (see $OUT)"
s1=$(last_step) t1=$(now)
fab restore h2p0-l0 >/dev/null
mark link_off
D=$(rate $((s1 - s0)) "$t0" "$t1")
say "restored; tokens/s during: $D"
A=$(after 3)
ROWS+=("degraded link h2p0-l0 (200 Mbit/s)|$B|$D|$A|")

# --- 3. a stopped rank -------------------------------------------------------------------------
quiesce
B=$(before)
s0=$(last_step) t0=$(now)
mark stop_on
kill -STOP "${RANK_PIDS[1]}"
say "fault 3: rank 1 (h1) SIGSTOPped; tokens/s before: $B"
wait_verdict noncomm_hang stop_on 15
s1=$(last_step) t1=$(now)
kill -CONT "${RANK_PIDS[1]}"
mark stop_off
D=$(rate $((s1 - s0)) "$t0" "$t1")
say "rank 1 continued (SIGCONT); tokens/s while it was stopped: $D"
A=$(after 2)
ROWS+=("SIGSTOP rank 1 (h1)|$B|$D|$A|")

# --- 4. a killed rank --------------------------------------------------------------------------
quiesce
B=$(before)
mark kill_on
disown "${RANK_PIDS[2]}" # no "Killed" from the shell
kill -9 "${RANK_PIDS[2]}"
say "fault 4: rank 2 (h3) killed; tokens/s before: $B (4 ranks)"
wait_verdict rank_lost kill_on 15
# The launcher's part: the survivors give up on the lost peer (exit 75, C4TRAIN_EXIT_PEER_LOST);
# start them again as 3 ranks, which resume from the newest checkpoint.
codes=()
for r in 0 1 3; do
  end=$((SECONDS + 40))
  while kill -0 "${RANK_PIDS[r]}" 2>/dev/null && [ $SECONDS -lt $end ]; do sleep 0.2; done
  kill -0 "${RANK_PIDS[r]}" 2>/dev/null && die "rank $r (${RANK_HOSTS[r]}) did not stop within 40 s of losing its peer"
  c=0
  wait "${RANK_PIDS[r]}" || c=$?
  codes+=("$c")
done
[ "${codes[*]}" = "75 75 75" ] || die "the survivors exited with ${codes[*]}, not 75 (peer lost) each"
say "the survivors stopped (exit 75: peer lost); starting them again as 3 ranks"
start_ranks h0 h1 h2
wait_steps 1 90 || die "the 3 survivors did not resume (see $OUT/rank*-2.log)"
mark resumed
# c4train's start line of the restart: its ranks and the step it resumed from (0: none)
resumed=$(steps_jq -r '[inputs | fromjson? | select(.event == "start")][0] | "\(.ranks) \(.step)"')
set -- $resumed
[ "${1:-0}" = 3 ] && [ "${2:-0}" -gt 0 ] || die "the restart did not resume on 3 ranks from a checkpoint: $(head -2 "$TRAIN")"
gap=$(awk -v a="$(sed -n 's/^kill_on //p' "$MARKS")" -v b="$(sed -n 's/^resumed //p' "$MARKS")" 'BEGIN {printf "%.1f", (b - a) / 1e9}')
say "resumed on 3 ranks from the checkpoint of step $2; first step $gap s after the kill"
A=$(after 2)
ROWS+=("killed rank 2 (h3)|$B|0|$A|resumed on 3 ranks at step $2, $gap s from the kill to its first step")
sleep 2 # the last verdicts (recoveries) reach c4mon's file

# --- the score and the table -------------------------------------------------------------------
echo
echo "c4mon's verdicts against the faults injected ($EXPECT):"
evq --score "$EXPECT" --marks "$MARKS" >"$OUT/score.json" || true
rc=0
evq --score "$EXPECT" --marks "$MARKS" --text || rc=$?
echo
printf '%-35s %9s %8s %8s\n' fault "tok/s" during after
for r in "${ROWS[@]}"; do
  IFS='|' read -r f b du af note <<<"$r"
  printf '%-35s %9s %8s %8s\n' "$f" "$b" \
    "$(awk -v a="$du" -v b="$b" 'BEGIN {printf "%.2fx", a / b}')" "$(awk -v a="$af" -v b="$b" 'BEGIN {printf "%.2fx", a / b}')"
  [ -z "$note" ] || printf '    %s\n' "$note"
done
echo
echo "tok/s: before the fault (rank 0's last $WIN steps); during: while the fault was on (steps done"
echo "over wall time; SIGSTOP and kill: none); after: $WIN steps once it was lifted (the kill: on the 3"
echo "survivors). flag_s: from the fault to c4mon's verdict, on c4mon's clock (hangs: less the 3 s"
echo "threshold)."
echo "c4mon's events: $EVENTS; the score as JSON: $OUT/score.json; $((SECONDS - START)) s"
[ "$rc" = 0 ] || FAILED=1
if [ "$FAILED" -ne 0 ]; then
  echo "drill: FAILED: a fault was missed or a false alarm raised (the score above), or the weights" \
    "did not move the congested spine's bytes" >&2
  exit 1
fi
echo "drill: ok: every fault found with the right class and place, nothing else raised${MOVED:+; spine bytes moved: $MOVED}"
