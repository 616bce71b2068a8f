/* train_docs_run.h -- what the files of c4train's training on documents share (train_docs.c:
 * setup, checkpoints and the run; train_docs_step.c: a step and the evaluation): one rank's run
 * and its step buffers. Not for other callers: train_docs.h is the interface. */
#ifndef C4_TRAIN_DOCS_RUN_H
#define C4_TRAIN_DOCS_RUN_H

#include <stdio.h>

#include "docs.h"
#include "dp.h"
#include "gpt.h"
#include "seq_cost.h"
#include "train_docs_report.h"
#include "train_loop.h"
#include "train_pipe.h"

/* A rank's buffers for one step. */
struct docs_step_bufs {
  int max_seq;                  /* sequences a step may draw */
  int *idx, *len, *rank_of;     /* per drawn sequence */
  double *cost, *model_cost;    /* by the policy, and by the cost model */
  int *mine, *mine_len, *mb_of; /* this rank's share */
  int *tok, *tgt, *seg;         /* one micro-batch */
};

/* One rank's run on documents: what its setup makes, and what its steps carry to the end. */
struct docs_run {
  const struct train_opts *o;
  int rank, world, orig_rank;
  int pp, nrep, replica; /* stages a pipeline (1: none), pipelines, this rank's */
  struct train_pipe tp;  /* --pp: this rank's stage */
  int tp_up;
  char err[512];
  struct doc_set d;
  struct c4k_ops timed;
  const struct c4k_ops *ops;
  struct dp dp;
  struct gpt m;
  long cap, budget; /* positions in a micro-batch, and in a step */
  struct seq_cost model;
  int model_up;
  struct docs_step_bufs b;
  int bufs_up;
  struct docs_report *rep;   /* every rank's, after a step */
  struct docs_report *rrep;  /* every pipeline's (each rank's without --pp) */
  struct docs_step_rec *rec; /* every step, for the closing figures */
  struct seq_cost_sample *samples;
  FILE *jf;
  double eval_start, last_loss;
  int first;        /* the step this run started at: 0, or its checkpoint's */
  int ckpt_failed;  /* a checkpoint was not written: the exit status says so */
  int relayout_off; /* a checkpoint for a new layout failed: the run goes on in this one */
};

/* One step: the sequences drawn and assigned, this rank's run, the exchange, the optimizer step,
 * the accounts and rank 0's line. Returns 0, or C4TRAIN_EXIT_PEER_LOST. */
int docs_step_run(struct docs_run *s, int step);

/* Mean loss per position over the first o->eval_windows held-out sequences, on rank 0 (0 on the
 * others), or with --pp through pipeline 0's stages, every rank taking part and getting it; NAN
 * when a peer was lost. */
double docs_eval(struct docs_run *s);

#endif
