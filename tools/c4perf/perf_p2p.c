/* perf_p2p.c -- c4perf's point-to-point measurements between ranks 0 and 1: streaming bandwidth
 * with several requests in flight, and ping-pong latency. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_clock.h"
#include "c4_idle.h"
#include "c4_log.h"
#include "perf.h"

#define MAX_INFLIGHT 32

int perf_iters_for(const struct perf_opts *o, size_t bytes) {
  if (o->iters > 0) return o->iters;
  size_t n = bytes ? (256u << 20) / bytes : 2000;
  return n < 20 ? 20 : n > 2000 ? 2000 : (int)n;
}

int perf_no_memory(const struct perf_ctx *p) {
  fprintf(stderr, "c4perf: rank %d: cannot allocate buffers of %zu bytes (--max-bytes)\n",
          p->bs.rank, p->o->max_bytes);
  return 1;
}

int perf_wait(struct c4_netapi *api, void *req, int *size) {
  int done = 0, sz = 0;
  uint64_t since = c4_now_ns();
  while (!done) {
    if (c4_netapi_test(api, req, &done, &sz) != ncclSuccess) return 1;
    if (!done) c4_idle(c4_now_ns() - since);
  }
  if (size) *size = sz;
  return 0;
}

static void *post(struct c4_netapi *api, int is_send, void *comm, void *buf, size_t n, void *mh) {
  void *req = NULL;
  uint64_t since = c4_now_ns();
  while (!req) {
    ncclResult_t rc = is_send ? c4_netapi_isend(api, comm, buf, n, 0, mh, &req)
                              : c4_netapi_irecv(api, comm, buf, n, 0, mh, &req);
    if (rc != ncclSuccess) return NULL;
    if (!req) c4_idle(c4_now_ns() - since);
  }
  return req;
}

/* Connects rank 0 -> rank 1 (and, with both_ways, rank 1 -> rank 0). */
static int connect_pair(struct perf_ctx *p, int both_ways, void **scomm, void **rcomm) {
  char mine[NCCL_NET_HANDLE_MAXSIZE] = {0};
  void *lcomm = NULL;
  int r = p->bs.rank;
  char *all = malloc(NCCL_NET_HANDLE_MAXSIZE * (size_t)p->bs.world);
  *scomm = *rcomm = NULL;
  if (!all) return 1;
  int listens = r == 1 || (both_ways && r == 0); /* ranks 2.. only take part in the allgather */
  int rc = listens ? c4_netapi_listen(&p->api, p->o->dev, mine, &lcomm) != ncclSuccess : 0;
  if (rc) C4_WARN("c4perf: rank %d: listen on device %d failed", r, p->o->dev);
  if (c4_bootstrap_allgather(&p->bs, mine, all, sizeof mine) != 0) rc = 1;
  int connects = r == 0 || (both_ways && r == 1);
  if (rc) {
    free(all);
    return 1;
  }
  uint64_t start = c4_now_ns(), deadline = start + 60000000000ull;
  while (!rc && ((connects && !*scomm) || (listens && !*rcomm))) {
    if (connects && !*scomm &&
        c4_netapi_connect(&p->api, p->o->dev, all + (size_t)(1 - r) * NCCL_NET_HANDLE_MAXSIZE,
                          scomm) != ncclSuccess) {
      C4_WARN("c4perf: rank %d: connect to rank %d failed", r, 1 - r);
      rc = 1;
    }
    if (!rc && listens && !*rcomm && c4_netapi_accept(&p->api, lcomm, rcomm) != ncclSuccess) {
      C4_WARN("c4perf: rank %d: accept failed", r);
      rc = 1;
    }
    if (!rc && c4_now_ns() > deadline) {
      C4_WARN("c4perf: rank %d could not connect within 60 s", r);
      rc = 1;
    }
    if (!rc) c4_idle(c4_now_ns() - start);
  }
  if (lcomm) c4_netapi_close_listen(&p->api, lcomm);
  free(all);
  return rc;
}

static void fill(char *b, size_t n, size_t salt) {
  for (size_t i = 0; i < n; i++)
    b[i] = (char)((i * 2654435761u) >> 13 ^ salt);
}

static int verify(const char *b, size_t n, size_t salt) {
  for (size_t i = 0; i < n; i++)
    if (b[i] != (char)((i * 2654435761u) >> 13 ^ salt)) return 1;
  return 0;
}

size_t perf_next_size(const struct perf_opts *o, size_t size) {
  if (size >= o->max_bytes) return 0;
  size_t n = (size_t)((double)size * o->factor);
  if (n <= size) n = size + 1;
  return n > o->max_bytes ? 0 : n;
}

/* Streams warm-up plus iters messages of size bytes (rank 0 sends, rank 1 receives), up to
 * --inflight requests posted ahead; *t0 is when the warm-up ended. Returns 1 on a failure. */
