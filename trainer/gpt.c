/* gpt.c -- the decoder's parameters and activations, and its forward and backward passes as a
 * sequence of c4k ops. Activations and their gradients share one layout (struct gpt_acts), so
 * the backward pass reads a tensor in one buffer and writes its gradient at the same place in
 * the other. */
#include "gpt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "gpt_rng.h"

/* Carves one activation buffer (base NULL: only counts) into views for layers [l0, l1): the
 * residual stream entering l0 (`encoded`: the embedding's output on the first stage, the previous
 * stage's on the others), each of those layers, and the head only when l1 is the last layer.
 * Returns floats used. */
static size_t carve(const struct gpt_config *c, int B, int l0, int l1, float *base,
                    struct gpt_acts *a) {
  size_t N = (size_t)B * c->context, C = c->width, V = c->vocab, at = 0;
  struct gpt_layer_acts none;
#define TAKE(ptr, n)                                                                               \
  do {                                                                                             \
    if (base) (ptr) = base + at;                                                                   \
    at += (n);                                                                                     \
  } while (0)
  TAKE(a->encoded, N * C);
  for (int l = l0; l < l1; l++) {
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
  if (l1 < c->layers) return at;
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
}

int gpt_is_layer_param(int p) {
  return p != GPT_WTE && p != GPT_WPE && p != GPT_LNFW && p != GPT_LNFB;
}

size_t gpt_per_layer(const struct gpt *m, int p) {
  return m->info[p].count / (size_t)m->cfg.layers;
}

/* Where each tensor starts when layers [l0, l1) are held (at[], may be NULL); returns the floats
 * of the whole window. With every layer held this is the checkpoint's layout (info[].offset). */
static size_t window_layout(const struct gpt *m, int l0, int l1, size_t *at) {
  size_t off = 0;
  for (int p = 0; p < GPT_NPARAMS; p++) {
    if (at) at[p] = off;
    off += gpt_is_layer_param(p) ? gpt_per_layer(m, p) * (size_t)(l1 - l0) : m->info[p].count;
  }
  return off;
}

size_t gpt_stage_bytes(const struct gpt *m, int layers, int with_head, int slots) {
  int L = m->cfg.layers;
  struct gpt_acts count_only = {0};
  size_t acts = with_head ? carve(&m->cfg, m->B, L - layers, L, NULL, &count_only)
                          : carve(&m->cfg, m->B, 0, layers, NULL, &count_only);
  return (4 * window_layout(m, 0, layers, NULL) + 2 * (size_t)slots * acts) * sizeof(float);
}

/* GPT-2's initialisation, drawn on the host in the checkpoint's parameter order so every device
 * and every layer split gets the same bits for a seed; only the held layers are stored. */
static void init_params(struct gpt *m, float *host, unsigned long long seed) {
  struct gpt_rng rng;
  gpt_rng_seed(&rng, seed);
  float resid_std = 0.02f / sqrtf(2.0f * (float)m->cfg.layers);
  for (int i = 0; i < GPT_NPARAMS; i++) {
    const struct gpt_tensor_info *t = &m->info[i];
    size_t per = gpt_is_layer_param(i) ? gpt_per_layer(m, i) : t->count;
    size_t from = gpt_is_layer_param(i) ? per * (size_t)m->l0 : 0;
    size_t to = gpt_is_layer_param(i) ? per * (size_t)m->l1 : t->count;
    float *p = host + m->at[i];
    int is_ln_weight = i == GPT_LN1W || i == GPT_LN2W || i == GPT_LNFW;
    int is_bias = i == GPT_QKVB || i == GPT_ATTPROJB || i == GPT_FCB || i == GPT_FCPROJB ||
                  i == GPT_LN1B || i == GPT_LN2B || i == GPT_LNFB;
    float std = (i == GPT_ATTPROJW || i == GPT_FCPROJW) ? resid_std : 0.02f;
    for (size_t k = 0; k < t->count; k++) {
      float v = is_ln_weight ? 1.0f : is_bias ? 0.0f : std * gpt_rng_normal(&rng);
      if (k >= from && k < to) p[k - from] = v;
    }
  }
}

/* Allocates slot sl's buffers and views for the held layers; 0 or C4_ENOMEM. */
static int alloc_slot(struct gpt *m, struct gpt_slot *sl) {
  const struct c4k_ops *o = m->ops;
  size_t N = (size_t)m->B * m->cfg.context;
  memset(sl, 0, sizeof *sl);
  sl->a.layer = calloc((size_t)m->cfg.layers, sizeof *sl->a.layer);
  sl->d.layer = calloc((size_t)m->cfg.layers, sizeof *sl->d.layer);
  sl->acts = o->alloc(m->nacts * sizeof(float));
  sl->dacts = o->alloc(m->nacts * sizeof(float));
  sl->tokens = o->alloc(N * sizeof(int));
  sl->targets = o->alloc(N * sizeof(int));
  sl->seg_len = malloc(N * sizeof(int));
  if (!sl->a.layer || !sl->d.layer || !sl->acts || !sl->dacts || !sl->tokens || !sl->targets ||
      !sl->seg_len)
    return C4_ENOMEM;
  carve(&m->cfg, m->B, m->l0, m->l1, sl->acts, &sl->a);
  carve(&m->cfg, m->B, m->l0, m->l1, sl->dacts, &sl->d);
  return 0;
}

static void free_slot(const struct c4k_ops *o, struct gpt_slot *sl) {
  void *dev[] = {sl->acts, sl->dacts, sl->tokens, sl->targets};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i]) o->free(dev[i]);
  free(sl->a.layer);
  free(sl->d.layer);
  free(sl->seg_len);
  memset(sl, 0, sizeof *sl);
}

