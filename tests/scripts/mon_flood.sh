#!/usr/bin/env bash
# mon_flood.sh -- c4mon against strangers: 2,000 unauthenticated connections each claiming a
# 64 KiB HELLO while a real rank streams (c4-mon-flood): c4mon must grow by less than 32 MB and
# count every record of the rank; the token comes from --token-file; without a token c4mon says
# loudly that anyone can stream to it. Usage: mon_flood.sh [BUILD_DIR] (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
BIN="$BUILD/bin"
WORK=$(mktemp -d /tmp/c4-monflood-XXXXXX)
MON=""
cleanup() { [ -n "$MON" ] && kill "$MON" 2>/dev/null; rm -rf "$WORK"; }
trap cleanup EXIT
fail() { echo "mon_flood: FAILED: $*"; exit 1; }
port() { echo $((20000 + RANDOM % 12000)); }
up() { # waits until the c4mon at $1 answers its status (token in C4_TOKEN)
  for _ in $(seq 50); do "$BIN/c4mon" status --connect "$1" >/dev/null 2>&1 && return 0; sleep 0.1; done
  return 1
}

head -c 16 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$WORK/token"
echo >>"$WORK/token"
P=$(port)
C4_DEBUG=WARN "$BIN/c4mon" serve --listen 127.0.0.1:$P --token-file "$WORK/token" --events /dev/null \
  2>"$WORK/serve.err" &
MON=$!
export C4_TOKEN; C4_TOKEN=$(head -1 "$WORK/token")
up 127.0.0.1:$P || fail "c4mon did not come up: $(cat "$WORK/serve.err")"
grep -q "no job token" "$WORK/serve.err" && fail "warned about a missing token it has"
C4_TOKEN=wrong "$BIN/c4mon" status --connect 127.0.0.1:$P >/dev/null 2>&1 && fail "status answered a wrong token"
out=$(env -u C4_TOKEN "$BIN/c4mon" status --connect 127.0.0.1:$P 2>&1) && fail "status answered no token"
grep -q "no token was given" <<<"$out" || fail "status without a token said: $out"
# the refusal names the sender by its address, not only by what it claims
grep -q "refused a STATUS request at 127.0.0.1:[0-9]*: wrong token" "$WORK/serve.err" ||
  fail "the refusal does not name the sender's address: $(grep refused "$WORK/serve.err")"
# every client tells a refused token from nothing listening
for cmd in "status" "top --once" "matrix --png $WORK/m.png"; do
  # shellcheck disable=SC2086 # the command's words
  out=$(C4_TOKEN=wrong "$BIN/c4mon" $cmd --connect 127.0.0.1:$P 2>&1) && fail "$cmd answered a wrong token"
  grep -q "c4mon refused the request: a wrong token" <<<"$out" || fail "$cmd with a wrong token said: $out"
  grep -q "retrying" <<<"$out" && fail "$cmd --once said it retries: $out"
  # shellcheck disable=SC2086
  out=$("$BIN/c4mon" $cmd --connect 127.0.0.1:1 2>&1) && fail "$cmd answered from port 1"
  grep -q "nothing answers there" <<<"$out" || fail "$cmd to a closed port said: $out"
done
out=$(C4_DEBUG=NONE "$BIN/c4-mon-flood" 127.0.0.1:$P "$C4_TOKEN" 2000 $MON) || fail "c4-mon-flood: $out"
echo "$out"
growth=$(awk '/^growth_mb/ {print $2}' <<<"$out")
awk -v g="$growth" 'BEGIN {exit !(g != "" && g < 32)}' || fail "c4mon grew by $growth MB (limit 32)"
kill "$MON"; wait "$MON" 2>/dev/null; MON=""

# No token: a warning on standard error that names the exposure
P=$(port)
env -u C4_TOKEN "$BIN/c4mon" serve --listen 127.0.0.1:$P --events /dev/null 2>"$WORK/open.err" &
MON=$!
C4_TOKEN= up 127.0.0.1:$P || fail "c4mon without a token did not come up"
grep -q "WARNING: no job token" "$WORK/open.err" || fail "no warning without a token: $(cat "$WORK/open.err")"
"$BIN/c4mon" serve --listen 127.0.0.1:$P --token-file "$WORK/none" 2>/dev/null && fail "a missing token file was accepted"
echo "mon_flood: ok"
