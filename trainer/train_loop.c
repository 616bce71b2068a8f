/* train_loop.c -- one rank's training loop. Each global step: the planner's split says how many
 * micro-batches this rank runs (its sample indices follow from the split, so the global batch is
 * the same set of samples whatever the split); the rank adds their gradients, scaled by one over
 * the global batch's positions; the buckets are summed across ranks (so the average is weighted
 * by samples); every rank applies the same AdamW step; a small allgather shares losses and
 * compute times, from which every rank computes the same next split. */
#include "train_loop.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_env.h"
#include "c4_err.h"
#include "dp.h"
#include "gpt_layers.h"
#include "mon_sub.h"
#include "planner.h"
#include "relayout.h"
#include "resplit.h"
#include "text_data.h"
#include "train_ckpt.h"
#include "train_pipe.h"
#include "train_rank.h"
#include "train_report.h"

void openblas_set_num_threads(int num_threads);

/* What each rank shares after a step. */
struct step_report {
  double loss_sum;     /* sum of position losses over its micro-batches */
  double first_s;      /* its forward+backward time to the end of its first micro-batch */
  double compute_s;    /* and to the end of its last, the drill's slowdown included */
  double monitor_slow; /* c4mon's straggler factor for it, 0 when c4mon names none */
  int64_t recoveries;  /* c4mon's `recovered` events that cleared a verdict on it */
  double pipe_s;       /* --pp: the wall time of its forward and backward passes, waits included */
  int32_t microbatches;
  int32_t relayout; /* its launcher asked for a new layout (relayout.h) */
};

/* --- matmul timing on the CPU: the share of the step spent in GEMM --- */
static const struct c4k_ops *timed_base;
static double gemm_seconds, gemm_flops;

static void timed_matmul_fwd(float *out, const float *inp, const float *w, const float *bias, int N,
                             int C, int OC) {
  uint64_t t0 = c4_now_ns();
  timed_base->matmul_fwd(out, inp, w, bias, N, C, OC);
  gemm_seconds += (double)(c4_now_ns() - t0) * 1e-9;
  gemm_flops += 2.0 * N * C * OC;
}

static void timed_matmul_bwd(float *dinp, float *dw, float *dbias, const float *dout,
                             const float *inp, const float *w, int N, int C, int OC) {
  uint64_t t0 = c4_now_ns();
  timed_base->matmul_bwd(dinp, dw, dbias, dout, inp, w, N, C, OC);
  gemm_seconds += (double)(c4_now_ns() - t0) * 1e-9;
  gemm_flops += 4.0 * N * C * OC;
}

/* The kernels for o->device (train_open_compute), CUDA's on local_rank's GPU (modulo the GPUs
 * there are; chosen by the kernels' own runtime, which NCCL's group then shares). NULL with err
 * filled when they cannot be loaded or there is no GPU. */
static const struct c4k_ops *pick_ops(const struct train_opts *o, int local_rank,
                                      struct c4k_ops *timed, char *err, size_t errlen) {
  if (strcmp(o->device, "cpu") == 0) {
    timed_base = &c4k_cpu_ops;
    *timed = c4k_cpu_ops;
    timed->matmul_fwd = timed_matmul_fwd;
    timed->matmul_bwd = timed_matmul_bwd;
    openblas_set_num_threads(o->threads);
    return timed;
  }
  char buf[PATH_MAX];
  const char *path = c4_beside_program(buf, sizeof buf, "../lib/libc4k-cuda.so", "libc4k-cuda.so");
  void *h = dlopen(path, RTLD_NOW | RTLD_GLOBAL);
  const struct c4k_ops *ops = h ? dlsym(h, C4K_CUDA_SYMBOL) : NULL;
  int (*select)(int, const char **) =
      h ? (int (*)(int, const char **))dlsym(h, C4K_CUDA_SELECT_SYMBOL) : NULL;
  if (!ops || !select) {
    snprintf(err, errlen, "--device cuda: %s",
             !h     ? dlerror()
             : !ops ? "no " C4K_CUDA_SYMBOL
                    : "no " C4K_CUDA_SELECT_SYMBOL);
    return NULL;
  }
  const char *why = NULL;
  if (select(local_rank, &why) < 0) {
    snprintf(err, errlen, "--device cuda: no GPU for local rank %d: %s", local_rank,
             why ? why : "?");
    return NULL;
  }
  return ops;
}

