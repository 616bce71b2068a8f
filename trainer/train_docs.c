/* train_docs.c -- the training loop on documents. Each step every rank draws the same sequences
 * (docs_step), computes the same assignment from the same model (first stage), packs its own
 * share into micro-batches (second stage) and runs them with dloss = 1 / the step's tokens, so
 * that the summed gradient is that of the mean loss over every token of the step, however the
 * sequences were split. Then one allgather of (loss, tokens, squared tokens, compute time) per
 * rank feeds the cost model on every rank alike, so all agree on the next assignment without
 * another exchange. With --ckpt-dir the run resumes from the newest checkpoint on any number of
 * ranks (a step names its draw of sequences, and the assignment does not change the math), and
 * each checkpoint carries the cost model's coefficients so the resumed run assigns by them. */
#include "train_docs.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign_policy.h"
#include "c4_clock.h"
#include "c4_err.h"
#include "docs.h"
#include "dp.h"
#include "seq_assign.h"
#include "seq_cost.h"
#include "seq_cost_json.h"
#include "train_ckpt.h"
#include "train_docs_report.h"
#include "train_rank.h"

/* A rank's buffers for one step. */
struct docs_step_bufs {
  int max_seq;                  /* sequences a step may draw */
  int *idx, *len, *rank_of;     /* per drawn sequence */
  double *cost, *model_cost;    /* by the policy, and by the cost model */
  int *mine, *mine_len, *mb_of; /* this rank's share */
  int *tok, *tgt, *seg;         /* one micro-batch */
};

static void bufs_free(struct docs_step_bufs *b) {
  void *p[] = {b->idx,      b->len,   b->rank_of, b->cost, b->model_cost, b->mine,
               b->mine_len, b->mb_of, b->tok,     b->tgt,  b->seg};
  for (size_t i = 0; i < sizeof p / sizeof p[0]; i++)
    free(p[i]);
  memset(b, 0, sizeof *b);
}

static int bufs_init(struct docs_step_bufs *b, int max_seq, size_t positions) {
  size_t n = (size_t)max_seq;
  memset(b, 0, sizeof *b);
  b->max_seq = max_seq;
  b->idx = malloc(n * sizeof(int));
  b->len = malloc(n * sizeof(int));
  b->rank_of = malloc(n * sizeof(int));
  b->cost = malloc(n * sizeof(double));
  b->model_cost = malloc(n * sizeof(double));
  b->mine = malloc(n * sizeof(int));
  b->mine_len = malloc(n * sizeof(int));
  b->mb_of = malloc(n * sizeof(int));
  b->tok = malloc(positions * sizeof(int));
  b->tgt = malloc(positions * sizeof(int));
  b->seg = malloc(positions * sizeof(int));
  if (b->idx && b->len && b->rank_of && b->cost && b->model_cost && b->mine && b->mine_len &&
      b->mb_of && b->tok && b->tgt && b->seg)
    return 0;
  bufs_free(b);
  return C4_ENOMEM;
}

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