int gpt_slots(struct gpt *m, int n, char *err, size_t errlen) {
  if (n <= m->nslots) return 0;
  struct gpt_slot *grown = realloc(m->slot, (size_t)n * sizeof *grown);
  if (!grown) {
    snprintf(err, errlen, "out of memory for %d micro-batches in flight", n);
    return C4_ENOMEM;
  }
  m->slot = grown;
  while (m->nslots < n) {
    if (alloc_slot(m, &m->slot[m->nslots])) {
      free_slot(m->ops, &m->slot[m->nslots]);
      snprintf(err, errlen, "out of memory for %d micro-batches of %zu activations in flight", n,
               m->nacts);
      return C4_ENOMEM;
    }
    m->nslots++;
  }
  return 0;
}

int gpt_window(struct gpt *m, int l0, int l1, float *params, float *adam_m, float *adam_v,
               char *err, size_t errlen) {
  const struct c4k_ops *o = m->ops;
  int n = m->nslots;
  for (int i = 0; i < m->nslots; i++)
    free_slot(o, &m->slot[i]);
  m->nslots = 0;
  void *dev[] = {m->params, m->grads, m->adam_m, m->adam_v};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i]) o->free(dev[i]);
  m->l0 = l0;
  m->l1 = l1;
  m->nparams = window_layout(m, l0, l1, m->at);
  struct gpt_acts count_only = {0};
  m->nacts = carve(&m->cfg, m->B, l0, l1, NULL, &count_only);
  size_t bytes = m->nparams * sizeof(float);
  m->params = o->alloc(bytes);
  m->grads = o->alloc(bytes);
  m->adam_m = o->alloc(bytes);
  m->adam_v = o->alloc(bytes);
  if (!m->params || !m->grads || !m->adam_m || !m->adam_v || gpt_slots(m, n, err, errlen)) {
    snprintf(err, errlen, "out of memory for layers %d-%d: %zu parameters, %zu activations", l0,
             l1 - 1, m->nparams, m->nacts);
    return C4_ENOMEM;
  }
  o->upload(m->params, params, bytes);
  o->upload(m->adam_m, adam_m, bytes);
  o->upload(m->adam_v, adam_v, bytes);
  return 0;
}

