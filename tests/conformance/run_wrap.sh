#!/usr/bin/env bash
# run_wrap.sh -- the conformance harness in wrap mode: c4 wrapping a copy of its own plugin
# (C4_WRAP; a copy, because dlopen of the same file returns the same instance), so the socket
# transport runs inside and c4 times on the outside only. Fails unless every test passes and
# the log shows the wrap was really in place (no silent fall back to the socket transport).
# Usage: tests/conformance/run_wrap.sh BUILD_DIR
set -u
BUILD=${1:?usage: run_wrap.sh BUILD_DIR}
plugin="$PWD/$BUILD/lib/libnccl-net-c4.so"
dir=$(mktemp -d /tmp/c4-conf-wrap-XXXXXX)
log="$dir/conformance.log"
trap 'rm -rf "$dir"' EXIT
cp "$plugin" "$dir/libnccl-net-c4-inner.so"

C4_PLUGIN_PATH="$plugin" C4_WRAP="$dir/libnccl-net-c4-inner.so" C4_DEBUG=INFO \
  "$BUILD/tests/conformance" >"$log" 2>&1
rc=$?
grep -v -e '^plugin .* c4: ' -e '^$' "$log" # Check's report; the plugin's INFO lines stay in the log
if ! grep -q 'C4_WRAP: forwarding to .*a c4 switched into inner mode' "$log"; then
  echo "conformance-wrap: the plugin never reported wrapping $dir/libnccl-net-c4-inner.so"
  rc=1
fi
if grep -q 'c4 goes on with its own socket transport' "$log"; then
  grep 'c4 goes on with its own socket transport' "$log" | head -3
  echo "conformance-wrap: a process fell back to the socket transport instead of wrapping"
  rc=1
fi
exit $rc
