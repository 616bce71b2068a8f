/* cpu_attention.c -- causal multi-head self-attention. Every product is an OpenBLAS sgemm per
 * (batch, head) that reads q, k and v straight out of qkv with a row stride of 3C (and writes the
 * head's columns of out and dqkv with strides C and 3C), so nothing is copied; the causal mask and
 * the softmax are plain loops over the T x T scores of one head. */
#include <cblas.h>
#include <math.h>
#include <stddef.h>

/* Row t of a head's scores (T x T, already scaled) becomes the softmax of its first t+1 entries
 * and zero past t. The full square was computed by sgemm; the part past t is simply overwritten. */
static void causal_softmax(float *att, int T) {
  for (int t = 0; t < T; t++) {
    float *row = att + (size_t)t * T;
    float mx = row[0];
    for (int j = 1; j <= t; j++)
      mx = row[j] > mx ? row[j] : mx;
    double sum = 0.0;
    for (int j = 0; j <= t; j++) {
      row[j] = expf(row[j] - mx);
      sum += row[j];
    }
    float inv = (float)(1.0 / sum);
    for (int j = 0; j <= t; j++)
      row[j] *= inv;
    for (int j = t + 1; j < T; j++)
      row[j] = 0.0f;
  }
}

/* In place over a head's datt: row t becomes att * (datt - sum_j att[j] * datt[j]), the softmax
 * backward, with exact zeros past t so the products that follow see a causal matrix. */
static void causal_softmax_bwd(float *datt, const float *att, int T) {
  for (int t = 0; t < T; t++) {
    float *d = datt + (size_t)t * T;
    const float *a = att + (size_t)t * T;
    double dot = 0.0;
    for (int j = 0; j <= t; j++)
      dot += (double)a[j] * d[j];
    float fdot = (float)dot;
    for (int j = 0; j <= t; j++)
      d[j] = a[j] * (d[j] - fdot);
    for (int j = t + 1; j < T; j++)
      d[j] = 0.0f;
  }
}

/* Per (b, h), with q, k, v the head's T x hs slices of qkv:
 * att = causal_softmax(q @ k^T / sqrt(hs)), out's slice = att @ v. */
void c4k_cpu_attention_fwd(float *out, float *att, const float *qkv, int B, int T, int C, int NH) {
  int hs = C / NH, ld = 3 * C;
  float scale = 1.0f / sqrtf((float)hs);
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++) {
      const float *q = qkv + (size_t)b * T * ld + (size_t)h * hs, *k = q + C, *v = q + 2 * C;
      float *a = att + ((size_t)b * NH + h) * T * T;
      float *o = out + (size_t)b * T * C + (size_t)h * hs;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, scale, q, ld, k, ld, 0.0f, a,
                  T);
      causal_softmax(a, T);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, v, ld, 0.0f, o,
                  C);
    }
}

/* Per (b, h), with dy the head's slice of dout: datt = dy @ v^T (overwritten: it is scratch),
 * dv += att^T @ dy, then datt becomes the gradient of the scaled scores, and
 * dq += scale * datt @ k, dk += scale * datt^T @ q. */
void c4k_cpu_attention_bwd(float *dqkv, float *datt, const float *dout, const float *qkv,
                           const float *att, int B, int T, int C, int NH) {
  int hs = C / NH, ld = 3 * C;
  float scale = 1.0f / sqrtf((float)hs);
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++) {
      size_t off = (size_t)b * T * ld + (size_t)h * hs;
      const float *q = qkv + off, *k = q + C, *v = q + 2 * C;
      float *dq = dqkv + off, *dk = dq + C, *dv = dq + 2 * C;
      const float *a = att + ((size_t)b * NH + h) * T * T;
      float *da = datt + ((size_t)b * NH + h) * T * T;
      const float *dy = dout + (size_t)b * T * C + (size_t)h * hs;
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, T, T, hs, 1.0f, dy, C, v, ld, 0.0f, da,
                  T);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, 1.0f, a, T, dy, C, 1.0f, dv,
                  ld);
      causal_softmax_bwd(da, a, T);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, T, hs, T, scale, da, T, k, ld, 1.0f,
                  dq, ld);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, T, hs, T, scale, da, T, q, ld, 1.0f, dk,
                  ld);
    }
}
