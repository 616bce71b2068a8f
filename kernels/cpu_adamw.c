/* cpu_adamw.c -- the AdamW parameter update. */
#include <math.h>
#include <stddef.h>

/* Step t (1-based): m and v are the moving averages of g and g^2, corrected for their zero start
 * by 1 - beta^t; weight decay is decoupled from the gradient (it shrinks p directly). The same
 * float arithmetic as the CUDA kernel, so both give the same parameters to rounding. */
void c4k_cpu_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                   float beta2, float eps, float weight_decay, int t) {
  float bc1 = 1.0f - powf(beta1, (float)t), bc2 = 1.0f - powf(beta2, (float)t);
  for (size_t i = 0; i < n; i++) {
    float gi = g[i];
    float mi = beta1 * m[i] + (1.0f - beta1) * gi;
    float vi = beta2 * v[i] + (1.0f - beta2) * gi * gi;
    m[i] = mi;
    v[i] = vi;
    float mhat = mi / bc1, vhat = vi / bc2;
    p[i] -= lr * (mhat / (sqrtf(vhat) + eps) + weight_decay * p[i]);
  }
}
