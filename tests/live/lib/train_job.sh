# train_job.sh -- sourced by the live c4train tests: train_job DIR STEPS [C4TRAIN_ARGS...] runs
# c4mon serve on a free loopback port and a 4-rank c4train over the c4 plugin through it, each
# rank reporting as a host of its own (C4_HOSTNAME=node-%r), without c4mon's factors fed back
# (no --monitor: c4train measures its slowdowns itself). Leaves in DIR: events.jsonl (c4mon's
# verdicts), trace.jsonl (what c4mon received, in its clock), train.jsonl (c4train's steps) and
# the two logs. With TRAIN_JOB_STATUS=1, also status.jsonl: c4mon's status document (its active
# verdicts, their factors as they follow the fault) once a second while c4train runs. Needs
# BUILD set; returns non-zero when c4train fails. mon_subscribed and mon_stop (below) serve the
# tests that feed c4mon's verdicts back (--monitor) and run c4train themselves.

free_port() { # a port nothing listens on, below the ephemeral range
  local p
  for _ in $(seq 50); do
    p=$((20000 + RANDOM % 12000))
    (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null || { echo "$p"; return; }
  done
  echo 29613
}

train_job() {
  local dir=$1 steps=$2
  shift 2
  local port mon rc poll=
  port=$(free_port)
  "$BUILD/bin/c4mon" serve --listen "127.0.0.1:$port" --token live --record "$dir/trace.jsonl" \
    --events "$dir/events.jsonl" >"$dir/c4mon.out" 2>"$dir/c4mon.log" &
  mon=$!
  sleep 0.5
  if [ -n "${TRAIN_JOB_STATUS:-}" ]; then
    while sleep 1; do
      "$BUILD/bin/c4mon" status --connect "127.0.0.1:$port" --token live --json 2>/dev/null |
        jq -c . 2>/dev/null
    done >"$dir/status.jsonl" &
    poll=$!
  fi
  C4_HOSTNAME=node-%r C4_MONITOR="127.0.0.1:$port" C4_TOKEN=live C4_JOB=live C4_DEBUG=NONE \
    "$BUILD/bin/c4train" --local-ranks 4 --steps "$steps" --eval-windows 4 --json "$@" \
    >"$dir/train.jsonl" 2>"$dir/c4train.log"
  rc=$?
  [ -n "$poll" ] && kill "$poll" 2>/dev/null && wait "$poll" 2>/dev/null
  sleep 1 # the last records and verdicts reach c4mon
  kill "$mon" 2>/dev/null
  wait "$mon" 2>/dev/null
  touch "$dir/events.jsonl"
  return $rc
}

# mon_subscribed DIR: c4mon serve on a free loopback port with a subscription port (MON_SUB,
# for c4train --monitor) and its verdicts into DIR/events.jsonl; sets MON_PID and MON_RANKS
# (tests/lib/c4mon_serve.sh, which the caller sources). Returns 1 when c4mon did not start.
mon_subscribed() {
  MON_SUB=$(free_port)
  c4mon_serve "$BUILD/bin/c4mon" "$1/c4mon.out" "$1/c4mon.log" --listen 127.0.0.1:0 \
    --token live --subscribe "127.0.0.1:$MON_SUB" --events "$1/events.jsonl"
}

# mon_stop DIR: the last verdicts in (a second), then c4mon stopped; DIR/events.jsonl exists.
mon_stop() {
  sleep 1
  kill "$MON_PID" 2>/dev/null
  wait "$MON_PID" 2>/dev/null
  touch "$1/events.jsonl"
}
