/* train_pipe.c -- a pipeline stage's setup and step: the 1F1B order, each forward waiting for
 * its input from the previous stage and sending its output on without waiting, each backward
 * waiting for its gradient from the next stage and sending the input's gradient back the same
 * way. A slot's send buffer is reused only once its last send is done. */
#include "train_pipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "planner.h"
#include "train_rank.h"

int train_pipe_even_layers(int layers, int stages, int stage, int *l0, int *l1) {
  if (stages < 1 || layers < stages || stage < 0 || stage >= stages) return C4_EINVAL;
  int split[stages];
  double even[stages];
  for (int s = 0; s < stages; s++)
    even[s] = 1.0;
  if (c4_split_layers(layers, stages, even, NULL, split) < 0) return C4_EINVAL;
  *l0 = 0;
  for (int s = 0; s < stage; s++)
    *l0 += split[s];
  *l1 = *l0 + split[stage];
  return 0;
}

/* The ring of this stage across the replicas: ranks stage, stage + P, stage + 2P, ... */
static int group_init(struct train_pipe *tp, struct dp *d, char *err, size_t errlen) {
  int n = d->world / tp->stages, members[n];
  if (n < 2) return 0;
  for (int i = 0; i < n; i++)
    members[i] = tp->stage + i * tp->stages;
  if (c4_hostcoll_ring_init_group(&tp->group, &d->api, 0, &d->bs, members, n)) {
    snprintf(err, errlen, "the ring of pipeline stage %d across %d replicas did not connect",
             tp->stage, n);
    return C4_EREMOTE;
  }
  tp->group_up = 1;
  return 0;
}

/* The most layers each stage can hold within stage_mem bytes (its slots, and the head on the
 * last stage, counted), at most what leaves every other stage one. */
static void caps(const struct train_pipe *tp, const struct gpt *model, int m, double stage_mem,
                 int *cap) {
  int L = model->cfg.layers;
  for (int s = 0; s < tp->stages; s++) {
    int slots = sched_1f1b_in_flight(s, tp->stages, m);
    cap[s] = 0;
    while (cap[s] < L - (tp->stages - 1) &&
           (double)gpt_stage_bytes(model, cap[s] + 1, s == tp->stages - 1, slots) <= stage_mem)
      cap[s]++;
  }
}

/* The plan of layers (tp->plan, tp->split: the even split), each stage capped to the layers that
 * fit in stage_mem (0: no cap) and the even split checked against the caps. Returns 0, or
 * C4_EINVAL / C4_ENOMEM with err (the caller frees tp). */
static int plan_layers(struct train_pipe *tp, const struct dp *d, const struct gpt *model,
                       int microbatches, double stage_mem, int resplit, char *err, size_t errlen) {
  int L = model->cfg.layers, stages = tp->stages, m = microbatches;
  tp->split = calloc((size_t)stages, sizeof *tp->split);
  for (int s = 0, l0, l1; tp->split && s < stages; s++)
    if (train_pipe_even_layers(L, stages, s, &l0, &l1) == 0) tp->split[s] = l1 - l0;
  if (!tp->split || tp->split[stages - 1] < 1) {
    snprintf(err, errlen, "%d layers cannot fill %d pipeline stages", L, stages);
    return C4_EINVAL;
  }
  int cap[stages];
  if (stage_mem > 0) caps(tp, model, m, stage_mem, cap);
  for (int s = 0; stage_mem > 0 && s < stages; s++)
    if (cap[s] < tp->split[s]) {
      snprintf(err, errlen,
               "--stage-mem %.0f MB does not hold stage %d's %d layers of the even split (%.1f MB)",
               stage_mem / 1048576, s, tp->split[s],
               (double)gpt_stage_bytes(model, tp->split[s], s == stages - 1,
                                       sched_1f1b_in_flight(s, stages, m)) /
                   1048576);
      return C4_EINVAL;
    }
  if (layer_plan_init(&tp->plan, stages, d->world / stages, L, microbatches,
                      stage_mem > 0 ? cap : NULL, resplit)) {
    snprintf(err, errlen, "out of memory for the layer plan");
    return C4_ENOMEM;
  }
  tp->plan_up = 1;
  return 0;
}

/* The step's order and the slots (the activations in flight), for m micro-batches a step at the
 * most. Returns 0, or C4_ENOMEM with err (the caller frees tp). */