int gpt_init_layers(struct gpt *m, const struct gpt_config *cfg, const struct c4k_ops *ops, int B,
                    unsigned long long seed, int l0, int l1, char *err, size_t errlen) {
  memset(m, 0, sizeof *m);
  if (cfg->vocab < 2 || cfg->context < 1 || cfg->layers < 1 || cfg->heads < 1 || cfg->width < 1 ||
      cfg->width % cfg->heads != 0 || B < 1) {
    snprintf(err, errlen,
             "bad model: vocab %d, context %d, layers %d, heads %d, width %d (a multiple of "
             "heads), micro-batch %d: all must be positive",
             cfg->vocab, cfg->context, cfg->layers, cfg->heads, cfg->width, B);
    return C4_EINVAL;
  }
  if (l0 < 0 || l1 <= l0 || l1 > cfg->layers) {
    snprintf(err, errlen, "layers %d to %d are not a range of the model's %d", l0, l1 - 1,
             cfg->layers);
    return C4_EINVAL;
  }
  m->cfg = *cfg;
  m->ops = ops;
  m->B = B;
  m->l0 = l0;
  m->l1 = l1;
  layout_params(m);
  m->nparams = window_layout(m, l0, l1, m->at);
  struct gpt_acts count_only = {0};
  m->nacts = carve(cfg, B, l0, l1, NULL, &count_only);
  size_t N = (size_t)B * cfg->context;
  m->host_losses = malloc(N * sizeof(float));
  float *host = malloc(m->nparams * sizeof(float));
  m->params = ops->alloc(m->nparams * sizeof(float));
  m->grads = ops->alloc(m->nparams * sizeof(float));
  m->adam_m = ops->alloc(m->nparams * sizeof(float));
  m->adam_v = ops->alloc(m->nparams * sizeof(float));
  if (!m->host_losses || !host || !m->params || !m->grads || !m->adam_m || !m->adam_v ||
      gpt_slots(m, 1, err, errlen)) {
    snprintf(err, errlen, "out of memory for a model of %zu parameters and %zu activations",
             m->nparams, m->nacts);
    free(host);
    gpt_free(m);
    return C4_ENOMEM;
  }
  init_params(m, host, seed);
  ops->upload(m->params, host, m->nparams * sizeof(float));
  free(host);
  return 0;
}

int gpt_init(struct gpt *m, const struct gpt_config *cfg, const struct c4k_ops *ops, int B,
             unsigned long long seed, char *err, size_t errlen) {
  return gpt_init_layers(m, cfg, ops, B, seed, 0, cfg->layers > 0 ? cfg->layers : 1, err, errlen);
}

void gpt_free(struct gpt *m) {
  const struct c4k_ops *o = m->ops;
  void *dev[] = {m->params, m->grads, m->adam_m, m->adam_v};
  for (size_t i = 0; i < sizeof dev / sizeof dev[0]; i++)
    if (dev[i]) o->free(dev[i]);
  for (int i = 0; i < m->nslots; i++)
    free_slot(o, &m->slot[i]);
  free(m->slot);
  free(m->host_losses);
  memset(m, 0, sizeof *m);
}

void gpt_zero_grad(struct gpt *m) { m->ops->zero(m->grads, m->nparams * sizeof(float)); }

float *gpt_param(const struct gpt *m, float *base, enum gpt_param p, int layer) {
  return base + m->at[p] +
         (gpt_is_layer_param(p) ? (size_t)(layer - m->l0) * gpt_per_layer(m, p) : 0);
}

uint64_t gpt_compute_clock(const struct gpt *m) {
  m->ops->sync();
  return strcmp(m->ops->name, "cpu") == 0 ? c4_thread_cpu_ns() : c4_now_ns();
}

/* gpt_compute_clock when m->time_layers asks for it (a sync per pass costs a GPU its overlap, so
 * the data-parallel path does not); else 0. */
static uint64_t layer_clock(const struct gpt *m) {
  return m->time_layers ? gpt_compute_clock(m) : 0;
}

/* Rows (positions) of the micro-batch in slot sl: B x T, or a packed one's tokens. */
static int slot_rows(const struct gpt *m, const struct gpt_slot *sl) {
  int n = 0;
  for (int i = 0; i < sl->nseg; i++)
    n += sl->seg_len[i];
  return sl->nseg ? n : m->B * m->cfg.context;
}

/* The embedding (forward, or its backward into the gradients): the whole B x T micro-batch, or
 * each sequence of a packed one as a batch of one from position 0, so its positions restart. */
