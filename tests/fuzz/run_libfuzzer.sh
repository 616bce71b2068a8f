#!/usr/bin/env bash
# run_libfuzzer.sh -- builds every tests/fuzz/fuzz_*.c with clang's libFuzzer and runs each for
# C4_FUZZ_SECONDS (default 60). `make fuzz`. Needs clang (make deps installs it).
set -euo pipefail
cd "$(dirname "$0")/../.."
command -v clang >/dev/null || { echo "fuzz: clang not found; run make deps" >&2; exit 2; }
secs=${C4_FUZZ_SECONDS:-60}
out=build/fuzz
mkdir -p "$out"
srcs=$(ls common/*.c nccl_net_plugin/{api,core,sock,ib,wrap,prof}/*.c trainer/ckpt*.c tools/c4cap/packet.c traffic_planner/{topo,flows,portmap,plan,assign,port_sched}.c monitor/*.c | grep -v 'net_plugin_api.c\|mon_main.c')
flags="-std=c11 -D_GNU_SOURCE -DC4_VERSION=\"fuzz\" -g -O1 -fsanitize=fuzzer,address,undefined -Icommon -Iinclude/c4 $(printf -- "-Inccl_net_plugin/%s " api core sock ib wrap prof) -Itrainer -Itraffic_planner -Imonitor $(pkg-config --cflags jansson libcrypto libmicrohttpd cairo)"
for t in tests/fuzz/fuzz_*.c; do
  name=$(basename "$t" .c)
  # shellcheck disable=SC2086
  clang $flags -o "$out/$name" "$t" $srcs $(pkg-config --libs jansson libcrypto libmicrohttpd cairo) -lpthread -ldl -lm
  mkdir -p "$out/corpus-$name"
  echo "== $name for ${secs}s"
  C4_DEBUG=NONE "$out/$name" -max_total_time="$secs" -max_len=4096 "$out/corpus-$name"
done
