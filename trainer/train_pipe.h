/* train_pipe.h -- one rank of a pipeline-parallel c4train (--pp P): rank r is stage r % P of
 * data-parallel replica r / P; the stage holds only its layers [l0, l1) (gpt.h's window: the
 * memory of the weights, AdamW's moments, the gradients and the activations shrinks with P),
 * runs its replica's micro-batches in 1F1B order (sched_1f1b.h), receives activations from the
 * previous stage and gradients from the next over the net plugin (pipe.h). Its layers'
 * gradients are summed over the same stage of every replica (a ring of those ranks); the
 * embeddings and the final layernorm, which every stage holds, over all ranks (the tied token
 * embedding's two halves, the first stage's and the last's, included), so every rank applies the
 * same AdamW step to what it holds. The layer split can change between steps: layers move to
 * their new stage with their weights and moments, over the same links (train_pipe_move). */
#ifndef C4_TRAIN_PIPE_H
#define C4_TRAIN_PIPE_H

#include <stddef.h>

#include "c4_hostcoll.h"
#include "dp.h"
#include "gpt.h"
#include "layer_plan.h"
#include "pipe.h"
#include "sched_1f1b.h"
#include "text_data.h"

struct train_pipe {
  int stage, stages, l0, l1;
  int m;   /* micro-batches of this replica per step */
  int cap; /* the most it has room for (the order's length is 2 x cap) */
  struct pipe link;
  struct c4_hostcoll group; /* this stage's ring across the replicas (up when there are 2+) */
  int group_up;
  struct sched_op *order; /* 2m */
  float **in, **out;      /* per slot: host boundary buffers, received and sent */
  int *sent;              /* per slot: the send handle of out[slot], -1 when none */
  int slots;
  int *split;     /* layers per stage now (stages entries) */
  int *tok, *tgt; /* host B x T */
  int *seg;       /* host: a packed micro-batch's sequence lengths (B x T at most) */
  double slow;    /* drill (--slow): each pass takes this many times as long (1: none) */
  /* The last step's compute on its compute clock (gpt_compute_clock: the thread's CPU time on the
   * CPU, since on a machine with more ranks than cores wall time would count the other ranks'
   * turns as this stage's slowness; wall time on a GPU), times the drill's factor: a stage slow
   * because another job shares its core does not show here (c4mon's verdict names that one); a
   * slower core or the drill does. */
  double busy_s;
  double wall_s;   /* the same compute in wall time (the pipeline's idle share is the rest) */
  double layers_s; /* of which in the held layers (the drill's share not included) */
  double work_s;   /* busy_s without the drill: the layers, the ends and the copies */
  struct layer_plan plan; /* the layer re-split's decisions (the same on every rank) */
  int plan_up;
  /* ends_floats in ends_ops memory (train_pipe_ends_alloc): the shared tensors' gradients, summed
   * at once */
  float *ends;
  size_t ends_floats;
  const struct c4k_ops *ends_ops;
};

/* The layers stage `stage` of `stages` holds in the even split of `layers`: [*l0, *l1). Returns
 * 0, or -1 when there are fewer layers than stages. */
int train_pipe_even_layers(int layers, int stages, int stage, int *l0, int *l1);

/* Sets up rank `rank` of d's world (a multiple of stages) for `microbatches` a step among the
 * replicas, the model already holding its stage's layers: the slots, the links, the stage's
 * ring, the plan of layers and micro-batches (tp->plan: its even split to begin with)
 * (re-splitting when resplit is 1, each stage capped to the layers that fit in stage_mem bytes
 * of parameters, gradients, moments and activations, 0: no cap). Collective over d. Returns 0,
 * or -1 with err. */
int train_pipe_init(struct train_pipe *tp, struct dp *d, struct gpt *model, int rank, int stages,
                    int microbatches, double stage_mem, int resplit, char *err, size_t errlen);

