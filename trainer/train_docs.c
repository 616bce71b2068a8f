/* train_docs.c -- the training loop on documents. Each step every rank draws the same sequences
 * (docs_step), computes the same assignment from the same model (first stage), packs its own
 * share into micro-batches (second stage) and runs them with dloss = 1 / the step's tokens, so
 * that the summed gradient is that of the mean loss over every token of the step, however the
 * sequences were split. Then one allgather of (loss, tokens, squared tokens, compute time) per
 * rank feeds the cost model on every rank alike, so all agree on the next assignment without
 * another exchange. */
#include "train_docs.h"

#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "c4_clock.h"
#include "c4_env.h"
#include "docs.h"
#include "dp.h"
#include "seq_assign.h"
#include "seq_cost.h"

static const char *const policy_names[TRAIN_ASSIGN_POLICIES] = {"cost", "tokens", "tokens-sorted"};

int train_docs_policy(const char *s) {
  for (int i = 0; i < TRAIN_ASSIGN_POLICIES; i++)
    if (strcmp(s, policy_names[i]) == 0) return i;
  return -1;
}

const char *train_docs_policy_name(int policy) { return policy_names[policy]; }

/* What each rank shares after a step. */
struct docs_report {
  double loss_sum, tokens, sumsq, compute_s;
};

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
  return -1;
}

