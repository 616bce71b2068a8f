#!/usr/bin/env bash
# ckpt_damage.sh -- c4train resuming from damaged checkpoints. Six kinds of damage to the newest
# of two checkpoints (cut in half, one data byte flipped, emptied, the magic overwritten, bytes
# appended, the last 4 KiB zeroed): by default c4train names the damaged file and the reason and
# resumes from the older, intact one; with --ckpt-strict it stops with exit 1. Both damaged: exit
# 1, never a silent start from step 0. A --ckpt-dir that cannot be created: exit 1 at once.
# Usage: ckpt_damage.sh [BUILD_DIR] (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
C4TRAIN="$BUILD/bin/c4train"
W=$(mktemp -d /tmp/c4-ckpt-damage-XXXXXX)
trap 'rm -rf "$W"' EXIT
fail() { echo "ckpt_damage: FAILED: $*"; exit 1; }
export C4_DEBUG=NONE
A=(--layers 1 --width 16 --heads 2 --context 16 --micro-batch 2 --microbatches 2 --eval-windows 1)

"$C4TRAIN" "${A[@]}" --steps 4 --ckpt-every 2 --ckpt-dir "$W/base" >/dev/null 2>"$W/err" ||
  fail "the first run failed: $(cat "$W/err")"
NEW=step-00000004.c4ck
[ -f "$W/base/$NEW" ] && [ -f "$W/base/step-00000002.c4ck" ] || fail "two checkpoints expected: $(ls "$W/base")"
size=$(stat -c %s "$W/base/$NEW")

damage() { # kind file
  case $1 in
  truncated) truncate -s $((size / 2)) "$2" ;;
  flipped) printf '\377' | dd of="$2" bs=1 seek=$((size - 1000)) conv=notrunc 2>/dev/null ;;
  emptied) : >"$2" ;;
  magic) printf 'XXXX' | dd of="$2" bs=1 seek=0 conv=notrunc 2>/dev/null ;;
  appended) printf 'trailing bytes' >>"$2" ;;
  zeroed) dd if=/dev/zero of="$2" bs=1 seek=$((size - 4096)) count=4096 conv=notrunc 2>/dev/null ;;
  esac
}

for kind in truncated flipped emptied magic appended zeroed; do
  rm -rf "$W/ck" && cp -r "$W/base" "$W/ck"
  damage $kind "$W/ck/$NEW"
  out=$("$C4TRAIN" "${A[@]}" --steps 6 --ckpt-every 100 --ckpt-dir "$W/ck" 2>"$W/err") ||
    fail "$kind: exit $? instead of falling back: $(cat "$W/err")"
  grep -q "$NEW" "$W/err" || fail "$kind: the damaged file is not named: $(cat "$W/err")"
  grep -q "resuming from the newest intact one, .*step-00000002.c4ck" "$W/err" ||
    fail "$kind: no fallback message: $(cat "$W/err")"
  grep -q "resumed from step 2 " <<<"$out" || fail "$kind: did not resume from step 2: $out"
  echo "ok: $kind: $(head -1 "$W/err")"
  rm -rf "$W/ck" && cp -r "$W/base" "$W/ck"
  damage $kind "$W/ck/$NEW"
  "$C4TRAIN" "${A[@]}" --steps 6 --ckpt-strict --ckpt-dir "$W/ck" >/dev/null 2>"$W/err" &&
    fail "$kind: --ckpt-strict went on"
  grep -q "$NEW.*--ckpt-strict" "$W/err" || fail "$kind: --ckpt-strict without the file: $(cat "$W/err")"
done

rm -rf "$W/ck" && cp -r "$W/base" "$W/ck"
damage flipped "$W/ck/$NEW"
damage truncated "$W/ck/step-00000002.c4ck"
"$C4TRAIN" "${A[@]}" --steps 6 --ckpt-dir "$W/ck" >"$W/out" 2>"$W/err" && fail "every checkpoint damaged, yet it ran"
grep -q "no intact checkpoint.*$NEW.*not starting again from step 0" "$W/err" ||
  fail "all damaged: $(cat "$W/err")"
grep -q "^step\|resumed" "$W/out" && fail "all damaged, yet it trained: $(cat "$W/out")"

"$C4TRAIN" "${A[@]}" --steps 2 --ckpt-dir /nonexistent/x >/dev/null 2>"$W/err" && fail "--ckpt-dir /nonexistent/x ran"
grep -q "/nonexistent/x" "$W/err" || fail "/nonexistent/x not named: $(cat "$W/err")"
# Saving after a fallback keeps two intact checkpoints: a damaged later one (and a name the
# resume does not read) counts for neither (it had the older intact ones removed, leaving one)
rm -rf "$W/ck" && cp -r "$W/base" "$W/ck"
printf 'abc' >"$W/ck/step-00000030.c4ck"
cp "$W/base/$NEW" "$W/ck/step-+0000040.c4ck"
"$C4TRAIN" "${A[@]}" --steps 8 --ckpt-every 2 --ckpt-dir "$W/ck" >/dev/null 2>"$W/err" ||
  fail "a run beside a damaged later checkpoint failed: $(cat "$W/err")"
[ "$(cd "$W/ck" && ls step-0*.c4ck | paste -sd' ')" = "step-00000006.c4ck step-00000008.c4ck step-00000030.c4ck" ] ||
  fail "after saving beside a damaged step 30: $(ls "$W/ck")"
# a FIFO named like a checkpoint is skipped as not a regular file, not waited on for ever
rm -rf "$W/ck" && cp -r "$W/base" "$W/ck"
mkfifo "$W/ck/step-00000030.c4ck"
out=$(timeout 60 "$C4TRAIN" "${A[@]}" --steps 6 --ckpt-every 100 --ckpt-dir "$W/ck" 2>"$W/err") ||
  fail "beside a FIFO: exit $?: $(cat "$W/err")"
grep -q "step-00000030.c4ck: not a regular file" "$W/err" && grep -q "resumed from step 4 " <<<"$out" ||
  fail "beside a FIFO: $(cat "$W/err") $out"
echo "ckpt_damage: ok"
