/* cuda_common.cuh -- what the CUDA kernel files share: error checks, launch sizes, warp and block
 * reductions, the one cuBLAS handle, and each file's ops (gathered into c4k_cuda_ops by
 * cuda_ops.cu). Internal to libc4k-cuda.so: nothing here is exported.
 *
 * Errors: every CUDA and cuBLAS call is checked; a failure prints file:line and the error string
 * to stderr and aborts. The ops return void and a device fault leaves the CUDA context unusable,
 * so a trainer cannot continue past one; failing loudly at the call that saw it is the most
 * useful thing to do. The one exception is alloc, which returns NULL as c4k.h promises.
 *
 * Streams: everything runs on the legacy default stream (kernels, cudaMemcpy, cuBLAS), which
 * gives the call ordering c4k.h asks for without any explicit synchronisation.
 */
#ifndef C4K_CUDA_COMMON_CUH
#define C4K_CUDA_COMMON_CUH

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <math.h>
#include <stddef.h>

extern "C" {
#include "c4k.h"
}

/* Print where and why, then abort (see the file comment for why aborting is right). */
[[noreturn]] void c4k_cuda_die(const char *file, int line, const char *what, const char *why);

#define C4K_CUDA_CHECK(call)                                                                       \
  do {                                                                                             \
    cudaError_t c4k_err_ = (call);                                                                 \
    if (c4k_err_ != cudaSuccess)                                                                   \
      c4k_cuda_die(__FILE__, __LINE__, #call, cudaGetErrorString(c4k_err_));                       \
  } while (0)

#define C4K_CUBLAS_CHECK(call)                                                                     \
  do {                                                                                             \
    cublasStatus_t c4k_st_ = (call);                                                               \
    if (c4k_st_ != CUBLAS_STATUS_SUCCESS)                                                          \
      c4k_cuda_die(__FILE__, __LINE__, #call, cublasGetStatusString(c4k_st_));                     \
  } while (0)

/* Kernel launches report bad configurations through cudaGetLastError. */
#define C4K_LAUNCH_CHECK() C4K_CUDA_CHECK(cudaGetLastError())

/* Threads per block for the element-wise and row kernels. */
#define C4K_BLOCK 256
#define C4K_WARPS (C4K_BLOCK / 32)

/* Blocks for a grid-stride loop over n items, one item per thread per pass: capped, so any n
 * fits in gridDim.x and the loop covers the rest. */
static inline unsigned c4k_grid(size_t n, unsigned per_block) {
  size_t blocks = (n + per_block - 1) / per_block;
  if (blocks < 1) blocks = 1;
  return blocks > 65535 ? 65535u : (unsigned)blocks;
}

/* Grid-stride loop over i in [0, n) inside a kernel launched with c4k_grid(n, blockDim.x). */
#define C4K_FOR_EACH(i, n)                                                                         \
  for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < (n);                          \
       i += (size_t)gridDim.x * blockDim.x)

/* One warp per row: row r in [0, rows) for the warp this thread is in (the same r for all its
 * lanes, so warp shuffles inside stay converged); launch with c4k_grid(rows, C4K_WARPS). */
#define C4K_FOR_EACH_WARP_ROW(r, rows)                                                             \
  for (size_t r = (blockIdx.x * (size_t)blockDim.x + threadIdx.x) / 32; r < (rows);                \
       r += (size_t)gridDim.x * blockDim.x / 32)

/* Grid for the column-sum kernels (block 32 x 8): one block column per 32 columns, at most 1024
 * block rows that stride over the rows. */
static inline dim3 c4k_colsum_grid(int rows, int cols) {
  unsigned y = c4k_grid((size_t)rows, 8);
  return dim3((unsigned)((cols + 31) / 32), y > 1024 ? 1024 : y);
}

__device__ __forceinline__ float c4k_warp_sum(float x) {
  for (int off = 16; off > 0; off >>= 1)
    x += __shfl_xor_sync(0xffffffffu, x, off);
  return x;
}

__device__ __forceinline__ float c4k_warp_max(float x) {
  for (int off = 16; off > 0; off >>= 1)
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, off));
  return x;
}

/* Sum or max over a whole block (blockDim.x a multiple of 32, at most 1024); every thread gets
 * the result. scratch is 32 floats of shared memory; the leading __syncthreads lets a caller
 * reduce twice in a row with the same scratch. */
__device__ __forceinline__ float c4k_block_reduce(float x, float *scratch, bool is_max) {
  int lane = threadIdx.x % 32, warp = threadIdx.x / 32, nwarps = blockDim.x / 32;
  x = is_max ? c4k_warp_max(x) : c4k_warp_sum(x);
  __syncthreads();
  if (lane == 0) scratch[warp] = x;
  __syncthreads();
  float r = lane < nwarps ? scratch[lane] : (is_max ? -INFINITY : 0.0f);
  return is_max ? c4k_warp_max(r) : c4k_warp_sum(r);
}

/* The process's one cuBLAS handle, created on first use, on the default stream. */
cublasHandle_t c4k_cuda_cublas(void);

/* The ops, one group per file. */
void *c4k_cuda_alloc(size_t bytes);
void c4k_cuda_free(void *p);
void c4k_cuda_upload(void *dst, const void *host_src, size_t bytes);
void c4k_cuda_download(void *host_dst, const void *src, size_t bytes);
void c4k_cuda_zero(void *p, size_t bytes);
void c4k_cuda_sync(void);

void c4k_cuda_encoder_fwd(float *out, const int *tokens, const float *wte, const float *wpe, int B,
                          int T, int C);
void c4k_cuda_encoder_bwd(float *dwte, float *dwpe, const float *dout, const int *tokens, int B,
                          int T, int C);

void c4k_cuda_layernorm_fwd(float *out, float *mean, float *rstd, const float *inp, const float *w,
                            const float *b, int N, int C);
void c4k_cuda_layernorm_bwd(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                            const float *w, const float *mean, const float *rstd, int N, int C);

void c4k_cuda_matmul_fwd(float *out, const float *inp, const float *w, const float *bias, int N,
                         int C, int OC);
void c4k_cuda_matmul_bwd(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                         const float *w, int N, int C, int OC);

void c4k_cuda_attention_fwd(float *out, float *att, const float *qkv, int B, int T, int C, int NH);
void c4k_cuda_attention_bwd(float *dqkv, float *datt, const float *dout, const float *qkv,
                            const float *att, int B, int T, int C, int NH);

void c4k_cuda_gelu_fwd(float *out, const float *inp, size_t n);
void c4k_cuda_gelu_bwd(float *dinp, const float *inp, const float *dout, size_t n);
void c4k_cuda_residual_fwd(float *out, const float *a, const float *b, size_t n);
void c4k_cuda_residual_bwd(float *da, float *db, const float *dout, size_t n);
void c4k_cuda_scale(float *out, const float *in, float scale, size_t n);

void c4k_cuda_softmax_xent_fwd(float *losses, float *probs, const float *logits, const int *targets,
                               int N, int V);
void c4k_cuda_softmax_xent_bwd(float *dlogits, const float *probs, const int *targets, float dloss,
                               int N, int V);

void c4k_cuda_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                    float beta2, float eps, float weight_decay, int t);

#endif
