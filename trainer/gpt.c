/* gpt.c -- the decoder's parameters and activations, and its forward and backward passes as a
 * sequence of c4k ops. Activations and their gradients share one layout (struct gpt_acts), so
 * the backward pass reads a tensor in one buffer and writes its gradient at the same place in
 * the other. */
#include "gpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt_rng.h"

/* Carves one activation buffer (base NULL: only counts) into m's views; returns floats used. */
static size_t carve(const struct gpt_config *c, int B, float *base, struct gpt_acts *a) {
  size_t N = (size_t)B * c->context, C = c->width, V = c->vocab, at = 0;
  struct gpt_layer_acts none;
#define TAKE(ptr, n)                                                                               \
  do {                                                                                             \
    if (base) (ptr) = base + at;                                                                   \
    at += (n);                                                                                     \
  } while (0)
  TAKE(a->encoded, N * C);
  for (int l = 0; l < c->layers; l++) {
    struct gpt_layer_acts *v = base ? &a->layer[l] : &none;
    TAKE(v->ln1, N * C);
    TAKE(v->ln1_mean, N);
    TAKE(v->ln1_rstd, N);
    TAKE(v->qkv, 3 * N * C);
    TAKE(v->atty, N * C);
    TAKE(v->att, (size_t)B * c->heads * c->context * c->context);
    TAKE(v->attproj, N * C);
    TAKE(v->res2, N * C);
    TAKE(v->ln2, N * C);
    TAKE(v->ln2_mean, N);
    TAKE(v->ln2_rstd, N);
    TAKE(v->fch, 4 * N * C);
    TAKE(v->fch_gelu, 4 * N * C);
    TAKE(v->fcproj, N * C);
    TAKE(v->res3, N * C);
  }
  TAKE(a->lnf, N * C);
  TAKE(a->lnf_mean, N);
  TAKE(a->lnf_rstd, N);
  TAKE(a->logits, N * V);
  TAKE(a->probs, N * V);
  TAKE(a->losses, N);
#undef TAKE
  return at;
}

static void layout_params(struct gpt *m) {
  const struct gpt_config *c = &m->cfg;
  long L = c->layers, C = c->width, V = c->vocab, T = c->context;
  static const char *names[GPT_NPARAMS] = {
      "wte",   "wpe",   "ln1.w", "ln1.b", "qkv.w",    "qkv.b",    "attproj.w", "attproj.b",
      "ln2.w", "ln2.b", "fc.w",  "fc.b",  "fcproj.w", "fcproj.b", "lnf.w",     "lnf.b"};
  long shapes[GPT_NPARAMS][3] = {{V, C},        {T, C}, {L, C}, {L, C}, {L, 3 * C, C}, {L, 3 * C},
                                 {L, C, C},     {L, C}, {L, C}, {L, C}, {L, 4 * C, C}, {L, 4 * C},
                                 {L, C, 4 * C}, {L, C}, {C},    {C}};
  size_t off = 0;
  for (int i = 0; i < GPT_NPARAMS; i++) {
    struct gpt_tensor_info *t = &m->info[i];
    t->name = names[i];
    t->ndim = 0;
    t->count = 1;
    for (int d = 0; d < 3 && shapes[i][d]; d++) {
      t->shape[t->ndim++] = shapes[i][d];
      t->count *= (size_t)shapes[i][d];
    }
    t->offset = off;
    off += t->count;
  }
  m->nparams = off;
}

/* GPT-2's initialisation, drawn on the host in parameter order so every device gets the same
 * bits for a seed. */
