/* train_rank.h -- what both training loops (train_loop.c on text, train_docs.c on documents) set
 * up alike for a rank: its name under --slow, the drill's slowdown, rank 0's JSON lines. */
#ifndef C4_TRAIN_RANK_H
#define C4_TRAIN_RANK_H

#include <stdint.h>
#include <stdio.h>

#include "c4_ranks.h"
#include "train_loop.h"

/* The rank r had at the job's first launch: --slow names it, and a restarted job (fewer ranks,
 * launch.c sets C4TRAIN_ORIG_RANK) keeps the name. */
int train_orig_rank(const struct c4_ranks *r);

/* How many times slower the drill (--slow) makes rank orig_rank's compute in step (0-based):
 * o->slow_factor inside the slow steps, else 1. */
double train_slow_factor(const struct train_opts *o, int orig_rank, int step);

/* Sleeps s seconds (nothing when s <= 0), resumed after a signal. */
void train_sleep_s(double s);

/* After compute that began at t0: sleeps (slow - 1) times its time, as a device slow times
 * slower would take; nothing when slow <= 1. */
void train_stretch(uint64_t t0, double slow);

/* Rank 0's JSON lines into *jf: stdout with --json, else the --json-out file (appended), else
 * none (NULL); other ranks none. Returns 0, or 1 when the file cannot be opened (printed). */
int train_json_open(const struct train_opts *o, int rank, FILE **jf);

/* Closes what train_json_open opened (stdout and NULL stay). Returns 0, or 1 when a line could
 * not be written to path (said: a full disk loses the step log, and the run must not exit 0). */
int train_json_close(FILE *jf, const char *path);

#endif
