/* cuda_attention.cu -- causal multi-head self-attention: the per-head products on cuBLAS
 * (strided batched, one batch entry per (b, head)), the layout changes and the causal softmax as
 * c4's own kernels.
 *
 * cuBLAS wants each head's Q, K, V as a contiguous T x hs matrix, but qkv interleaves heads per
 * position, so both passes first copy qkv into q, k, v laid out (B, NH, T, hs). Those copies and
 * the other per-head tensors live in one scratch buffer that this file owns: allocated on first
 * use, grown when a call needs more, kept for the life of the process (every step needs it
 * again). The scores are computed straight into att (forward) and datt (backward), which the
 * caller provides at full B x NH x T x T size. */
#include "cuda_common.cuh"

static float *scratch;
static size_t scratch_floats;

/* At least n floats of scratch; earlier contents are not kept. cudaFree waits for the kernels
 * that may still read the old buffer. */
static float *scratch_get(size_t n) {
  if (n > scratch_floats) {
    C4K_CUDA_CHECK(cudaFree(scratch));
    scratch = NULL;
    scratch_floats = 0;
    C4K_CUDA_CHECK(cudaMalloc(&scratch, n * sizeof(float)));
    scratch_floats = n;
  }
  return scratch;
}

/* q, k, v (B, NH, T, hs) <- qkv (B, T, 3, NH, hs): one thread per element of q (and of k, v). */
__global__ static void split_heads_kernel(float *q, float *k, float *v, const float *qkv, int B,
                                          int T, int NH, int hs) {
  size_t n = (size_t)B * NH * T * hs, C = (size_t)NH * hs;
  C4K_FOR_EACH(i, n) {
    size_t d = i % hs, t = i / hs % T, h = i / ((size_t)hs * T) % NH, b = i / ((size_t)hs * T * NH);
    const float *src = qkv + (b * T + t) * 3 * C + h * hs + d;
    q[i] = src[0];
    k[i] = src[C];
    v[i] = src[2 * C];
  }
}

/* out (B, T, NH, hs) <- y (B, NH, T, hs); the forward output is overwritten. */
__global__ static void merge_heads_kernel(float *out, const float *y, int B, int T, int NH,
                                          int hs) {
  size_t n = (size_t)B * NH * T * hs;
  C4K_FOR_EACH(i, n) {
    size_t d = i % hs, t = i / hs % T, h = i / ((size_t)hs * T) % NH, b = i / ((size_t)hs * T * NH);
    out[((b * T + t) * NH + h) * hs + d] = y[i];
  }
}

/* dqkv (B, T, 3, NH, hs) += dq, dk, dv (B, NH, T, hs): backward adds into its gradient. */
__global__ static void merge_heads_grad_kernel(float *dqkv, const float *dq, const float *dk,
                                               const float *dv, int B, int T, int NH, int hs) {
  size_t n = (size_t)B * NH * T * hs, C = (size_t)NH * hs;
  C4K_FOR_EACH(i, n) {
    size_t d = i % hs, t = i / hs % T, h = i / ((size_t)hs * T) % NH, b = i / ((size_t)hs * T * NH);
    float *dst = dqkv + (b * T + t) * 3 * C + h * hs + d;
    dst[0] += dq[i];
    dst[C] += dk[i];
    dst[2 * C] += dv[i];
  }
}

/* dy (B, NH, T, hs) <- dout (B, T, NH, hs) */
__global__ static void split_grad_kernel(float *dy, const float *dout, int B, int T, int NH,
                                         int hs) {
  size_t n = (size_t)B * NH * T * hs;
  C4K_FOR_EACH(i, n) {
    size_t d = i % hs, t = i / hs % T, h = i / ((size_t)hs * T) % NH, b = i / ((size_t)hs * T * NH);
    dy[i] = dout[((b * T + t) * NH + h) * hs + d];
  }
}

/* In place over rows of att (rows = B*NH*T, each T long, the scaled scores): row t of a head
 * becomes the softmax of its first t+1 entries, and zero past t. One warp per row. */
__global__ static void causal_softmax_kernel(float *att, size_t rows, int T) {
  int lane = threadIdx.x % 32;
  C4K_FOR_EACH_WARP_ROW(r, rows) {
    float *row = att + r * T;
    int len = (int)(r % T) + 1;
    float mx = -INFINITY;
    for (int j = lane; j < len; j += 32)
      mx = fmaxf(mx, row[j]);
    mx = c4k_warp_max(mx);
    float sum = 0.0f;
    for (int j = lane; j < len; j += 32)
      sum += expf(row[j] - mx);
    sum = c4k_warp_sum(sum);
    float inv = 1.0f / sum;
    for (int j = lane; j < T; j += 32)
      row[j] = j < len ? expf(row[j] - mx) * inv : 0.0f;
  }
}

/* In place over rows of datt: datt <- att * (datt - sum_j att[j] * datt[j]), the softmax
 * backward, with exact zeros past t so the products that follow see a causal matrix. One warp
 * per row. */