/* What a step's micro-batches hold, as every stage of a replica sees them alike: fill writes
 * micro-batch mb's tokens and targets (host, B x T at most) and returns 0 for B x T positions of
 * windows, or the number of sequences packed end to end, their lengths in seg_len. */
struct train_pipe_feed {
  int (*fill)(void *ctx, int mb, int *tokens, int *targets, int *seg_len);
  void *ctx;
};

/* The windows feed of the data-parallel loop: global micro-batch indices first .. first + m - 1
 * of step `step`, sampled from data with seed. */
struct train_pipe_windows {
  const struct text_data *data;
  unsigned long long seed;
  int step, first, B, T;
};
int train_pipe_fill_windows(void *windows, int mb, int *tokens, int *targets, int *seg_len);

/* One step's forward and backward passes of this replica's m micro-batches from feed, gradients
 * added with dloss (per position). *loss_sum gets the sum of the position losses (last stage; 0
 * elsewhere). A packed micro-batch's activations cross between stages at its own size. Returns
 * 0, or -1 when a neighbour is gone or silent. */
int train_pipe_step(struct train_pipe *tp, struct gpt *model, const struct train_pipe_feed *feed,
                    float dloss, double *loss_sum);

/* The forward passes alone of the m micro-batches from feed (no gradients): the sum of their
 * position losses in *loss_sum on the last stage. Every stage of the replica calls it. 0 or -1. */
int train_pipe_forward(struct train_pipe *tp, struct gpt *model, const struct train_pipe_feed *feed,
                       double *loss_sum);

/* train_pipe_sync.c: the buffer of the shared tensors' gradients in the model's memory, made at
 * setup so that a GPU short of memory says so there rather than as a lost peer mid-step. 0 or
 * C4_ENOMEM. */
int train_pipe_ends_alloc(struct train_pipe *tp, const struct dp *d, const struct gpt *model);

/* Sums the gradients as the header says. Collective over d. 0, or -1 when a peer is lost. */
int train_pipe_allreduce(struct train_pipe *tp, struct dp *d, struct gpt *model);

/* The whole model's params, adam_m and adam_v (3 x gpt_full_floats, the checkpoint's layout)
 * into full on every rank: each stage of replica 0 gives its layers, rank 0 the rest, summed
 * over d (for the moment of a checkpoint every rank holds the whole model once more). 0 or -1. */
int train_pipe_gather(struct train_pipe *tp, struct dp *d, const struct gpt *model, float *full);

/* Mean loss over `windows` held-out windows, through the pipeline forward only; every stage of
 * every replica calls it (replica 0 computes, the others wait) and gets the mean. 0 or -1. */
int train_pipe_eval(struct train_pipe *tp, struct dp *d, struct gpt *model,
                    const struct text_data *data, int windows, double *loss);

/* Moves layers so that stage s holds split[s] of them (every stage at least one), weights and
 * AdamW's moments bit for bit, over the pipeline links: in rounds, each stage hands its
 * neighbours the layers bound further that way, until all are home. Collective over the
 * pipeline. Returns 0, or -1 with err (a lost neighbour, or memory). */
int train_pipe_move(struct train_pipe *tp, struct gpt *model, const int *split, char *err,
                    size_t errlen);

/* Makes the stage run m micro-batches a step from now on (the 1F1B order and the slots follow;
 * at most the micro-batches it was made for). 0, or -1 with err. */
int train_pipe_microbatches(struct train_pipe *tp, int m, char *err, size_t errlen);

/* After a step's optimizer update: every rank shares its timings (and c4mon's factor for it, 0
 * when none), the plan takes the step, and when it makes a new plan the layers move
 * (train_pipe_move) and the replica takes its new micro-batches (tp->plan.data). Collective over
 * d. Returns 1 on a new plan, 0 when none, -1 with err when a peer was lost. */
int train_pipe_replan(struct train_pipe *tp, struct dp *d, struct gpt *model, double monitor,
                      char *err, size_t errlen);

void train_pipe_free(struct train_pipe *tp);

#endif
