/* cuda_xent.cu -- softmax over the vocabulary and the cross-entropy loss, forward and backward.
 * A row is V floats (50257 for GPT-2), so the forward pass gives each row a whole block. */
#include "cuda_common.cuh"

/* One block per row: max, sum of exponentials, then the probabilities. The loss is taken as
 * log(sum) - (logit - max), which equals -log(prob) without rounding prob first. */
__global__ static void xent_fwd_kernel(float *losses, float *probs, const float *logits,
                                       const int *targets, int N, int V) {
  __shared__ float scratch[32];
  for (size_t r = blockIdx.x; r < (size_t)N; r += gridDim.x) {
    const float *x = logits + r * V;
    float *p = probs + r * V;
    float mx = -INFINITY;
    for (int j = threadIdx.x; j < V; j += blockDim.x)
      mx = fmaxf(mx, x[j]);
    mx = c4k_block_reduce(mx, scratch, true);
    float s = 0.0f;
    for (int j = threadIdx.x; j < V; j += blockDim.x)
      s += expf(x[j] - mx);
    s = c4k_block_reduce(s, scratch, false);
    float inv = 1.0f / s;
    for (int j = threadIdx.x; j < V; j += blockDim.x)
      p[j] = expf(x[j] - mx) * inv;
    if (threadIdx.x == 0) losses[r] = logf(s) - (x[targets[r]] - mx);
  }
}

/* dlogits[r, j] += (probs[r, j] - (j == targets[r])) * dloss, one thread per element */
__global__ static void xent_bwd_kernel(float *dlogits, const float *probs, const int *targets,
                                       float dloss, int N, int V) {
  size_t n = (size_t)N * V;
  C4K_FOR_EACH(i, n) {
    size_t r = i / V;
    int j = (int)(i % V);
    dlogits[i] += (probs[i] - (j == targets[r] ? 1.0f : 0.0f)) * dloss;
  }
}

void c4k_cuda_softmax_xent_fwd(float *losses, float *probs, const float *logits, const int *targets,
                               int N, int V) {
  xent_fwd_kernel<<<c4k_grid(N, 1), C4K_BLOCK>>>(losses, probs, logits, targets, N, V);
  C4K_LAUNCH_CHECK();
}

void c4k_cuda_softmax_xent_bwd(float *dlogits, const float *probs, const int *targets, float dloss,
                               int N, int V) {
  xent_bwd_kernel<<<c4k_grid((size_t)N * V, C4K_BLOCK), C4K_BLOCK>>>(dlogits, probs, targets, dloss,
                                                                     N, V);
  C4K_LAUNCH_CHECK();
}
