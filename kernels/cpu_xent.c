/* cpu_xent.c -- softmax over the vocabulary and the cross-entropy loss, forward and backward. */
#include <math.h>
#include <stddef.h>

/* Per row of logits (N x V): probs = softmax (max subtracted first, so large logits cannot
 * overflow), and the loss as log(sum) - (logit - max), which equals -log(prob) without rounding
 * prob first (a tiny prob would lose all its digits). */
void c4k_cpu_softmax_xent_fwd(float *losses, float *probs, const float *logits, const int *targets,
                              int N, int V) {
  for (int i = 0; i < N; i++) {
    const float *x = logits + (size_t)i * V;
    float *p = probs + (size_t)i * V;
    float mx = x[0];
    for (int j = 1; j < V; j++)
      mx = x[j] > mx ? x[j] : mx;
    double sum = 0.0;
    for (int j = 0; j < V; j++) {
      p[j] = expf(x[j] - mx);
      sum += p[j];
    }
    float inv = (float)(1.0 / sum);
    for (int j = 0; j < V; j++)
      p[j] *= inv;
    losses[i] = (float)(log(sum) - ((double)x[targets[i]] - mx));
  }
}

/* dlogits += (probs - onehot(targets)) * dloss, the gradient of dloss * sum(losses). */
void c4k_cpu_softmax_xent_bwd(float *dlogits, const float *probs, const int *targets, float dloss,
                              int N, int V) {
  for (int i = 0; i < N; i++) {
    const float *p = probs + (size_t)i * V;
    float *d = dlogits + (size_t)i * V;
    int tgt = targets[i];
    for (int j = 0; j < V; j++)
      d[j] += (p[j] - (j == tgt ? 1.0f : 0.0f)) * dloss;
  }
}
