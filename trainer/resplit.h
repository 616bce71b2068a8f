/* resplit.h -- the data re-split's decisions, step by step: the step-time model (step_model.h)
 * reads each rank's slowdown, c4mon's verdicts speed it up, Malleus's hysteresis decides when a
 * new split is worth making, and the planner (planner.h) makes it. Every rank runs the same
 * decisions on the same gathered reports, so all agree on the split without another exchange. */
#ifndef C4_RESPLIT_H
#define C4_RESPLIT_H

#include "step_model.h"

/* What one rank reports after a step. */
struct resplit_report {
  struct step_sample step; /* its micro-batches and compute times */
  double monitor_factor;   /* c4mon's straggler factor for it, 0 when c4mon names none */
  long recoveries;         /* c4mon's `recovered` events that cleared a verdict on it, so far */
};

struct resplit {
  int ranks, total, enabled;
  int *split;       /* micro-batches per rank for the next step */
  double *slowdown; /* measured, per rank */
  double *planned;  /* the slowdowns the current split was made for */
  double per_mb_s;  /* the median rank's time per micro-batch, 0 before the model has one */
  double fixed_s;   /* and the fixed part of its step's compute */
  struct step_model model;
  double *monitor_factor; /* the last factor seen per rank, and steps since it appeared */
  int *monitor_age;
  long *recoveries;
  struct step_sample *steps; /* the step being fed, rank order */
  long step;                 /* steps fed */
  long *straggler_since;     /* per rank: the step it was last planned as a straggler */
  long *healed_at;           /* and last judged healed */
  long *hold;                /* steps a straggler is held before a heal is believed */
  double *slow_for_s;        /* per rank: seconds its reading has stood at the threshold */
  double persist_s;          /* the wait below (RESPLIT_PERSIST_S unless set after init) */
};

/* How long a rank not planned as a straggler must read as one, in seconds of steps (each step
 * counted at its slowest rank's compute), before work moves off it; c4mon naming it skips the
 * wait. The model's window already needs a rank slow in more than half of its last 16 steps; this
 * rides out a brief burst of the machine's other work on one rank's core, which the window alone
 * did not. Measured (docs/benchmarks.md): 4 confined ranks of the default model, one rank's CPU
 * quota cut to a quarter for 0.2 to 2 s every 3 to 6 s: without the wait 18 uneven steps of 1,000
 * (two re-splits), the reading at 1.2 or more for up to 12 steps (1.7 s); a real straggler is
 * re-split this much later. */
#define RESPLIT_PERSIST_S 3.0

/* The longest hold of a straggler whose heals did not hold (resplit.c). */
#define RESPLIT_HOLD_MAX (16 * STEP_MODEL_WINDOW)

/* Starts at the even split of `microbatches` among `ranks`; enabled 0 keeps it even (measuring
 * goes on). Returns 0, or C4_ENOMEM. */
int resplit_init(struct resplit *p, int ranks, int microbatches, int enabled);

void resplit_free(struct resplit *p);

/* Feeds one step's reports (one per rank, rank order); p->split is then the next step's split.
 * Returns 1 when the split changed. */
int resplit_step(struct resplit *p, const struct resplit_report *rep);

/* A split's step time in healthy micro-batch times under slowdowns: its slowest rank's. */
double resplit_bottleneck(int ranks, const int *split, const double *slowdown);

#endif