static void init_params(struct gpt *m, float *host, unsigned long long seed) {
  struct gpt_rng rng;
  gpt_rng_seed(&rng, seed);
  float resid_std = 0.02f / sqrtf(2.0f * (float)m->cfg.layers);
  for (int i = 0; i < GPT_NPARAMS; i++) {
    const struct gpt_tensor_info *t = &m->info[i];
    float *p = host + t->offset;
    int is_ln_weight = i == GPT_LN1W || i == GPT_LN2W || i == GPT_LNFW;
    int is_bias = i == GPT_QKVB || i == GPT_ATTPROJB || i == GPT_FCB || i == GPT_FCPROJB ||
                  i == GPT_LN1B || i == GPT_LN2B || i == GPT_LNFB;
    float std = (i == GPT_ATTPROJW || i == GPT_FCPROJW) ? resid_std : 0.02f;
    for (size_t k = 0; k < t->count; k++)
      p[k] = is_ln_weight ? 1.0f : is_bias ? 0.0f : std * gpt_rng_normal(&rng);
  }
}

int gpt_init(struct gpt *m, const struct gpt_config *cfg, const struct c4k_ops *ops, int B,
             unsigned long long seed, char *err, size_t errlen) {
  memset(m, 0, sizeof *m);
  if (cfg->vocab < 2 || cfg->context < 1 || cfg->layers < 1 || cfg->heads < 1 || cfg->width < 1 ||
      cfg->width % cfg->heads != 0 || B < 1) {
    snprintf(err, errlen,
             "bad model: vocab %d, context %d, layers %d, heads %d, width %d (a multiple of "
             "heads), micro-batch %d: all must be positive",
             cfg->vocab, cfg->context, cfg->layers, cfg->heads, cfg->width, B);
    return -1;
  }
  m->cfg = *cfg;
  m->ops = ops;
  m->B = B;
  layout_params(m);
  struct gpt_acts count_only = {0};
  m->nacts = carve(cfg, B, NULL, &count_only);
  size_t N = (size_t)B * cfg->context;
  m->acts_view.layer = calloc((size_t)cfg->layers, sizeof *m->acts_view.layer);
  m->grads_view.layer = calloc((size_t)cfg->layers, sizeof *m->grads_view.layer);
  m->host_losses = malloc(N * sizeof(float));
  float *host = malloc(m->nparams * sizeof(float));
  m->params = ops->alloc(m->nparams * sizeof(float));
  m->grads = ops->alloc(m->nparams * sizeof(float));
  m->adam_m = ops->alloc(m->nparams * sizeof(float));
  m->adam_v = ops->alloc(m->nparams * sizeof(float));
  m->acts = ops->alloc(m->nacts * sizeof(float));
  m->dacts = ops->alloc(m->nacts * sizeof(float));
  m->tokens = ops->alloc(N * sizeof(int));
  m->targets = ops->alloc(N * sizeof(int));
  if (!m->acts_view.layer || !m->grads_view.layer || !m->host_losses || !host || !m->params ||
      !m->grads || !m->adam_m || !m->adam_v || !m->acts || !m->dacts || !m->tokens || !m->targets) {
    snprintf(err, errlen, "out of memory for a model of %zu parameters and %zu activations",
             m->nparams, m->nacts);
    free(host);
    gpt_free(m);
    return -1;
  }
  carve(cfg, B, m->acts, &m->acts_view);
  carve(cfg, B, m->dacts, &m->grads_view);
  init_params(m, host, seed);
  ops->upload(m->params, host, m->nparams * sizeof(float));
  free(host);
  return 0;
}

void gpt_free(struct gpt *m) {
  const struct c4k_ops *o = m->ops;
  void *dev[] = {m->params, m->grads, m->adam_m, m->adam_v,
                 m->acts,   m->dacts, m->tokens, m->targets};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i]) o->free(dev[i]);
  free(m->acts_view.layer);
  free(m->grads_view.layer);
  free(m->host_losses);
  memset(m, 0, sizeof *m);
}

void gpt_zero_grad(struct gpt *m) { m->ops->zero(m->grads, m->nparams * sizeof(float)); }

float *gpt_param(const struct gpt *m, float *base, enum gpt_param p, int layer) {
  const struct gpt_tensor_info *t = &m->info[p];
  int per_layer = p != GPT_WTE && p != GPT_WPE && p != GPT_LNFW && p != GPT_LNFB;
  return base + t->offset + (per_layer ? (size_t)layer * (t->count / (size_t)m->cfg.layers) : 0);
}

