/* seq_cost.h -- what a sequence costs: a rank's compute time in a step is its speed factor times
 * (a fixed part + the sum of its sequences' costs), a sequence of len positions costing
 *     a x len + b x len^2 + sum over the knots K of c_K x len x max(0, len - K):
 * the linear term is the matmuls, layernorms and the rest that run once per position, the
 * quadratic one causal attention within each sequence, and the hinges at the knots what attention
 * costs beyond that once a sequence's score matrices outgrow a cache (on this machine's CPU a
 * length-1,024 sequence costs 25% more per token than the quadratic fitted below 512 says). Every
 * coefficient is non-negative, so a token's cost grows with its sequence's length and never more
 * slowly as it grows. Memory is linear: a micro-batch holds a fixed number of positions
 * (gpt_packed_fits). The coefficients are shared by the ranks and each rank has its own factor
 * (1 for the median rank, 2 for one at half speed), so the straggler planner's slowdown and the
 * sequences' costs are one model, fitted from the step timings every rank reports
 * (train_docs.c): non-negative least squares on the last SEQ_COST_WINDOW steps of every rank,
 * each rank's times divided by its factor, then each factor the median of its measured over
 * predicted times, alternated until they settle. Before the first fit the coefficients are the
 * model's FLOPs (a and b, seq_cost_init): the ratio b / a, which is all an assignment needs, is
 * right from the first step. */
#ifndef C4_SEQ_COST_H
#define C4_SEQ_COST_H

/* Steps of every rank the fit looks back over, and the fewest it needs. */
#define SEQ_COST_WINDOW 32
#define SEQ_COST_MIN_STEPS 6

/* Knots of the hinges: every half octave (256, 384, 512, 768, ...) below the longest sequence,
 * at most SEQ_COST_KNOTS of them. Below 256 the quadratic alone has fitted every measurement
 * here. */
#define SEQ_COST_KNOTS 6
#define SEQ_COST_FIRST_KNOT 256

/* A step's features: tokens, the sum of squared lengths, then one sum per knot. */
#define SEQ_COST_FEATURES (2 + SEQ_COST_KNOTS)

/* One rank's step: what it ran (seq_cost_features summed over its sequences) and how long its
 * forward and backward passes took. */
struct seq_cost_sample {
  double f[SEQ_COST_FEATURES];
  double secs;
};

struct seq_cost {
  int ranks;
  int nknots;
  double knot[SEQ_COST_KNOTS];
  double fixed, a, b;       /* seconds, per token, per squared token (the median rank's) */
  double c[SEQ_COST_KNOTS]; /* seconds per token per position beyond each knot */
  double *speed;            /* per rank: its time over the median rank's for the same work */
  double *noise; /* per rank: the relative spread (1.48 x the median absolute deviation) of its
                    measured over predicted times, each step's common part (the machine's load
                    then) taken out; 0 until fitted */
  int fitted;    /* 0: a and b are the prior's (FLOPs, not seconds) */
  double err, err_quadratic;   /* the fit's RMS relative error over the window, and the same
                                  window's with the hinges left out (the quadratic alone) */
  struct seq_cost_sample *win; /* ranks x SEQ_COST_WINDOW, a ring per rank */
  int count, next;             /* steps in the window; where the next goes */
};

/* A model of `ranks` ranks for sequences of at most max_len positions, at the prior
 * a = flops_per_token, b = flops_per_sq_token, fixed and hinges 0, every factor 1. Returns 0, or
 * C4_ENOMEM. */
int seq_cost_init(struct seq_cost *m, int ranks, int max_len, double flops_per_token,
                  double flops_per_sq_token);
void seq_cost_free(struct seq_cost *m);

/* Adds one sequence of len positions to the features f (SEQ_COST_FEATURES, summed). */
void seq_cost_features(const struct seq_cost *m, int len, double *f);

/* Adds one step of every rank (steps[rank]) and refits once SEQ_COST_MIN_STEPS are in. A rank
 * that ran nothing (tokens 0) says nothing in that step. */
void seq_cost_add(struct seq_cost *m, const struct seq_cost_sample *steps);

/* Refits from the window: 1 when the fit has a positive per-token or per-squared-token cost, 0
 * when the window cannot tell (the model is unchanged). */
int seq_cost_fit(struct seq_cost *m);

/* The factors an assignment should balance: each rank's speed raised by its noise (one
 * standard deviation, about what the slowest of four noisy times adds), so that a rank whose
 * times scatter more (a straggler whose slowdown itself varies) gets less work. out[ranks]. */
void seq_cost_risk_speed(const struct seq_cost *m, double *out);

/* The predicted time (at speed 1) of one sequence of len positions, without the fixed part. */
double seq_cost_of(const struct seq_cost *m, int len);

#endif