static int bw_stream(struct perf_ctx *p, void *comm, char *buf, size_t size, void *mh, int iters,
                     uint64_t *t0) {
  struct perf_opts *o = p->o;
  int r = p->bs.rank, k = o->inflight > MAX_INFLIGHT ? MAX_INFLIGHT : o->inflight;
  void *req[MAX_INFLIGHT];
  int total = o->warmup + iters, posted = 0, done = 0, failed = 0;
  while (done < total && !failed) {
    if (done == o->warmup && !*t0) *t0 = c4_now_ns();
    while (posted < total && posted - done < k) {
      req[posted % MAX_INFLIGHT] = post(&p->api, r == 0, comm, buf, size, mh);
      if (!req[posted % MAX_INFLIGHT]) {
        failed = 1;
        break;
      }
      posted++;
    }
    int got = 0;
    if (!failed && perf_wait(&p->api, req[done % MAX_INFLIGHT], &got)) failed = 1;
    if (!failed && r == 1 && (size_t)got != size) {
      C4_WARN("c4perf: received %d bytes where %zu were sent", got, size);
      failed = 1;
    }
    done++;
  }
  return failed;
}

/* Every rank's n doubles (the last its failure flag) into rep, rank order. Returns 1 when the
 * exchange or any rank failed. */
static int gather_failed(struct perf_ctx *p, const double *mine, int n, double *rep) {
  if (c4_bootstrap_allgather(&p->bs, mine, rep, sizeof(double) * (size_t)n)) return 1;
  int failed = 0;
  for (int i = 0; i < p->bs.world && !failed; i++)
    failed |= rep[n * i + n - 1] != 0;
  return failed;
}

/* Rank 0 posts sends, rank 1 receives, k requests in flight; ranks 2.. only keep the collectives
 * company. The time is the receiver's: from the end of the warm-up until the last byte landed. */