/* The forward pass through the logits and the loss; returns the mean position loss. */
static float forward(struct gpt *m, const int *tokens, const int *targets) {
  const struct c4k_ops *o = m->ops;
  const struct gpt_config *c = &m->cfg;
  int B = m->B, T = c->context, C = c->width, NH = c->heads, V = c->vocab, N = B * T;
  struct gpt_acts *a = &m->acts_view;
  float *P = m->params;
  o->upload(m->tokens, tokens, (size_t)N * sizeof(int));
  o->upload(m->targets, targets, (size_t)N * sizeof(int));
  o->encoder_fwd(a->encoded, m->tokens, gpt_param(m, P, GPT_WTE, 0), gpt_param(m, P, GPT_WPE, 0), B,
                 T, C);
  const float *in = a->encoded;
  for (int l = 0; l < c->layers; l++) {
    struct gpt_layer_acts *v = &a->layer[l];
    o->layernorm_fwd(v->ln1, v->ln1_mean, v->ln1_rstd, in, gpt_param(m, P, GPT_LN1W, l),
                     gpt_param(m, P, GPT_LN1B, l), N, C);
    o->matmul_fwd(v->qkv, v->ln1, gpt_param(m, P, GPT_QKVW, l), gpt_param(m, P, GPT_QKVB, l), N, C,
                  3 * C);
    o->attention_fwd(v->atty, v->att, v->qkv, B, T, C, NH);
    o->matmul_fwd(v->attproj, v->atty, gpt_param(m, P, GPT_ATTPROJW, l),
                  gpt_param(m, P, GPT_ATTPROJB, l), N, C, C);
    o->residual_fwd(v->res2, in, v->attproj, (size_t)N * C);
    o->layernorm_fwd(v->ln2, v->ln2_mean, v->ln2_rstd, v->res2, gpt_param(m, P, GPT_LN2W, l),
                     gpt_param(m, P, GPT_LN2B, l), N, C);
    o->matmul_fwd(v->fch, v->ln2, gpt_param(m, P, GPT_FCW, l), gpt_param(m, P, GPT_FCB, l), N, C,
                  4 * C);
    o->gelu_fwd(v->fch_gelu, v->fch, (size_t)N * 4 * C);
    o->matmul_fwd(v->fcproj, v->fch_gelu, gpt_param(m, P, GPT_FCPROJW, l),
                  gpt_param(m, P, GPT_FCPROJB, l), N, 4 * C, C);
    o->residual_fwd(v->res3, v->res2, v->fcproj, (size_t)N * C);
    in = v->res3;
  }
  o->layernorm_fwd(a->lnf, a->lnf_mean, a->lnf_rstd, in, gpt_param(m, P, GPT_LNFW, 0),
                   gpt_param(m, P, GPT_LNFB, 0), N, C);
  o->matmul_fwd(a->logits, a->lnf, gpt_param(m, P, GPT_WTE, 0), NULL, N, C, V);
  o->softmax_xent_fwd(a->losses, a->probs, a->logits, m->targets, N, V);
  o->download(m->host_losses, a->losses, (size_t)N * sizeof(float));
  double sum = 0;
  for (int i = 0; i < N; i++)
    sum += m->host_losses[i];
  return (float)(sum / N);
}