static void encode(struct gpt *m, struct gpt_slot *sl, int bwd) {
  const struct c4k_ops *o = m->ops;
  int C = m->cfg.width, at = 0;
  float *P = m->params, *G = m->grads;
  for (int i = 0; i < (sl->nseg ? sl->nseg : 1); i++) {
    int B = sl->nseg ? 1 : m->B, T = sl->nseg ? sl->seg_len[i] : m->cfg.context;
    size_t row = (size_t)at * C;
    if (bwd)
      o->encoder_bwd(gpt_param(m, G, GPT_WTE, 0), gpt_param(m, G, GPT_WPE, 0), sl->d.encoded + row,
                     sl->tokens + at, B, T, C);
    else
      o->encoder_fwd(sl->a.encoded + row, sl->tokens + at, gpt_param(m, P, GPT_WTE, 0),
                     gpt_param(m, P, GPT_WPE, 0), B, T, C);
    at += B * T;
  }
}

/* Causal self-attention of one layer (v; dv and bwd for its backward pass). A packed micro-batch
 * is attended sequence by sequence, each a batch of one of its own length: the block-diagonal
 * mask, so no position sees another sequence, and no work is spent on the blocks it masks. A
 * sequence's scores (NH x len x len) follow the previous one's in att: they take NH x sum(len^2)
 * floats, at most B x NH x T x T as each len <= T and sum(len) <= B x T. */
static void attend(struct gpt *m, struct gpt_slot *sl, struct gpt_layer_acts *v,
                   struct gpt_layer_acts *dv, int bwd) {
  const struct c4k_ops *o = m->ops;
  int C = m->cfg.width, NH = m->cfg.heads, at = 0;
  size_t att = 0;
  for (int i = 0; i < (sl->nseg ? sl->nseg : 1); i++) {
    int B = sl->nseg ? 1 : m->B, T = sl->nseg ? sl->seg_len[i] : m->cfg.context;
    size_t q = (size_t)at * 3 * C, y = (size_t)at * C;
    if (bwd)
      o->attention_bwd(dv->qkv + q, dv->att + att, dv->atty + y, v->qkv + q, v->att + att, B, T, C,
                       NH);
    else
      o->attention_fwd(v->atty + y, v->att + att, v->qkv + q, B, T, C, NH);
    at += B * T;
    att += (size_t)B * NH * T * T;
  }
}

/* The forward pass of the held layers [l0, l1) on slot sl; the embedding first when l0 is 0 (a
 * later stage's input is already in place in `encoded`), the head and the loss when l1 is the
 * last layer. Returns the sum of the position losses, 0 without the head. */
