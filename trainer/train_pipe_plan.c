/* train_pipe_plan.c -- the pipeline's re-plan between steps: every rank's timings gathered, the
 * plan's step (layer_plan.h), then the layers' move and the replica's new number of
 * micro-batches when it decides them. */
#include "c4_err.h"
#include "train_pipe.h"

#include <stdio.h>
#include <stdlib.h>

int train_pipe_replan(struct train_pipe *tp, struct dp *d, struct gpt *model, double monitor,
                      char *err, size_t errlen) {
  struct layer_plan_report mine = {.layers = tp->l1 - tp->l0,
                                   .microbatches = tp->m,
                                   .busy_s = tp->busy_s,
                                   .wall_s = tp->wall_s,
                                   .layers_s = tp->layers_s,
                                   .work_s = tp->work_s,
                                   .monitor_factor = monitor},
                           *all = malloc((size_t)d->world * sizeof *all);
  if (!all || dp_gather_step(d, &mine, all, sizeof mine)) {
    free(all);
    snprintf(err, errlen, "a peer was lost sharing the stages' timings");
    return C4_EREMOTE;
  }
  int changed = layer_plan_step(&tp->plan, all);
  free(all);
  if (!changed) return 0;
  if (train_pipe_move(tp, model, tp->plan.split, err, errlen) ||
      train_pipe_microbatches(tp, tp->plan.data[d->rank / tp->stages], err, errlen))
    return C4_EREMOTE;
  return 1;
}
