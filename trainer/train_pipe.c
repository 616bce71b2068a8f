/* train_pipe.c -- a pipeline stage's step: the 1F1B order, each forward waiting for its input
 * from the previous stage and sending its output on without waiting, each backward waiting for
 * its gradient from the next stage and sending the input's gradient back the same way. A slot's
 * send buffer is reused only once its last send is done. */
#include "train_pipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_clock.h"
#include "planner.h"

int train_pipe_init(struct train_pipe *tp, struct dp *d, struct gpt *model, int rank, int stages,
                    int m, char *err, size_t errlen) {
  memset(tp, 0, sizeof *tp);
  int L = model->cfg.layers, split[stages];
  double even[stages];
  for (int s = 0; s < stages; s++)
    even[s] = 1.0;
  if (L < stages || c4_split_layers(L, stages, even, NULL, split) < 0) {
    snprintf(err, errlen, "%d layers cannot fill %d pipeline stages", L, stages);
    return -1;
  }
  tp->stage = rank % stages;
  tp->stages = stages;
  tp->m = m;
  for (int s = 0; s < tp->stage; s++)
    tp->l0 += split[s];
  tp->l1 = tp->l0 + split[tp->stage];
  tp->slots = sched_1f1b_in_flight(tp->stage, stages, m);
  size_t bytes = gpt_boundary_bytes(model), N = (size_t)model->B * model->cfg.context;
  tp->order = calloc((size_t)2 * m, sizeof *tp->order);
  tp->in = calloc((size_t)tp->slots, sizeof *tp->in);
  tp->out = calloc((size_t)tp->slots, sizeof *tp->out);
  tp->sent = calloc((size_t)tp->slots, sizeof *tp->sent);
  tp->tok = malloc(N * sizeof *tp->tok);
  tp->tgt = malloc(N * sizeof *tp->tgt);
  int ok = tp->order && tp->in && tp->out && tp->sent && tp->tok && tp->tgt;
  for (int i = 0; ok && i < tp->slots; i++) {
    tp->in[i] = malloc(bytes);
    tp->out[i] = malloc(bytes);
    tp->sent[i] = -1;
    ok = tp->in[i] && tp->out[i];
  }
  if (!ok || gpt_slots(model, tp->slots, err, errlen)) {
    if (ok) snprintf(err, errlen, "out of memory for %d pipeline slots", tp->slots);
    train_pipe_free(tp);
    return -1;
  }
  sched_1f1b(tp->stage, stages, m, tp->order);
  int prev = tp->stage > 0 ? rank - 1 : -1, next = tp->stage < stages - 1 ? rank + 1 : -1;
  if (pipe_init(&tp->link, d, prev, next, err, errlen)) {
    train_pipe_free(tp);
    return -1;
  }
  return 0;
}

int train_pipe_step(struct train_pipe *tp, struct gpt *model, const struct text_data *data,
                    unsigned long long seed, int step, int first, float dloss, double *loss_sum) {
  int B = model->B, T = model->cfg.context, last = tp->stage == tp->stages - 1;
  size_t bytes = gpt_boundary_bytes(model);
  *loss_sum = 0;
  tp->busy_s = 0;
  for (int k = 0; k < 2 * tp->m; k++) {
    int mb = tp->order[k].microbatch, sl = mb % tp->slots;
    if (!tp->order[k].backward) {
      for (int b = 0; b < B; b++)
        text_data_sample(data, seed, (uint64_t)step, (uint64_t)(first + mb) * B + b, T,
                         tp->tok + b * T, tp->tgt + b * T);
      if (tp->stage > 0 && pipe_recv(&tp->link, 0, tp->in[sl], bytes)) return -1;
      uint64_t t0 = c4_now_ns();
      float loss = gpt_stage_forward(model, sl, tp->l0, tp->l1, tp->tok, tp->tgt, tp->in[sl]);
      if (last) *loss_sum += (double)loss * B * T;
      if (!last) {
        if (pipe_wait(&tp->link, tp->sent[sl])) return -1;
        gpt_stage_output(model, sl, tp->l1, tp->out[sl]);
      }
      tp->busy_s += (double)(c4_now_ns() - t0) * 1e-9;
      if (!last && (tp->sent[sl] = pipe_isend(&tp->link, 1, tp->out[sl], bytes)) < 0) return -1;
    } else {
      if (!last && pipe_recv(&tp->link, 1, tp->in[sl], bytes)) return -1;
      uint64_t t0 = c4_now_ns();
      gpt_stage_backward(model, sl, tp->l0, tp->l1, dloss, tp->in[sl]);
      if (tp->stage > 0) {
        if (pipe_wait(&tp->link, tp->sent[sl])) return -1;
        gpt_stage_input_grad(model, sl, tp->l0, tp->out[sl]);
      }
      tp->busy_s += (double)(c4_now_ns() - t0) * 1e-9;
      if (tp->stage > 0 && (tp->sent[sl] = pipe_isend(&tp->link, 0, tp->out[sl], bytes)) < 0)
        return -1;
    }
  }
  for (int i = 0; i < tp->slots; i++) { /* the step's last sends, before the buffers change */
    if (pipe_wait(&tp->link, tp->sent[i])) return -1;
    tp->sent[i] = -1;
  }
  return 0;
}

void train_pipe_free(struct train_pipe *tp) {
  if (tp->link.api) pipe_close(&tp->link);
  for (int i = 0; i < tp->slots; i++) {
    if (tp->in) free(tp->in[i]);
    if (tp->out) free(tp->out[i]);
  }
  free(tp->in);
  free(tp->out);
  free(tp->sent);
  free(tp->order);
  free(tp->tok);
  free(tp->tgt);
  memset(tp, 0, sizeof *tp);
}
