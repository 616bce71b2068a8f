/* train_docs_report.h -- rank 0's lines when training on documents: one per step (tokens/s, each
 * rank's measured and predicted compute), and the run's closing figures: tokens/s per assignment
 * policy beside the bound the cost model predicts for it, and the fit. */
#ifndef C4_TRAIN_DOCS_REPORT_H
#define C4_TRAIN_DOCS_REPORT_H

#include <stdint.h>
#include <stdio.h>

#include "seq_cost.h"
#include "train_loop.h"

/* What each rank shares after a step. */
struct docs_report {
  double loss_sum, compute_s;
  double f[SEQ_COST_FEATURES]; /* its sequences' features: f[0] tokens, f[1] squared tokens */
  double relayout;             /* 1: its launcher asked for a new layout (relayout.h) */
};

/* One step as the closing figures need it. */
struct docs_step_rec {
  int policy;                         /* the policy that assigned it */
  int fitted;                         /* assigned by a fitted model */
  double tokens, secs, compute;       /* compute: the slowest rank's */
  uint64_t t_start_ns;                /* when it began (CLOCK_MONOTONIC, as c4mon's trace) */
  double pred[TRAIN_ASSIGN_POLICIES]; /* the model's slowest rank's compute under each policy */
  double load; /* the ranks' measured compute over predicted, each over its factor, summed: how
                  much slower than the window the whole machine ran this step */
};

/* Rank 0's line for step `step` (1-based) as JSON into jf (when not NULL) and as text (when
 * text); rank_pred[i] is the cost model's time for rank i's share (0 before a fit). */
void docs_print_step(FILE *jf, int text, int step, double loss, const struct docs_step_rec *r,
                     const struct docs_report *rep, const double *rank_pred, int world);

/* The run's end line from its steps rec[0..nrec) (the first, which warms caches, is left out):
 * per policy, the median tokens/s over its steps assigned by a fitted model (all of its steps
 * but the first when there are none), over the slowest rank's compute alone, and the cost
 * model's bound: tokens over its predicted step (the slowest rank's predicted compute plus the
 * run's median of the rest of a step: exchange and optimizer), and the same bound at each step's
 * measured load (its predictions times r.load): what the assignment alone costs, the machine's
 * load changing from step to step (another job's, on a shared machine) left out. */
void docs_print_end(FILE *jf, int text, const struct train_opts *o, const struct seq_cost *model,
                    const struct docs_step_rec *rec, int nrec, double loss, double eval_start,
                    double eval_end);

#endif
