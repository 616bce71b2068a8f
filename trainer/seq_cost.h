/* seq_cost.h -- what a sequence costs: a rank's compute time in a step is its speed factor times
 * (a fixed part + a x its tokens + b x the sum of its sequences' squared lengths): the linear term
 * is the matmuls, layernorms and the rest that run once per position, the quadratic one causal
 * attention within each sequence. Memory is linear: a micro-batch holds a fixed number of
 * positions (gpt_packed_fits). The three coefficients are shared by the ranks and each rank has
 * its own factor (1 for the median rank, 2 for one at half speed), so the straggler planner's
 * slowdown and the sequences' costs are one model, fitted from the step timings every rank
 * reports (train_docs.c): least squares on the last SEQ_COST_WINDOW steps of every rank, each
 * rank's times divided by its factor, then each factor the median of its measured over predicted
 * times, alternated until they settle. Before the first fit the coefficients are the model's
 * FLOPs (seq_cost_prior): the ratio b / a, which is all an assignment needs, is right from the
 * first step. */
#ifndef C4_SEQ_COST_H
#define C4_SEQ_COST_H

/* Steps of every rank the fit looks back over, and the fewest it needs. */
#define SEQ_COST_WINDOW 32
#define SEQ_COST_MIN_STEPS 6

/* One rank's step: what it ran and how long its forward and backward passes took. */
struct seq_cost_sample {
  double tokens; /* sum of its sequences' lengths */
  double sumsq;  /* sum of their squares */
  double secs;
};

struct seq_cost {
  int ranks;
  double fixed, a, b; /* seconds, seconds per token, seconds per squared token (median rank) */
  double *speed;      /* per rank: its time over the median rank's for the same work */
  int fitted;         /* 0: fixed, a, b are the prior's (FLOPs, not seconds) */
  struct seq_cost_sample *win; /* ranks x SEQ_COST_WINDOW, a ring per rank */
  int count, next;             /* steps in the window; where the next goes */
};

/* A model of `ranks` ranks at the prior a = flops_per_token, b = flops_per_sq_token, fixed 0,
 * every factor 1. Returns 0, or -1 when memory is short. */
int seq_cost_init(struct seq_cost *m, int ranks, double flops_per_token, double flops_per_sq_token);
void seq_cost_free(struct seq_cost *m);

/* Adds one step of every rank (steps[rank]) and refits once SEQ_COST_MIN_STEPS are in. A rank
 * that ran nothing (tokens 0) says nothing in that step. */
void seq_cost_add(struct seq_cost *m, const struct seq_cost_sample *steps);

/* Refits from the window: 1 when the fit has every coefficient (none negative after dropping
 * the ones that would be), 0 when the window cannot tell them apart (the model is unchanged). */
int seq_cost_fit(struct seq_cost *m);

/* The predicted time (at speed 1) of one sequence of len positions, without the fixed part. */
double seq_cost_of(const struct seq_cost *m, int len);

#endif
