#!/usr/bin/env bash
# error_codes.sh -- checks c4's error convention: a function that fails returns a negative C4_E*
# code from common/c4_err.h that names what went wrong, never a bare `return -1;`. Where -1 is an
# answer rather than an error (no such index, no descriptor, not set), the code says C4_NONE (or a
# name of its own for a three-way answer), so no function needs to be let off here. Fails on every
# bare `return -1;` in the product's C sources (tests/ is not checked: a test's helpers answer to
# the test alone), each named with its file and line. Usage: error_codes.sh [BUILD_DIR] (unused).
set -u
cd "$(dirname "$0")/../.." || exit 1

fail=0
bare() { grep -nE '(^|[^[:alnum:]_])return[[:space:]]+-1[[:space:]]*;' "$1"; }
files=$(find common monitor nccl_net_plugin trainer traffic_planner tools kernels -name '*.c' | sort)
for f in $files; do
  hits=$(bare "$f")
  if [ -n "$hits" ]; then
    while IFS= read -r h; do
      echo "error_codes: $f:${h%%:*}: bare 'return -1;' (return a C4_E* code, or C4_NONE for 'none')"
    done <<<"$hits"
    fail=1
  fi
done
if [ "$fail" != 0 ]; then
  echo "error_codes: FAILED"
  exit 1
fi
echo "error_codes: ok ($(echo "$files" | wc -l) files)"
