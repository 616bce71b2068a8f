/* launch.h -- `c4train --local-ranks N`: N ranks of this program on this machine, torchrun-style
 * variables set for each, supervised so that a lost or hung rank does not end the job: the
 * survivors are restarted from the last checkpoint, the same global batch split among them; and,
 * with --layout auto, a straggler c4mon names makes the job resume in a layout chosen again. */
#ifndef C4_LAUNCH_H
#define C4_LAUNCH_H

struct launch_opts {
  int ranks;
  int restart;             /* 1: go on with fewer ranks after a loss (needs a checkpoint dir) */
  int multiple;            /* the ranks a job goes on with are a multiple of this (--pp: whole
                            * pipelines); the survivors past it sit out (0 or 1: all go on) */
  const char *monitor_sub; /* c4mon's subscription port: its rank_lost and noncomm_hang verdicts
                            * name ranks to stop at once (c4mon on this machine) */
  int quiet;               /* no supervisor lines on stderr */
  /* with c4mon's subscription and a checkpoint dir (--layout auto): when c4mon names a straggler
   * the job was not yet laid out again for, the ranks stop after a step at a checkpoint
   * (relayout.h) and this, called in the launcher, chooses the layout for `ranks` again (orig:
   * each one's first rank, as C4TRAIN_ORIG_RANK says) and returns the pipeline depth the job
   * resumes with. NULL: a straggler is left to the planners. */
  int (*relayout)(void *arg, int ranks, const int *orig);
  void *relayout_arg;
};

/* Forks the ranks. Returns in each child (>= 0: its rank; RANK, WORLD_SIZE, LOCAL_RANK,
 * MASTER_ADDR, MASTER_PORT and C4TRAIN_ORIG_RANK are set; LOCAL_RANK, which picks the GPU, is
 * the rank's number in the first launch, as C4TRAIN_ORIG_RANK); in the parent, once the job is
 * over, returns -1 with *status the job's exit status (0: every rank finished). */
int launch_local(const struct launch_opts *lo, int *status);

#endif
