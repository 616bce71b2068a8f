/* train_loop.h -- one rank of c4train: the data-parallel training loop with the straggler
 * planner's re-split, drills (--slow) and checkpoints. */
#ifndef C4_TRAIN_LOOP_H
#define C4_TRAIN_LOOP_H

#include <stddef.h>
#include <stdint.h>

#include "c4_ranks.h"
#include "gpt.h"

struct train_opts {
  struct gpt_config cfg;
  int micro_batch;  /* sequences per micro-batch */
  int microbatches; /* micro-batches per global step, split among the ranks */
  int steps;        /* global steps to reach (a resumed run counts from its checkpoint) */
  float lr, weight_decay;
  int warmup; /* steps of linear learning-rate warm-up */
  uint64_t seed;
  const char *data;
  const char *device; /* "cpu" or "cuda" */
  const char *plugin; /* net plugin for the CPU ring (NULL: the one beside the program) */
  size_t bucket_bytes;
  int threads; /* OpenBLAS threads per rank */
  int json;
  const char *json_out; /* rank 0 also writes the JSON lines here (stdout keeps the text) */
  int slow_rank;        /* launcher rank (C4TRAIN_ORIG_RANK when restarted) slowed by slow_factor */
  double slow_factor;
  int slow_from, slow_to;  /* the steps (1-based, inclusive) it is slow in */
  int resplit;             /* 1: re-split micro-batches by measured speed */
  double straggler_wait_s; /* seconds a rank stays slow before work moves (resplit.h) */
  const char *ckpt_dir;
  int ckpt_every;
  int ckpt_strict; /* a damaged newest checkpoint stops the run instead of an older one resuming */
  const char *monitor_sub; /* c4mon's subscription port ADDR:PORT for straggler verdicts */
  int eval_windows;        /* held-out windows for the eval loss at start and end */
  int pp;                  /* pipeline stages (1: none); the ranks are pp x replicas */
  int max_context;         /* > 0: --data read as documents of up to this many positions */
  int assign;              /* with max_context: how a step's sequences go to the ranks */
  double stage_mem_mb;     /* --pp: the memory a stage may hold, which caps its layers (0: none) */
};

/* --assign: by the cost model (time linear plus quadratic in length, train_docs.h); or by token
 * count, the ranks' speeds weighed as the straggler planner weighs them, in the order the
 * sequences come (a data loader's packing) or longest first (seq_assign.h); or rotate: each draw
 * of sequences three steps running, once by each policy, to compare them in one run. */
enum {
  TRAIN_ASSIGN_COST,
  TRAIN_ASSIGN_TOKENS,
  TRAIN_ASSIGN_TOKENS_SORTED,
  TRAIN_ASSIGN_POLICIES,
  TRAIN_ASSIGN_ROTATE = TRAIN_ASSIGN_POLICIES
};

/* Exit status of a rank that stopped because a peer was lost or silent: its launcher should
 * restart the job on the healthy ranks from the last checkpoint. */
#define C4TRAIN_EXIT_PEER_LOST 75

/* Exit status of a rank that stopped, with its peers, after a checkpoint because its launcher
 * asked for a new layout (relayout.h): the launcher resumes the job in the layout it picks. */
#define C4TRAIN_EXIT_RELAYOUT 76

struct dp;

/* The kernels for o->device, then the data-parallel ring over r into *dp. The kernels are the CPU
 * ops (openblas threads set) with matmuls timed through *timed, or the CUDA ops from
 * libc4k-cuda.so (beside the program, else on the library path); *ops points to them. Returns 0;
 * else nothing stays open, the reason is printed for rank (err is scratch), and the result is 1
 * (no kernels) or C4TRAIN_EXIT_PEER_LOST (no ring). */
int train_open_compute(const struct train_opts *o, const struct c4_ranks *r, int rank,
                       struct c4k_ops *timed, const struct c4k_ops **ops, struct dp *dp, char *err,
                       size_t errlen);

/* Runs this rank to o->steps. Returns 0, C4TRAIN_EXIT_PEER_LOST, C4TRAIN_EXIT_RELAYOUT, or 1 (an
 * error, printed). */
int train_run(const struct train_opts *o, const struct c4_ranks *r);

#endif