/* The backward pass: every op's gradients, in reverse order, added into m->grads. */
static void backward(struct gpt *m, float dloss) {
  const struct c4k_ops *o = m->ops;
  const struct gpt_config *c = &m->cfg;
  int B = m->B, T = c->context, C = c->width, NH = c->heads, V = c->vocab, N = B * T;
  struct gpt_acts *a = &m->acts_view, *d = &m->grads_view;
  float *P = m->params, *G = m->grads;
  o->zero(m->dacts, m->nacts * sizeof(float));
  o->softmax_xent_bwd(d->logits, a->probs, m->targets, dloss, N, V);
  o->matmul_bwd(d->lnf, gpt_param(m, G, GPT_WTE, 0), NULL, d->logits, a->lnf,
                gpt_param(m, P, GPT_WTE, 0), N, C, V);
  int L = c->layers;
  float *last_in = a->layer[L - 1].res3, *dlast_in = d->layer[L - 1].res3;
  o->layernorm_bwd(dlast_in, gpt_param(m, G, GPT_LNFW, 0), gpt_param(m, G, GPT_LNFB, 0), d->lnf,
                   last_in, gpt_param(m, P, GPT_LNFW, 0), a->lnf_mean, a->lnf_rstd, N, C);
  for (int l = L - 1; l >= 0; l--) {
    struct gpt_layer_acts *v = &a->layer[l], *dv = &d->layer[l];
    const float *in = l ? a->layer[l - 1].res3 : a->encoded;
    float *din = l ? d->layer[l - 1].res3 : d->encoded;
    o->residual_bwd(dv->res2, dv->fcproj, dv->res3, (size_t)N * C);
    o->matmul_bwd(dv->fch_gelu, gpt_param(m, G, GPT_FCPROJW, l), gpt_param(m, G, GPT_FCPROJB, l),
                  dv->fcproj, v->fch_gelu, gpt_param(m, P, GPT_FCPROJW, l), N, 4 * C, C);
    o->gelu_bwd(dv->fch, v->fch, dv->fch_gelu, (size_t)N * 4 * C);
    o->matmul_bwd(dv->ln2, gpt_param(m, G, GPT_FCW, l), gpt_param(m, G, GPT_FCB, l), dv->fch,
                  v->ln2, gpt_param(m, P, GPT_FCW, l), N, C, 4 * C);
    o->layernorm_bwd(dv->res2, gpt_param(m, G, GPT_LN2W, l), gpt_param(m, G, GPT_LN2B, l), dv->ln2,
                     v->res2, gpt_param(m, P, GPT_LN2W, l), v->ln2_mean, v->ln2_rstd, N, C);
    o->residual_bwd(din, dv->attproj, dv->res2, (size_t)N * C);
    o->matmul_bwd(dv->atty, gpt_param(m, G, GPT_ATTPROJW, l), gpt_param(m, G, GPT_ATTPROJB, l),
                  dv->attproj, v->atty, gpt_param(m, P, GPT_ATTPROJW, l), N, C, C);
    o->attention_bwd(dv->qkv, dv->att, dv->atty, v->qkv, v->att, B, T, C, NH);
    o->matmul_bwd(dv->ln1, gpt_param(m, G, GPT_QKVW, l), gpt_param(m, G, GPT_QKVB, l), dv->qkv,
                  v->ln1, gpt_param(m, P, GPT_QKVW, l), N, C, 3 * C);
    o->layernorm_bwd(din, gpt_param(m, G, GPT_LN1W, l), gpt_param(m, G, GPT_LN1B, l), dv->ln1, in,
                     gpt_param(m, P, GPT_LN1W, l), v->ln1_mean, v->ln1_rstd, N, C);
  }
  o->encoder_bwd(gpt_param(m, G, GPT_WTE, 0), gpt_param(m, G, GPT_WPE, 0), d->encoded, m->tokens, B,
                 T, C);
}

float gpt_step_microbatch(struct gpt *m, const int *tokens, const int *targets, float dloss) {
  float loss = forward(m, tokens, targets);
  backward(m, dloss);
  return loss;
}

float gpt_eval_microbatch(struct gpt *m, const int *tokens, const int *targets) {
  return forward(m, tokens, targets);
}

void gpt_adamw(struct gpt *m, float lr, float weight_decay, int t) {
  m->ops->adamw(m->params, m->grads, m->adam_m, m->adam_v, m->nparams, lr, 0.9f, 0.95f, 1e-8f,
                weight_decay, t);
}

double gpt_flops_per_token(const struct gpt *m) {
  const struct gpt_config *c = &m->cfg;
  /* 6 per parameter (forward 2, backward 4) plus attention's QK^T and AV: 6 * L * T * C
   * (averaged over the causal triangle: half of 12 L T C) */
  return 6.0 * (double)m->nparams + 6.0 * c->layers * (double)c->context * c->width;
}
