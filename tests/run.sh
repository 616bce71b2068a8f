#!/usr/bin/env bash
# run.sh -- runs every c4 test suite against one build directory and prints a closing
# "N passed, N failed" line. Usage: tests/run.sh [BUILD_DIR] (default build/san, made by make test).
set -u
BUILD=${1:-build/san}
export C4_PLUGIN_PATH="$PWD/$BUILD/lib/libnccl-net-c4.so"
export C4_BUILD_DIR="$PWD/$BUILD"
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=0:detect_leaks=1}
export LSAN_OPTIONS=${LSAN_OPTIONS:-suppressions=$PWD/tests/lsan.supp:print_suppressions=0}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export CK_DEFAULT_TIMEOUT=${CK_DEFAULT_TIMEOUT:-60}
export C4_DEBUG=${C4_DEBUG:-NONE}
FUZZ_ITERS=${C4_FUZZ_ITERS:-3000}

passed=0
failed=0
failed_names=()
logs=$(mktemp -d /tmp/c4-suites-XXXXXX) # each suite's output, to repeat a failed one's at the end
trap 'rm -rf "$logs"' EXIT

run() { # name, command...
  local name=$1
  shift
  echo "== $name"
  # To a file, not through a pipe: a daemon a test leaves behind would hold a pipe open.
  local start=$SECONDS log="$logs/$((passed + failed)).log" rc=0
  timeout 600 "$@" >"$log" 2>&1 || rc=$?
  cat "$log"
  if [ "$rc" -eq 0 ]; then
    passed=$((passed + 1))
    echo "-- $name: ok ($((SECONDS - start)) s)"
  else
    failed=$((failed + 1))
    failed_names+=("$name")
    cp "$log" "$logs/failed-${#failed_names[@]}.log"
    echo "-- $name: FAILED ($((SECONDS - start)) s)"
  fi
}

for t in "$BUILD"/tests/test_*; do
  [ -x "$t" ] && run "unit $(basename "$t")" "$t"
done
[ -x "$BUILD/tests/conformance" ] && run "conformance" "$BUILD/tests/conformance"
# The same harness with c4 wrapping a copy of its own plugin (C4_WRAP, docs/wrap.md).
[ -x "$BUILD/tests/conformance" ] && run "conformance-wrap" bash tests/conformance/run_wrap.sh "$BUILD"
run "scenarios" bash tests/scenarios/run.sh "$BUILD"
for s in tests/live/*.sh; do # across network namespaces; each says "skipped" when not root
  [ -f "$s" ] && run "live $(basename "$s" .sh)" bash "$s" "$BUILD"
done
for s in tests/scripts/*.sh; do # the tools' shell scripts, without root
  [ -f "$s" ] && run "script $(basename "$s" .sh)" bash "$s" "$BUILD"
done
for f in "$BUILD"/tests/fuzz_*_smoke; do
  [ -x "$f" ] && run "fuzz-smoke $(basename "$f")" "$f" "$FUZZ_ITERS"
done

echo
# A CI page often shows only the end of the output: each failed suite's last lines go here too.
for i in "${!failed_names[@]}"; do
  echo "== the end of ${failed_names[$i]}'s output:"
  tail -n 25 "$logs/failed-$((i + 1)).log"
done
[ ${#failed_names[@]} -gt 0 ] && echo "failed: ${failed_names[*]}"
echo "suites: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
