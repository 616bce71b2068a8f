/* train_docs.c -- the training loop on documents. Each step every rank draws the same sequences
 * (docs_step), computes the same assignment from the same model (first stage), packs its own
 * share into micro-batches (second stage) and runs them with dloss = 1 / the step's tokens, so
 * that the summed gradient is that of the mean loss over every token of the step, however the
 * sequences were split. Then one allgather of (loss, tokens, squared tokens, compute time) per
 * rank feeds the cost model on every rank alike, so all agree on the next assignment without
 * another exchange. With --ckpt-dir the run resumes from the newest checkpoint on any number of
 * ranks (a step names its draw of sequences, and the assignment does not change the math), and
 * each checkpoint carries the cost model's coefficients so the resumed run assigns by them.
 * With --pp P the sequences go to the D = ranks / P pipelines instead of the ranks: every stage
 * of a pipeline computes the same assignment and packing, and the pipeline runs its packed
 * micro-batches in 1F1B order (train_pipe.h), each crossing between stages at its own size; a
 * pipeline's time (its slowest stage's wall time for the step) is what the cost model fits. */
#include "train_docs.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign_policy.h"
#include "c4_clock.h"
#include "c4_err.h"
#include "docs.h"
#include "dp.h"
#include "gpt_layers.h"
#include "seq_assign.h"
#include "seq_cost.h"
#include "seq_cost_json.h"
#include "train_ckpt.h"
#include "train_docs_report.h"
#include "train_pipe.h"
#include "train_rank.h"
#include "train_report.h"

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

/* One rank's run on documents: what its setup makes, and what its steps carry to the end. */
struct docs_run {
  const struct train_opts *o;
  int rank, world, orig_rank;
  int pp, nrep, replica; /* stages a pipeline (1: none), pipelines, this rank's */
  struct train_pipe tp;  /* --pp: this rank's stage */
  int tp_up;
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
  struct docs_report *rep;   /* every rank's, after a step */
  struct docs_report *rrep;  /* every pipeline's (each rank's without --pp) */
  struct docs_step_rec *rec; /* every step, for the closing figures */
  struct seq_cost_sample *samples;
  FILE *jf;
  double eval_start, last_loss;
  int first;       /* the step this run started at: 0, or its checkpoint's */
  int ckpt_failed; /* a checkpoint was not written: the exit status says so */
};

/* Mean loss per position over the first o->eval_windows held-out sequences, on rank 0 (0 on the
 * others), or with --pp through pipeline 0's stages, every rank taking part and getting it. */
