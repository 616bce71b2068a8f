/* layout.h -- `c4train --local-ranks N --layout auto`: the layout chosen by measuring. Every
 * candidate (pipeline stages P dividing N and at most the layers, so N / P data-parallel
 * replicas; a micro-batch size B from 1 up to the global batch's sequences, the global batch the
 * same) runs as a short job of its own, and the one with the most tokens/s trains. */
#ifndef C4_LAYOUT_H
#define C4_LAYOUT_H

#include <stdio.h>

#include "train_loop.h"

/* One candidate and what its probe measured. */
struct layout_probe {
  int pp, micro_batch, microbatches;
  double tokens_per_s; /* 0 when the probe failed */
  double peak_mb;      /* the largest rank's peak resident memory */
  double seconds;      /* the probe's wall time */
};

/* The candidates for o on `ranks` ranks into out (at most max); returns how many. Documents
 * (o->max_context) train data-parallel only: their candidates are micro-batch sizes alone. */
int layout_candidates(const struct train_opts *o, int ranks, struct layout_probe *out, int max);

/* Probes every candidate for `steps` steps each: this program (/proc/self/exe) with argv and the
 * candidate's --pp, --micro-batch and --microbatches after it (they win), --steps, --json, no
 * evaluation, and without argv's --layout, --ckpt-dir, --json-out and --monitor. Prints the table
 * on f and sets o's layout to the best. Returns the probes' total wall seconds, or -1 with err
 * filled when no probe ran. */
double layout_auto(int argc, char **argv, struct train_opts *o, int ranks, int steps, FILE *f,
                   char *err, size_t errlen);

#endif
