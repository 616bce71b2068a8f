#!/usr/bin/env bash
# gpu_check.sh -- `make gpu-check`, for a machine with NVIDIA GPUs (this project's machines have
# none, so it has never run to the end; without a GPU it stops at step 1 with exit 2):
#   1. every CUDA op (libc4k-cuda.so) against the CPU op on the same inputs (c4k-gpu-check);
#   2. c4train on the GPUs, one rank per GPU, gradients through NCCL with c4's net plugin under
#      it (NCCL_NET_PLUGIN) and c4's profiler (NCCL_PROFILER_PLUGIN), to the same loss as the
#      CPU run of the same seed (within 2%);
#   3. a straggler drill on the GPUs (rank 1 at half speed);
#   4. documents of varied lengths (--max-context), packed micro-batches whose sequences must not
#      attend to each other, on the GPUs against the CPU run (within 2%);
#   5. a 2-stage pipeline (--pp 2: the stages' kernels on the GPUs, their links and sums over the
#      plugin's host API, staged through host memory) against the CPU run (within 2%), and with
#      stage 1 at half speed its layers move to stage 0.
# Usage: tools/gpu_check/gpu_check.sh [BUILD_DIR]
set -euo pipefail
BUILD=${1:-build}
BIN="$PWD/$BUILD/bin"
LIB="$PWD/$BUILD/lib"
CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}

echo "== 1. CUDA ops against the CPU ops"
"$BIN/c4k-gpu-check" "$LIB/libc4k-cuda.so"

ngpu=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU' || true)
[ "$ngpu" -ge 1 ] || { echo "gpu-check: nvidia-smi lists no GPU" >&2; exit 2; }
ranks=$((ngpu > 4 ? 4 : ngpu))
export LD_LIBRARY_PATH="$LIB:$CUDA_HOME/lib64:${LD_LIBRARY_PATH:-}"
export NCCL_NET_PLUGIN="$LIB/libnccl-net-c4.so" NCCL_PROFILER_PLUGIN="$LIB/libnccl-profiler-c4.so"
export C4_TRACE=${C4_TRACE:-/tmp/c4-gpu-check-trace.jsonl}
ARGS=(--local-ranks "$ranks" --steps 30 --layers 2 --width 128 --heads 4 --context 64 --json)

echo "== 2. c4train on $ranks GPU(s) through NCCL and the c4 plugins, against the CPU run"
gpu=$("$BIN/c4train" "${ARGS[@]}" --device cuda | grep '"event":"end"')
cpu=$("$BIN/c4train" "${ARGS[@]}" --device cpu | grep '"event":"end"')
loss() { sed 's/.*"loss":\([0-9.]*\).*/\1/'; }
echo "   GPU: $gpu"
echo "   CPU: $cpu"
same_loss() { # GPU_END CPU_END: the final losses within 2%
  awk -v g="$(loss <<<"$1")" -v c="$(loss <<<"$2")" 'BEGIN {
    d = (g > c ? g - c : c - g) / c
    printf "   final loss GPU %.4f CPU %.4f (%.2f%% apart)\n", g, c, 100 * d
    exit d > 0.02 }'
}
same_loss "$gpu" "$cpu"
echo "   the plugin's trace: $(grep -c '"type":"coll"' "$C4_TRACE") collective lines in $C4_TRACE"

if [ "$ranks" -ge 2 ]; then
  echo "== 3. straggler drill: rank 1 at half speed from step 10"
  "$BIN/c4train" "${ARGS[@]}" --device cuda --slow 1:2.0:10 | grep -E '"event":"end"'
fi

echo "== 4. documents of varied lengths, packed, on the GPU against the CPU run"
corpus=$(mktemp /tmp/c4-gpu-check-docs-XXXXXX)
trap 'rm -f "$corpus"' EXIT
"$BIN/c4train" --synth-corpus "$corpus" --max-context 128 --synth-docs 2000 >/dev/null
DOCS=(--local-ranks "$ranks" --steps 30 --layers 2 --width 128 --heads 4 --json --data "$corpus"
  --max-context 128 --micro-batch 2 --microbatches 4)
gpu=$("$BIN/c4train" "${DOCS[@]}" --device cuda | grep '"event":"end"')
cpu=$("$BIN/c4train" "${DOCS[@]}" --device cpu | grep '"event":"end"')
same_loss "$gpu" "$cpu"

echo "== 5. a 2-stage pipeline on the GPU(s) against the CPU run; then stage 1 at half speed"
PIPE=(--local-ranks 2 --pp 2 --steps 40 --layers 4 --width 128 --heads 4 --context 64
  --microbatches 4 --json)
gpu=$("$BIN/c4train" "${PIPE[@]}" --device cuda | grep '"event":"end"')
cpu=$("$BIN/c4train" "${PIPE[@]}" --device cpu | grep '"event":"end"')
same_loss "$gpu" "$cpu"
moved=$("$BIN/c4train" "${PIPE[@]}" --device cuda --slow 1:2.0:10 --straggler-wait 0 |
  grep -c '"layers":\[3,1\]' || true)
echo "   steps with stage 1's layers moved to stage 0: $moved of 40"
[ "$moved" -gt 0 ] || { echo "gpu-check: the slow stage kept its layers" >&2; exit 1; }
echo "gpu-check: ok"