__global__ static void causal_softmax_bwd_kernel(float *datt, const float *att, size_t rows,
                                                 int T) {
  int lane = threadIdx.x % 32;
  C4K_FOR_EACH_WARP_ROW(r, rows) {
    float *drow = datt + r * T;
    const float *arow = att + r * T;
    int len = (int)(r % T) + 1;
    float dot = 0.0f;
    for (int j = lane; j < len; j += 32)
      dot += arow[j] * drow[j];
    dot = c4k_warp_sum(dot);
    for (int j = lane; j < T; j += 32)
      drow[j] = j < len ? arow[j] * (drow[j] - dot) : 0.0f;
  }
}

void c4k_cuda_attention_fwd(float *out, float *att, const float *qkv, int B, int T, int C, int NH) {
  int hs = C / NH;
  size_t n = (size_t)B * T * C, rows = (size_t)B * NH * T;
  long long tt = (long long)T * T, ths = (long long)T * hs;
  float *q = scratch_get(4 * n), *k = q + n, *v = k + n, *y = v + n;
  float scale = 1.0f / sqrtf((float)hs), zero = 0.0f, one = 1.0f;
  cublasHandle_t h = c4k_cuda_cublas();

  split_heads_kernel<<<c4k_grid(n, C4K_BLOCK), C4K_BLOCK>>>(q, k, v, qkv, B, T, NH, hs);
  C4K_LAUNCH_CHECK();
  /* per head, row-major: att (T x T) = scale * q (T x hs) @ k^T;
   * column-major: att^T = scale * (k^T)^T (T x hs) @ q^T (hs x T) */
  C4K_CUBLAS_CHECK(cublasSgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, &scale, k, hs,
                                             ths, q, hs, ths, &zero, att, T, tt, B * NH));
  causal_softmax_kernel<<<c4k_grid(rows, C4K_WARPS), C4K_BLOCK>>>(att, rows, T);
  C4K_LAUNCH_CHECK();
  /* per head, row-major: y (T x hs) = att (T x T) @ v (T x hs);
   * column-major: y^T = v^T (hs x T) @ att^T (T x T) */
  C4K_CUBLAS_CHECK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, &one, v, hs,
                                             ths, att, T, tt, &zero, y, hs, ths, B * NH));
  merge_heads_kernel<<<c4k_grid(n, C4K_BLOCK), C4K_BLOCK>>>(out, y, B, T, NH, hs);
  C4K_LAUNCH_CHECK();
}

void c4k_cuda_attention_bwd(float *dqkv, float *datt, const float *dout, const float *qkv,
                            const float *att, int B, int T, int C, int NH) {
  int hs = C / NH;
  size_t n = (size_t)B * T * C, rows = (size_t)B * NH * T;
  long long tt = (long long)T * T, ths = (long long)T * hs;
  float *q = scratch_get(7 * n), *k = q + n, *v = k + n, *dy = v + n, *dq = dy + n, *dk = dq + n,
        *dv = dk + n;
  float scale = 1.0f / sqrtf((float)hs), zero = 0.0f, one = 1.0f;
  cublasHandle_t h = c4k_cuda_cublas();

  split_heads_kernel<<<c4k_grid(n, C4K_BLOCK), C4K_BLOCK>>>(q, k, v, qkv, B, T, NH, hs);
  C4K_LAUNCH_CHECK();
  split_grad_kernel<<<c4k_grid(n, C4K_BLOCK), C4K_BLOCK>>>(dy, dout, B, T, NH, hs);
  C4K_LAUNCH_CHECK();
  /* datt (T x T) = dy (T x hs) @ v^T; column-major: datt^T = (v^T)^T @ dy^T. datt is scratch, so
   * it is overwritten (beta 0) and ends up holding the gradient of the scaled scores. */
  C4K_CUBLAS_CHECK(cublasSgemmStridedBatched(h, CUBLAS_OP_T, CUBLAS_OP_N, T, T, hs, &one, v, hs,
                                             ths, dy, hs, ths, &zero, datt, T, tt, B * NH));
  /* dv (T x hs) = att^T (T x T) @ dy; column-major: dv^T = dy^T (hs x T) @ (att^T)^T */
  C4K_CUBLAS_CHECK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, &one, dy, hs,
                                             ths, att, T, tt, &zero, dv, hs, ths, B * NH));
  causal_softmax_bwd_kernel<<<c4k_grid(rows, C4K_WARPS), C4K_BLOCK>>>(datt, att, rows, T);
  C4K_LAUNCH_CHECK();
  /* dq (T x hs) = scale * dscores (T x T) @ k; column-major: dq^T = scale * k^T @ dscores^T */
  C4K_CUBLAS_CHECK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_N, hs, T, T, &scale, k, hs,
                                             ths, datt, T, tt, &zero, dq, hs, ths, B * NH));
  /* dk (T x hs) = scale * dscores^T @ q; column-major: dk^T = scale * q^T @ (dscores^T)^T */
  C4K_CUBLAS_CHECK(cublasSgemmStridedBatched(h, CUBLAS_OP_N, CUBLAS_OP_T, hs, T, T, &scale, q, hs,
                                             ths, datt, T, tt, &zero, dk, hs, ths, B * NH));
  merge_heads_grad_kernel<<<c4k_grid(n, C4K_BLOCK), C4K_BLOCK>>>(dqkv, dq, dk, dv, B, T, NH, hs);
  C4K_LAUNCH_CHECK();
}