int perf_p2p_bw(struct perf_ctx *p) {
  struct perf_opts *o = p->o;
  void *scomm = NULL, *rcomm = NULL, *mh = NULL;
  if (connect_pair(p, 0, &scomm, &rcomm)) return 1;
  int r = p->bs.rank, active = r < 2, W = p->bs.world;
  void *comm = r == 0 ? scomm : rcomm;
  char *buf = malloc(o->max_bytes ? o->max_bytes : 1);
  double *rep = malloc(sizeof(double) * 2 * (size_t)W);
  int failed = !buf || !rep ? perf_no_memory(p) : 0;
  if (!failed && active && c4_netapi_reg_mr(&p->api, comm, buf, o->max_bytes, &mh) != ncclSuccess)
    failed = 1;
  for (size_t size = o->min_bytes; size && !failed; size = perf_next_size(o, size)) {
    int iters = perf_iters_for(o, size);
    if (r == 0)
      fill(buf, size, size);
    else if (active)
      memset(buf, 0, size);
    if (c4_bootstrap_barrier(&p->bs)) {
      failed = 1;
      break;
    }
    uint64_t t0 = 0;
    if (active) failed = bw_stream(p, comm, buf, size, mh, iters, &t0);
    double us = active ? (double)(c4_now_ns() - t0) / 1e3 : 0;
    if (r == 1 && !failed && o->check && verify(buf, size, size)) {
      C4_WARN("c4perf: data check failed at %zu bytes", size);
      failed = 1;
    }
    double mine[2] = {us, failed};
    failed = gather_failed(p, mine, 2, rep);
    if (r == 0 && !failed) {
      double t = rep[2] / iters; /* rank 1's clock: time until the data has landed */
      double gbs = (double)size / t / 1e3;
      if (!o->json) printf("%12zu %8d %12.2f %10.3f\n", size, iters, t, gbs);
      json_array_append_new(p->results, json_pack("{s:I, s:i, s:f, s:f}", "bytes", (json_int_t)size,
                                                  "iters", iters, "time_us", t, "GBps", gbs));
    }
  }
  if (mh) c4_netapi_dereg_mr(&p->api, comm, mh);
  if (scomm) c4_netapi_close_send(&p->api, scomm);
  if (rcomm) c4_netapi_close_recv(&p->api, rcomm);
  free(buf);
  free(rep);
  return failed;
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The two comms and buffers of a ping-pong, one each way. */
struct pingpong {
  void *scomm, *rcomm, *smh, *rmh;
  char *sbuf, *rbuf;
};

/* Waits for the receive rr, then posts the next one unless round i was the last. Returns 1 on a
 * failure; *rr is the next receive (NULL after the last round). */
static int take_and_repost(struct perf_ctx *p, const struct pingpong *pp, void **rr, size_t size,
                           int i, int total) {
  if (perf_wait(&p->api, *rr, NULL)) return 1;
  *rr = i + 1 == total ? NULL : post(&p->api, 0, pp->rcomm, pp->rbuf, size, pp->rmh);
  return i + 1 < total && !*rr;
}

/* Warm-up plus iters round trips of size bytes; rank 0 times each (rtt, microseconds). Each side
 * keeps its next receive posted before it sends, as NCCL keeps receives posted ahead, so a
 * message never waits for its receive to be posted. Returns 1 on a failure. */
static int lat_rounds(struct perf_ctx *p, const struct pingpong *pp, size_t size, int iters,
                      double *rtt) {
  struct perf_opts *o = p->o;
  int r = p->bs.rank, total = o->warmup + iters, failed = 0;
  void *rr = post(&p->api, 0, pp->rcomm, pp->rbuf, size, pp->rmh);
  if (!rr) return 1;
  for (int i = 0; i < total && !failed; i++) {
    uint64_t t0 = c4_now_ns();
    /* rank 1 echoes: waits for the ping, posts the next receive, sends the pong */
    if (r == 1) failed = take_and_repost(p, pp, &rr, size, i, total);
    void *sr = failed ? NULL : post(&p->api, 1, pp->scomm, pp->sbuf, size, pp->smh);
    if (!sr) failed = 1;
    if (!failed && perf_wait(&p->api, sr, NULL)) failed = 1;
    /* rank 0 waits for the pong and posts the next receive */
    if (r == 0 && !failed) failed = take_and_repost(p, pp, &rr, size, i, total);
    if (i >= o->warmup) rtt[i - o->warmup] = (double)(c4_now_ns() - t0) / 1e3;
  }
  return failed;
}

/* Ping-pong between ranks 0 and 1 over a comm each way: rank 0 posts its receive, sends, and
 * waits for the echo; each round trip is timed on rank 0. */
int perf_p2p_lat(struct perf_ctx *p) {
  struct perf_opts *o = p->o;
  struct pingpong pp = {0};
  if (connect_pair(p, 1, &pp.scomm, &pp.rcomm)) return 1;
  int r = p->bs.rank, active = r < 2, W = p->bs.world;
  pp.sbuf = malloc(o->max_bytes + 1);
  pp.rbuf = malloc(o->max_bytes + 1);
  double *rep = malloc(sizeof(double) * (size_t)W);
  int maxiters = o->iters > 0 ? o->iters : 2000;
  double *rtt = malloc(sizeof(double) * (size_t)maxiters);
  int failed = !pp.sbuf || !pp.rbuf || !rep || !rtt ? perf_no_memory(p) : 0;
  if (!failed && active &&
      (c4_netapi_reg_mr(&p->api, pp.scomm, pp.sbuf, o->max_bytes, &pp.smh) != ncclSuccess ||
       c4_netapi_reg_mr(&p->api, pp.rcomm, pp.rbuf, o->max_bytes, &pp.rmh) != ncclSuccess))
    failed = 1;
  for (size_t size = o->min_bytes; size && !failed; size = perf_next_size(o, size)) {
    /* -n, else 2000 round trips for small messages, fewer for large ones (at least 20) */
    int iters = o->iters > 0 ? o->iters : perf_iters_for(o, size * 128);
    if (active) {
      fill(pp.sbuf, size, 0);
      memset(pp.rbuf, 0, size);
    }
    if (c4_bootstrap_barrier(&p->bs)) {
      failed = 1;
      break;
    }
    if (active) failed = lat_rounds(p, &pp, size, iters, rtt);
    if (active && !failed && o->check && verify(pp.rbuf, size, 0)) {
      C4_WARN("c4perf: data check failed at %zu bytes", size);
      failed = 1;
    }
    double mine = failed;
    failed = gather_failed(p, &mine, 1, rep);
    if (r == 0 && !failed) {
      qsort(rtt, (size_t)iters, sizeof *rtt, cmp_double);
      double med = rtt[iters / 2], p99 = rtt[(int)(iters * 0.99)];
      if (!o->json) printf("%12zu %8d %12.2f %12.2f\n", size, iters, med, p99);
      json_array_append_new(p->results,
                            json_pack("{s:I, s:i, s:f, s:f}", "bytes", (json_int_t)size, "iters",
                                      iters, "rtt_us_median", med, "rtt_us_p99", p99));
    }
  }
  if (pp.smh) c4_netapi_dereg_mr(&p->api, pp.scomm, pp.smh);
  if (pp.rmh) c4_netapi_dereg_mr(&p->api, pp.rcomm, pp.rmh);
  if (pp.scomm) c4_netapi_close_send(&p->api, pp.scomm);
  if (pp.rcomm) c4_netapi_close_recv(&p->api, pp.rcomm);
  free(pp.sbuf);
  free(pp.rbuf);
  free(rep);
  free(rtt);
  return failed;
}
