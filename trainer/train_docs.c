/* train_docs.c -- the training loop on documents (a step itself: train_docs_step.c). Each step
 * every rank draws the same sequences (docs_step), computes the same assignment from the same model
 * (first stage), packs its own share into micro-batches (second stage) and runs them with dloss = 1
 * / the step's tokens, so that the summed gradient is that of the mean loss over every token of the
 * step, however the sequences were split. Then one allgather of (loss, tokens, squared tokens,
 * compute time) per rank feeds the cost model on every rank alike, so all agree on the next
 * assignment without another exchange. With --ckpt-dir the run resumes from the newest checkpoint
 * on any number of ranks (a step names its draw of sequences, and the assignment does not change
 * the math), and each checkpoint carries the cost model's coefficients so the resumed run assigns
 * by them. With --pp P the sequences go to the D = ranks / P pipelines instead of the ranks: every
 * stage of a pipeline computes the same assignment and packing, and the pipeline runs its packed
 * micro-batches in 1F1B order (train_pipe.h), each crossing between stages at its own size; a
 * pipeline's time (its slowest stage's wall time for the step) is what the cost model fits. */
#include "train_docs.h"

#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign_policy.h"
#include "c4_err.h"
#include "gpt_layers.h"
#include "relayout.h"
#include "seq_cost_json.h"
#include "train_ckpt.h"
#include "train_docs_run.h"
#include "train_rank.h"
#include "train_report.h"

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

/* Data, kernels, ring and model (--pp: the stage's layers of the even split); on failure what was
 * opened is closed again. */
static int docs_open(struct docs_run *s, const struct c4_ranks *r) {
  const struct train_opts *o = s->o;
  int rank = s->rank, l0 = 0, l1 = o->cfg.layers;
  if (s->pp > 1 && train_pipe_even_layers(o->cfg.layers, s->pp, rank % s->pp, &l0, &l1)) return 1;
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
  if (rc > 0 && s->rank == 0) train_ckpt_say_warnings(meta, o, warn, s->err);
  json_t *cost = json_object_get(meta, "cost_model");
  if (cost && seq_cost_from_json(&s->model, cost, why, sizeof why) && s->rank == 0)
    fprintf(stderr, "c4train: %s: %s; the cost model starts from its prior\n", s->err, why);
  json_decref(meta);
  if (rc > 0 && s->rank == 0 && !o->json)
    printf("resumed from step %d (%s) on %d ranks%s\n", s->first, s->err, s->world,
           s->model.fitted ? ", with its cost model" : "");
  return 0;
}

/* Whether a rank's launcher asked for a new layout, as every rank's report of the step says:
 * all stop after it (not after the last: the job is done). */
static int docs_relayout(const struct docs_run *s, int done) {
  int asked = 0;
  for (int i = 0; i < s->world; i++)
    asked |= s->rep[i].relayout != 0;
  return asked && !s->relayout_off && done < s->o->steps && s->o->ckpt_dir;
}

/* --ckpt-every: the model after `done` steps, with the fitted cost model in its metadata (rank
 * 0 writes; with --pp the stages gather it first). A checkpoint not written does not stop the
 * run; the exit status says it. Returns 0, or C4TRAIN_EXIT_PEER_LOST (the gather's peer was
 * lost) or 1 (out of memory); asked for a new layout, C4TRAIN_EXIT_RELAYOUT on every rank once
 * the checkpoint is written. */
static int docs_checkpoint(struct docs_run *s, int done) {
  int relayout = docs_relayout(s, done);
  if (!relayout && !train_ckpt_due(s->o, done)) return 0;
  json_t *extra = s->rank == 0 ? json_object() : NULL;
  json_t *cost = extra ? seq_cost_to_json(&s->model) : NULL;
  if (cost) json_object_set_new(extra, "cost_model", cost);
  struct train_ckpt_at at = {s->o, s->pp, s->rank, s->world, done};
  int rc = train_ckpt_step(&at, &s->m, &s->tp, &s->dp, extra, s->err, sizeof s->err);
  json_decref(extra);
  if (rc < 0) s->ckpt_failed = 1;
  if (relayout && rc <= 0)
    return relayout_stop(&s->dp, s->world, rc, done, s->rank == 0 && !s->o->json, s->jf,
                         &s->relayout_off);
  return rc < 0 ? 0 : rc;
}

/* The held-out loss at the end (every rank: with --pp it is collective), and rank 0's closing
 * figures over this run's steps. Returns 0, or C4TRAIN_EXIT_PEER_LOST. */
static int docs_end(struct docs_run *s) {
  const struct train_opts *o = s->o;
  double eval_end = o->eval_windows ? docs_eval(s) : TRAIN_NO_EVAL;
  if (isnan(eval_end)) {
    fprintf(stderr, "c4train: rank %d: a peer was lost in the closing evaluation\n", s->rank);
    return C4TRAIN_EXIT_PEER_LOST;
  }
  if (s->rank == 0)
    docs_print_end(s->jf, !o->json, o, &s->model, s->rec + s->first, o->steps - s->first,
                   s->last_loss, s->eval_start, eval_end);
  return 0;
}

/* Everything docs_open and docs_alloc made. Returns 0, or 1 when the step log could not be
 * written. */
static int docs_close(struct docs_run *s) {
  int rc = train_json_close(s->jf, s->o->json_out);
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
  return rc;
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
  if (!status && s->first >= o->steps && s->rank == 0) train_ckpt_say_done(o, s->first);
  if (!status) {
    s->eval_start = o->eval_windows ? docs_eval(s) : TRAIN_NO_EVAL;
    if (isnan(s->eval_start)) status = C4TRAIN_EXIT_PEER_LOST;
  }
  if (!status && s->rank == 0 && s->jf)
    train_report_start(s->jf, s->world, o->device, gpt_full_floats(&s->m), s->first, s->eval_start);
  if (!status && s->rank == 0 && !o->json) {
    char pipes[64] = "";
    if (s->pp > 1)
      snprintf(pipes, sizeof pipes, " (%d pipeline%s of %d stages)", s->nrep,
               s->nrep > 1 ? "s" : "", s->pp);
    char eval[64];
    printf("c4train: %d ranks%s on %s, %zu parameters, %d sequences (max %d positions) from %s, "
           "%ld positions a step in micro-batches of %ld, assigned by %s, %s\n",
           s->world, pipes, o->device, gpt_full_floats(&s->m), s->d.n, o->max_context, o->data,
           s->budget, s->cap, train_assign_policy_name(o->assign),
           train_eval_text(eval, sizeof eval, s->eval_start, TRAIN_NO_EVAL));
  }
  for (int step = s->first; !status && step < o->steps; step++) {
    status = docs_step_run(s, step);
    if (!status) status = docs_checkpoint(s, step + 1);
  }
  if (!status && s->first < o->steps) status = docs_end(s);
  if (!status) status = s->ckpt_failed ? 1 : 0;
  int closed = docs_close(s);
  if (!status) status = closed;
  free(s);
  return status;
}
