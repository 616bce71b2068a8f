/* train_pipe_plan.c -- the layer re-split between steps: the stages' timings gathered from
 * every rank, the slowest replica standing for each stage (the others wait for it at the
 * allreduce), the plan's step, and the move when it decides one. */
#include "train_pipe.h"

#include <stdio.h>
#include <stdlib.h>

int train_pipe_replan(struct train_pipe *tp, struct dp *d, struct gpt *model, double monitor,
                      char *err, size_t errlen) {
  struct layer_plan_report mine = {.layers = tp->l1 - tp->l0,
                                   .busy_s = tp->busy_s,
                                   .layers_s = tp->layers_s,
                                   .ends_s = tp->ends_s,
                                   .monitor_factor = monitor},
                           *all = malloc((size_t)d->world * sizeof *all), stage[tp->stages];
  if (!all || dp_allgather(d, &mine, all, sizeof mine)) {
    free(all);
    snprintf(err, errlen, "a peer was lost sharing the stages' timings");
    return -1;
  }
  for (int s = 0; s < tp->stages; s++) {
    stage[s] = all[s];
    for (int r = s + tp->stages; r < d->world; r += tp->stages) {
      double factor = stage[s].monitor_factor > all[r].monitor_factor ? stage[s].monitor_factor
                                                                      : all[r].monitor_factor;
      if (all[r].busy_s > stage[s].busy_s) stage[s] = all[r];
      stage[s].monitor_factor = factor;
    }
  }
  free(all);
  if (!layer_plan_step(&tp->plan, stage)) return 0;
  return train_pipe_move(tp, model, tp->plan.split, err, errlen) ? -1 : 1;
}