static int alloc_slots(struct train_pipe *tp, struct gpt *model, int m, char *err, size_t errlen) {
  tp->slots = sched_1f1b_in_flight(tp->stage, tp->stages, m);
  size_t bytes = gpt_boundary_bytes(model), N = (size_t)model->B * model->cfg.context;
  tp->order = calloc((size_t)2 * m, sizeof *tp->order);
  tp->in = calloc((size_t)tp->slots, sizeof *tp->in);
  tp->out = calloc((size_t)tp->slots, sizeof *tp->out);
  tp->sent = calloc((size_t)tp->slots, sizeof *tp->sent);
  tp->tok = malloc(N * sizeof *tp->tok);
  tp->tgt = malloc(N * sizeof *tp->tgt);
  tp->seg = malloc(N * sizeof *tp->seg);
  int ok = tp->order && tp->in && tp->out && tp->sent && tp->tok && tp->tgt && tp->seg;
  for (int i = 0; ok && i < tp->slots; i++) {
    tp->in[i] = malloc(bytes);
    tp->out[i] = malloc(bytes);
    tp->sent[i] = -1;
    ok = tp->in[i] && tp->out[i];
  }
  if (!ok || gpt_slots(model, tp->slots, err, errlen)) {
    if (!ok) snprintf(err, errlen, "out of memory for %d pipeline slots", tp->slots);
    return C4_ENOMEM;
  }
  return 0;
}

int train_pipe_init(struct train_pipe *tp, struct dp *d, struct gpt *model, int rank, int stages,
                    int microbatches, double stage_mem, int resplit, char *err, size_t errlen) {
  memset(tp, 0, sizeof *tp);
  int m = microbatches; /* the most one replica can be given */
  tp->stage = rank % stages;
  tp->stages = stages;
  tp->cap = m;
  tp->slow = 1;
  int rc = plan_layers(tp, d, model, microbatches, stage_mem, resplit, err, errlen);
  if (rc) {
    train_pipe_free(tp);
    return rc;
  }
  tp->l0 = model->l0;
  tp->l1 = model->l1;
  model->time_layers = 1;
  rc = alloc_slots(tp, model, m, err, errlen);
  if (!rc && train_pipe_ends_alloc(tp, d, model)) {
    snprintf(err, errlen, "out of memory for the shared tensors' gradients");
    rc = C4_ENOMEM;
  }
  if (rc) {
    train_pipe_free(tp);
    return rc;
  }
  tp->m = tp->plan.data[rank / stages];
  sched_1f1b(tp->stage, stages, tp->m, tp->order);
  int prev = tp->stage > 0 ? rank - 1 : -1, next = tp->stage < stages - 1 ? rank + 1 : -1;
  if (pipe_init(&tp->link, d, prev, next, stages, err, errlen) || group_init(tp, d, err, errlen)) {
    train_pipe_free(tp);
    return C4_EREMOTE;
  }
  return 0;
}

/* The slots were made for the most micro-batches in flight at any m (train_pipe_init). */
int train_pipe_microbatches(struct train_pipe *tp, int m, char *err, size_t errlen) {
  if (m < 1 || m > tp->cap) {
    snprintf(err, errlen, "%d micro-batches for a pipeline made for 1 to %d", m, tp->cap);
    return C4_EINVAL;
  }
  tp->m = m;
  sched_1f1b(tp->stage, tp->stages, m, tp->order);
  return 0;
}

/* A pass's compute on its compute clock (gpt_compute_clock: CPU time on the CPU, wall time on a
 * GPU) and in wall time, the waits for a neighbour left out. */
struct spent {
  uint64_t cpu, wall;
};

static struct spent now(const struct gpt *model) {
  return (struct spent){gpt_compute_clock(model), c4_now_ns()};
}

static struct spent since(const struct gpt *model, struct spent t0) {
  struct spent t = now(model);
  return (struct spent){t.cpu - t0.cpu, t.wall - t0.wall};
}

static struct spent plus(struct spent a, struct spent b) {
  return (struct spent){a.cpu + b.cpu, a.wall + b.wall};
}

/* A pass computed for `took`: the drill makes it take tp->slow times as long, as a slower
 * device would (its wall time by sleeping, its CPU time by counting), and the step's busy
 * times count it. */
static void compute_done(struct train_pipe *tp, struct spent took) {
  double cpu = (double)took.cpu * 1e-9, s = (double)took.wall * 1e-9 * (tp->slow - 1);
  if (s < 0) s = 0;
  tp->work_s += cpu;
  tp->busy_s += cpu * (tp->slow > 1 ? tp->slow : 1);
  tp->wall_s += (double)took.wall * 1e-9 + s;
  train_sleep_s(s);
}

int train_pipe_fill_windows(void *windows, int mb, int *tokens, int *targets, int *seg_len) {
  const struct train_pipe_windows *w = windows;
  (void)seg_len;
  for (int b = 0; b < w->B; b++)
    text_data_sample(w->data, w->seed, (uint64_t)w->step, (uint64_t)(w->first + mb) * w->B + b,
                     w->T, tokens + b * w->T, targets + b * w->T);
  return 0;
}

/* Micro-batch mb's forward pass on slot sl: its input from the previous stage (at the size the
 * feed's micro-batch has), its output sent on without waiting. The sum of its position losses
 * into *loss_sum on the last stage. */
