/* cpu_encoder.c -- token plus position embedding, forward and backward. */
#include <stddef.h>

/* out[b, t, :] = wte[tokens[b, t], :] + wpe[t, :] */
void c4k_cpu_encoder_fwd(float *out, const int *tokens, const float *wte, const float *wpe, int B,
                         int T, int C) {
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      size_t bt = (size_t)b * T + t;
      float *o = out + bt * C;
      const float *e = wte + (size_t)tokens[bt] * C, *p = wpe + (size_t)t * C;
      for (int c = 0; c < C; c++)
        o[c] = e[c] + p[c];
    }
}

/* dwte[tokens[b, t], :] += dout[b, t, :] and dwpe[t, :] += dout[b, t, :], in (b, t) order, so a
 * token that repeats sums its rows the same way on every run. */
void c4k_cpu_encoder_bwd(float *dwte, float *dwpe, const float *dout, const int *tokens, int B,
                         int T, int C) {
  for (int b = 0; b < B; b++)
    for (int t = 0; t < T; t++) {
      size_t bt = (size_t)b * T + t;
      const float *d = dout + bt * C;
      float *de = dwte + (size_t)tokens[bt] * C, *dp = dwpe + (size_t)t * C;
      for (int c = 0; c < C; c++) {
        de[c] += d[c];
        dp[c] += d[c];
      }
    }
}
