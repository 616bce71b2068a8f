/* perf_allreduce.c -- c4perf's allreduce: the host ring of c4_hostcoll over the plugin, timed
 * per size and reported as nccl-tests does (algbw = bytes / time, busbw = algbw * 2(n-1)/n). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_clock.h"
#include "c4_hostcoll.h"
#include "c4_log.h"
#include "perf.h"

/* Small integers times small integers: every partial sum is exact in float. */
static float value(int rank, size_t i) { return (float)((rank + 1) * (int)(i % 13 + 1)); }

/* One allreduce of count floats, filled and (--check) checked; then every rank learns whether
 * any failed, before the timed loop, so that none waits there for the others. Returns 1 when one
 * did. all: room for 2 doubles a rank. */
static int checked_round(struct perf_ctx *p, struct c4_hostcoll *ring, float *buf, size_t count,
                         double *all) {
  int W = p->bs.world, r = p->bs.rank, failed = 0;
  for (size_t i = 0; i < count; i++)
    buf[i] = value(r, i);
  if (c4_hostcoll_allreduce_f32(ring, buf, count) != 0) failed = 1;
  for (size_t i = 0; i < count && !failed && p->o->check; i++)
    if (buf[i] != (float)((i % 13 + 1) * (size_t)(W * (W + 1) / 2))) {
      C4_WARN("c4perf: allreduce of %zu floats wrong at %zu: %g", count, i, (double)buf[i]);
      failed = 1;
    }
  double flag[2] = {0, failed};
  if (c4_bootstrap_allgather(&p->bs, flag, all, sizeof flag)) failed = 1;
  for (int k = 0; k < W; k++)
    failed |= all[2 * k + 1] != 0;
  return failed;
}

/* The warm-up allreduces, a barrier, then iters timed ones, each one's time a line of tl (rank 0
 * with --timeline, else NULL). Sets *us to the microseconds per allreduce; returns 1 when one
 * failed. */
static int timed_rounds(struct perf_ctx *p, struct c4_hostcoll *ring, float *buf, size_t count,
                        int iters, FILE *tl, double *us) {
  int failed = 0;
  for (int i = 0; i < p->o->warmup && !failed; i++)
    failed = c4_hostcoll_allreduce_f32(ring, buf, count) != 0;
  if (c4_bootstrap_barrier(&p->bs)) failed = 1;
  uint64_t t0 = c4_now_ns(), t_last = t0;
  for (int i = 0; i < iters && !failed; i++) {
    failed = c4_hostcoll_allreduce_f32(ring, buf, count) != 0;
    if (tl) { /* the time goes on between iterations: a line costs microseconds */
      uint64_t t = c4_now_ns();
      fprintf(tl, "%llu %.1f\n", (unsigned long long)t, (double)(t - t_last) / 1e3);
      fflush(tl); /* read while the run goes on */
      t_last = t;
    }
  }
  *us = (double)(c4_now_ns() - t0) / 1e3 / iters;
  return failed;
}

/* Every rank's time (us) and whether it failed: *worst is the slowest rank's time. Returns 1 when
 * any rank failed or the exchange did. */
static int slowest_rank(struct perf_ctx *p, double us, int failed, double *all, double *worst) {
  double rep[2] = {us, failed};
  if (c4_bootstrap_allgather(&p->bs, rep, all, sizeof rep)) failed = 1;
  *worst = 0;
  for (int k = 0; k < p->bs.world; k++) {
    *worst = all[2 * k] > *worst ? all[2 * k] : *worst;
    failed |= all[2 * k + 1] != 0;
  }
  return failed;
}

/* Rank 0's line (unless --json) and JSON object for one size, timed by its slowest rank. */
static void report_size(struct perf_ctx *p, size_t count, int iters, double worst) {
  int W = p->bs.world;
  double algbw = (double)(count * sizeof(float)) / worst / 1e3;
  double busbw = algbw * 2.0 * (W - 1) / W;
  if (!p->o->json)
    printf("%12zu %8d %12.2f %10.3f %10.3f\n", count * sizeof(float), iters, worst, algbw, busbw);
  json_array_append_new(p->results,
                        json_pack("{s:I, s:i, s:f, s:f, s:f}", "bytes",
                                  (json_int_t)(count * sizeof(float)), "iters", iters, "time_us",
                                  worst, "algbw_GBps", algbw, "busbw_GBps", busbw));
}

int perf_allreduce(struct perf_ctx *p) {
  struct perf_opts *o = p->o;
  struct c4_hostcoll ring;
  if (c4_hostcoll_ring_init(&ring, &p->api, o->dev, &p->bs) != 0) return 1;
  int W = p->bs.world, r = p->bs.rank;
  size_t maxcount = o->max_bytes / sizeof(float);
  float *buf = malloc((maxcount ? maxcount : 1) * sizeof(float));
  double *all = malloc(sizeof(double) * 2 * (size_t)W);
  int failed = !buf || !all ? perf_no_memory(p) : 0;
  FILE *tl = NULL;
  if (o->timeline && r == 0 && !(tl = fopen(o->timeline, "we"))) {
    fprintf(stderr, "c4perf: --timeline %s: %s\n", o->timeline, strerror(errno));
    failed = 1;
  }
  for (size_t size = o->min_bytes; size && !failed; size = perf_next_size(o, size)) {
    size_t count = size / sizeof(float);
    if (checked_round(p, &ring, buf, count, all)) {
      failed = 1;
      break;
    }
    int iters = perf_iters_for(o, size * 2);
    double us, worst;
    failed = timed_rounds(p, &ring, buf, count, iters, tl, &us);
    failed = slowest_rank(p, us, failed, all, &worst);
    if (r == 0 && !failed) report_size(p, count, iters, worst);
  }
  c4_hostcoll_ring_close(&ring);
  int tl_bad = tl && ferror(tl);
  if (tl && (fclose(tl) != 0 || tl_bad)) { /* a full disk loses the timeline: no success claimed */
    fprintf(stderr, "c4perf: --timeline %s: a write failed (a full disk?)\n", o->timeline);
    failed = 1;
  }
  free(buf);
  free(all);
  return failed;
}