static int forward_pass(struct train_pipe *tp, struct gpt *model,
                        const struct train_pipe_feed *feed, int mb, int sl, double *loss_sum) {
  int last = tp->stage == tp->stages - 1, C = model->cfg.width;
  int nseg = feed->fill(feed->ctx, mb, tp->tok, tp->tgt, tp->seg);
  size_t bytes = gpt_boundary_bytes(model);
  if (nseg) {
    long rows = 0;
    for (int i = 0; i < nseg; i++)
      rows += tp->seg[i];
    bytes = (size_t)rows * C * sizeof(float);
  }
  if (tp->stage > 0 && pipe_recv(&tp->link, 0, tp->in[sl], bytes)) return C4_EREMOTE;
  struct spent t0 = now(model);
  if (nseg)
    *loss_sum += gpt_stage_forward_packed(model, sl, tp->tok, tp->tgt, tp->seg, nseg, tp->in[sl]);
  else
    *loss_sum += (double)gpt_stage_forward(model, sl, tp->tok, tp->tgt, tp->in[sl]) * model->B *
                 model->cfg.context;
  struct spent took = since(model, t0);
  if (!last) {
    if (pipe_wait(&tp->link, tp->sent[sl])) return C4_EREMOTE;
    t0 = now(model);
    gpt_stage_output(model, sl, tp->out[sl]);
    took = plus(took, since(model, t0));
  }
  compute_done(tp, took);
  if (!last && (tp->sent[sl] = pipe_isend(&tp->link, 1, tp->out[sl], bytes)) < 0) return C4_EREMOTE;
  return 0;
}

/* The backward pass of the micro-batch on slot sl: its output's gradient from the next stage, its
 * input's sent back without waiting. */
static int backward_pass(struct train_pipe *tp, struct gpt *model, int sl, float dloss) {
  int last = tp->stage == tp->stages - 1;
  size_t bytes = gpt_slot_boundary_bytes(model, sl);
  if (!last && pipe_recv(&tp->link, 1, tp->in[sl], bytes)) return C4_EREMOTE;
  struct spent t0 = now(model);
  gpt_stage_backward(model, sl, dloss, tp->in[sl]);
  struct spent took = since(model, t0);
  if (tp->stage > 0) {
    if (pipe_wait(&tp->link, tp->sent[sl])) return C4_EREMOTE;
    t0 = now(model);
    gpt_stage_input_grad(model, sl, tp->out[sl]);
    took = plus(took, since(model, t0));
  }
  compute_done(tp, took);
  if (tp->stage > 0 && (tp->sent[sl] = pipe_isend(&tp->link, 0, tp->out[sl], bytes)) < 0)
    return C4_EREMOTE;
  return 0;
}

/* The 1F1B order's passes (its forwards alone when backward is 0), then the last sends. */
static int run_order(struct train_pipe *tp, struct gpt *model, const struct train_pipe_feed *feed,
                     int backward, float dloss, double *loss_sum) {
  *loss_sum = 0;
  tp->busy_s = tp->wall_s = tp->work_s = 0;
  model->layers_s = 0;
  for (int k = 0; k < 2 * tp->m; k++) {
    int mb = tp->order[k].microbatch, sl = mb % tp->slots, rc = 0;
    if (!tp->order[k].backward)
      rc = forward_pass(tp, model, feed, mb, sl, loss_sum);
    else if (backward)
      rc = backward_pass(tp, model, sl, dloss);
    if (rc) return rc;
  }
  for (int i = 0; i < tp->slots; i++) { /* the step's last sends, before the buffers change */
    if (pipe_wait(&tp->link, tp->sent[i])) return C4_EREMOTE;
    tp->sent[i] = -1;
  }
  tp->layers_s = model->layers_s;
  return 0;
}

int train_pipe_step(struct train_pipe *tp, struct gpt *model, const struct train_pipe_feed *feed,
                    float dloss, double *loss_sum) {
  return run_order(tp, model, feed, 1, dloss, loss_sum);
}

int train_pipe_forward(struct train_pipe *tp, struct gpt *model, const struct train_pipe_feed *feed,
                       double *loss_sum) {
  return run_order(tp, model, feed, 0, 0, loss_sum);
}

void train_pipe_free(struct train_pipe *tp) {
  if (tp->plan_up) layer_plan_free(&tp->plan);
  if (tp->ends) tp->ends_ops->free(tp->ends);
  if (tp->group_up) c4_hostcoll_ring_close(&tp->group);
  if (tp->link.api) pipe_close(&tp->link);
  for (int i = 0; i < tp->slots; i++) {
    if (tp->in) free(tp->in[i]);
    if (tp->out) free(tp->out[i]);
  }
  free(tp->in);
  free(tp->out);
  free(tp->sent);
  free(tp->order);
  free(tp->split);
  free(tp->tok);
  free(tp->tgt);
  free(tp->seg);
  memset(tp, 0, sizeof *tp);
}