static double eval_docs(struct docs_run *s) {
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

/* The pipeline checks: CPU (the stages' links use the plugin's host API, not NCCL), whole
 * pipelines, and a layer for every stage. 0, or 1 (printed). */
static int docs_check_pp(const struct train_opts *o, int rank, int world) {
  if (strcmp(o->device, "cpu") != 0) {
    fprintf(stderr, "c4train: rank %d: --pp runs on --device cpu only\n", rank);
    return 1;
  }
  if (world % o->pp) {
    fprintf(stderr, "c4train: rank %d: --pp %d needs a multiple of %d ranks, not %d\n", rank, o->pp,
            o->pp, world);
    return 1;
  }
  if (o->cfg.layers < o->pp) {
    fprintf(stderr, "c4train: rank %d: --pp %d needs a layer a stage, not --layers %d\n", rank,
            o->pp, o->cfg.layers);
    return 1;
  }
  return 0;
}

/* Data, kernels, ring and model (--pp: the stage's layers of the even split); on failure what was
 * opened is closed again. */
static int docs_open(struct docs_run *s, const struct c4_ranks *r) {
  const struct train_opts *o = s->o;
  int rank = s->rank, l0 = 0, l1 = o->cfg.layers;
  if (s->pp > 1 && (docs_check_pp(o, rank, s->world) ||
                    train_pipe_even_layers(o->cfg.layers, s->pp, rank % s->pp, &l0, &l1)))
    return 1;
  if (docs_load(&s->d, o->data, o->max_context, s->err, sizeof s->err)) {
    fprintf(stderr, "c4train: rank %d: %s\n", rank, s->err);
    return 1;
  }
  /* --pp: one plugin helper thread per comm moves a stage's messages while it computes, as in
   * the windows' pipeline (train_loop.c); a user's C4_NTHREADS stands */
  if (s->pp > 1) setenv("C4_NTHREADS", "1", 0);
  int rc = train_open_compute(o, r, rank, &s->timed, &s->ops, &s->dp, s->err, sizeof s->err);
  if (rc) {
    docs_free(&s->d);
    return rc;
  }
  if (gpt_init_layers(&s->m, &o->cfg, s->ops, o->micro_batch, o->seed, l0, l1, s->err,
                      sizeof s->err)) {
    fprintf(stderr, "c4train: rank %d: %s\n", rank, s->err);
    dp_close(&s->dp);
    docs_free(&s->d);
    return 1;
  }
  return 0;
}

/* The cost model (of the pipelines), the buffers, --pp's stage, and rank 0's JSON lines' file. */
static int docs_alloc(struct docs_run *s) {
  const struct train_opts *o = s->o;
  size_t steps = (size_t)o->steps;
  s->cap = (long)o->micro_batch * o->max_context;
  s->budget = s->cap * o->microbatches;
  /* the prior: FLOPs per token (6 per parameter) and per squared token (attention's 12 L C) */
  s->model_up = seq_cost_init(&s->model, s->nrep, o->max_context, 6.0 * (double)s->m.nparams,
                              12.0 * o->cfg.layers * o->cfg.width) == 0;
  int max_seq = (int)(s->budget < INT_MAX / 2 ? s->budget : INT_MAX / 2);
  s->bufs_up = bufs_init(&s->b, max_seq, (size_t)s->cap) == 0;
  s->rep = calloc((size_t)s->world, sizeof *s->rep);
  s->rrep = calloc((size_t)s->nrep, sizeof *s->rrep);
  s->rec = calloc(steps + 1, sizeof *s->rec);
  s->samples = calloc((size_t)s->nrep, sizeof *s->samples);
  if (!s->model_up || !s->bufs_up || !s->rep || !s->rrep || !s->rec || !s->samples) {
    fprintf(stderr, "c4train: rank %d: out of memory\n", s->rank);
    return 1;
  }
  /* First-fit leaves every micro-batch but one more than half full, so a pipeline's share of the
   * step's budget packs into at most 2 x --microbatches + 1 of them. The layers stay where the
   * even split put them: the cost model moves sequences off a slow pipeline instead. */
  if (s->pp > 1) {
    if (train_pipe_init(&s->tp, &s->dp, &s->m, s->rank, s->pp, 2 * o->microbatches + 1, 0, 0,
                        s->err, sizeof s->err)) {
      fprintf(stderr, "c4train: rank %d: %s\n", s->rank, s->err);
      return C4TRAIN_EXIT_PEER_LOST;
    }
    s->tp_up = 1;
  }
  return train_json_open(o, s->rank, &s->jf);
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
  if ((s->pp > 1 ? train_pipe_allreduce(&s->tp, &s->dp, &s->m)
                 : dp_allreduce(&s->dp, s->m.grads, s->m.nparams)) ||
      dp_allgather(&s->dp, &mine, s->rep, sizeof mine)) {
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

/* --ckpt-every: rank 0 writes the model after `done` steps, at the checkpoint's interval and at
 * the last step (every rank holds all of it, or with --pp the stages gather it first). A
 * checkpoint not written does not stop the run; the exit status says it. Returns 0, or
 * C4TRAIN_EXIT_PEER_LOST (the gather's peer was lost) or 1 (out of memory). */
static int docs_checkpoint(struct docs_run *s, int done) {
  const struct train_opts *o = s->o;
  if (!(o->ckpt_dir && o->ckpt_every > 0 && (done % o->ckpt_every == 0 || done == o->steps)))
    return 0;
  float *full = NULL;
  if (s->pp > 1 && !(full = malloc(3 * gpt_full_floats(&s->m) * sizeof *full))) {
    fprintf(stderr, "c4train: rank %d: out of memory for a checkpoint\n", s->rank);
    return 1;
  }
  if (s->pp > 1 && train_pipe_gather(&s->tp, &s->dp, &s->m, full)) {
    fprintf(stderr, "c4train: rank %d: a peer was lost at the checkpoint of step %d\n", s->rank,
            done);
    free(full);
    return C4TRAIN_EXIT_PEER_LOST;
  }
  json_t *extra = s->rank == 0 ? json_object() : NULL;
  json_t *cost = extra ? seq_cost_to_json(&s->model) : NULL;
  if (cost) json_object_set_new(extra, "cost_model", cost);
  if (s->rank == 0 &&
      train_ckpt_save(&s->m, full, o, done, s->world, extra, s->err, sizeof s->err)) {
    fprintf(stderr, "c4train: checkpoint at step %d not written: %s\n", done, s->err);
    s->ckpt_failed = 1;
  }
  json_decref(extra);
  free(full);
  return 0;
}

/* The held-out loss at the end (every rank: with --pp it is collective), and rank 0's closing
 * figures over this run's steps. Returns 0, or C4TRAIN_EXIT_PEER_LOST. */
static int docs_end(struct docs_run *s) {
  const struct train_opts *o = s->o;
  double eval_end = o->eval_windows ? eval_docs(s) : 0;
  if (isnan(eval_end)) {
    fprintf(stderr, "c4train: rank %d: a peer was lost in the closing evaluation\n", s->rank);
    return C4TRAIN_EXIT_PEER_LOST;
  }
  if (s->rank == 0)
    docs_print_end(s->jf, !o->json, o, &s->model, s->rec + s->first, o->steps - s->first,
                   s->last_loss, s->eval_start, eval_end);
  return 0;
}

/* Everything docs_open and docs_alloc made. */
static void docs_close(struct docs_run *s) {
  train_json_close(s->jf);
  free(s->rep);
  free(s->rrep);
  free(s->rec);
  free(s->samples);
  if (s->bufs_up) bufs_free(&s->b);
  if (s->model_up) seq_cost_free(&s->model);
  if (s->tp_up) train_pipe_free(&s->tp);
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
  s->pp = o->pp > 1 ? o->pp : 1;
  s->nrep = s->world / s->pp;
  s->replica = s->rank / s->pp;
  int status = docs_open(s, r);
  if (status) {
    free(s);
    return status;
  }
  status = docs_alloc(s);
  if (!status) status = docs_resume(s);
  if (!status) {
    s->eval_start = o->eval_windows ? eval_docs(s) : 0;
    if (isnan(s->eval_start)) status = C4TRAIN_EXIT_PEER_LOST;
  }
  if (!status && s->rank == 0 && s->jf)
    train_report_start(s->jf, s->world, o->device, gpt_full_floats(&s->m), s->first, s->eval_start);
  if (!status && s->rank == 0 && !o->json) {
    char pipes[64] = "";
    if (s->pp > 1)
      snprintf(pipes, sizeof pipes, " (%d pipeline%s of %d stages)", s->nrep,
               s->nrep > 1 ? "s" : "", s->pp);
    printf("c4train: %d ranks%s on %s, %zu parameters, %d sequences (max %d positions) from %s, "
           "%ld positions a step in micro-batches of %ld, assigned by %s, eval loss %.4f\n",
           s->world, pipes, o->device, gpt_full_floats(&s->m), s->d.n, o->max_context, o->data,
           s->budget, s->cap, train_assign_policy_name(o->assign), s->eval_start);
  }
  for (int step = s->first; !status && step < o->steps; step++) {
    status = docs_step_run(s, step);
    if (!status) status = docs_checkpoint(s, step + 1);
  }
  if (!status && s->first < o->steps) status = docs_end(s);
  if (!status) status = s->ckpt_failed ? 1 : 0;
  docs_close(s);
  free(s);
  return status;
}
