/* perf.h -- what c4perf's CLI (main.c) hands to its measurements (perf_p2p.c, perf_allreduce.c). */
#ifndef C4_PERF_H
#define C4_PERF_H

#include <jansson.h>
#include <stddef.h>

#include "c4_bootstrap.h"
#include "c4_netapi.h"

enum perf_mode { MODE_BW, MODE_LAT, MODE_ALLREDUCE };

struct perf_opts {
  enum perf_mode mode;
  size_t min_bytes, max_bytes;
  double factor;
  int iters; /* 0: chosen per size */
  int warmup;
  int inflight;
  int dev;
  int json;
  int check;
  const char *plugin;
  const char *timeline; /* allreduce, rank 0: each timed iteration's end and time, to this file */
};

struct perf_ctx {
  struct perf_opts *o;
  struct c4_netapi api;
  struct c4_bootstrap bs;
  json_t *results; /* rank 0: one object per size */
};

/* Each returns 0, or 1 when a transfer failed or the data check found a mismatch. */
int perf_p2p_bw(struct perf_ctx *p);
int perf_p2p_lat(struct perf_ctx *p);
int perf_allreduce(struct perf_ctx *p);

/* Iterations for one size: the -n given, else enough to move ~256 MiB (20 to 2000). */
int perf_iters_for(const struct perf_opts *o, size_t bytes);

/* The size after `size` in a sweep (times the factor, at least one byte more), or 0 past the
 * largest. */
size_t perf_next_size(const struct perf_opts *o, size_t size);

/* Says on stderr that this rank could not allocate the sweep's buffers (--max-bytes bytes each)
 * and returns 1, the runs' failure. */
int perf_no_memory(const struct perf_ctx *p);

/* Waits for a request, yielding the CPU between tests like NCCL's proxy. Returns 0 or 1. */
int perf_wait(struct c4_netapi *api, void *req, int *size);

#endif