static double forward(struct gpt *m, struct gpt_slot *sl) {
  int l0 = m->l0, l1 = m->l1;
  const struct c4k_ops *o = m->ops;
  const struct gpt_config *c = &m->cfg;
  int C = c->width, V = c->vocab, N = slot_rows(m, sl);
  struct gpt_acts *a = &sl->a;
  float *P = m->params;
  if (l0 == 0) encode(m, sl, 0);
  uint64_t t1 = layer_clock(m);
  const float *in = a->encoded;
  for (int l = l0; l < l1; l++) {
    struct gpt_layer_acts *v = &a->layer[l];
    o->layernorm_fwd(v->ln1, v->ln1_mean, v->ln1_rstd, in, gpt_param(m, P, GPT_LN1W, l),
                     gpt_param(m, P, GPT_LN1B, l), N, C);
    o->matmul_fwd(v->qkv, v->ln1, gpt_param(m, P, GPT_QKVW, l), gpt_param(m, P, GPT_QKVB, l), N, C,
                  3 * C);
    attend(m, sl, v, NULL, 0);
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
  m->layers_s += (double)(layer_clock(m) - t1) * 1e-9;
  if (l1 < c->layers) return 0;
  o->layernorm_fwd(a->lnf, a->lnf_mean, a->lnf_rstd, in, gpt_param(m, P, GPT_LNFW, 0),
                   gpt_param(m, P, GPT_LNFB, 0), N, C);
  o->matmul_fwd(a->logits, a->lnf, gpt_param(m, P, GPT_WTE, 0), NULL, N, C, V);
  o->softmax_xent_fwd(a->losses, a->probs, a->logits, sl->targets, N, V);
  o->download(m->host_losses, a->losses, (size_t)N * sizeof(float));
  double sum = 0;
  for (int i = 0; i < N; i++)
    sum += m->host_losses[i];
  return sum;
}

/* The backward pass of the held layers [l0, l1) on slot sl, in reverse order, adding into
 * m->grads: from the loss when l1 is the last layer, else from the gradient already in place at
 * the output of layer l1 - 1; through the embedding when l0 is 0, else leaving the input's
 * gradient in d->encoded. The slot's gradients were zeroed. */
static void backward(struct gpt *m, struct gpt_slot *sl, float dloss) {
  int l0 = m->l0, l1 = m->l1;
  const struct c4k_ops *o = m->ops;
  const struct gpt_config *c = &m->cfg;
  int C = c->width, V = c->vocab, N = slot_rows(m, sl);
  struct gpt_acts *a = &sl->a, *d = &sl->d;
  float *P = m->params, *G = m->grads;
  int L = c->layers;
  if (l1 == L) {
    o->softmax_xent_bwd(d->logits, a->probs, sl->targets, dloss, N, V);
    o->matmul_bwd(d->lnf, gpt_param(m, G, GPT_WTE, 0), NULL, d->logits, a->lnf,
                  gpt_param(m, P, GPT_WTE, 0), N, C, V);
    o->layernorm_bwd(d->layer[L - 1].res3, gpt_param(m, G, GPT_LNFW, 0),
                     gpt_param(m, G, GPT_LNFB, 0), d->lnf, a->layer[L - 1].res3,
                     gpt_param(m, P, GPT_LNFW, 0), a->lnf_mean, a->lnf_rstd, N, C);
  }
  uint64_t t1 = layer_clock(m);
  for (int l = l1 - 1; l >= l0; l--) {
    struct gpt_layer_acts *v = &a->layer[l], *dv = &d->layer[l];
    const float *in = l > l0 ? a->layer[l - 1].res3 : a->encoded;
    float *din = l > l0 ? d->layer[l - 1].res3 : d->encoded;
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
    attend(m, sl, v, dv, 1);
    o->matmul_bwd(dv->ln1, gpt_param(m, G, GPT_QKVW, l), gpt_param(m, G, GPT_QKVB, l), dv->qkv,
                  v->ln1, gpt_param(m, P, GPT_QKVW, l), N, C, 3 * C);
    o->layernorm_bwd(din, gpt_param(m, G, GPT_LN1W, l), gpt_param(m, G, GPT_LN1B, l), dv->ln1, in,
                     gpt_param(m, P, GPT_LN1W, l), v->ln1_mean, v->ln1_rstd, N, C);
  }
  m->layers_s += (double)(layer_clock(m) - t1) * 1e-9;
  if (l0 == 0) encode(m, sl, 1);
}

static void upload_batch(struct gpt *m, struct gpt_slot *sl, const int *tokens,
                         const int *targets) {
  size_t n = (size_t)m->B * m->cfg.context * sizeof(int);
  sl->nseg = 0;
  m->ops->upload(sl->tokens, tokens, n);
  m->ops->upload(sl->targets, targets, n);
}

float gpt_step_microbatch(struct gpt *m, const int *tokens, const int *targets, float dloss) {
  upload_batch(m, &m->slot[0], tokens, targets);
  double loss = forward(m, &m->slot[0]);
  m->ops->zero(m->slot[0].dacts, m->nacts * sizeof(float));
  backward(m, &m->slot[0], dloss);
  return (float)(loss / ((double)m->B * m->cfg.context));
}

float gpt_eval_microbatch(struct gpt *m, const int *tokens, const int *targets) {
  upload_batch(m, &m->slot[0], tokens, targets);
  return (float)(forward(m, &m->slot[0]) / ((double)m->B * m->cfg.context));
}

int gpt_packed_fits(const struct gpt *m, const int *seg_len, int nseg) {
  long n = 0;
  for (int i = 0; i < nseg; i++) {
    if (seg_len[i] < 1 || seg_len[i] > m->cfg.context) return 0;
    n += seg_len[i];
  }
  return nseg > 0 && n <= (long)m->B * m->cfg.context;
}

/* Uploads a packed micro-batch into slot sl; its tokens are the sum of seg_len. */
static void upload_packed(struct gpt *m, struct gpt_slot *sl, const int *tokens, const int *targets,
                          const int *seg_len, int nseg) {
  memcpy(sl->seg_len, seg_len, (size_t)nseg * sizeof(int));
  sl->nseg = nseg;
  size_t n = (size_t)slot_rows(m, sl) * sizeof(int);
  m->ops->upload(sl->tokens, tokens, n);
  m->ops->upload(sl->targets, targets, n);
}

double gpt_step_packed(struct gpt *m, const int *tokens, const int *targets, const int *seg_len,
                       int nseg, float dloss) {
  upload_packed(m, &m->slot[0], tokens, targets, seg_len, nseg);
  double loss = forward(m, &m->slot[0]);
  m->ops->zero(m->slot[0].dacts, m->nacts * sizeof(float));
  backward(m, &m->slot[0], dloss);
  return loss;
}

double gpt_eval_packed(struct gpt *m, const int *tokens, const int *targets, const int *seg_len,
                       int nseg) {
  upload_packed(m, &m->slot[0], tokens, targets, seg_len, nseg);
  return forward(m, &m->slot[0]);
}

float gpt_stage_forward(struct gpt *m, int sl, const int *tokens, const int *targets,
                        const float *in) {
  upload_batch(m, &m->slot[sl], tokens, targets);
  if (m->l0 > 0) m->ops->upload(m->slot[sl].a.encoded, in, gpt_boundary_bytes(m));
  return (float)(forward(m, &m->slot[sl]) / ((double)m->B * m->cfg.context));
}

double gpt_stage_forward_packed(struct gpt *m, int sl, const int *tokens, const int *targets,
                                const int *seg_len, int nseg, const float *in) {
  upload_packed(m, &m->slot[sl], tokens, targets, seg_len, nseg);
  if (m->l0 > 0) m->ops->upload(m->slot[sl].a.encoded, in, gpt_slot_boundary_bytes(m, sl));
  return forward(m, &m->slot[sl]);
}

void gpt_stage_output(struct gpt *m, int sl, float *out) {
  m->ops->download(out, m->slot[sl].a.layer[m->l1 - 1].res3, gpt_slot_boundary_bytes(m, sl));
}

void gpt_stage_backward(struct gpt *m, int sl, float dloss, const float *dout) {
  m->ops->zero(m->slot[sl].dacts, m->nacts * sizeof(float));
  if (m->l1 < m->cfg.layers)
    m->ops->upload(m->slot[sl].d.layer[m->l1 - 1].res3, dout, gpt_slot_boundary_bytes(m, sl));
  backward(m, &m->slot[sl], dloss);
}

void gpt_stage_input_grad(struct gpt *m, int sl, float *din) {
  m->ops->download(din, m->slot[sl].d.encoded, gpt_slot_boundary_bytes(m, sl));
}

size_t gpt_boundary_bytes(const struct gpt *m) {
  return (size_t)m->B * m->cfg.context * m->cfg.width * sizeof(float);
}

size_t gpt_slot_boundary_bytes(const struct gpt *m, int sl) {
  return (size_t)slot_rows(m, &m->slot[sl]) * m->cfg.width * sizeof(float);
}

void gpt_adamw(struct gpt *m, float lr, float weight_decay, int t) {
  m->ops->adamw(m->params, m->grads, m->adam_m, m->adam_v, m->nparams, lr, 0.9f, 0.95f, 1e-8f,
                weight_decay, t);
}

double gpt_flops_per_token(const struct gpt *m) {
  const struct gpt_config *c = &m->cfg;
  /* 6 per parameter (forward 2, backward 4) plus attention's QK^T and AV: 6 * L * T * C
   * (averaged over the causal triangle: half of 12 L T C) */
  return 6.0 * (double)window_layout(m, 0, c->layers, NULL) +
         6.0 * c->layers * (double)c->context * c->width;
}
