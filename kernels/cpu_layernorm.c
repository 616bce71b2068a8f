/* cpu_layernorm.c -- layer normalization over the channels of each row, forward and backward.
 * Row statistics are summed in double: C is small enough that this costs nothing next to the
 * matmuls, and it keeps mean and variance exact to float precision for any C. */
#include <math.h>
#include <stddef.h>

#define LN_EPS 1e-5

/* out = (x - mean) * rstd * w + b per row of inp (N x C); mean and rstd (N each) are kept for
 * the backward pass. The variance is the biased one, taken around the mean (two passes). */
void c4k_cpu_layernorm_fwd(float *out, float *mean, float *rstd, const float *inp, const float *w,
                           const float *b, int N, int C) {
  for (int i = 0; i < N; i++) {
    const float *x = inp + (size_t)i * C;
    float *o = out + (size_t)i * C;
    double s = 0.0;
    for (int c = 0; c < C; c++)
      s += x[c];
    float m = (float)(s / C);
    double v = 0.0;
    for (int c = 0; c < C; c++) {
      double d = x[c] - m;
      v += d * d;
    }
    float r = (float)(1.0 / sqrt(v / C + LN_EPS));
    for (int c = 0; c < C; c++)
      o[c] = (x[c] - m) * r * w[c] + b[c];
    mean[i] = m;
    rstd[i] = r;
  }
}

/* With xhat = (x - mean) * rstd and g = dout * w, per row:
 * dinp += rstd * (g - mean(g) - xhat * mean(g * xhat)), dw += dout * xhat, db += dout. */
void c4k_cpu_layernorm_bwd(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                           const float *w, const float *mean, const float *rstd, int N, int C) {
  for (int i = 0; i < N; i++) {
    const float *x = inp + (size_t)i * C, *d = dout + (size_t)i * C;
    float *dx = dinp + (size_t)i * C;
    float m = mean[i], r = rstd[i];
    double gs = 0.0, gxs = 0.0;
    for (int c = 0; c < C; c++) {
      float xhat = (x[c] - m) * r, g = d[c] * w[c];
      gs += g;
      gxs += (double)g * xhat;
    }
    float gmean = (float)(gs / C), gxmean = (float)(gxs / C);
    for (int c = 0; c < C; c++) {
      float xhat = (x[c] - m) * r;
      dx[c] += r * (d[c] * w[c] - gmean - xhat * gxmean);
      dw[c] += d[c] * xhat;
      db[c] += d[c];
    }
  }
}