int train_open_compute(const struct train_opts *o, const struct c4_ranks *r, int rank,
                       struct c4k_ops *timed, const struct c4k_ops **ops, struct dp *dp, char *err,
                       size_t errlen) {
  /* the kernels first: loading libc4k-cuda.so brings the CUDA runtime that NCCL's group needs */
  *ops = pick_ops(o, r->local_rank, timed, err, errlen);
  if (!*ops) {
    fprintf(stderr, "c4train: rank %d: %s\n", rank, err);
    return 1;
  }
  /* --pp: the stages' links and sums go through the plugin's host API on either device, staged
   * through host memory (NCCL is not opened) */
  int cuda = strcmp(o->device, "cuda") == 0, pipe = o->pp > 1;
  int rc = dp_init(dp, r, o->plugin, cuda && !pipe, o->bucket_bytes, err, errlen);
  if (rc) {
    fprintf(stderr, "c4train: rank %d: %s\n", rank, err);
    /* a plugin that does not load or an address that does not resolve will not work on a
     * restart either: exit 1, not the lost peer's 75 that tells a launcher to restart */
    return rc == C4_ENOTFOUND || rc == C4_EINVAL ? 1 : C4TRAIN_EXIT_PEER_LOST;
  }
  if (pipe && dp_stage_through_host(dp, *ops)) {
    fprintf(stderr, "c4train: rank %d: out of memory for a host bucket of %zu bytes\n", rank,
            o->bucket_bytes);
    dp_close(dp);
    return 1;
  }
  return 0;
}

static void sort(double *v, int n) {
  for (int i = 1; i < n; i++)
    for (int j = i; j > 0 && v[j] < v[j - 1]; j--) {
      double t = v[j];
      v[j] = v[j - 1];
      v[j - 1] = t;
    }
}

