# c4mon_serve.sh -- sourced by test scripts (tests/lib/ is not run as a test): starts
# `c4mon serve` and waits, up to 30 s, for the lines in which it says where it listens.
#
# c4mon_serve C4MON OUT ERR ARGS...: runs C4MON serve ARGS (C4_DEBUG=WARN) in the background, its
# stdout into OUT and its stderr into ERR. Sets MON_PID; MON_RANKS, the ADDR:PORT it listens for
# ranks on; and MON_METRICS, the /metrics URL, when ARGS has --metrics. Returns 1, saying why on
# stderr, when c4mon exits or has not said so within 30 s (a loaded machine can take seconds).
c4mon_serve() {
  local bin=$1 out=$2 err=$3 want_metrics=0 a end
  shift 3
  for a in "$@"; do [ "$a" = --metrics ] && want_metrics=1; done
  : >"$err" # there before the first look, which may come before the child opens it
  C4_DEBUG=WARN "$bin" serve "$@" >"$out" 2>>"$err" &
  MON_PID=$!
  end=$((SECONDS + 30))
  while :; do
    MON_RANKS=$(sed -n 's/.*listening for ranks on \(.*\)$/\1/p' "$err")
    MON_METRICS=$(sed -n 's|.*metrics on \(http://.*\)$|\1|p' "$err")
    [ -n "$MON_RANKS" ] && { [ "$want_metrics" = 0 ] || [ -n "$MON_METRICS" ]; } && return 0
    if ! kill -0 "$MON_PID" 2>/dev/null; then
      echo "c4mon exited before it listened: $(cat "$err")" >&2
      return 1
    fi
    if [ $SECONDS -ge $end ]; then
      echo "c4mon did not say where it listens within 30 s: $(cat "$err")" >&2
      return 1
    fi
    sleep 0.1
  done
}
