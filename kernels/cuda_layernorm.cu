/* cuda_layernorm.cu -- layer normalisation over the last dimension, forward and backward. Row
 * statistics take one warp per row (C is a few hundred to a few thousand floats); the weight and
 * bias gradients are column sums, done by a second kernel whose adjacent threads read adjacent
 * columns. */
#include "cuda_common.cuh"

/* One warp per row: mean, then variance about it (two passes over the row, which stays in
 * cache), then the normalised, scaled and shifted row. */
__global__ static void layernorm_fwd_kernel(float *out, float *mean, float *rstd, const float *inp,
                                            const float *w, const float *b, int N, int C) {
  int lane = threadIdx.x % 32;
  C4K_FOR_EACH_WARP_ROW(r, (size_t)N) {
    const float *x = inp + r * C;
    float s = 0.0f;
    for (int c = lane; c < C; c += 32)
      s += x[c];
    float m = c4k_warp_sum(s) / C;
    float v = 0.0f;
    for (int c = lane; c < C; c += 32)
      v += (x[c] - m) * (x[c] - m);
    float rs = rsqrtf(c4k_warp_sum(v) / C + 1e-5f);
    float *o = out + r * C;
    for (int c = lane; c < C; c += 32)
      o[c] = (x[c] - m) * rs * w[c] + b[c];
    if (lane == 0) {
      mean[r] = m;
      rstd[r] = rs;
    }
  }
}

/* One warp per row: with g = w * dout and xhat the normalised input,
 * dinp += rstd * (g - mean(g) - xhat * mean(g * xhat)). */
__global__ static void layernorm_bwd_inp_kernel(float *dinp, const float *dout, const float *inp,
                                                const float *w, const float *mean,
                                                const float *rstd, int N, int C) {
  int lane = threadIdx.x % 32;
  C4K_FOR_EACH_WARP_ROW(r, (size_t)N) {
    const float *x = inp + r * C, *dy = dout + r * C;
    float m = mean[r], rs = rstd[r], sg = 0.0f, sgx = 0.0f;
    for (int c = lane; c < C; c += 32) {
      float g = w[c] * dy[c];
      sg += g;
      sgx += g * (x[c] - m) * rs;
    }
    sg = c4k_warp_sum(sg) / C;
    sgx = c4k_warp_sum(sgx) / C;
    float *dx = dinp + r * C;
    for (int c = lane; c < C; c += 32)
      dx[c] += rs * (w[c] * dy[c] - sg - (x[c] - m) * rs * sgx);
  }
}

/* dw[c] += sum_r dout[r, c] * xhat[r, c], db[c] += sum_r dout[r, c]. Block (32, 8): threadIdx.x
 * picks the column, the 8 thread rows and gridDim.y blocks split the rows; partial sums meet in
 * shared memory, then one atomicAdd per column per block. */
__global__ static void layernorm_bwd_params_kernel(float *dw, float *db, const float *dout,
                                                   const float *inp, const float *mean,
                                                   const float *rstd, int N, int C) {
  __shared__ float pw[8][32], pb[8][32];
  int c = blockIdx.x * 32 + threadIdx.x;
  float sw = 0.0f, sb = 0.0f;
  if (c < C)
    for (int r = blockIdx.y * 8 + threadIdx.y; r < N; r += gridDim.y * 8) {
      size_t i = (size_t)r * C + c;
      sw += dout[i] * (inp[i] - mean[r]) * rstd[r];
      sb += dout[i];
    }
  pw[threadIdx.y][threadIdx.x] = sw;
  pb[threadIdx.y][threadIdx.x] = sb;
  __syncthreads();
  if (threadIdx.y == 0 && c < C) {
    for (int y = 1; y < 8; y++) {
      sw += pw[y][threadIdx.x];
      sb += pb[y][threadIdx.x];
    }
    atomicAdd(&dw[c], sw);
    atomicAdd(&db[c], sb);
  }
}

void c4k_cuda_layernorm_fwd(float *out, float *mean, float *rstd, const float *inp, const float *w,
                            const float *b, int N, int C) {
  layernorm_fwd_kernel<<<c4k_grid(N, C4K_WARPS), C4K_BLOCK>>>(out, mean, rstd, inp, w, b, N, C);
  C4K_LAUNCH_CHECK();
}

void c4k_cuda_layernorm_bwd(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                            const float *w, const float *mean, const float *rstd, int N, int C) {
  layernorm_bwd_inp_kernel<<<c4k_grid(N, C4K_WARPS), C4K_BLOCK>>>(dinp, dout, inp, w, mean, rstd, N,
                                                                  C);
  C4K_LAUNCH_CHECK();
  layernorm_bwd_params_kernel<<<c4k_colsum_grid(N, C), dim3(32, 8)>>>(dw, db, dout, inp, mean, rstd,
                                                                      N, C);
  C4K_LAUNCH_CHECK();
}