static double median(double *v, int n) {
  sort(v, n);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Mean held-out loss over o->eval_windows windows, micro-batch by micro-batch. */
static double eval_loss(struct gpt *m, const struct train_opts *o, const struct text_data *d,
                        int *tok, int *tgt) {
  int B = o->micro_batch, T = o->cfg.context, done = 0;
  double sum = 0;
  while (done < o->eval_windows) {
    for (int b = 0; b < B; b++)
      text_data_eval(d, (done + b) % o->eval_windows, o->eval_windows, T, tok + b * T, tgt + b * T);
    sum += gpt_eval_microbatch(m, tok, tgt);
    done += B;
  }
  return sum / ((o->eval_windows + B - 1) / B);
}

/* --pp: the step's healthy pace, wall seconds per layer (its ends counted as layers) per
 * micro-batch: the lower median over the ranks, so a slow one does not set it. */
static double pipe_pace(const struct train_pipe *tp, const struct step_report *rep, int world) {
  double v[world];
  int n = 0;
  for (int i = 0; i < world; i++) {
    int s = i % tp->stages, mr = tp->plan.data[i / tp->stages];
    double units = (tp->split[s] + tp->plan.ends[s]) * mr;
    if (units > 0 && rep[i].compute_s > 0) v[n++] = rep[i].compute_s / units;
  }
  sort(v, n);
  return n ? v[(n - 1) / 2] : 0;
}

static void print_split(FILE *f, int world, const int *mb) {
  for (int i = 0; i < world; i++)
    fprintf(f, "%s%d", i ? "," : "", mb[i]);
}

/* One rank's run: what its setup makes, and what its steps carry to the next and to the end. */
struct run {
  const struct train_opts *o;
  int rank, world, orig_rank, B, T;
  int pp, nsplit, me; /* with --pp, the split is among the data-parallel replicas, each a pipe */
  char err[512];
  struct text_data data;
  struct c4k_ops timed;
  const struct c4k_ops *ops;
  struct dp dp;
  struct gpt m;
  struct mon_sub *sub;
  int *tok, *tgt;
  struct step_report *rep;
  struct resplit_report *told;
  double *step_secs, *step_tps, *mb_secs, *fixed_secs; /* by timed step; step_tps by step */
  FILE *jf;
  struct resplit plan;
  int plan_up;
  struct train_pipe tp;
  int *mb; /* the micro-batches per rank (or, --pp, per replica) */
  int step, first, timed_steps, ckpt_failed;
  int relayout_off; /* a checkpoint for a new layout failed: the run goes on in this one */
  double eval_start, last_loss, gemm_s_steps, compute_s_steps, pipe_busy_s, pipe_wall_s,
      pipe_ideal_s;
  float dloss;
};

/* What one step carries from its compute to its report. */
struct step_state {
  uint64_t t_step, t0;
  double gemm0, secs, tps;
  struct step_report mine;
  int *old_mb, *old_layers; /* the split and the layers the step ran with */
  int moved;                /* --pp: layers moved after it */
};

/* Data, kernels, ring and model; on failure what was opened is closed again. */
static int run_open(struct run *s, const struct c4_ranks *r) {
  const struct train_opts *o = s->o;
  int rank = s->rank;
  if (text_data_load(&s->data, o->data, o->cfg.context, s->err, sizeof s->err)) {
    fprintf(stderr, "c4train: rank %d: %s\n", rank, s->err);
    return 1;
  }
  /* --pp: without the plugin's helper threads a message larger than the sockets' buffers moves
   * only while its sender polls, and a stage computes between polls, so its neighbour waits out
   * the pass (docs/benchmarks.md). One helper per comm moves it meanwhile, as NCCL's proxy
   * thread drives the network beside the kernels; a user's C4_NTHREADS stands. */
  if (o->pp > 1) setenv("C4_NTHREADS", "1", 0);
  int rc = train_open_compute(o, r, rank, &s->timed, &s->ops, &s->dp, s->err, sizeof s->err);
  if (rc) {
    text_data_free(&s->data);
    return rc;
  }
  int l0 = 0, l1 = o->cfg.layers; /* --pp: the stage's layers alone */
  if (o->pp > 1 && train_pipe_even_layers(o->cfg.layers, o->pp, rank % o->pp, &l0, &l1)) {
    fprintf(stderr, "c4train: rank %d: %d layers cannot fill %d pipeline stages\n", rank,
            o->cfg.layers, o->pp);
    dp_close(&s->dp);
    text_data_free(&s->data);
    return 1;
  }
  if (gpt_init_layers(&s->m, &o->cfg, s->ops, o->micro_batch, o->seed, l0, l1, s->err,
                      sizeof s->err)) {
    fprintf(stderr, "c4train: rank %d: %s\n", rank, s->err);
    dp_close(&s->dp);
    text_data_free(&s->data);
    return 1;
  }
  return 0;
}

/* The monitor's subscription, the buffers, the planner and (--pp) the pipeline. */
static int run_alloc(struct run *s) {
  const struct train_opts *o = s->o;
  s->sub = o->monitor_sub ? mon_sub_start(o->monitor_sub, s->rank, NULL, NULL) : NULL;
  s->tok = malloc(sizeof(int) * (size_t)s->B * s->T);
  s->tgt = malloc(sizeof(int) * (size_t)s->B * s->T);
  s->rep = calloc((size_t)s->world, sizeof *s->rep);
  s->told = calloc((size_t)s->world, sizeof *s->told);
  s->step_secs = calloc((size_t)o->steps + 1, sizeof *s->step_secs);
  s->step_tps = calloc((size_t)o->steps + 1, sizeof *s->step_tps);
  s->mb_secs = calloc((size_t)o->steps + 1, sizeof *s->mb_secs);
  s->fixed_secs = calloc((size_t)o->steps + 1, sizeof *s->fixed_secs);
  s->plan_up = resplit_init(&s->plan, s->nsplit, o->microbatches, o->resplit && s->pp == 1) == 0;
  if (s->plan_up) s->plan.persist_s = o->straggler_wait_s;
  if (!s->tok || !s->tgt || !s->rep || !s->told || !s->step_secs || !s->mb_secs || !s->fixed_secs ||
      !s->step_tps || !s->plan_up) {
    fprintf(stderr, "c4train: rank %d: out of memory\n", s->rank);
    return 1;
  }
  s->mb = s->plan.split;
  if (s->pp > 1 &&
      train_pipe_init(&s->tp, &s->dp, &s->m, s->rank, s->pp, o->microbatches,
                      o->stage_mem_mb * 1048576.0, o->resplit, s->err, sizeof s->err)) {
    fprintf(stderr, "c4train: rank %d: %s\n", s->rank, s->err);
    return C4TRAIN_EXIT_PEER_LOST;
  }
  if (s->pp > 1) { /* --pp: the pipeline plan splits the replicas', after the same wait */
    s->mb = s->tp.plan.data;
    s->tp.plan.persist_s = o->straggler_wait_s;
  }
  return 0;
}

/* --ckpt-dir: the step to start from, and the model as it was then. */
static int run_resume(struct run *s) {
  if (!s->o->ckpt_dir) return 0;
  char warn[1024];
  json_t *meta = NULL;
  int rc =
      train_ckpt_resume(&s->m, s->o, &s->step, &meta, s->err, sizeof s->err, warn, sizeof warn);
  if (rc < 0) {
    fprintf(stderr, "c4train: rank %d: %s\n", s->rank, s->err);
    return 1;
  }
  if (rc > 0 && s->rank == 0) train_ckpt_say_warnings(meta, s->o, warn, s->err);
  json_decref(meta);
  if (rc > 0 && s->rank == 0 && !s->o->json)
    printf("resumed from step %d (%s) on %d ranks\n", s->step, s->err, s->world);
  return 0;
}

/* The starting eval loss, and rank 0's opening lines. */
static int run_begin(struct run *s) {
  const struct train_opts *o = s->o;
  int rank = s->rank;
  s->eval_start = o->eval_windows && rank == 0 && s->pp == 1
                      ? eval_loss(&s->m, o, &s->data, s->tok, s->tgt)
                      : 0;
  if (s->pp > 1 &&
      train_pipe_eval(&s->tp, &s->dp, &s->m, &s->data, o->eval_windows, &s->eval_start))
    return C4TRAIN_EXIT_PEER_LOST;
  if (!o->eval_windows) s->eval_start = TRAIN_NO_EVAL;
  if (train_json_open(o, rank, &s->jf)) return 1;
  if (rank == 0) {
    if (s->jf)
      train_report_start(s->jf, s->world, o->device, gpt_full_floats(&s->m), s->step,
                         s->eval_start);
    char eval[64];
    if (!o->json)
      printf("c4train: %d ranks on %s, %zu parameters, %d x %d sequences of %d per step, data %s, "
             "%s\n",
             s->world, o->device, gpt_full_floats(&s->m), o->microbatches, s->B, s->T, o->data,
             train_eval_text(eval, sizeof eval, s->eval_start, TRAIN_NO_EVAL));
    fflush(stdout);
  }
  return 0;
}

/* This rank's forward and backward passes of the step (--pp: the pipeline's), its report filled. */
static int step_compute(struct run *s, struct step_state *st) {
  const struct train_opts *o = s->o;
  int B = s->B, T = s->T;
  st->t_step = c4_now_ns();
  dp_step(&s->dp, s->step + 1);
  int start = 0;
  for (int i = 0; i < s->me; i++)
    start += s->mb[i];
  gpt_zero_grad(&s->m);
  double loss_sum = 0, first_s = 0;
  st->gemm0 = gemm_seconds;
  uint64_t t0 = st->t0 = c4_now_ns();
  double slow = train_slow_factor(o, s->orig_rank, s->step);
  s->tp.slow = slow;
  struct train_pipe_windows windows = {&s->data, o->seed, s->step, start, B, T};
  struct train_pipe_feed feed = {train_pipe_fill_windows, &windows};
  if (s->pp > 1 && train_pipe_step(&s->tp, &s->m, &feed, s->dloss, &loss_sum)) {
    fprintf(stderr, "c4train: rank %d: a pipeline neighbour was lost at step %d\n", s->rank,
            s->step + 1);
    return C4TRAIN_EXIT_PEER_LOST;
  }
  for (int k = 0; s->pp == 1 && k < s->mb[s->rank]; k++) {
    uint64_t tk = c4_now_ns();
    for (int b = 0; b < B; b++)
      text_data_sample(&s->data, o->seed, (uint64_t)s->step, (uint64_t)(start + k) * B + b, T,
                       s->tok + b * T, s->tgt + b * T);
    loss_sum += (double)gpt_step_microbatch(&s->m, s->tok, s->tgt, s->dloss) * B * T;
    train_stretch(tk, slow);
    if (k == 0) { /* the step-time model's point at one micro-batch (on a GPU, once done) */
      s->ops->sync();
      first_s = (double)(c4_now_ns() - t0) * 1e-9;
    }
  }
  s->ops->sync();
  int pp = s->pp;
  st->mine =
      (struct step_report){.loss_sum = loss_sum,
                           .first_s = first_s,
                           .compute_s = pp > 1 ? s->tp.wall_s : (double)(c4_now_ns() - t0) * 1e-9,
                           .monitor_slow = s->sub ? mon_sub_factor(s->sub) : 0,
                           .recoveries = s->sub ? mon_sub_recoveries(s->sub) : 0,
                           .pipe_s = pp > 1 ? (double)(c4_now_ns() - t0) * 1e-9 : 0,
                           .microbatches = s->mb[s->me],
                           .relayout = relayout_asked()};
  return 0;
}

/* The gradients summed and the reports shared, the optimizer step, and (--pp) the layers'
 * re-split; the split and layers the step ran with kept for its report. */
static int step_exchange(struct run *s, struct step_state *st) {
  const struct train_opts *o = s->o;
  if ((s->pp > 1 ? train_pipe_allreduce(&s->tp, &s->dp, &s->m)
                 : dp_allreduce(&s->dp, s->m.grads, s->m.nparams)) ||
      dp_gather_step(&s->dp, &st->mine, s->rep, sizeof st->mine)) {
    fprintf(stderr,
            "c4train: rank %d: a peer was lost at step %d; stopping for a restart on "
            "the healthy ranks\n",
            s->rank, s->step + 1);
    return C4TRAIN_EXIT_PEER_LOST;
  }
  /* linear warm-up: Adam's first steps are its largest, and a small model diverges */
  float lr = s->step < o->warmup ? o->lr * (float)(s->step + 1) / (float)o->warmup : o->lr;
  gpt_adamw(&s->m, lr, o->weight_decay, s->step + 1);
  s->step++;
  memcpy(st->old_mb, s->mb, sizeof(int) * (size_t)s->nsplit);
  if (s->pp > 1) memcpy(st->old_layers, s->tp.split, sizeof(int) * (size_t)s->pp);
  st->moved = s->pp > 1 ? train_pipe_replan(&s->tp, &s->dp, &s->m, st->mine.monitor_slow, s->err,
                                            sizeof s->err)
                        : 0;
  if (st->moved < 0) {
    fprintf(stderr, "c4train: rank %d: %s\n", s->rank, s->err);
    return C4TRAIN_EXIT_PEER_LOST;
  }
  return 0;
}

/* --pp: each pipeline's stages x its time, the time they were busy, and 1F1B's at these stage
 * times with nothing lost: each micro-batch crosses every stage once, and the slowest stage
 * paces the other m - 1. */
static void step_pipe_times(struct run *s) {
  int pp = s->pp;
  for (int r = 0; r < s->nsplit; r++) {
    double longest = 0, sum = 0, most = 0;
    for (int i = r * pp; i < (r + 1) * pp; i++) {
      sum += s->rep[i].compute_s;
      most = s->rep[i].compute_s > most ? s->rep[i].compute_s : most;
      longest = s->rep[i].pipe_s > longest ? s->rep[i].pipe_s : longest;
    }
    s->pipe_busy_s += sum;
    s->pipe_wall_s += pp * longest;
    int mr = s->rep[r * pp].microbatches > 0 ? s->rep[r * pp].microbatches : 1;
    s->pipe_ideal_s += pp * (sum / mr + (mr - 1) * most / mr);
  }
}

/* The step's loss and pace; past the first step, its times as a speed sample and the data
 * planner's next split. */
static void step_account(struct run *s, struct step_state *st) {
  const struct train_opts *o = s->o;
  double total = 0;
  for (int i = 0; i < s->world; i++)
    total += s->rep[i].loss_sum;
  s->last_loss = total / ((double)o->microbatches * s->B * s->T);
  st->secs = (double)(c4_now_ns() - st->t_step) * 1e-9;
  st->tps = (double)o->microbatches * s->B * s->T / st->secs;
  if (s->step <= s->first + 1) return; /* the first step warms caches: not a speed sample */
  s->step_secs[s->timed_steps] = st->secs;
  s->gemm_s_steps += gemm_seconds - st->gemm0;
  s->compute_s_steps += st->mine.compute_s;
  s->timed_steps++;
  if (s->pp > 1) step_pipe_times(s);
  for (int i = 0; s->pp == 1 && i < s->world; i++)
    s->told[i] = (struct resplit_report){.step = {.microbatches = s->rep[i].microbatches,
                                                  .first_s = s->rep[i].first_s,
                                                  .total_s = s->rep[i].compute_s},
                                         .monitor_factor = s->rep[i].monitor_slow,
                                         .recoveries = (long)s->rep[i].recoveries};
  if (s->pp == 1) resplit_step(&s->plan, s->told);
  s->mb_secs[s->timed_steps - 1] =
      s->pp > 1 ? pipe_pace(&s->tp, s->rep, s->world) : s->plan.per_mb_s;
  s->fixed_secs[s->timed_steps - 1] = s->plan.fixed_s;
}

/* Rank 0's JSON line of the step. */
static void step_report_json(struct run *s, const struct step_state *st) {
  int world = s->world;
  double compute_ms[world], rank_tps[world];
  for (int i = 0; i < world; i++) {
    compute_ms[i] = s->rep[i].compute_s * 1e3;
    rank_tps[i] = s->rep[i].compute_s > 0
                      ? (double)s->rep[i].microbatches * s->B * s->T / s->rep[i].compute_s
                      : 0;
  }
  struct train_step_report sr = {.step = s->step,
                                 .loss = s->last_loss,
                                 .tokens_per_s = st->tps,
                                 .step_ms = st->secs * 1e3,
                                 .t_start_ns = st->t_step,
                                 .t_ns = st->t_step + (uint64_t)(st->secs * 1e9),
                                 .split = st->old_mb,
                                 .slowdown = s->plan.slowdown,
                                 .world = s->nsplit,
                                 .compute_ms = compute_ms,
                                 .rank_tps = rank_tps,
                                 .layers = s->pp > 1 ? st->old_layers : NULL,
                                 .pipe_slowdown = s->tp.plan.slowdown,
                                 .ranks = world,
                                 .stages = s->pp};
  train_report_step(s->jf, &sr);
}

/* Rank 0's text line of the step: its split and layers, and where they move next. */
static void step_report_text(struct run *s, const struct step_state *st) {
  printf("step %4d  loss %.4f  %9.0f tok/s  %8.1f ms  split ", s->step, s->last_loss, st->tps,
         st->secs * 1e3);
  print_split(stdout, s->nsplit, st->old_mb);
  if (memcmp(st->old_mb, s->mb, sizeof(int) * (size_t)s->nsplit) != 0) {
    printf("  -> re-split ");
    print_split(stdout, s->nsplit, s->mb);
  }
  if (s->pp > 1) {
    printf("  layers ");
    print_split(stdout, s->pp, st->old_layers);
  }
  if (st->moved && memcmp(st->old_layers, s->tp.split, sizeof(int) * (size_t)s->pp) != 0) {
    printf("  -> layers ");
    print_split(stdout, s->pp, s->tp.split);
  }
  printf("\n");
}

/* Whether a rank's launcher asked for a new layout, as every rank's report says: all stop after
 * this step (not after the last: the job is done). */
static int step_relayout(const struct run *s) {
  int asked = 0;
  for (int i = 0; i < s->world; i++)
    asked |= s->rep[i].relayout;
  return asked && !s->relayout_off && s->step < s->o->steps && s->o->ckpt_dir;
}

/* --ckpt-every: the model written at its steps and at the last (--pp: gathered from the stages
 * first). A checkpoint not written does not stop the run; the exit status says it. Asked for a
 * new layout: a checkpoint now, and C4TRAIN_EXIT_RELAYOUT on every rank when it was written. */
static int step_checkpoint(struct run *s) {
  int relayout = step_relayout(s);
  if (!relayout && !train_ckpt_due(s->o, s->step)) return 0;
  struct train_ckpt_at at = {s->o, s->pp, s->rank, s->world, s->step};
  int rc = train_ckpt_step(&at, &s->m, &s->tp, &s->dp, NULL, s->err, sizeof s->err);
  if (rc < 0) s->ckpt_failed = 1;
  if (relayout && rc <= 0)
    return relayout_stop(&s->dp, s->world, rc, s->step, s->rank == 0 && !s->o->json, s->jf,
                         &s->relayout_off);
  return rc < 0 ? 0 : rc;
}

/* One global step, from its compute to its checkpoint. */
static int run_step(struct run *s) {
  int old_mb[s->nsplit], old_layers[s->pp];
  struct step_state st = {.old_mb = old_mb, .old_layers = old_layers};
  int rc = step_compute(s, &st);
  if (!rc) rc = step_exchange(s, &st);
  if (rc) return rc;
  step_account(s, &st);
  if (s->rank == 0) {
    s->step_tps[s->step] = st.tps;
    if (s->jf) step_report_json(s, &st);
    if (!s->o->json) step_report_text(s, &st);
    fflush(stdout);
  }
  return step_checkpoint(s);
}

/* The planned split's speedup over an even one, in the planner's model of the step. */
static double run_planned_speedup(struct run *s) {
  int nsplit = s->nsplit;
  double even_mb[nsplit];
  int even[nsplit];
  for (int i = 0; i < nsplit; i++)
    even_mb[i] = 1.0;
  c4_split_microbatches(s->o->microbatches, nsplit, even_mb, even);
  const struct layer_plan *lp = &s->tp.plan;
  return s->pp > 1 ? layer_plan_time(lp, lp->even, lp->even_data, lp->planned) /
                         layer_plan_time(lp, s->tp.split, s->mb, lp->planned)
                   : resplit_bottleneck(nsplit, even, s->plan.planned) /
                         resplit_bottleneck(nsplit, s->mb, s->plan.planned);
}

/* The planner's bound: its split's slowest rank at the measured pace (the model's fixed part and
 * part per micro-batch), communication and optimizer left out; --pp: the pipeline plan's time in
 * healthy layer times, at the measured pace. */
static double run_bound(struct run *s) {
  double tokens = (double)s->o->microbatches * s->B * s->T;
  double t_mb = s->timed_steps ? median(s->mb_secs, s->timed_steps) : 0;
  double t_fixed = s->timed_steps ? median(s->fixed_secs, s->timed_steps) : 0;
  if (t_mb <= 0) return 0;
  if (s->pp > 1)
    return tokens / (layer_plan_time(&s->tp.plan, s->tp.split, s->mb, s->tp.plan.planned) * t_mb);
  return tokens / (t_fixed + resplit_bottleneck(s->nsplit, s->mb, s->plan.planned) * t_mb);
}

/* Rank 0's closing line in text. */
static void run_report_text(struct run *s, const struct train_end_report *er) {
  const struct train_opts *o = s->o;
  char eval[64], pace[96];
  /* a run's first two steps warm up: a run of fewer has no pace to give, not a pace of 0 */
  if (er->tokens_per_s > 0)
    snprintf(pace, sizeof pace, "%.0f tok/s (%.2f model GFLOP/s)", er->tokens_per_s,
             er->model_gflops);
  else
    snprintf(pace, sizeof pace, "tok/s not timed (steps from the third are)");
  printf("done: %d steps, loss %.4f, %s, %s, GEMM %.0f%% of compute at %.2f GFLOP/s, planned "
         "speedup over an even split %.3fx, split ",
         er->steps, er->loss,
         train_eval_text(eval, sizeof eval, er->eval_loss_start, er->eval_loss), pace,
         100 * er->gemm_share, er->gemm_gflops, er->planned_speedup);
  print_split(stdout, s->nsplit, s->mb);
  printf("\n");
  if (er->slow_phases && o->slow_from <= o->steps) { /* a window at an end has no side there */
    /* the timed steps are this run's from its third on (a resumed run's too) */
    int timed = s->first + 2, from = o->slow_from > timed ? o->slow_from : timed;
    printf("tokens/s, median of the steps:");
    if (o->slow_from > timed) printf(" %.0f before the slow steps,", er->slow_phases[0]);
    if (o->slow_to < o->steps)
      printf(" %.0f in steps %d-%d, %.0f after\n", er->slow_phases[1], from, o->slow_to,
             er->slow_phases[2]);
    else
      printf(" %.0f in steps %d-%d\n", er->slow_phases[1], from, o->steps);
  }
  fflush(stdout);
}

/* The closing eval loss, and rank 0's figures of the whole run. */
static int run_end(struct run *s) {
  const struct train_opts *o = s->o;
  double eval_end = 0;
  if (s->pp > 1 && train_pipe_eval(&s->tp, &s->dp, &s->m, &s->data, o->eval_windows, &eval_end))
    return C4TRAIN_EXIT_PEER_LOST;
  if (s->rank != 0) return 0;
  if (s->pp == 1 && o->eval_windows) eval_end = eval_loss(&s->m, o, &s->data, s->tok, s->tgt);
  if (!o->eval_windows) eval_end = TRAIN_NO_EVAL;
  /* the median step: the steady pace, not the steps before the planner's first re-split */
  double mid = s->timed_steps ? median(s->step_secs, s->timed_steps) : 0;
  double tps = mid > 0 ? (double)o->microbatches * s->B * s->T / mid : 0;
  double phases[3];
  int with_phases = o->slow_rank >= 0 && o->slow_factor > 1;
  if (with_phases)
    train_slow_phases(s->step_tps, s->first + 2, s->step, o->slow_from, o->slow_to, phases);
  /* --pp: the share of the stages' time spent waiting (1F1B's bubble, and transfers) */
  struct train_end_report er = {
      .steps = s->step,
      .world = s->nsplit,
      .loss = s->last_loss,
      .eval_loss_start = s->eval_start,
      .eval_loss = eval_end,
      .tokens_per_s = tps,
      .gemm_share = s->compute_s_steps > 0 ? s->gemm_s_steps / s->compute_s_steps : 0,
      .gemm_gflops = gemm_seconds > 0 ? gemm_flops / gemm_seconds * 1e-9 : 0,
      .model_gflops = tps * gpt_flops_per_token(&s->m) * 1e-9,
      .planned_speedup = run_planned_speedup(s),
      .bound_tokens_per_s = run_bound(s),
      .pipeline_bubble = s->pipe_wall_s > 0 ? 1 - s->pipe_busy_s / s->pipe_wall_s : 0,
      .pipeline_bubble_bound = s->pipe_ideal_s > 0 ? 1 - s->pipe_busy_s / s->pipe_ideal_s : 0,
      .split = s->mb,
      .slow_phases = with_phases ? phases : NULL};
  if (s->jf) train_report_end(s->jf, &er);
  if (!o->json) run_report_text(s, &er);
  return 0;
}

/* Everything run_open and run_alloc made (each free takes NULL or a zeroed object). Returns 0,
 * or 1 when the step log could not be written. */
static int run_close(struct run *s) {
  int rc = train_json_close(s->jf, s->o->json_out);
  if (s->sub) mon_sub_stop(s->sub);
  free(s->tok);
  free(s->tgt);
  train_pipe_free(&s->tp);
  if (s->plan_up) resplit_free(&s->plan);
  free(s->rep);
  free(s->told);
  free(s->step_secs);
  free(s->step_tps);
  free(s->mb_secs);
  free(s->fixed_secs);
  gpt_free(&s->m);
  dp_close(&s->dp);
  text_data_free(&s->data);
  return rc;
}

int train_run(const struct train_opts *o, const struct c4_ranks *r) {
  static struct run zero;
  struct run *s = malloc(sizeof *s);
  if (!s) {
    fprintf(stderr, "c4train: rank %d: out of memory\n", r->rank);
    return 1;
  }
  *s = zero;
  s->o = o;
  s->rank = r->rank;
  s->world = r->world;
  s->orig_rank = train_orig_rank(r);
  s->B = o->micro_batch;
  s->T = o->cfg.context;
  s->pp = o->pp > 1 ? o->pp : 1;
  s->nsplit = s->world / s->pp;
  s->me = s->rank / s->pp;
  s->dloss = 1.0f / ((float)o->microbatches * s->B * s->T);
  int status = run_open(s, r);
  if (status) {
    free(s);
    return status;
  }
  status = run_alloc(s);
  if (!status) status = run_resume(s);
  int done_already = !status && s->step >= o->steps; /* resumed at or past the last step */
  if (done_already && s->rank == 0) train_ckpt_say_done(o, s->step);
  if (!status && !done_already) status = run_begin(s);
  s->first = s->step;
  while (!status && s->step < o->steps)
    status = run_step(s);
  if (!status && !done_already) status = run_end(s);
  if (!status) status = s->ckpt_failed ? 1 : 0;
  int closed = run_close(s);
  if (!status) status = closed;
  free(s);
  return status;
}
