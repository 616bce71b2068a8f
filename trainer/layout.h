/* layout.h -- `c4train --local-ranks N --layout auto`: the layout chosen by measuring. Every
 * candidate (pipeline stages P dividing N and at most the layers, so N / P data-parallel
 * replicas; a micro-batch size B from 1 up to the global batch's sequences, the global batch the
 * same) runs as a short job of its own, the clearly slower ones dropped and the close ones probed
 * again, and the one with the most tokens/s trains. */
#ifndef C4_LAYOUT_H
#define C4_LAYOUT_H

#include <stdio.h>

#include "train_loop.h"

/* Timed steps kept per candidate; the probing's share of the run it chooses for (its budget);
 * and how many standard errors below the best a candidate's tokens/s must fall to be dropped. */
#define LAYOUT_RATES 512
#define LAYOUT_BUDGET 0.10
#define LAYOUT_DROP_SE 2.0

/* One candidate and what its probes measured. */
struct layout_probe {
  int pp, micro_batch, microbatches;
  double tokens_per_s; /* the median of its timed steps' tokens/s, every probe pooled; 0 when a
                          probe failed */
  double rel_err;      /* that median's relative standard error, from the steps' spread */
  double peak_mb;      /* the largest rank's peak resident memory */
  double seconds;      /* its probes' wall time */
  double last_s, last_step_s; /* its last probe's wall time, and its steps' share of it */
  int rounds;                 /* probes it ran: the round it was dropped after, or the last */
  int nrate;                  /* timed steps so far, in rate[] (at most LAYOUT_RATES) */
  double rate[LAYOUT_RATES];
};

/* The candidates for o on `ranks` ranks into out (at most max): every pipeline depth dividing
 * the ranks (a layer a stage at least) with every micro-batch size that keeps the global batch
 * and a micro-batch for every replica, documents (o->max_context) alike; returns how many. */
int layout_candidates(const struct train_opts *o, int ranks, struct layout_probe *out, int max);

/* Probes the candidates in rounds, each probe this program (/proc/self/exe) with argv (argv[0]
 * aside: the options the probes get, the caller having left out --layout auto's own and those of
 * checkpoints, --json-out and c4mon) and the candidate's --pp, --micro-batch and --microbatches
 * after it (they win), --steps, --json and no evaluation. Round 1 probes every candidate for
 * `steps` steps; after each round, a candidate whose pooled tokens/s is more than
 * LAYOUT_DROP_SE standard errors (its own and the best's, from the spread of their steps) below
 * the best's is dropped, and the rest are probed again with twice the steps, in the opposite
 * order (so that the machine's drift hits them alike), while the next round fits in
 * LAYOUT_BUDGET of the run at the best's pace. Prints each round and the table on f and sets o's
 * layout to the best. Returns the probes' total wall seconds, or a C4_E* code with err filled when
 * no probe ran. */
double layout_auto(int argc, char **argv, struct train_opts *o, int ranks, int steps, FILE *f,
                   char *err, size_t errlen);

#endif
