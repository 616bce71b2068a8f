/* cuda_adamw.cu -- the AdamW update, one thread per parameter. */
#include "cuda_common.cuh"

/* bc1, bc2 are the bias corrections 1 - beta^t, computed once on the host. */
__global__ static void adamw_kernel(float *p, const float *g, float *m, float *v, size_t n,
                                    float lr, float beta1, float beta2, float bc1, float bc2,
                                    float eps, float wd) {
  C4K_FOR_EACH(i, n) {
    float gi = g[i];
    float mi = beta1 * m[i] + (1.0f - beta1) * gi;
    float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    float mhat = mi / bc1, vhat = vi / bc2;
    p[i] -= lr * (mhat / (sqrtf(vhat) + eps) + wd * p[i]);
  }
}

void c4k_cuda_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                    float beta2, float eps, float weight_decay, int t) {
  float bc1 = 1.0f - powf(beta1, (float)t), bc2 = 1.0f - powf(beta2, (float)t);
  adamw_kernel<<<c4k_grid(n, C4K_BLOCK), C4K_BLOCK>>>(p, g, m, v, n, lr, beta1, beta2, bc1, bc2,
                                                      eps, weight_decay);
  C4K_LAUNCH_CHECK();
}
