/* sched_1f1b.h -- the order in which a pipeline stage runs its micro-batches' forward and
 * backward passes under 1F1B (PipeDream-Flush): stage s of P first runs min(P - 1 - s, m)
 * forwards, then alternates one forward and one backward, then runs the backwards left. A stage
 * holds at most min(P - s, m) micro-batches' activations, and the pipeline's idle share is
 * (P - 1) / (m + P - 1) when every stage takes as long. */
#ifndef C4_SCHED_1F1B_H
#define C4_SCHED_1F1B_H

struct sched_op {
  int backward;   /* 0 forward, 1 backward */
  int microbatch; /* 0 .. m - 1 */
};

/* Fills out[0 .. 2m) with stage `stage`'s order (0 <= stage < stages, m >= 1). Returns 2m. */
int sched_1f1b(int stage, int stages, int m, struct sched_op *out);

/* Micro-batches in flight at most on that stage: the activation slots it needs. */
int sched_1f1b_in_flight(int stage, int stages, int m);

#endif
