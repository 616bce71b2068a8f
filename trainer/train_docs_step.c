/* train_docs_step.c -- one step of training on documents: every rank draws the same sequences,
 * computes the same assignment by every policy (the first stage; the cost model predicts each),
 * packs its own share (or its pipeline's) into micro-batches and runs them, the gradients and
 * reports exchanged, the cost model fed; and the held-out loss through the same packing. */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "assign_policy.h"
#include "c4_clock.h"
#include "relayout.h"
#include "seq_assign.h"
#include "train_docs_run.h"
#include "train_rank.h"

/* Runs sequences sel[0..n) (indices into d) packed into micro-batches; mb_of[k] names each one's
 * micro-batch (nmb of them). Training (dloss > 0) adds gradients, evaluation (dloss 0) does not.
 * The drill's slowdown sleeps after each micro-batch. Returns the sum of the position losses. */
static double run_packed(struct gpt *m, const struct doc_set *d, const int *sel, int n,
                         const int *mb_of, int nmb, struct docs_step_bufs *b, float dloss,
                         double slow) {
  double loss = 0;
  for (int k = 0; k < nmb; k++) {
    uint64_t t0 = c4_now_ns();
    int at = 0, nseg = 0;
    for (int i = 0; i < n; i++) {
      if (mb_of[i] != k) continue;
      docs_copy(d, sel[i], b->tok + at, b->tgt + at);
      at += d->len[sel[i]];
      b->seg[nseg++] = d->len[sel[i]];
    }
    loss += dloss > 0 ? gpt_step_packed(m, b->tok, b->tgt, b->seg, nseg, dloss)
                      : gpt_eval_packed(m, b->tok, b->tgt, b->seg, nseg);
    train_stretch(t0, slow);
  }
  return loss;
}

/* Packed micro-batches as a pipeline's feed: micro-batch mb is the sequences sel[i] with
 * mb_of[i] == mb0 + mb. */
struct docs_feed {
  const struct doc_set *d;
  const int *sel, *mb_of;
  int n, mb0;
};

static int fill_packed(void *feed, int mb, int *tokens, int *targets, int *seg_len) {
  const struct docs_feed *f = feed;
  int at = 0, nseg = 0;
  for (int i = 0; i < f->n; i++) {
    if (f->mb_of[i] != f->mb0 + mb) continue;
    docs_copy(f->d, f->sel[i], tokens + at, targets + at);
    at += f->d->len[f->sel[i]];
    seg_len[nseg++] = f->d->len[f->sel[i]];
  }
  return nseg;
}

/* The first stage for this step by every policy, b->rank_of left as `policy`'s; pred[p] is the
 * time the cost model predicts for policy p's assignment (its slowest rank's compute), so that
 * one run tells what each policy would give on the same steps. */
static void assign_step(const struct train_opts *o, int policy, const struct seq_cost *model,
                        int world, int n, struct docs_step_bufs *b, double *pred) {
  double ones[world], risk[world];
  for (int i = 0; i < world; i++)
    ones[i] = 1.0;
  seq_cost_risk_speed(model, risk);
  const double *speed = o->resplit ? model->speed : ones;
  for (int i = 0; i < n; i++) {
    b->model_cost[i] = seq_cost_of(model, b->len[i]);
    b->cost[i] = (double)b->len[i];
  }
  for (int k = 1; k <= TRAIN_ASSIGN_POLICIES; k++) {
    int p = (policy + k) % TRAIN_ASSIGN_POLICIES; /* policy's last: its rank_of stays */
    if (p == TRAIN_ASSIGN_COST)
      seq_assign_ranks(n, b->model_cost, world, o->resplit ? risk : ones, model->fixed, b->rank_of);
    else if (p == TRAIN_ASSIGN_TOKENS)
      seq_assign_in_order(n, b->cost, world, speed, 0, b->rank_of);
    else
      seq_assign_ranks(n, b->cost, world, speed, 0, b->rank_of);
    pred[p] = seq_assign_time(n, b->model_cost, world, model->speed, model->fixed, b->rank_of);
  }
}