/* Mean loss per position over the first nseq held-out sequences. */
static double eval_docs(struct gpt *m, const struct doc_set *d, int nseq,
                        struct docs_step_bufs *b) {
  int n = d->n - d->ntrain < nseq ? d->n - d->ntrain : nseq;
  if (n > b->max_seq) n = b->max_seq;
  if (n < 1) return 0;
  long tokens = 0;
  for (int i = 0; i < n; i++) {
    b->mine[i] = d->ntrain + i;
    b->mine_len[i] = d->len[d->ntrain + i];
    tokens += b->mine_len[i];
  }
  int nmb = seq_assign_pack(n, b->mine_len, m->B * m->cfg.context, b->mb_of);
  return run_packed(m, d, b->mine, n, b->mb_of, nmb, b, 0, 1) / (double)tokens;
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

/* One rank's run on documents: what its setup makes, and what its steps carry to the end. */
struct docs_run {
  const struct train_opts *o;
  int rank, world, orig_rank;
  char err[512];
  struct doc_set d;
  struct c4k_ops timed;
  const struct c4k_ops *ops;
  struct dp dp;
  struct gpt m;
  long cap, budget; /* positions in a micro-batch, and in a step */
  struct seq_cost model;
  int model_up;
  struct docs_step_bufs b;
  int bufs_up;
  struct docs_report *rep;
  struct docs_step_rec *rec; /* every step, for the closing figures */
  struct seq_cost_sample *samples;
  FILE *jf;
  double eval_start, last_loss;
  int first;       /* the step this run started at: 0, or its checkpoint's */
  int ckpt_failed; /* a checkpoint was not written: the exit status says so */
};

/* Data, kernels, ring and model; on failure what was opened is closed again. */
static int docs_open(struct docs_run *s, const struct c4_ranks *r) {
  const struct train_opts *o = s->o;
  int rank = s->rank;
  if (o->pp > 1) {
    fprintf(stderr, "c4train: rank %d: --max-context trains data-parallel only: not with --pp\n",
            rank);
    return 1;
  }
  if (docs_load(&s->d, o->data, o->max_context, s->err, sizeof s->err)) {
    fprintf(stderr, "c4train: rank %d: %s\n", rank, s->err);
    return 1;
  }
  int rc = train_open_compute(o, r, rank, &s->timed, &s->ops, &s->dp, s->err, sizeof s->err);
  if (rc) {
    docs_free(&s->d);
    return rc;
  }
  if (gpt_init(&s->m, &o->cfg, s->ops, o->micro_batch, o->seed, s->err, sizeof s->err)) {
    fprintf(stderr, "c4train: rank %d: %s\n", rank, s->err);
    dp_close(&s->dp);
    docs_free(&s->d);
    return 1;
  }
  return 0;
}

/* The cost model, the buffers, and rank 0's JSON lines' file. */
static int docs_alloc(struct docs_run *s) {
  const struct train_opts *o = s->o;
  size_t steps = (size_t)o->steps;
  s->cap = (long)o->micro_batch * o->max_context;
  s->budget = s->cap * o->microbatches;
  /* the prior: FLOPs per token (6 per parameter) and per squared token (attention's 12 L C) */
  s->model_up = seq_cost_init(&s->model, s->world, o->max_context, 6.0 * (double)s->m.nparams,
                              12.0 * o->cfg.layers * o->cfg.width) == 0;
  int max_seq = (int)(s->budget < INT_MAX / 2 ? s->budget : INT_MAX / 2);
  s->bufs_up = bufs_init(&s->b, max_seq, (size_t)s->cap) == 0;
  s->rep = calloc((size_t)s->world, sizeof *s->rep);
  s->rec = calloc(steps + 1, sizeof *s->rec);
  s->samples = calloc((size_t)s->world, sizeof *s->samples);
  if (!s->model_up || !s->bufs_up || !s->rep || !s->rec || !s->samples) {
    fprintf(stderr, "c4train: rank %d: out of memory\n", s->rank);
    return 1;
  }
  return train_json_open(o, s->rank, &s->jf);
}

/* This rank's share of the step's sequences, packed and run; its report filled. */
static void docs_compute(struct docs_run *s, int step, int n, long tokens,
                         struct docs_report *mine) {
  const struct train_opts *o = s->o;
  struct docs_step_bufs *b = &s->b;
  int nmine = 0;
  for (int i = 0; i < n; i++)
    if (b->rank_of[i] == s->rank) {
      b->mine[nmine] = b->idx[i];
      b->mine_len[nmine++] = b->len[i];
      seq_cost_features(&s->model, b->len[i], mine->f);
    }
  int nmb = seq_assign_pack(nmine, b->mine_len, (int)s->cap, b->mb_of);
  double slow = train_slow_factor(o, s->orig_rank, step);
  gpt_zero_grad(&s->m);
  uint64_t t0 = c4_now_ns();
  mine->loss_sum =
      run_packed(&s->m, &s->d, b->mine, nmine, b->mb_of, nmb, b, 1.0f / (float)tokens, slow);
  s->ops->sync();
  mine->compute_s = (double)(c4_now_ns() - t0) * 1e-9;
}

/* The step's loss, its record (r: policy, tokens and predictions already in) and the cost
 * model's sample (past this run's first step, which warms caches). */
static void docs_account(struct docs_run *s, int step, struct docs_step_rec *r,
                         const double *rank_pred, uint64_t t_step) {
  double loss = 0, measured = 0, predicted = 0;
  r->compute = 0;
  for (int i = 0; i < s->world; i++) {
    loss += s->rep[i].loss_sum;
    r->compute = fmax(r->compute, s->rep[i].compute_s);
    measured += s->rep[i].compute_s / s->model.speed[i];
    predicted += rank_pred[i] / s->model.speed[i];
    memcpy(s->samples[i].f, s->rep[i].f, sizeof s->samples[i].f);
    s->samples[i].secs = s->rep[i].compute_s;
  }
  s->last_loss = loss / r->tokens;
  r->load = predicted > 0 ? measured / predicted : 1;
  if (step > s->first) seq_cost_add(&s->model, s->samples);
  r->secs = (double)(c4_now_ns() - t_step) * 1e-9;
}

/* One step: the sequences drawn and assigned, this rank's run, the exchange, the optimizer step,
 * the accounts and rank 0's line. */
static int docs_step_run(struct docs_run *s, int step) {
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
  double rank_pred[s->world];
  assign_step(o, r->policy, &s->model, s->world, n, b, r->pred);
  for (int k = 0; k < s->world; k++)
    rank_pred[k] = s->model.fixed;
  for (int i = 0; i < n; i++)
    rank_pred[b->rank_of[i]] += b->model_cost[i];
  for (int k = 0; k < s->world; k++)
    rank_pred[k] = r->fitted ? rank_pred[k] * s->model.speed[k] : 0;
  struct docs_report mine = {0};
  docs_compute(s, step, n, tokens, &mine);
  if (dp_allreduce(&s->dp, s->m.grads, s->m.nparams) ||
      dp_allgather(&s->dp, &mine, s->rep, sizeof mine)) {
    fprintf(stderr, "c4train: rank %d: a peer was lost at step %d\n", s->rank, step + 1);
    return C4TRAIN_EXIT_PEER_LOST;
  }
  float lr = step < o->warmup ? o->lr * (float)(step + 1) / (float)o->warmup : o->lr;
  gpt_adamw(&s->m, lr, o->weight_decay, step + 1);
  docs_account(s, step, r, rank_pred, t_step);
  if (s->rank == 0)
    docs_print_step(s->jf, !o->json, step + 1, s->last_loss, r, s->rep, rank_pred, s->world);
  return 0;
}

/* --ckpt-dir: the model and step of the newest checkpoint, and the cost model's coefficients
 * when it carries them (a checkpoint written before its model was fitted carries none: the
 * prior stands until this run fits its own). */
static int docs_resume(struct docs_run *s) {
  const struct train_opts *o = s->o;
  if (!o->ckpt_dir) return 0;
  char warn[1024], why[256];
  json_t *meta = NULL;
  int rc = train_ckpt_resume(&s->m, o, &s->first, &meta, s->err, sizeof s->err, warn, sizeof warn);
  if (rc < 0) {
    fprintf(stderr, "c4train: rank %d: %s\n", s->rank, s->err);
    return 1;
  }
  json_t *cost = json_object_get(meta, "cost_model");
  if (cost && seq_cost_from_json(&s->model, cost, why, sizeof why) && s->rank == 0)
    fprintf(stderr, "c4train: %s: %s; the cost model starts from its prior\n", s->err, why);
  json_decref(meta);
  if (rc > 0 && warn[0] && s->rank == 0)
    fprintf(stderr, "c4train: %s; resuming from the newest intact one, %s\n", warn, s->err);
  if (rc > 0 && s->rank == 0 && !o->json)
    printf("resumed from step %d (%s) on %d ranks%s\n", s->first, s->err, s->world,
           s->model.fitted ? ", with its cost model" : "");
  return 0;
}

/* --ckpt-every: rank 0 writes the model (every rank holds all of it) after `done` steps, at the
 * checkpoint's interval and at the last step. A checkpoint not written does not stop the run;
 * the exit status says it. */
static void docs_checkpoint(struct docs_run *s, int done) {
  const struct train_opts *o = s->o;
  if (!(o->ckpt_dir && o->ckpt_every > 0 && (done % o->ckpt_every == 0 || done == o->steps)) ||
      s->rank != 0)
    return;
  json_t *extra = json_object(), *cost = seq_cost_to_json(&s->model);
  if (extra && cost) json_object_set_new(extra, "cost_model", cost);
  if (train_ckpt_save(&s->m, NULL, o, done, s->world, extra, s->err, sizeof s->err)) {
    fprintf(stderr, "c4train: checkpoint at step %d not written: %s\n", done, s->err);
    s->ckpt_failed = 1;
  }
  json_decref(extra);
}

/* Rank 0's closing figures, over this run's steps. */
static void docs_end(struct docs_run *s) {
  const struct train_opts *o = s->o;
  double eval_end = o->eval_windows ? eval_docs(&s->m, &s->d, o->eval_windows, &s->b) : 0;
  docs_print_end(s->jf, !o->json, o, &s->model, s->rec + s->first, o->steps - s->first,
                 s->last_loss, s->eval_start, eval_end);
}

/* Everything docs_open and docs_alloc made. */
static void docs_close(struct docs_run *s) {
  train_json_close(s->jf);
  free(s->rep);
  free(s->rec);
  free(s->samples);
  if (s->bufs_up) bufs_free(&s->b);
  if (s->model_up) seq_cost_free(&s->model);
  gpt_free(&s->m);
  dp_close(&s->dp);
  docs_free(&s->d);
}

int train_docs_run(const struct train_opts *o, const struct c4_ranks *r) {
  static struct docs_run zero;
  struct docs_run *s = malloc(sizeof *s);
  if (!s) {
    fprintf(stderr, "c4train: rank %d: out of memory\n", r->rank);
    return 1;
  }
  *s = zero;
  s->o = o;
  s->rank = r->rank;
  s->world = r->world;
  s->orig_rank = train_orig_rank(r);
  int status = docs_open(s, r);
  if (status) {
    free(s);
    return status;
  }
  status = docs_alloc(s);
  if (!status) status = docs_resume(s);
  if (!status) {
    s->eval_start =
        o->eval_windows && s->rank == 0 ? eval_docs(&s->m, &s->d, o->eval_windows, &s->b) : 0;
    if (s->rank == 0 && !o->json)
      printf("c4train: %d ranks on %s, %zu parameters, %d sequences (max %d positions) from %s, "
             "%ld positions a step in micro-batches of %ld, assigned by %s, eval loss %.4f\n",
             s->world, o->device, s->m.nparams, s->d.n, o->max_context, o->data, s->budget, s->cap,
             train_assign_policy_name(o->assign), s->eval_start);
  }
  for (int step = s->first; !status && step < o->steps; step++) {
    status = docs_step_run(s, step);
    if (!status) docs_checkpoint(s, step + 1);
  }
  if (!status && s->rank == 0 && s->first < o->steps) docs_end(s);
  if (!status) status = s->ckpt_failed ? 1 : 0;
  docs_close(s);
  free(s);
  return status;
}
