/* train_report.h -- c4train's JSON lines (--json): one object per line from rank 0 for the start,
 * each step and the end, built with Jansson (their fields: README, "c4train --json"). */
#ifndef C4_TRAIN_REPORT_H
#define C4_TRAIN_REPORT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* The eval loss of a run told to take none (--eval-windows 0): null in JSON, "no eval loss" in
 * text (a loss is never negative). */
#define TRAIN_NO_EVAL (-1.0)

/* "eval loss L" for the opening line, "eval loss L0 -> L1" for the closing one (end >= 0), or
 * "no eval loss (--eval-windows 0)", into buf; returns buf. */
const char *train_eval_text(char *buf, size_t n, double start, double end);

/* {"event":"start",...}: the group, the model's size, the step it starts from, the eval loss. */
void train_report_start(FILE *f, int world, const char *device, size_t params, int step,
                        double eval_loss);

/* One step's figures. */
struct train_step_report {
  int step; /* the step just done, from 1 */
  double loss, tokens_per_s, step_ms;
  uint64_t t_start_ns;    /* when it began and ended, on c4's clock (CLOCK_MONOTONIC), the clock */
  uint64_t t_ns;          /* c4mon's events use when it serves on the same machine */
  const int *split;       /* micro-batches per rank in it */
  const double *slowdown; /* the planner's per-rank slowdowns after it */
  int world;
  const double *compute_ms;    /* each rank's compute time in it (forward, backward, --slow) */
  const double *rank_tps;      /* each rank's tokens over its compute time */
  const int *layers;           /* --pp: layers per pipeline stage in it (NULL without) */
  const double *pipe_slowdown; /* and the pipeline plan's slowdown per rank after it (world) */
  int ranks;
  int stages;
};

/* {"event":"step",...} */
void train_report_step(FILE *f, const struct train_step_report *r);

/* The run's summary. */
struct train_end_report {
  int steps, world;
  double loss, eval_loss_start, eval_loss, tokens_per_s, gemm_share, gemm_gflops, model_gflops,
      planned_speedup, bound_tokens_per_s;
  double pipeline_bubble;       /* --pp: the stages' share of time spent waiting; 0 without */
  double pipeline_bubble_bound; /* and 1F1B's share at the stages' measured times (unequal
                                   stages wait more than (P - 1) / (m + P - 1)) */
  const int *split;
  const double *slow_phases; /* --slow: median tokens/s before, in and after its steps; or NULL */
};

/* The medians of tps[s] (tokens/s of step s) over the steps first..last that come before, in and
 * after the steps from..to, into out[0..2] (0 where there is none). */
void train_slow_phases(const double *tps, int first, int last, int from, int to, double out[3]);

/* {"event":"end",...} */
void train_report_end(FILE *f, const struct train_end_report *r);

#endif
