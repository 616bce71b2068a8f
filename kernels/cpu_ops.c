/* cpu_ops.c -- c4k_cpu_ops, the table of the CPU kernels (kernels/cpu_*.c). Each function below
 * is defined in the cpu_*.c file named beside it; c4k.h is the only header the kernels share, so
 * their prototypes live here, next to the one place that uses them. */
#include <stddef.h>

#include "c4k.h"

/* cpu_memory.c */
void *c4k_cpu_alloc(size_t bytes);
void c4k_cpu_free(void *p);
void c4k_cpu_upload(void *dst, const void *host_src, size_t bytes);
void c4k_cpu_download(void *host_dst, const void *src, size_t bytes);
void c4k_cpu_zero(void *p, size_t bytes);
void c4k_cpu_sync(void);
/* cpu_encoder.c */
void c4k_cpu_encoder_fwd(float *out, const int *tokens, const float *wte, const float *wpe, int B,
                         int T, int C);
void c4k_cpu_encoder_bwd(float *dwte, float *dwpe, const float *dout, const int *tokens, int B,
                         int T, int C);
/* cpu_layernorm.c */
void c4k_cpu_layernorm_fwd(float *out, float *mean, float *rstd, const float *inp, const float *w,
                           const float *b, int N, int C);
void c4k_cpu_layernorm_bwd(float *dinp, float *dw, float *db, const float *dout, const float *inp,
                           const float *w, const float *mean, const float *rstd, int N, int C);
/* cpu_matmul.c */
void c4k_cpu_matmul_fwd(float *out, const float *inp, const float *w, const float *bias, int N,
                        int C, int OC);
void c4k_cpu_matmul_bwd(float *dinp, float *dw, float *dbias, const float *dout, const float *inp,
                        const float *w, int N, int C, int OC);
/* cpu_attention.c */
void c4k_cpu_attention_fwd(float *out, float *att, const float *qkv, int B, int T, int C, int NH);
void c4k_cpu_attention_bwd(float *dqkv, float *datt, const float *dout, const float *qkv,
                           const float *att, int B, int T, int C, int NH);
/* cpu_pointwise.c */
void c4k_cpu_gelu_fwd(float *out, const float *inp, size_t n);
void c4k_cpu_gelu_bwd(float *dinp, const float *inp, const float *dout, size_t n);
void c4k_cpu_residual_fwd(float *out, const float *a, const float *b, size_t n);
void c4k_cpu_residual_bwd(float *da, float *db, const float *dout, size_t n);
void c4k_cpu_scale(float *out, const float *in, float scale, size_t n);
/* cpu_xent.c */
void c4k_cpu_softmax_xent_fwd(float *losses, float *probs, const float *logits, const int *targets,
                              int N, int V);
void c4k_cpu_softmax_xent_bwd(float *dlogits, const float *probs, const int *targets, float dloss,
                              int N, int V);
/* cpu_adamw.c */
void c4k_cpu_adamw(float *p, const float *g, float *m, float *v, size_t n, float lr, float beta1,
                   float beta2, float eps, float weight_decay, int t);

const struct c4k_ops c4k_cpu_ops = {
    .name = "cpu",
    .alloc = c4k_cpu_alloc,
    .free = c4k_cpu_free,
    .upload = c4k_cpu_upload,
    .download = c4k_cpu_download,
    .zero = c4k_cpu_zero,
    .sync = c4k_cpu_sync,
    .encoder_fwd = c4k_cpu_encoder_fwd,
    .encoder_bwd = c4k_cpu_encoder_bwd,
    .layernorm_fwd = c4k_cpu_layernorm_fwd,
    .layernorm_bwd = c4k_cpu_layernorm_bwd,
    .matmul_fwd = c4k_cpu_matmul_fwd,
    .matmul_bwd = c4k_cpu_matmul_bwd,
    .attention_fwd = c4k_cpu_attention_fwd,
    .attention_bwd = c4k_cpu_attention_bwd,
    .gelu_fwd = c4k_cpu_gelu_fwd,
    .gelu_bwd = c4k_cpu_gelu_bwd,
    .residual_fwd = c4k_cpu_residual_fwd,
    .residual_bwd = c4k_cpu_residual_bwd,
    .softmax_xent_fwd = c4k_cpu_softmax_xent_fwd,
    .softmax_xent_bwd = c4k_cpu_softmax_xent_bwd,
    .adamw = c4k_cpu_adamw,
    .scale = c4k_cpu_scale,
};
