/* gpt_layers.c -- copies between a model's held window and host buffers, tensor by tensor (a
 * per-layer tensor's layers are contiguous in both, so each tensor is one or two copies). */
#include "gpt_layers.h"
#include "c4_err.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

size_t gpt_layer_floats(const struct gpt *m) {
  size_t n = 0;
  for (int p = 0; p < GPT_NPARAMS; p++)
    if (gpt_is_layer_param(p)) n += gpt_per_layer(m, p);
  return n;
}

size_t gpt_full_floats(const struct gpt *m) {
  return m->info[GPT_NPARAMS - 1].offset + m->info[GPT_NPARAMS - 1].count;
}

/* Where tensor p's first layer sits in part `part` of a pack of k layers. */
static size_t pack_at(const struct gpt *m, int part, int p, int k) {
  size_t at = (size_t)part * (size_t)k * gpt_layer_floats(m);
  for (int q = 0; q < p; q++)
    if (gpt_is_layer_param(q)) at += (size_t)k * gpt_per_layer(m, q);
  return at;
}

static float *part_of(const struct gpt *m, int part) {
  return part == 0 ? m->params : part == 1 ? m->adam_m : m->adam_v;
}

void gpt_pack_layers(const struct gpt *m, int a, int b, float *host) {
  for (int part = 0; part < 3; part++)
    for (int p = 0; p < GPT_NPARAMS; p++)
      if (gpt_is_layer_param(p) && b > a)
        m->ops->download(host + pack_at(m, part, p, b - a), gpt_param(m, part_of(m, part), p, a),
                         (size_t)(b - a) * gpt_per_layer(m, p) * sizeof(float));
}

int gpt_move_window(struct gpt *m, int l0, int l1, const float *below, const float *above,
                    char *err, size_t errlen) {
  int o0 = m->l0, o1 = m->l1;
  if (l0 < 0 || l1 <= l0 || l1 > m->cfg.layers || l0 > o1 || l1 < o0 || (l0 < o0 && !below) ||
      (l1 > o1 && !above)) {
    snprintf(err, errlen, "layers %d-%d cannot follow %d-%d", l0, l1 - 1, o0, o1 - 1);
    return C4_EINVAL;
  }
  size_t n = 0, at[GPT_NPARAMS];
  for (int p = 0; p < GPT_NPARAMS; p++) {
    at[p] = n;
    n += gpt_is_layer_param(p) ? gpt_per_layer(m, p) * (size_t)(l1 - l0) : m->info[p].count;
  }
  float *host = malloc(3 * n * sizeof(float));
  if (!host) {
    snprintf(err, errlen, "out of memory for layers %d-%d", l0, l1 - 1);
    return C4_ENOMEM;
  }
  int keep0 = l0 > o0 ? l0 : o0, keep1 = l1 < o1 ? l1 : o1;
  for (int part = 0; part < 3; part++)
    for (int p = 0; p < GPT_NPARAMS; p++) {
      float *dst = host + (size_t)part * n + at[p];
      if (!gpt_is_layer_param(p)) {
        m->ops->download(dst, gpt_param(m, part_of(m, part), p, 0),
                         m->info[p].count * sizeof(float));
        continue;
      }
      size_t per = gpt_per_layer(m, p);
      if (l0 < o0) /* from below: the whole pack [l0, o0) */
        memcpy(dst, below + pack_at(m, part, p, o0 - l0), (size_t)(o0 - l0) * per * sizeof(float));
      if (keep1 > keep0)
        m->ops->download(dst + (size_t)(keep0 - l0) * per, gpt_param(m, part_of(m, part), p, keep0),
                         (size_t)(keep1 - keep0) * per * sizeof(float));
      if (l1 > o1)
        memcpy(dst + (size_t)(o1 - l0) * per, above + pack_at(m, part, p, l1 - o1),
               (size_t)(l1 - o1) * per * sizeof(float));
    }
  int rc = gpt_window(m, l0, l1, host, host + n, host + 2 * n, err, errlen);
  free(host);
  return rc;
}

/* Copies tensor by tensor between the window layout and the whole model's; to_full picks the
 * direction. */
static void convert(const struct gpt *m, const float *src, float *dst, int to_full) {
  for (int p = 0; p < GPT_NPARAMS; p++) {
    int layered = gpt_is_layer_param(p);
    size_t per = layered ? gpt_per_layer(m, p) : 0;
    size_t count = layered ? per * (size_t)(m->l1 - m->l0) : m->info[p].count;
    size_t w = m->at[p], f = m->info[p].offset + per * (size_t)m->l0;
    memcpy(dst + (to_full ? f : w), src + (to_full ? w : f), count * sizeof(float));
  }
}

void gpt_window_to_full(const struct gpt *m, const float *win, float *full) {
  convert(m, win, full, 1);
}

void gpt_full_to_window(const struct gpt *m, const float *full, float *win) {
  convert(m, full, win, 0);
}
