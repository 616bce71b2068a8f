/* c4k.h -- the compute ops of a GPT-2-style decoder, forward and backward, behind one table of
 * functions with two implementations: CPU (kernels/cpu_*.c, OpenBLAS sgemm for every matmul)
 * and CUDA (kernels/cuda_*.cu, cuBLAS for matmuls, c4's own kernels for the rest). The trainer
 * only ever calls through a struct c4k_ops, so the same model code runs on either.
 *
 * Conventions, the same in both implementations:
 * - Every tensor is a dense row-major float array (int32 for tokens), in the implementation's
 *   memory: host memory for CPU, device memory for CUDA (move data with upload/download).
 * - Shapes: B batch, T sequence length, C channels, NH heads (C % NH == 0), V vocabulary,
 *   N = B*T rows, OC output channels.
 * - Backward functions ADD into every gradient they write (parameter and input gradients), so
 *   micro-batches accumulate and a branch's gradients sum; the caller zeroes them first.
 * - Calls are ordered (CUDA: one stream); download and sync wait for everything before them.
 */
#ifndef C4K_H
#define C4K_H

#include <stddef.h>

struct c4k_ops {
  const char *name; /* "cpu" or "cuda" */

  /* memory: alloc returns zeroed memory or NULL */
  void *(*alloc)(size_t bytes);
  void (*free)(void *p);
  void (*upload)(void *dst, const void *host_src, size_t bytes);
  void (*download)(void *host_dst, const void *src, size_t bytes);
  void (*zero)(void *p, size_t bytes);
  void (*sync)(void);

  /* out[b,t,:] = wte[tokens[b,t],:] + wpe[t,:]   (wte V x C, wpe T_max x C) */
  void (*encoder_fwd)(float *out, const int *tokens, const float *wte, const float *wpe, int B,
                      int T, int C);
  void (*encoder_bwd)(float *dwte, float *dwpe, const float *dout, const int *tokens, int B, int T,
                      int C);

  /* per row of inp (N x C): out = (x - mean) * rstd * w + b, eps 1e-5; mean and rstd (N each)
   * saved for the backward pass */
  void (*layernorm_fwd)(float *out, float *mean, float *rstd, const float *inp, const float *w,
                        const float *b, int N, int C);
  void (*layernorm_bwd)(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                        const float *w, const float *mean, const float *rstd, int N, int C);

  /* out (N x OC) = inp (N x C) @ w^T (w is OC x C) + bias (OC, or NULL for none) */
  void (*matmul_fwd)(float *out, const float *inp, const float *w, const float *bias, int N, int C,
                     int OC);
  /* dbias may be NULL (no bias) */
  void (*matmul_bwd)(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                     const float *w, int N, int C, int OC);

  /* causal self-attention. qkv (B x T x 3C): per position q, k, v, each C = NH heads of C/NH.
   * out (B x T x C); att (B x NH x T x T) the softmaxed scores (row t is zero past t), saved for
   * the backward pass. Scale 1/sqrt(C/NH). */
  void (*attention_fwd)(float *out, float *att, const float *qkv, int B, int T, int C, int NH);
  /* datt (B x NH x T x T) is scratch the caller zeroes with dqkv */
  void (*attention_bwd)(float *dqkv, float *datt, const float *dout, const float *qkv,
                        const float *att, int B, int T, int C, int NH);

  /* GELU, tanh approximation */
  void (*gelu_fwd)(float *out, const float *inp, size_t n);
  void (*gelu_bwd)(float *dinp, const float *inp, const float *dout, size_t n);

  /* out = a + b; backward adds dout into both */
  void (*residual_fwd)(float *out, const float *a, const float *b, size_t n);
  void (*residual_bwd)(float *da, float *db, const float *dout, size_t n);

  /* per row of logits (N x V): probs = softmax(logits), losses[i] = -log probs[i, targets[i]] */
  void (*softmax_xent_fwd)(float *losses, float *probs, const float *logits, const int *targets,
                           int N, int V);
  /* dlogits += (probs - onehot(targets)) * dloss, dloss the same for every row (1/rows for a
   * mean) */
  void (*softmax_xent_bwd)(float *dlogits, const float *probs, const int *targets, float dloss,
                           int N, int V);

  /* AdamW step t (1-based) with bias correction; weight decay decoupled (p -= lr*wd*p) */
  void (*adamw)(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                float beta2, float eps, float weight_decay, int t);

  /* out[i] = in[i] * scale (gradient averaging, loss scaling) */
  void (*scale)(float *out, const float *in, float scale, size_t n);
};

/* The CPU implementation (always there). */
extern const struct c4k_ops c4k_cpu_ops;

/* Name of the symbol that build/lib/libc4k-cuda.so exports: a const struct c4k_ops for the
 * first CUDA device, or for the device the caller selected with cudaSetDevice before first use.
 * c4train dlopens it only for --device cuda, so nothing else needs CUDA to start. */
#define C4K_CUDA_SYMBOL "c4k_cuda_ops"

/* And `int c4k_cuda_select_device(int local_rank, const char **why)`: local_rank's GPU, modulo
 * the GPUs there are, made current before the ops are first used; the device, or -1 with why. */
#define C4K_CUDA_SELECT_SYMBOL "c4k_cuda_select_device"

#endif