double docs_eval(struct docs_run *s) {
  const struct doc_set *d = &s->d;
  struct docs_step_bufs *b = &s->b;
  int n = d->n - d->ntrain < s->o->eval_windows ? d->n - d->ntrain : s->o->eval_windows;
  if (n > b->max_seq) n = b->max_seq;
  if (n < 1 || (s->pp == 1 && s->rank != 0)) return 0;
  long tokens = 0;
  for (int i = 0; i < n; i++) {
    b->mine[i] = d->ntrain + i;
    b->mine_len[i] = d->len[d->ntrain + i];
    tokens += b->mine_len[i];
  }
  int nmb = seq_assign_pack(n, b->mine_len, (int)s->cap, b->mb_of);
  if (s->pp == 1) return run_packed(&s->m, d, b->mine, n, b->mb_of, nmb, b, 0, 1) / (double)tokens;
  double sum = 0, part, all[s->world];
  struct docs_feed feed = {d, b->mine, b->mb_of, n, 0};
  struct train_pipe_feed pf = {fill_packed, &feed};
  for (; s->replica == 0 && feed.mb0 < nmb; feed.mb0 += s->tp.cap) { /* a pipeline's worth */
    int m = nmb - feed.mb0 < s->tp.cap ? nmb - feed.mb0 : s->tp.cap;
    if (train_pipe_microbatches(&s->tp, m, s->err, sizeof s->err) ||
        train_pipe_forward(&s->tp, &s->m, &pf, &part))
      return NAN;
    sum += part;
  }
  if (dp_allgather(&s->dp, &sum, all, sizeof sum)) return NAN;
  return all[s->pp - 1] / (double)tokens; /* pipeline 0's last stage */
}

/* This rank's (or its pipeline's) share of the step's sequences, packed and run; its report
 * filled: with --pp, the stage's wall time for the step, waits included, and the last stage's
 * losses. Returns 0, or C4TRAIN_EXIT_PEER_LOST when a pipeline neighbour was lost. */
static int docs_compute(struct docs_run *s, int step, int n, long tokens,
                        struct docs_report *mine) {
  const struct train_opts *o = s->o;
  struct docs_step_bufs *b = &s->b;
  int nmine = 0;
  for (int i = 0; i < n; i++)
    if (b->rank_of[i] == s->replica) {
      b->mine[nmine] = b->idx[i];
      b->mine_len[nmine++] = b->len[i];
      seq_cost_features(&s->model, b->len[i], mine->f);
    }
  int nmb = seq_assign_pack(nmine, b->mine_len, (int)s->cap, b->mb_of);
  double slow = train_slow_factor(o, s->orig_rank, step);
  gpt_zero_grad(&s->m);
  uint64_t t0 = c4_now_ns();
  if (s->pp == 1) {
    mine->loss_sum =
        run_packed(&s->m, &s->d, b->mine, nmine, b->mb_of, nmb, b, 1.0f / (float)tokens, slow);
  } else if (nmb > 0) { /* a pipeline given nothing this step has nothing to pass on */
    struct docs_feed feed = {&s->d, b->mine, b->mb_of, nmine, 0};
    struct train_pipe_feed pf = {fill_packed, &feed};
    s->tp.slow = slow;
    if (train_pipe_microbatches(&s->tp, nmb, s->err, sizeof s->err) ||
        train_pipe_step(&s->tp, &s->m, &pf, 1.0f / (float)tokens, &mine->loss_sum)) {
      fprintf(stderr, "c4train: rank %d: a pipeline neighbour was lost at step %d\n", s->rank,
              step + 1);
      return C4TRAIN_EXIT_PEER_LOST;
    }
  }
  s->ops->sync();
  mine->compute_s = (double)(c4_now_ns() - t0) * 1e-9;
  return 0;
}

/* Every rank's report folded into its pipeline's: the losses summed (the last stage's), the
 * slowest stage's time, the first stage's features (every stage of a pipeline ran the same
 * sequences). Without --pp each rank is its own. */
