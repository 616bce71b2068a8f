/* train_pipe_sync.c -- what a pipeline's ranks do together besides the step: sum the gradients
 * (a stage's layers over its replicas, the rest over all), gather the whole model for a
 * checkpoint, and compute the held-out loss through the stages. */
#include "train_pipe.h"

#include <assert.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "gpt_layers.h"

/* Copies the two ends of the gradients into the packed buffer (to 1) or back (to 0): segment j
 * of the packed buffer is segment j of the head end, then segment j of the tail end, then zeros up
 * to seg floats. Copies go through the kernels (the buffer is in the model's memory) and are exact:
 * x * 1 is x. */
static void pack_ends(struct gpt *model, float *packed, size_t seg, int world, int to) {
  size_t lay0 = model->at[GPT_LN1W], lay1 = model->at[GPT_LNFW], tail = model->nparams - lay1;
  for (int j = 0; j < world; j++) {
    size_t o0, n0, o1, n1;
    c4_hostcoll_segment(lay0, world, j, &o0, &n0);
    c4_hostcoll_segment(tail, world, j, &o1, &n1);
    float *p = packed + (size_t)j * seg, *g0 = model->grads + o0, *g1 = model->grads + lay1 + o1;
    model->ops->scale(to ? p : g0, to ? g0 : p, 1.0f, n0);
    model->ops->scale(to ? p + n0 : g1, to ? g1 : p + n0, 1.0f, n1);
  }
}

/* The embeddings' and the final layernorm's gradients, which sit at both ends of the window, go
 * through one world allreduce rather than two back to back: c4mon's straggler detector measures a
 * rank's compute between its collectives, and two with no work between them would halve its
 * signal (one is also cheaper). Packed by segments (pack_ends), every element is summed over the
 * ranks in the same order as in its own allreduce, so the bits are those of two allreduces as long
 * as the packed buffer fits in one bucket (--bucket-mb; beyond that, the same sums to float
 * reordering). */
static size_t ends_segment(const struct gpt *model, int world) {
  size_t lay0 = model->at[GPT_LN1W], tail = model->nparams - model->at[GPT_LNFW], n0, n1, o;
  c4_hostcoll_segment(lay0, world, 0, &o, &n0); /* segment 0 is the longest */
  c4_hostcoll_segment(tail, world, 0, &o, &n1);
  return n0 + n1;
}

int train_pipe_ends_alloc(struct train_pipe *tp, const struct dp *d, const struct gpt *model) {
  size_t n = ends_segment(model, d->world) * (size_t)d->world;
  tp->ends = model->ops->alloc(n * sizeof(float)); /* zeroed: the padding stays 0 */
  tp->ends_ops = model->ops;
  tp->ends_floats = tp->ends ? n : 0;
  return tp->ends ? 0 : C4_ENOMEM;
}

static int allreduce_ends(struct train_pipe *tp, struct dp *d, struct gpt *model) {
  size_t seg = ends_segment(model, d->world), n = seg * (size_t)d->world;
  assert(tp->ends_floats == n); /* the shared tensors keep their sizes whatever the window */
  pack_ends(model, tp->ends, seg, d->world, 1);
  if (dp_allreduce(d, tp->ends, n)) return C4_EREMOTE;
  pack_ends(model, tp->ends, seg, d->world, 0);
  return 0;
}

int train_pipe_allreduce(struct train_pipe *tp, struct dp *d, struct gpt *model) {
  size_t lay0 = model->at[GPT_LN1W], lay1 = model->at[GPT_LNFW]; /* the per-layer tensors */
  int rc = allreduce_ends(tp, d, model);
  if (rc) return rc;
  if (!tp->group_up) return 0;
  return dp_ring_allreduce(d, &tp->group, model->grads + lay0, lay1 - lay0) ? C4_EREMOTE : 0;
}

int train_pipe_gather(struct train_pipe *tp, struct dp *d, const struct gpt *model, float *full) {
  size_t F = gpt_full_floats(model), n = model->nparams;
  memset(full, 0, 3 * F * sizeof(float));
  float *win = d->rank < tp->stages ? malloc(n * sizeof(float)) : NULL;
  if (d->rank < tp->stages && !win) return C4_ENOMEM;
  const float *part[3] = {model->params, model->adam_m, model->adam_v};
  for (int k = 0; win && k < 3; k++) {
    model->ops->download(win, part[k], n * sizeof(float));
    gpt_window_to_full(model, win, full + (size_t)k * F);
    for (int p = 0; d->rank != 0 && p < GPT_NPARAMS; p++) /* rank 0 alone gives the shared ones */
      if (!gpt_is_layer_param(p))
        memset(full + (size_t)k * F + model->info[p].offset, 0,
               model->info[p].count * sizeof(float));
  }
  free(win);
  return dp_allreduce_host(d, full, 3 * F);
}

int train_pipe_eval(struct train_pipe *tp, struct dp *d, struct gpt *model,
                    const struct text_data *data, int windows, double *loss) {
  int B = model->B, T = model->cfg.context, last = tp->stage == tp->stages - 1;
  double sum = 0;
  for (int done = 0; d->rank < tp->stages && done < windows; done += B) {
    for (int b = 0; b < B; b++)
      text_data_eval(data, (done + b) % windows, windows, T, tp->tok + b * T, tp->tgt + b * T);
    if (tp->stage > 0 && pipe_recv(&tp->link, 0, tp->in[0], gpt_boundary_bytes(model)))
      return C4_EREMOTE;
    float l = gpt_stage_forward(model, 0, tp->tok, tp->tgt, tp->in[0]);
    if (last) sum += l;
    if (!last) {
      gpt_stage_output(model, 0, tp->out[0]);
      int h = pipe_isend(&tp->link, 1, tp->out[0], gpt_boundary_bytes(model));
      if (h < 0 || pipe_wait(&tp->link, h)) return C4_EREMOTE;
    }
  }
  double mine = last && windows > 0 && d->rank < tp->stages ? sum / ((windows + B - 1) / B) : 0;
  double *all = malloc((size_t)d->world * sizeof *all);
  int rc = all ? dp_allgather(d, &mine, all, sizeof mine) : -1;
  *loss = all ? all[tp->stages - 1] : 0;
  free(all);
  return rc;
}
