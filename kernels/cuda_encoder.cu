/* cuda_encoder.cu -- token plus position embedding, forward and backward. */
#include "cuda_common.cuh"

/* out[b, t, c] = wte[tokens[b, t], c] + wpe[t, c], one thread per output element */
__global__ static void encoder_fwd_kernel(float *out, const int *tokens, const float *wte,
                                          const float *wpe, int B, int T, int C) {
  size_t n = (size_t)B * T * C;
  C4K_FOR_EACH(i, n) {
    size_t bt = i / C, c = i % C, t = bt % T;
    out[i] = wte[(size_t)tokens[bt] * C + c] + wpe[t * C + c];
  }
}

/* dwte[tokens[b, t], c] += dout[b, t, c]: a token can repeat within the batch, so the adds are
 * atomic. One thread per element of dout. */
__global__ static void encoder_bwd_wte_kernel(float *dwte, const float *dout, const int *tokens,
                                              int B, int T, int C) {
  size_t n = (size_t)B * T * C;
  C4K_FOR_EACH(i, n) {
    size_t bt = i / C, c = i % C;
    atomicAdd(&dwte[(size_t)tokens[bt] * C + c], dout[i]);
  }
}

/* dwpe[t, c] += sum over b of dout[b, t, c]: one thread per (t, c), no atomics needed. */
__global__ static void encoder_bwd_wpe_kernel(float *dwpe, const float *dout, int B, int T, int C) {
  size_t n = (size_t)T * C;
  C4K_FOR_EACH(i, n) {
    float s = 0.0f;
    for (int b = 0; b < B; b++)
      s += dout[(size_t)b * n + i];
    dwpe[i] += s;
  }
}

void c4k_cuda_encoder_fwd(float *out, const int *tokens, const float *wte, const float *wpe, int B,
                          int T, int C) {
  encoder_fwd_kernel<<<c4k_grid((size_t)B * T * C, C4K_BLOCK), C4K_BLOCK>>>(out, tokens, wte, wpe,
                                                                            B, T, C);
  C4K_LAUNCH_CHECK();
}

void c4k_cuda_encoder_bwd(float *dwte, float *dwpe, const float *dout, const int *tokens, int B,
                          int T, int C) {
  encoder_bwd_wte_kernel<<<c4k_grid((size_t)B * T * C, C4K_BLOCK), C4K_BLOCK>>>(dwte, dout, tokens,
                                                                                B, T, C);
  C4K_LAUNCH_CHECK();
  encoder_bwd_wpe_kernel<<<c4k_grid((size_t)T * C, C4K_BLOCK), C4K_BLOCK>>>(dwpe, dout, B, T, C);
  C4K_LAUNCH_CHECK();
}
