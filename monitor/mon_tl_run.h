/* mon_tl_run.h -- what `c4mon timeline` draws, read from a run's JSON: c4train's step lines (the
 * job's and each rank's tokens/s per step), c4mon's events (each verdict from raised to cleared)
 * and a table of expected verdicts (the injected faults, by name). */
#ifndef C4_MON_TL_RUN_H
#define C4_MON_TL_RUN_H

#include <stddef.h>
#include <stdint.h>

#define TL_MAX_RANKS 64 /* lanes drawn; ranks beyond are left out (and said so) */

struct tl_step {
  int step;
  uint64_t t0, t1; /* began, ended (c4's clock, as c4mon's events) */
  double tps;      /* the job's tokens/s */
  double rank_tps[TL_MAX_RANKS];
};

/* A stretch of the run: an injected fault or one of c4mon's verdicts. */
struct tl_span {
  char label[160];
  char kind[16];            /* the verdict's kind; "fault" for an injected fault */
  uint64_t on, off;         /* off 0: not cleared (not lifted) by the end of the files */
  unsigned long long ranks; /* bit r: the verdict names rank r (r < TL_MAX_RANKS) */
  long id;                  /* the verdict's id in the events (0: a fault) */
};

struct tl_run {
  struct tl_step *steps; /* by step number, rising */
  size_t nsteps;
  int ranks; /* lanes: the most ranks a step line reports, at most TL_MAX_RANKS */
  int world; /* the ranks of the job, from c4train's start line (0: none) */
  struct tl_span *spans;
  size_t nspans;
  char job[64];     /* the events' job, "" when none */
  int job_of_steps; /* job is the step log's (its start line): other jobs' events are left out */
};

/* Each reader returns 0, or 1 with "FILE:LINE: reason" or "FILE: reason" in err. */
int tl_read_steps(struct tl_run *r, const char *path, char *err, size_t errlen);
int tl_read_events(struct tl_run *r, const char *path, char *err, size_t errlen);
/* expect: a table of expected verdicts (docs/events.md, Scoring), its times resolved from the
 * step lines at steps and the marks file at marks (NULL: none). */
int tl_read_faults(struct tl_run *r, const char *expect, const char *steps, const char *marks,
                   char *err, size_t errlen);
void tl_run_free(struct tl_run *r);

/* The odd number of steps the lanes' running median spans: about a 25th of the run (1: none), so
 * that a lane reads as a level through a loaded machine's step-to-step noise. */
int tl_smooth_steps(size_t nsteps);

/* out[i]: the median of a lane (rank; -1: the whole job) over the window steps centred on step
 * i (fewer at the ends). Returns 0, or C4_ENOMEM. */
int tl_lane_median(const struct tl_run *r, int rank, int window, double *out);

/* Where time t falls on the step axis: step s spans [s - 1, s]; before the first step its start,
 * after the last its end. */
double tl_step_at(const struct tl_run *r, uint64_t t);

#endif
