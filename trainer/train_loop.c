/* train_loop.c -- one rank's training loop. Each global step: the planner's split says how many
 * micro-batches this rank runs (its sample indices follow from the split, so the global batch is
 * the same set of samples whatever the split); the rank adds their gradients, scaled by one over
 * the global batch's positions; the buckets are summed across ranks (so the average is weighted
 * by samples); every rank applies the same AdamW step; a small allgather shares losses and
 * compute times, from which every rank computes the same next split. */
#include "train_loop.h"

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_env.h"
#include "dp.h"
#include "gpt_layers.h"
#include "mon_sub.h"
#include "planner.h"
#include "resplit.h"
#include "text_data.h"
#include "train_ckpt.h"
#include "train_pipe.h"
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
  int32_t pad;
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

const struct c4k_ops *train_pick_ops(const struct train_opts *o, struct c4k_ops *timed, char *err,
                                     size_t errlen) {
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
  if (!ops) snprintf(err, errlen, "--device cuda: %s", h ? "no " C4K_CUDA_SYMBOL : dlerror());
  return ops;
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

static void sleep_seconds(double s) {
  if (s <= 0) return;
  struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
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

int train_run(const struct train_opts *o, const struct c4_ranks *r) {
  char err[512] = "";
  int rank = r->rank, world = r->world, status = 1;
  /* --slow names a rank of the first launch: a restarted job keeps the name (launch.c) */
  int orig_rank = (int)c4_env_long("C4TRAIN_ORIG_RANK", rank, 0, INT_MAX);
  if (o->pp > 1 && strcmp(o->device, "cpu") != 0) {
    /* the stages' kernels go through the ops table like the rest, but their links use the net
     * plugin's host API, which the CUDA path (NCCL) does not open: not built, and no GPU here */
    fprintf(stderr, "c4train: rank %d: --pp runs on --device cpu only\n", rank);
    return 1;
  }
  if (o->pp > 1 && (world % o->pp || o->microbatches < world / o->pp)) {
    fprintf(stderr,
            "c4train: rank %d: --pp %d needs a multiple of %d ranks (not %d) and a micro-batch "
            "per pipeline at least (--microbatches %d)\n",
            rank, o->pp, o->pp, world, o->microbatches);
    return 1;
  }
  struct text_data data;
  if (text_data_load(&data, o->data, o->cfg.context, err, sizeof err)) {
    fprintf(stderr, "c4train: rank %d: %s\n", rank, err);
    return 1;
  }
  /* the kernels first: loading libc4k-cuda.so brings the CUDA runtime that NCCL's group needs */
  struct c4k_ops timed;
  const struct c4k_ops *ops = train_pick_ops(o, &timed, err, sizeof err);
  if (!ops) {
    fprintf(stderr, "c4train: rank %d: %s\n", rank, err);
    text_data_free(&data);
    return 1;
  }
  struct dp dp;
  if (dp_init(&dp, r, o->plugin, strcmp(o->device, "cuda") == 0, o->bucket_bytes, err,
              sizeof err)) {
    fprintf(stderr, "c4train: rank %d: %s\n", rank, err);
    text_data_free(&data);
    return C4TRAIN_EXIT_PEER_LOST;
  }
  struct gpt m;
  int l0 = 0, l1 = o->cfg.layers; /* --pp: the stage's layers alone */
  if (o->pp > 1 && train_pipe_even_layers(o->cfg.layers, o->pp, rank % o->pp, &l0, &l1)) {
    fprintf(stderr, "c4train: rank %d: %d layers cannot fill %d pipeline stages\n", rank,
            o->cfg.layers, o->pp);
    dp_close(&dp);
    text_data_free(&data);
    return 1;
  }
  if (gpt_init_layers(&m, &o->cfg, ops, o->micro_batch, o->seed, l0, l1, err, sizeof err)) {
    fprintf(stderr, "c4train: rank %d: %s\n", rank, err);
    dp_close(&dp);
    text_data_free(&data);
    return 1;
  }
  struct mon_sub *sub = o->monitor_sub ? mon_sub_start(o->monitor_sub, rank, NULL, NULL) : NULL;
  int B = o->micro_batch, T = o->cfg.context;
  int *tok = malloc(sizeof(int) * (size_t)B * T), *tgt = malloc(sizeof(int) * (size_t)B * T);
  struct step_report *rep = calloc((size_t)world, sizeof *rep);
  struct resplit_report *told = calloc((size_t)world, sizeof *told);
  double *step_secs = calloc((size_t)o->steps + 1, sizeof *step_secs);
  double *step_tps = calloc((size_t)o->steps + 1, sizeof *step_tps); /* by step number */
  FILE *jf = NULL;
  double *mb_secs = calloc((size_t)o->steps + 1, sizeof *mb_secs);
  double *fixed_secs = calloc((size_t)o->steps + 1, sizeof *fixed_secs);
  /* with --pp, the split is among the data-parallel replicas (kept even), each a pipeline */
  int pp = o->pp > 1 ? o->pp : 1, nsplit = world / pp, me = rank / pp;
  struct resplit plan;
  int plan_up = resplit_init(&plan, nsplit, o->microbatches, o->resplit && pp == 1) == 0;
  struct train_pipe tp = {0};
  if (!tok || !tgt || !rep || !told || !step_secs || !mb_secs || !fixed_secs || !step_tps ||
      !plan_up) {
    fprintf(stderr, "c4train: rank %d: out of memory\n", rank);
    goto out;
  }
  int *mb = plan.split;
  if (pp > 1 && train_pipe_init(&tp, &dp, &m, rank, pp, o->microbatches,
                                o->stage_mem_mb * 1048576.0, o->resplit, err, sizeof err)) {
    fprintf(stderr, "c4train: rank %d: %s\n", rank, err);
    status = C4TRAIN_EXIT_PEER_LOST;
    goto out;
  }
  if (pp > 1) mb = tp.plan.data; /* --pp: the pipeline plan splits the replicas' micro-batches */

  int step = 0; /* steps done */
  if (o->ckpt_dir) {
    char warn[1024];
    int rc = train_ckpt_resume(&m, o, &step, err, sizeof err, warn, sizeof warn);
    if (rc < 0) {
      fprintf(stderr, "c4train: rank %d: %s\n", rank, err);
      goto out;
    }
    if (rc > 0 && warn[0] && rank == 0)
      fprintf(stderr, "c4train: %s; resuming from the newest intact one, %s\n", warn, err);
    if (rc > 0 && rank == 0 && !o->json)
      printf("resumed from step %d (%s) on %d ranks\n", step, err, world);
  }
  double eval_start =
      o->eval_windows && rank == 0 && pp == 1 ? eval_loss(&m, o, &data, tok, tgt) : 0;
  if (pp > 1 && train_pipe_eval(&tp, &dp, &m, &data, o->eval_windows, &eval_start)) {
    status = C4TRAIN_EXIT_PEER_LOST;
    goto out;
  }
  /* rank 0's JSON lines: on stdout (--json) or, beside the text, in a file (--json-out) */
  if (rank == 0 && !o->json && o->json_out && !(jf = fopen(o->json_out, "a"))) {
    fprintf(stderr, "c4train: --json-out %s: %s\n", o->json_out, strerror(errno));
    goto out;
  }
  if (rank == 0 && o->json) jf = stdout;
  if (rank == 0) {
    if (jf) train_report_start(jf, world, o->device, gpt_full_floats(&m), step, eval_start);
    if (!o->json)
      printf("c4train: %d ranks on %s, %zu parameters, %d x %d sequences of %d per step, data %s, "
             "eval loss %.4f\n",
             world, o->device, gpt_full_floats(&m), o->microbatches, B, T, o->data, eval_start);
    fflush(stdout);
  }
  const float dloss = 1.0f / ((float)o->microbatches * B * T);
  double gemm_s_steps = 0, compute_s_steps = 0, last_loss = 0, pipe_busy_s = 0, pipe_wall_s = 0,
         pipe_ideal_s = 0;
  int timed_steps = 0, first = step, ckpt_failed = 0;
  while (step < o->steps) {
    uint64_t t_step = c4_now_ns();
    dp_step(&dp, step + 1);
    int start = 0;
    for (int i = 0; i < me; i++)
      start += mb[i];
    gpt_zero_grad(&m);
    double loss_sum = 0, gemm0 = gemm_seconds, first_s = 0;
    uint64_t t0 = c4_now_ns();
    int slow_now = orig_rank == o->slow_rank && o->slow_factor > 1 && step + 1 >= o->slow_from &&
                   step + 1 <= o->slow_to;
    tp.slow = slow_now ? o->slow_factor : 1;
    if (pp > 1 && train_pipe_step(&tp, &m, &data, o->seed, step, start, dloss, &loss_sum)) {
      fprintf(stderr, "c4train: rank %d: a pipeline neighbour was lost at step %d\n", rank,
              step + 1);
      status = C4TRAIN_EXIT_PEER_LOST;
      goto out;
    }
    for (int k = 0; pp == 1 && k < mb[rank]; k++) {
      uint64_t tk = c4_now_ns();
      for (int b = 0; b < B; b++)
        text_data_sample(&data, o->seed, (uint64_t)step, (uint64_t)(start + k) * B + b, T,
                         tok + b * T, tgt + b * T);
      loss_sum += (double)gpt_step_microbatch(&m, tok, tgt, dloss) * B * T;
      if (slow_now) sleep_seconds((double)(c4_now_ns() - tk) * 1e-9 * (o->slow_factor - 1));
      if (k == 0) { /* the step-time model's point at one micro-batch (on a GPU, once done) */
        ops->sync();
        first_s = (double)(c4_now_ns() - t0) * 1e-9;
      }
    }
    ops->sync();
    struct step_report mine = {.loss_sum = loss_sum,
                               .first_s = first_s,
                               .compute_s = pp > 1 ? tp.wall_s : (double)(c4_now_ns() - t0) * 1e-9,
                               .monitor_slow = sub ? mon_sub_factor(sub) : 0,
                               .recoveries = sub ? mon_sub_recoveries(sub) : 0,
                               .pipe_s = pp > 1 ? (double)(c4_now_ns() - t0) * 1e-9 : 0,
                               .microbatches = mb[me]};
    if ((pp > 1 ? train_pipe_allreduce(&tp, &dp, &m) : dp_allreduce(&dp, m.grads, m.nparams)) ||
        dp_allgather(&dp, &mine, rep, sizeof mine)) {
      fprintf(stderr,
              "c4train: rank %d: a peer was lost at step %d; stopping for a restart on "
              "the healthy ranks\n",
              rank, step + 1);
      status = C4TRAIN_EXIT_PEER_LOST;
      goto out;
    }
    /* linear warm-up: Adam's first steps are its largest, and a small model diverges */
    float lr = step < o->warmup ? o->lr * (float)(step + 1) / (float)o->warmup : o->lr;
    gpt_adamw(&m, lr, o->weight_decay, step + 1);
    step++;
    int old_mb[nsplit], old_layers[pp];
    memcpy(old_mb, mb, sizeof old_mb);
    if (pp > 1) memcpy(old_layers, tp.split, sizeof old_layers);
    int moved = pp > 1 ? train_pipe_replan(&tp, &dp, &m, mine.monitor_slow, err, sizeof err) : 0;
    if (moved < 0) {
      fprintf(stderr, "c4train: rank %d: %s\n", rank, err);
      status = C4TRAIN_EXIT_PEER_LOST;
      goto out;
    }
    double total = 0;
    for (int i = 0; i < world; i++)
      total += rep[i].loss_sum;
    last_loss = total / ((double)o->microbatches * B * T);
    double secs = (double)(c4_now_ns() - t_step) * 1e-9;
    double tps = (double)o->microbatches * B * T / secs;
    if (step > first + 1) { /* the first step warms caches: not a speed sample */
      step_secs[timed_steps] = secs;
      gemm_s_steps += gemm_seconds - gemm0;
      compute_s_steps += mine.compute_s;
      timed_steps++;
      for (int r = 0; pp > 1 && r < nsplit; r++) { /* --pp: each pipeline's stages x its time */
        double longest = 0, sum = 0, most = 0;
        for (int i = r * pp; i < (r + 1) * pp; i++) {
          sum += rep[i].compute_s;
          most = rep[i].compute_s > most ? rep[i].compute_s : most;
          longest = rep[i].pipe_s > longest ? rep[i].pipe_s : longest;
        }
        pipe_busy_s += sum;
        pipe_wall_s += pp * longest;
        /* 1F1B at these stage times, nothing lost: each micro-batch crosses every stage once,
         * and the slowest stage paces the other m - 1 */
        int mr = rep[r * pp].microbatches > 0 ? rep[r * pp].microbatches : 1;
        pipe_ideal_s += pp * (sum / mr + (mr - 1) * most / mr);
      }
      for (int i = 0; pp == 1 && i < world; i++)
        told[i] = (struct resplit_report){.step = {.microbatches = rep[i].microbatches,
                                                   .first_s = rep[i].first_s,
                                                   .total_s = rep[i].compute_s},
                                          .monitor_factor = rep[i].monitor_slow,
                                          .recoveries = (long)rep[i].recoveries};
      if (pp == 1) resplit_step(&plan, told);
      mb_secs[timed_steps - 1] = pp > 1 ? pipe_pace(&tp, rep, world) : plan.per_mb_s;
      fixed_secs[timed_steps - 1] = plan.fixed_s;
    }
    if (rank == 0) {
      step_tps[step] = tps;
      if (jf) {
        double compute_ms[world], rank_tps[world];
        for (int i = 0; i < world; i++) {
          compute_ms[i] = rep[i].compute_s * 1e3;
          rank_tps[i] =
              rep[i].compute_s > 0 ? (double)rep[i].microbatches * B * T / rep[i].compute_s : 0;
        }
        struct train_step_report sr = {.step = step,
                                       .loss = last_loss,
                                       .tokens_per_s = tps,
                                       .step_ms = secs * 1e3,
                                       .t_start_ns = t_step,
                                       .t_ns = t_step + (uint64_t)(secs * 1e9),
                                       .split = old_mb,
                                       .slowdown = plan.slowdown,
                                       .world = nsplit,
                                       .compute_ms = compute_ms,
                                       .rank_tps = rank_tps,
                                       .layers = pp > 1 ? old_layers : NULL,
                                       .pipe_slowdown = tp.plan.slowdown,
                                       .ranks = world,
                                       .stages = pp};
        train_report_step(jf, &sr);
      }
      if (!o->json) {
        printf("step %4d  loss %.4f  %9.0f tok/s  %8.1f ms  split ", step, last_loss, tps,
               secs * 1e3);
        print_split(stdout, nsplit, old_mb);
        if (memcmp(old_mb, mb, sizeof old_mb) != 0) {
          printf("  -> re-split ");
          print_split(stdout, nsplit, mb);
        }
        if (pp > 1) {
          printf("  layers ");
          print_split(stdout, pp, old_layers);
        }
        if (moved) {
          printf("  -> layers moved ");
          print_split(stdout, pp, tp.split);
        }
        printf("\n");
      }
      fflush(stdout);
    }
    int ckpt_now =
        o->ckpt_dir && o->ckpt_every > 0 && (step % o->ckpt_every == 0 || step == o->steps);
    float *full = NULL; /* --pp: the whole model, for the moment of the checkpoint */
    if (ckpt_now && pp > 1 && !(full = malloc(3 * gpt_full_floats(&m) * sizeof *full))) {
      fprintf(stderr, "c4train: rank %d: out of memory for a checkpoint\n", rank);
      goto out;
    }
    if (ckpt_now && pp > 1 && train_pipe_gather(&tp, &dp, &m, full)) {
      fprintf(stderr, "c4train: rank %d: a peer was lost at the checkpoint of step %d\n", rank,
              step);
      free(full);
      status = C4TRAIN_EXIT_PEER_LOST;
      goto out;
    }
    if (ckpt_now && rank == 0 && train_ckpt_save(&m, full, o, step, world, err, sizeof err)) {
      fprintf(stderr, "c4train: checkpoint at step %d not written: %s\n", step, err);
      ckpt_failed = 1; /* training goes on; the exit status says it */
    }
    free(full);
  }
  double eval_end = 0;
  if (pp > 1 && train_pipe_eval(&tp, &dp, &m, &data, o->eval_windows, &eval_end)) {
    status = C4TRAIN_EXIT_PEER_LOST;
    goto out;
  }
  if (rank == 0) {
    if (pp == 1 && o->eval_windows) eval_end = eval_loss(&m, o, &data, tok, tgt);
    double even_mb[nsplit];
    int even[nsplit];
    for (int i = 0; i < nsplit; i++)
      even_mb[i] = 1.0;
    c4_split_microbatches(o->microbatches, nsplit, even_mb, even);
    double ratio =
        pp > 1 ? layer_plan_time(&tp.plan, tp.plan.even, tp.plan.even_data, tp.plan.planned) /
                     layer_plan_time(&tp.plan, tp.split, mb, tp.plan.planned)
               : resplit_bottleneck(nsplit, even, plan.planned) /
                     resplit_bottleneck(nsplit, mb, plan.planned);
    /* the median step: the steady pace, not the steps before the planner's first re-split */
    double mid = timed_steps ? median(step_secs, timed_steps) : 0;
    double tps = mid > 0 ? (double)o->microbatches * B * T / mid : 0;
    double gemm_share = compute_s_steps > 0 ? gemm_s_steps / compute_s_steps : 0;
    /* the planner's bound: its split's slowest rank at the measured pace (the model's fixed
     * part and part per micro-batch), communication and optimizer left out */
    double t_mb = timed_steps ? median(mb_secs, timed_steps) : 0;
    double t_fixed = timed_steps ? median(fixed_secs, timed_steps) : 0;
    double bound = t_mb > 0 ? (double)o->microbatches * B * T /
                                  (t_fixed + resplit_bottleneck(nsplit, mb, plan.planned) * t_mb)
                            : 0;
    if (pp > 1) /* the pipeline's: its plan's time in healthy layer times, at the measured pace */
      bound = t_mb > 0 ? (double)o->microbatches * B * T /
                             (layer_plan_time(&tp.plan, tp.split, mb, tp.plan.planned) * t_mb)
                       : 0;
    /* --pp: the share of the stages' time spent waiting (1F1B's bubble, and transfers) */
    double bubble = pipe_wall_s > 0 ? 1 - pipe_busy_s / pipe_wall_s : 0;
    double bubble_bound = pipe_ideal_s > 0 ? 1 - pipe_busy_s / pipe_ideal_s : 0;
    double phases[3];
    int with_phases = o->slow_rank >= 0 && o->slow_factor > 1;
    if (with_phases) train_slow_phases(step_tps, first + 2, step, o->slow_from, o->slow_to, phases);
    if (jf) {
      struct train_end_report er = {.steps = step,
                                    .world = nsplit,
                                    .loss = last_loss,
                                    .eval_loss_start = eval_start,
                                    .eval_loss = eval_end,
                                    .tokens_per_s = tps,
                                    .gemm_share = gemm_share,
                                    .gemm_gflops =
                                        gemm_seconds > 0 ? gemm_flops / gemm_seconds * 1e-9 : 0,
                                    .model_gflops = tps * gpt_flops_per_token(&m) * 1e-9,
                                    .planned_speedup = ratio,
                                    .bound_tokens_per_s = bound,
                                    .pipeline_bubble = bubble,
                                    .pipeline_bubble_bound = bubble_bound,
                                    .split = mb,
                                    .slow_phases = with_phases ? phases : NULL};
      train_report_end(jf, &er);
    }
    if (!o->json) {
      printf("done: %d steps, loss %.4f, eval loss %.4f -> %.4f, %.0f tok/s (%.2f model GFLOP/s), "
             "GEMM %.0f%% of compute at %.2f GFLOP/s, planned speedup over an even split %.3fx, "
             "split ",
             step, last_loss, eval_start, eval_end, tps, tps * gpt_flops_per_token(&m) * 1e-9,
             100 * gemm_share, gemm_seconds > 0 ? gemm_flops / gemm_seconds * 1e-9 : 0, ratio);
      print_split(stdout, nsplit, mb);
      printf("\n");
      if (with_phases)
        printf("tokens/s, median of the steps: %.0f before the slow steps, %.0f in steps %d-%d, "
               "%.0f after\n",
               phases[0], phases[1], o->slow_from, o->slow_to, phases[2]);
      fflush(stdout);
    }
  }
  status = ckpt_failed ? 1 : 0;
out:
  if (jf && jf != stdout) fclose(jf);
  if (sub) mon_sub_stop(sub);
  free(tok);
  free(tgt);
  train_pipe_free(&tp);
  if (plan_up) resplit_free(&plan);
  free(rep);
  free(told);
  free(step_secs);
  free(step_tps);
  free(mb_secs);
  free(fixed_secs);
  gpt_free(&m);
  dp_close(&dp);
  text_data_free(&data);
  return status;
}
