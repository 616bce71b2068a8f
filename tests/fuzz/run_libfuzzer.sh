#!/usr/bin/env bash
# run_libfuzzer.sh -- builds every tests/fuzz/fuzz_*.c with clang's libFuzzer and runs each for
# C4_FUZZ_SECONDS (default 60). `make fuzz`. Needs clang (make deps installs it). The sources
# under test are compiled once (-fsanitize=fuzzer-no-link: instrumented, without libFuzzer's
# main) into one static library, which each target links.
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v clang >/dev/null || { echo "fuzz: clang not found; run make deps" >&2; exit 2; }
secs=${C4_FUZZ_SECONDS:-60}
out=build/fuzz
pkgs="jansson libcrypto libmicrohttpd cairo"
rm -rf "$out/obj" # objects of sources gone since must not reach the library
mkdir -p "$out/obj"
srcs=$(ls common/*.c nccl_net_plugin/{api,core,sock,ib,wrap,prof}/*.c trainer/ckpt*.c trainer/docs.c trainer/gpt_rng.c trainer/seq_cost.c trainer/seq_cost_json.c tools/c4cap/packet.c traffic_planner/{topo,flows,portmap,plan,assign,port_sched}.c monitor/*.c | grep -v 'net_plugin_api.c\|mon_main.c')
flags="-std=c11 -D_GNU_SOURCE -DC4_VERSION=\"fuzz\" -g -O1 -Icommon -Iinclude/c4 $(printf -- "-Inccl_net_plugin/%s " api core sock ib wrap prof) -Itrainer -Itraffic_planner -Imonitor $(pkg-config --cflags $pkgs)"
san=address,undefined
export flags san out
# each source once, as many at a time as there are cores; an object per source path
# shellcheck disable=SC2016,SC2086
printf '%s\n' $srcs | xargs -P "$(nproc)" -I{} sh -c \
  'clang $flags -fsanitize=fuzzer-no-link,$san -c "$1" -o "$out/obj/$(echo "$1" | tr / _).o"' _ {}
rm -f "$out/libc4fuzz.a"
ar rcs "$out/libc4fuzz.a" "$out"/obj/*.o
for t in tests/fuzz/fuzz_*.c; do
  name=$(basename "$t" .c)
  # shellcheck disable=SC2086
  clang $flags -fsanitize=fuzzer,$san -o "$out/$name" "$t" "$out/libc4fuzz.a" $(pkg-config --libs $pkgs) -lpthread -ldl -lm
  mkdir -p "$out/corpus-$name"
  echo "== $name for ${secs}s"
  C4_DEBUG=NONE "$out/$name" -max_total_time="$secs" -max_len=4096 "$out/corpus-$name"
done