static void docs_fold(struct docs_run *s) {
  for (int p = 0; p < s->nrep; p++) {
    struct docs_report *to = &s->rrep[p];
    *to = s->rep[p * s->pp];
    for (int k = 1; k < s->pp; k++) {
      to->loss_sum += s->rep[p * s->pp + k].loss_sum;
      to->compute_s = fmax(to->compute_s, s->rep[p * s->pp + k].compute_s);
    }
  }
}

/* The step's loss, its record (r: policy, tokens and predictions already in) and the cost
 * model's sample (past this run's first step, which warms caches). */
static void docs_account(struct docs_run *s, int step, struct docs_step_rec *r,
                         const double *rank_pred, uint64_t t_step) {
  double loss = 0, measured = 0, predicted = 0;
  r->compute = 0;
  for (int i = 0; i < s->nrep; i++) {
    loss += s->rrep[i].loss_sum;
    r->compute = fmax(r->compute, s->rrep[i].compute_s);
    measured += s->rrep[i].compute_s / s->model.speed[i];
    predicted += rank_pred[i] / s->model.speed[i];
    memcpy(s->samples[i].f, s->rrep[i].f, sizeof s->samples[i].f);
    s->samples[i].secs = s->rrep[i].compute_s;
  }
  s->last_loss = loss / r->tokens;
  r->load = predicted > 0 ? measured / predicted : 1;
  if (step > s->first) seq_cost_add(&s->model, s->samples);
  r->secs = (double)(c4_now_ns() - t_step) * 1e-9;
  r->t_start_ns = t_step;
}

int docs_step_run(struct docs_run *s, int step) {
  const struct train_opts *o = s->o;
  struct docs_step_bufs *b = &s->b;
  struct docs_step_rec *r = &s->rec[step];
  uint64_t t_step = c4_now_ns();
  dp_step(&s->dp, step + 1);
  /* rotate: each draw three steps running, once by each policy, in turn forwards and backwards */
  int rotate = o->assign == TRAIN_ASSIGN_ROTATE, k = step % TRAIN_ASSIGN_POLICIES;
  uint64_t draw = (uint64_t)(rotate ? step / TRAIN_ASSIGN_POLICIES : step);
  int n = docs_step(&s->d, o->seed, draw, s->budget, b->idx, b->max_seq);
  long tokens = 0;
  for (int i = 0; i < n; i++) {
    b->len[i] = s->d.len[b->idx[i]];
    tokens += b->len[i];
  }
  r->policy = !rotate ? o->assign : draw % 2 ? TRAIN_ASSIGN_POLICIES - 1 - k : k;
  r->fitted = s->model.fitted;
  r->tokens = (double)tokens;
  double rank_pred[s->nrep];
  assign_step(o, r->policy, &s->model, s->nrep, n, b, r->pred);
  for (int k = 0; k < s->nrep; k++)
    rank_pred[k] = s->model.fixed;
  for (int i = 0; i < n; i++)
    rank_pred[b->rank_of[i]] += b->model_cost[i];
  for (int k = 0; k < s->nrep; k++)
    rank_pred[k] = r->fitted ? rank_pred[k] * s->model.speed[k] : 0;
  struct docs_report mine = {0};
  int rc = docs_compute(s, step, n, tokens, &mine);
  if (rc) return rc;
  mine.relayout = relayout_asked();
  if ((s->pp > 1 ? train_pipe_allreduce(&s->tp, &s->dp, &s->m)
                 : dp_allreduce(&s->dp, s->m.grads, s->m.nparams)) ||
      dp_gather_step(&s->dp, &mine, s->rep, sizeof mine)) {
    fprintf(stderr, "c4train: rank %d: a peer was lost at step %d\n", s->rank, step + 1);
    return C4TRAIN_EXIT_PEER_LOST;
  }
  docs_fold(s);
  float lr = step < o->warmup ? o->lr * (float)(step + 1) / (float)o->warmup : o->lr;
  gpt_adamw(&s->m, lr, o->weight_decay, step + 1);
  docs_account(s, step, r, rank_pred, t_step);
  if (s->rank == 0)
    docs_print_step(s->jf, !o->json, step + 1, s->last_loss, r, s->rrep, rank_pred, s->nrep);
  return 0;
}
