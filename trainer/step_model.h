/* step_model.h -- the straggler planner's step-time model: a rank's compute time in a step is a
 * fixed part (cold caches after the optimizer, data sampling, launch) plus a part per
 * micro-batch, fitted from each rank's last STEP_MODEL_WINDOW steps with medians. A rank's
 * slowdown is its per-micro-batch part over the median rank's, so a rank given less work is
 * measured as fairly as one given more: the fixed part no longer reads as slowness (a healthy
 * rank at one micro-batch read 1.54 when the whole step time was divided by its micro-batches).
 * Noise, measured: 4 ranks of c4train's default model on 2 cores shared with other work (load
 * 12), even split, no fault, 399 steps replayed through the model: the largest slowdown read was
 * 1.08 (median 1.02), under the 1.2 that makes a straggler (C4_SPLIT_STRAGGLER); dividing the
 * whole step by its micro-batches, without each step's common factor (step_model_add) and over 8
 * steps, it read up to 1.37. On synthetic steps with that noise (tests/unit/test_step_model.c),
 * 60,000 steps of 4, 6 and 8 ranks each read at most 1.24 and never left the even split (the
 * straggler threshold and the 0.3 move of planner.h, and a new split paying 5%: resplit.c).
 * Wall times: a rank starved by its neighbours reads slow (45 uneven steps of 1,000 at load 18 to
 * 23). Thread CPU time instead (tried: docs/benchmarks.md) still left a stretch of 14, and
 * parted c4train's reading of a --slow rank from the lateness c4mon sees on the wire. */
#ifndef C4_STEP_MODEL_H
#define C4_STEP_MODEL_H

/* Steps each rank's fit looks back over, and the fewest it needs before it says anything (more
 * than half: the median of fewer is one noisy step). A straggler that appears is seen after 9
 * steps (at once when c4mon names it, resplit.h), one that heals once more than half of its
 * window is healed (9 steps). With 12 steps, synthetic noise read up to 1.31. */
#define STEP_MODEL_WINDOW 16
#define STEP_MODEL_MIN_STEPS 9
/* Steps of estimates the fixed part is the median of: it belongs to the code and the machine, not
 * to a fault, so it may remember longer. */
#define STEP_MODEL_FIXED_HISTORY 64

struct step_sample {
  int microbatches;
  double first_s, total_s; /* compute time to the end of the first micro-batch, and in all */
};

struct step_model {
  int ranks;
  struct step_sample *win; /* ranks x STEP_MODEL_WINDOW, a ring per rank */
  int *count, *next;
  double fixed_hist[STEP_MODEL_FIXED_HISTORY];
  int fixed_count, fixed_next;
  double first_per_mb; /* the first step's median time per micro-batch: the scale until a fit */
};

/* An empty model of `ranks` ranks. Returns 0, or C4_ENOMEM. */
int step_model_init(struct step_model *m, int ranks);

void step_model_free(struct step_model *m);

/* One step of every rank (steps[rank]). The step's times are first divided by the step's common
 * factor: the median over ranks of each rank's time over what its fit predicts. A burst of the
 * machine's other work slows every rank in that step alike and so moves no rank's slowdown; only a
 * rank's own slowness does. A rank with no micro-batches in the step says nothing. */
void step_model_add(struct step_model *m, const struct step_sample *steps);

/* Drops a rank's samples, so that it is judged on the steps after this alone (c4mon said it
 * recovered, or the planner judged it healed: what it measured before is stale). */
void step_model_forget(struct step_model *m, int rank);

/* Steps in a rank's window. */
int step_model_samples(const struct step_model *m, int rank);

/* Fits every rank with at least STEP_MODEL_MIN_STEPS steps: fixed[i] and per_mb[i] in seconds
 * (both 0 for a rank not fitted). The fixed part is one for all ranks, from the ranks whose
 * steps tell it apart from the rest (two or more micro-batches); a slow rank's own fixed part
 * is slow too, so its per-micro-batch part reads a little high (by (F - 1) x fixed / its
 * micro-batches), never a healthy rank's. Returns the number of ranks fitted. */
int step_model_fit(const struct step_model *m, double *fixed, double *per_mb);

/* Slowdown of each fitted rank: its per-micro-batch part over the median of the fitted ranks'
 * (1 healthy, 2 half speed); a rank not fitted keeps the value it had in slowdown[]. Returns that
 * median per-micro-batch time in seconds, 0 when no rank is fitted; *fixed_s (may be NULL) is
 * the fixed part then. */
double step_model_slowdowns(const struct step_model *m, double *slowdown, double *fixed_s);

#endif
