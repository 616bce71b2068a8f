/* train_ckpt_step.c -- a run's checkpoint at a step, for the windows' loop and the documents'
 * alike: with a pipeline the stages gather the whole model first (a collective on every rank),
 * then rank 0 writes it (train_ckpt.c). */
#include <stdio.h>
#include <stdlib.h>

#include "gpt_layers.h"
#include "train_ckpt.h"
#include "train_pipe.h"

int train_ckpt_step(const struct train_ckpt_at *at, struct gpt *m, struct train_pipe *tp,
                    struct dp *dp, const json_t *extra, char *err, size_t errlen) {
  float *full = NULL; /* --pp: the whole model, for the moment of the checkpoint */
  if (at->pp > 1 && !(full = malloc(3 * gpt_full_floats(m) * sizeof *full))) {
    fprintf(stderr, "c4train: rank %d: out of memory for a checkpoint\n", at->rank);
    return 1;
  }
  if (at->pp > 1 && train_pipe_gather(tp, dp, m, full)) {
    fprintf(stderr, "c4train: rank %d: a peer was lost at the checkpoint of step %d\n", at->rank,
            at->done);
    free(full);
    return C4TRAIN_EXIT_PEER_LOST;
  }
  int rc = 0;
  if (at->rank == 0 && train_ckpt_save(m, full, at->o, at->done, at->world, extra, err, errlen)) {
    fprintf(stderr, "c4train: checkpoint at step %d not written: %s\n", at->done, err);
    rc = -1;
  }
  free(full);
  return rc;
}
