/* train_docs.h -- one rank of c4train on documents (--max-context): each global step's sequences
 * (docs.h) are assigned across the data-parallel ranks (with --pp, the pipelines) by predicted
 * time, then packed into micro-batches within each (seq_assign.h); every token weighs the same in
 * the gradient whatever the assignment; the cost model (seq_cost.h) is refitted from every step's
 * timings. */
#ifndef C4_TRAIN_DOCS_H
#define C4_TRAIN_DOCS_H

#include "c4_ranks.h"
#include "train_loop.h"

/* Runs this rank to o->steps on the documents of o->data, cut at o->max_context (also the
 * model's context), o->micro_batch x o->max_context positions a micro-batch and o->microbatches
 * times that a step; with o->pp, as pipelines of that many stages; with o->ckpt_dir,
 * resumed from its newest checkpoint and checkpointed every o->ckpt_every steps. Returns 0,
 * C4TRAIN_EXIT_PEER_LOST, C4TRAIN_EXIT_RELAYOUT, or 1 (an error, printed). */
int train_docs_run(const struct train_opts *o, const struct c4_ranks *r);

#endif
