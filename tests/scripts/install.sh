#!/usr/bin/env bash
# install.sh -- `make install` into a temporary prefix is complete and links as documented: both
# plugin libraries and libc4k-cuda.so when it was built, the programs, man pages, the systemd
# unit; a program built with nothing but `pkg-config --cflags --libs c4` links libc4common.a
# (and, through c4.pc's Requires, Jansson) and runs: it writes a record as a trace line with
# c4_record_json and reads it back with c4_trace_parse_line.
# Usage: install.sh [BUILD_DIR] (default $C4_BUILD_DIR).
set -u
BUILD=${1:-${C4_BUILD_DIR:-build}}
PREFIX=$(mktemp -d /tmp/c4-install-XXXXXX)
trap 'rm -rf "$PREFIX"' EXIT
fail() {
  echo "install: FAILED: $*"
  exit 1
}
# The build directory's own flavour: build/san was made with SAN=1, and `make install` must not
# rebuild it without the sanitizers.
san=0
[ "$(basename "$BUILD")" = san ] && san=1
make -s install SAN=$san BUILD="$BUILD" PREFIX="$PREFIX" >"$PREFIX.log" 2>&1 ||
  fail "make install: $(tail -5 "$PREFIX.log")"
rm -f "$PREFIX.log"

for f in lib/libnccl-net-c4.so lib/libnccl-profiler-c4.so lib/libc4-preload.so lib/libc4common.a \
  lib/pkgconfig/c4.pc include/c4/c4_trace_read.h include/c4/nccl_net_abi.h \
  lib/systemd/system/c4mon.service bin/c4mon bin/c4perf bin/c4train bin/c4plan bin/c4cap \
  bin/c4scen share/man/man1/c4mon.1 share/man/man1/c4mon-serve.1 share/man/man1/c4perf.1; do
  [ -e "$PREFIX/$f" ] || fail "$f is not installed"
done
if [ -e "$BUILD/lib/libc4k-cuda.so" ]; then
  [ -e "$PREFIX/lib/libc4k-cuda.so" ] || fail "libc4k-cuda.so was built but not installed"
fi
grep -q "^ExecStart=$PREFIX/bin/c4mon serve " "$PREFIX/lib/systemd/system/c4mon.service" ||
  fail "the unit does not start the installed c4mon"
if command -v systemd-analyze >/dev/null; then # the man page it names is not where man looks
  systemd-analyze verify "$PREFIX/lib/systemd/system/c4mon.service" 2>&1 | grep -v "man c4mon-serve" |
    grep . && fail "systemd-analyze verify objects to the unit"
fi
MANPATH="$PREFIX/share/man" man -w c4mon-serve >/dev/null 2>&1 || fail "man cannot find c4mon-serve"

cat >"$PREFIX/roundtrip.c" <<'C'
/* roundtrip.c -- a program outside c4's tree: one record out as a trace line and back. */
#include <c4_trace_json.h>
#include <c4_trace_read.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(void) {
  struct c4_record r = {.kind = C4_REC_RANK}, back;
  r.rank.event = C4_RANK_HB;
  r.rank.rank = 7;
  r.rank.t = 123456789;
  snprintf(r.rank.host, sizeof r.rank.host, "node-a");
  json_t *j = c4_record_json(&r);
  char *line = j ? json_dumps(j, JSON_COMPACT) : NULL;
  char err[256] = "";
  if (!line || c4_trace_parse_line(line, strlen(line), &back, err, sizeof err) != 1) {
    fprintf(stderr, "roundtrip: %s %s\n", line ? line : "(no line)", err);
    return 1;
  }
  printf("%s rank %d at %llu\n", back.rank.host, back.rank.rank, (unsigned long long)back.rank.t);
  free(line);
  json_decref(j);
  return 0;
}
C
extra=
[ "$san" = 1 ] && extra="-fsanitize=address,undefined"
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
# shellcheck disable=SC2046 # pkg-config's words are separate arguments
cc -std=c11 -D_GNU_SOURCE $extra -o "$PREFIX/roundtrip" "$PREFIX/roundtrip.c" \
  $(pkg-config --cflags --libs c4) 2>"$PREFIX/cc.err" || fail "cc with pkg-config c4: $(cat "$PREFIX/cc.err")"
out=$("$PREFIX/roundtrip") || fail "the program failed: $out"
[ "$out" = "node-a rank 7 at 123456789" ] || fail "the program printed: $out"
echo "install: complete in a temporary prefix; pkg-config --cflags --libs c4 builds a program that runs"
