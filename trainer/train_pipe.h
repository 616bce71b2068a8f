/* train_pipe.h -- one rank of a pipeline-parallel c4train (--pp P): rank r is stage r % P of
 * data-parallel replica r / P; the stage holds layers [l0, l1) of the planner's even layer split,
 * runs its replica's micro-batches in 1F1B order (sched_1f1b.h), receives activations from the
 * previous stage and gradients from the next over the net plugin (pipe.h), and adds its layers'
 * gradients into the model's gradient vector, zero elsewhere. The data-parallel allreduce of
 * that whole vector then sums every stage of every replica at once (the tied token embedding's
 * two halves, the first stage's and the last's, included), so every rank applies the same AdamW
 * step to the whole model: each rank keeps all the weights (the memory of a pipeline stage is
 * not saved; what is split is the compute). */
#ifndef C4_TRAIN_PIPE_H
#define C4_TRAIN_PIPE_H

#include <stddef.h>

#include "dp.h"
#include "gpt.h"
#include "pipe.h"
#include "sched_1f1b.h"
#include "text_data.h"

struct train_pipe {
  int stage, stages, l0, l1;
  int m; /* micro-batches of this replica per step */
  struct pipe link;
  struct sched_op *order; /* 2m */
  float **in, **out;      /* per slot: host boundary buffers, received and sent */
  int *sent;              /* per slot: the send handle of out[slot], -1 when none */
  int slots;
  int *tok, *tgt; /* host B x T */
  double busy_s;  /* compute time of the last step (no waiting) */
};

/* Sets up rank `rank` of `world` (a multiple of stages, layers >= stages) for m micro-batches a
 * step: the layer split, the slots, the links. Collective over d. Returns 0, or -1 with err. */
int train_pipe_init(struct train_pipe *tp, struct dp *d, struct gpt *model, int rank, int stages,
                    int m, char *err, size_t errlen);

/* One step's forward and backward passes of this replica's micro-batches: global micro-batch
 * indices first .. first + m - 1 of step `step` (sampled from data with seed, as the
 * data-parallel loop does), gradients added with dloss. *loss_sum gets the sum of the position
 * losses (last stage; 0 elsewhere). Returns 0, or -1 when a neighbour is gone or silent. */
int train_pipe_step(struct train_pipe *tp, struct gpt *model, const struct text_data *data,
                    unsigned long long seed, int step, int first, float dloss, double *loss_sum);

void train_pipe_free(struct train_pipe *tp);

#endif
