/* cuda_matmul.cu -- the linear layer on cuBLAS, and the process's one cuBLAS handle.
 *
 * cuBLAS is column-major: a row-major R x K array is, to cuBLAS, its K x R transpose with leading
 * dimension K. So every row-major product X = A @ B is issued as X^T = B^T @ A^T, which cuBLAS
 * sees as plain column-major operands; the comments give each call in row-major terms. Math mode
 * stays CUBLAS_DEFAULT_MATH (full FP32, no TF32), so results match the CPU kernels to FP32
 * rounding. */
#include "cuda_common.cuh"

cublasHandle_t c4k_cuda_cublas(void) {
  static cublasHandle_t handle = [] {
    cublasHandle_t h;
    C4K_CUBLAS_CHECK(cublasCreate(&h));
    return h;
  }();
  return handle;
}

/* out[r, o] += bias[o] for N x OC rows */
__global__ static void add_bias_kernel(float *out, const float *bias, size_t N, int OC) {
  size_t n = N * (size_t)OC;
  C4K_FOR_EACH(i, n) { out[i] += bias[i % OC]; }
}

/* dbias[o] += sum over rows of dout[r, o]. Block (32, 8): threadIdx.x picks a column (adjacent
 * threads read adjacent floats), the 8 rows of threads and gridDim.y blocks split the rows;
 * partial sums meet in shared memory, then one atomicAdd per column per block. */
__global__ static void bias_grad_kernel(float *dbias, const float *dout, int N, int OC) {
  __shared__ float part[8][32];
  int o = blockIdx.x * 32 + threadIdx.x;
  float s = 0.0f;
  if (o < OC)
    for (int r = blockIdx.y * 8 + threadIdx.y; r < N; r += gridDim.y * 8)
      s += dout[(size_t)r * OC + o];
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && o < OC) {
    for (int y = 1; y < 8; y++)
      s += part[y][threadIdx.x];
    atomicAdd(&dbias[o], s);
  }
}

/* out (N x OC) = inp (N x C) @ w^T (+ bias) */
void c4k_cuda_matmul_fwd(float *out, const float *inp, const float *w, const float *bias, int N,
                         int C, int OC) {
  const float one = 1.0f, zero = 0.0f;
  /* column-major: out^T (OC x N) = (w^T)^T (OC x C) @ inp^T (C x N) */
  C4K_CUBLAS_CHECK(cublasSgemm(c4k_cuda_cublas(), CUBLAS_OP_T, CUBLAS_OP_N, OC, N, C, &one, w, C,
                               inp, C, &zero, out, OC));
  if (bias) {
    add_bias_kernel<<<c4k_grid((size_t)N * OC, C4K_BLOCK), C4K_BLOCK>>>(out, bias, N, OC);
    C4K_LAUNCH_CHECK();
  }
}

/* dinp += dout @ w; dw += dout^T @ inp; dbias += column sums of dout */
void c4k_cuda_matmul_bwd(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                         const float *w, int N, int C, int OC) {
  const float one = 1.0f;
  cublasHandle_t h = c4k_cuda_cublas();
  /* column-major: dinp^T (C x N) += w^T (C x OC) @ dout^T (OC x N) */
  C4K_CUBLAS_CHECK(
      cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_N, C, N, OC, &one, w, C, dout, OC, &one, dinp, C));
  /* column-major: dw^T (C x OC) += inp^T (C x N) @ (dout^T)^T (N x OC) */
  C4K_CUBLAS_CHECK(
      cublasSgemm(h, CUBLAS_OP_N, CUBLAS_OP_T, C, OC, N, &one, inp, C, dout, OC, &one, dw, C));
  if (dbias) {
    bias_grad_kernel<<<c4k_colsum_grid(N, OC), dim3(32, 8)>>>(dbias, dout, N, OC);
    C4K_LAUNCH_CHECK();
  }
}
