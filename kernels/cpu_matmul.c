/* cpu_matmul.c -- the fully connected layer on OpenBLAS sgemm, forward and backward. */
#include <cblas.h>
#include <stddef.h>

/* out (N x OC) = inp (N x C) @ w^T (w is OC x C), then + bias (OC) on every row if given. */
void c4k_cpu_matmul_fwd(float *out, const float *inp, const float *w, const float *bias, int N,
                        int C, int OC) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, C, 1.0f, inp, C, w, C, 0.0f, out, OC);
  if (!bias) return;
  for (int i = 0; i < N; i++) {
    float *o = out + (size_t)i * OC;
    for (int j = 0; j < OC; j++)
      o[j] += bias[j];
  }
}

/* dinp += dout @ w, dw += dout^T @ inp (both beta 1, so they add), dbias += column sums of dout
 * taken row by row: the inner loop runs along a row, which vectorizes and sums in a fixed order. */
void c4k_cpu_matmul_bwd(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                        const float *w, int N, int C, int OC) {
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, C, OC, 1.0f, dout, OC, w, C, 1.0f, dinp,
              C);
  cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, C, N, 1.0f, dout, OC, inp, C, 1.0f, dw,
              C);
  if (!dbias) return;
  for (int i = 0; i < N; i++) {
    const float *d = dout + (size_t)i * OC;
    for (int j = 0; j < OC; j++)
      dbias[j] += d[j];
  }
}