static void sleep_seconds(double s) {
  if (s <= 0) return;
  struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  if (n < 1) return 0;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
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
    if (slow > 1) sleep_seconds((double)(c4_now_ns() - t0) * 1e-9 * (slow - 1));
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

/* Rank 0's line for one step, as text or JSON. */
static void print_step(FILE *jf, int text, int step, double loss, double tokens, double secs,
                       double compute, double predicted, const struct docs_report *rep, int world) {
  if (jf) {
    json_t *rt = json_array();
    for (int i = 0; i < world; i++)
      json_array_append_new(rt, json_integer((json_int_t)rep[i].tokens));
    json_t *o = json_pack("{s:s, s:i, s:f, s:I, s:f, s:f, s:f, s:f, s:o}", "event", "step", "step",
                          step, "loss", loss, "tokens", (json_int_t)tokens, "tokens_per_s",
                          tokens / secs, "step_ms", secs * 1e3, "compute_ms", compute * 1e3,
                          "predicted_ms", predicted * 1e3, "rank_tokens", rt);
    if (o) json_dumpf(o, jf, JSON_COMPACT);
    fputc('\n', jf);
    json_decref(o);
  }
  if (text) {
    printf("step %4d  loss %.4f  %9.0f tok/s  %8.1f ms, compute %6.1f (model %6.1f)  tokens ", step,
           loss, tokens / secs, secs * 1e3, compute * 1e3, predicted * 1e3);
    for (int i = 0; i < world; i++)
      printf("%s%.0f", i ? "," : "", rep[i].tokens);
    printf("\n");
  }
  fflush(stdout);
}

struct docs_summary {
  int steps;
  double loss, eval_start, eval_end, tps;
  double compute_tps; /* tokens over the slowest rank's compute: what the bound predicts */
  double bound_tps[TRAIN_ASSIGN_POLICIES]; /* the cost model's, for each policy's assignments */
  const struct seq_cost *model;
};

static void print_end(FILE *jf, int text, const struct train_opts *o,
                      const struct docs_summary *s) {
  const char *policy = policy_names[o->assign];
  if (jf) {
    json_t *speed = json_array(), *bounds = json_object();
    for (int i = 0; i < s->model->ranks; i++)
      json_array_append_new(speed, json_real(s->model->speed[i]));
    for (int p = 0; p < TRAIN_ASSIGN_POLICIES; p++)
      json_object_set_new(bounds, policy_names[p], json_real(s->bound_tps[p]));
    json_t *e = json_pack(
        "{s:s, s:s, s:i, s:f, s:f, s:f, s:f, s:f, s:f, s:o, s:{s:b, s:f, s:f, s:f, s:o}}", "event",
        "end", "assign", policy, "steps", s->steps, "loss", s->loss, "eval_loss_start",
        s->eval_start, "eval_loss", s->eval_end, "tokens_per_s", s->tps, "compute_tokens_per_s",
        s->compute_tps, "bound_tokens_per_s", s->bound_tps[o->assign], "policy_bounds", bounds,
        "cost_model", "fitted", s->model->fitted, "fixed_s", s->model->fixed, "s_per_token",
        s->model->a, "s_per_sq_token", s->model->b, "speed", speed);
    if (e) json_dumpf(e, jf, JSON_COMPACT);
    fputc('\n', jf);
    json_decref(e);
  }
  if (text) {
    printf("done: %d steps, assign %s, loss %.4f, eval loss %.4f -> %.4f, %.0f tok/s (%.0f over "
           "the slowest rank's compute)",
           s->steps, policy, s->loss, s->eval_start, s->eval_end, s->tps, s->compute_tps);
    if (!s->model->fitted) {
      printf("; the cost model is not fitted yet (%d steps after the first)\n", SEQ_COST_MIN_STEPS);
      fflush(stdout);
      return;
    }
    printf("; the cost model's bound %.0f tok/s (by cost %.0f, tokens %.0f, tokens-sorted %.0f); "
           "fit: %.2f ms + %.3g s/token + %.3g s/token^2, factors ",
           s->bound_tps[o->assign], s->bound_tps[TRAIN_ASSIGN_COST],
           s->bound_tps[TRAIN_ASSIGN_TOKENS], s->bound_tps[TRAIN_ASSIGN_TOKENS_SORTED],
           s->model->fixed * 1e3, s->model->a, s->model->b);
    for (int i = 0; i < s->model->ranks; i++)
      printf("%s%.2f", i ? "," : "", s->model->speed[i]);
    printf("\n");
  }
  fflush(stdout);
}

/* The first stage for this step by every policy, b->rank_of left as o->assign's; pred[p] is the
 * time the cost model predicts for policy p's assignment (its slowest rank's compute), so that
 * one run tells what each policy would give on the same steps. */
static void assign_step(const struct train_opts *o, const struct seq_cost *model, int world, int n,
                        struct docs_step_bufs *b, double *pred) {
  double ones[world];
  for (int i = 0; i < world; i++)
    ones[i] = 1.0;
  const double *speed = o->resplit ? model->speed : ones;
  for (int i = 0; i < n; i++) {
    b->model_cost[i] = seq_cost_of(model, b->len[i]);
    b->cost[i] = (double)b->len[i];
  }
  for (int k = 1; k <= TRAIN_ASSIGN_POLICIES; k++) {
    int p = (o->assign + k) % TRAIN_ASSIGN_POLICIES; /* o->assign's last: its rank_of stays */
    if (p == TRAIN_ASSIGN_COST)
      seq_assign_ranks(n, b->model_cost, world, speed, model->fixed, b->rank_of);
    else if (p == TRAIN_ASSIGN_TOKENS)
      seq_assign_in_order(n, b->cost, world, speed, 0, b->rank_of);
    else
      seq_assign_ranks(n, b->cost, world, speed, 0, b->rank_of);
    pred[p] = seq_assign_time(n, b->model_cost, world, model->speed, model->fixed, b->rank_of);
  }
}

int train_docs_run(const struct train_opts *o, const struct c4_ranks *r) {
  char err[512] = "";
  int rank = r->rank, world = r->world, status = 1;
  int orig_rank = (int)c4_env_long("C4TRAIN_ORIG_RANK", rank, 0, INT_MAX);
  if (o->pp > 1 || o->ckpt_dir) {
    fprintf(stderr, "c4train: rank %d: --max-context trains data-parallel only: not with %s\n",
            rank, o->pp > 1 ? "--pp" : "--ckpt-dir");
    return 1;
  }
  struct doc_set d;
  if (docs_load(&d, o->data, o->max_context, err, sizeof err)) {
    fprintf(stderr, "c4train: rank %d: %s\n", rank, err);
    return 1;
  }
  struct c4k_ops timed;
  const struct c4k_ops *ops = train_pick_ops(o, &timed, err, sizeof err);
  if (!ops) {
    fprintf(stderr, "c4train: rank %d: %s\n", rank, err);
    docs_free(&d);
    return 1;
  }
  struct dp dp;
  if (dp_init(&dp, r, o->plugin, strcmp(o->device, "cuda") == 0, o->bucket_bytes, err,
              sizeof err)) {
    fprintf(stderr, "c4train: rank %d: %s\n", rank, err);
    docs_free(&d);
    return C4TRAIN_EXIT_PEER_LOST;
  }
  struct gpt m;
  if (gpt_init(&m, &o->cfg, ops, o->micro_batch, o->seed, err, sizeof err)) {
    fprintf(stderr, "c4train: rank %d: %s\n", rank, err);
    dp_close(&dp);
    docs_free(&d);
    return 1;
  }
  long cap = (long)o->micro_batch * o->max_context, budget = cap * o->microbatches;
  /* the prior: FLOPs per token (6 per parameter) and per squared token (attention's 12 L C) */
  struct seq_cost model;
  int model_up = seq_cost_init(&model, world, 6.0 * (double)m.nparams,
                               12.0 * o->cfg.layers * o->cfg.width) == 0;
  struct docs_step_bufs b;
  int bufs_up = bufs_init(&b, (int)(budget < INT_MAX / 2 ? budget : INT_MAX / 2), (size_t)cap) == 0;
  struct docs_report *rep = calloc((size_t)world, sizeof *rep);
  double *tps = calloc((size_t)o->steps + 1, sizeof *tps);
  double *ctps = calloc((size_t)o->steps + 1, sizeof *ctps);
  double *all_tps = calloc((size_t)o->steps + 1, sizeof *all_tps),
         *all_ctps = calloc((size_t)o->steps + 1, sizeof *all_ctps);
  double *bound = calloc((size_t)o->steps * TRAIN_ASSIGN_POLICIES + 1, sizeof *bound);
  struct seq_cost_sample *samples = calloc((size_t)world, sizeof *samples);
  FILE *jf = NULL;
  if (!model_up || !bufs_up || !rep || !tps || !ctps || !all_tps || !all_ctps || !bound ||
      !samples) {
    fprintf(stderr, "c4train: rank %d: out of memory\n", rank);
    goto out;
  }
  if (rank == 0 && !o->json && o->json_out && !(jf = fopen(o->json_out, "a"))) {
    fprintf(stderr, "c4train: --json-out %s: %s\n", o->json_out, strerror(errno));
    goto out;
  }
  if (rank == 0 && o->json) jf = stdout;
  double eval_start = o->eval_windows && rank == 0 ? eval_docs(&m, &d, o->eval_windows, &b) : 0;
  if (rank == 0 && !o->json)
    printf("c4train: %d ranks on %s, %zu parameters, %d sequences (max %d positions) from %s, "
           "%ld positions a step in micro-batches of %ld, assigned by %s, eval loss %.4f\n",
           world, o->device, m.nparams, d.n, o->max_context, o->data, budget, cap,
           policy_names[o->assign], eval_start);
  int timed_steps = 0, warm_steps = 0;
  double last_loss = 0;
  for (int step = 0; step < o->steps; step++) {
    uint64_t t_step = c4_now_ns();
    dp_step(&dp, step + 1);
    int n = docs_step(&d, o->seed, (uint64_t)step, budget, b.idx, b.max_seq);
    long tokens = 0;
    for (int i = 0; i < n; i++) {
      b.len[i] = d.len[b.idx[i]];
      tokens += b.len[i];
    }
    int fitted = model.fitted;
    double pred[TRAIN_ASSIGN_POLICIES];
    assign_step(o, &model, world, n, &b, pred);
    double predicted = pred[o->assign];
    int nmine = 0;
    struct docs_report mine = {0};
    for (int i = 0; i < n; i++)
      if (b.rank_of[i] == rank) {
        b.mine[nmine] = b.idx[i];
        b.mine_len[nmine++] = b.len[i];
        mine.tokens += b.len[i];
        mine.sumsq += (double)b.len[i] * b.len[i];
      }
    int nmb = seq_assign_pack(nmine, b.mine_len, (int)cap, b.mb_of);
    double slow = orig_rank == o->slow_rank && step + 1 >= o->slow_from && step + 1 <= o->slow_to
                      ? o->slow_factor
                      : 1;
    gpt_zero_grad(&m);
    uint64_t t0 = c4_now_ns();
    mine.loss_sum = run_packed(&m, &d, b.mine, nmine, b.mb_of, nmb, &b, 1.0f / (float)tokens, slow);
    ops->sync();
    mine.compute_s = (double)(c4_now_ns() - t0) * 1e-9;
    if (dp_allreduce(&dp, m.grads, m.nparams) || dp_allgather(&dp, &mine, rep, sizeof mine)) {
      fprintf(stderr, "c4train: rank %d: a peer was lost at step %d\n", rank, step + 1);
      status = C4TRAIN_EXIT_PEER_LOST;
      goto out;
    }
    float lr = step < o->warmup ? o->lr * (float)(step + 1) / (float)o->warmup : o->lr;
    gpt_adamw(&m, lr, o->weight_decay, step + 1);
    double loss = 0, compute = 0;
    for (int i = 0; i < world; i++) {
      loss += rep[i].loss_sum;
      compute = rep[i].compute_s > compute ? rep[i].compute_s : compute;
      samples[i] = (struct seq_cost_sample){rep[i].tokens, rep[i].sumsq, rep[i].compute_s};
    }
    last_loss = loss / (double)tokens;
    if (step > 0) seq_cost_add(&model, samples); /* the first step warms caches: not a sample */
    double secs = (double)(c4_now_ns() - t_step) * 1e-9;
    if (step > 0) { /* the first step warms caches */
      all_tps[warm_steps] = (double)tokens / secs;
      all_ctps[warm_steps++] = (double)tokens / compute;
    }
    if (step > 0 && fitted) { /* the steps assigned by a fitted model */
      tps[timed_steps] = (double)tokens / secs;
      ctps[timed_steps] = (double)tokens / compute;
      for (int p = 0; p < TRAIN_ASSIGN_POLICIES; p++)
        bound[p * o->steps + timed_steps] = (double)tokens / pred[p];
      timed_steps++;
    }
    if (rank == 0)
      print_step(jf, !o->json, step + 1, last_loss, (double)tokens, secs, compute,
                 fitted ? predicted : 0, rep, world);
  }
  if (rank == 0) {
    struct docs_summary s = {
        .steps = o->steps,
        .loss = last_loss,
        .eval_start = eval_start,
        .eval_end = o->eval_windows ? eval_docs(&m, &d, o->eval_windows, &b) : 0,
        /* the steps a fitted model assigned, else all but the first */
        .tps = timed_steps ? median(tps, timed_steps) : median(all_tps, warm_steps),
        .compute_tps = timed_steps ? median(ctps, timed_steps) : median(all_ctps, warm_steps),
        .model = &model};
    for (int p = 0; p < TRAIN_ASSIGN_POLICIES; p++)
      s.bound_tps[p] = median(bound + p * o->steps, timed_steps);
    print_end(jf, !o->json, o, &s);
  }
  status = 0;
out:
  if (jf && jf != stdout) fclose(jf);
  free(rep);
  free(tps);
  free(ctps);
  free(all_tps);
  free(all_ctps);
  free(bound);
  free(samples);
  if (bufs_up) bufs_free(&b);
  if (model_up) seq_cost_free(&model);
  gpt_free(&m);
  dp_close(&dp);
  docs_free(&d);
  return status;
}
