/* c4_hostcoll.c -- ring allreduce over a net plugin: each step sends one segment to the next rank
 * and receives one from the previous, sliced into up to `inflight` outstanding requests per
 * direction, reducing each slice as it lands. */
#include "c4_hostcoll.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_env.h"
#include "c4_err.h"
#include "c4_hash.h"
#include "c4_idle.h"
#include "c4_log.h"

#define MAX_INFLIGHT 8
#define HANDLE_BYTES NCCL_NET_HANDLE_MAXSIZE

/* Looks up the plugin's c4Ext* calls and names this ring as a communicator: its id hashes the
 * allgathered handles, which every rank holds alike. */
static void find_ext(struct c4_hostcoll *h, const char *all) {
  h->comm_id = c4_fnv1a(C4_FNV_BASIS_OLD, all, (size_t)h->world * HANDLE_BYTES);
  if (!h->api->dl) return;
  void (*ext_comm)(const struct c4_comm_record *) =
      (void (*)(const struct c4_comm_record *))dlsym(h->api->dl, "c4ExtComm");
  h->ext_enter = (void (*)(void))dlsym(h->api->dl, "c4ExtCollEnter");
  h->ext_done = (void (*)(const struct c4_coll_record *))dlsym(h->api->dl, "c4ExtCollDone");
  if (!ext_comm || !h->ext_enter || !h->ext_done) {
    h->ext_enter = NULL;
    h->ext_done = NULL;
    return;
  }
  struct c4_comm_record c = {.comm = h->comm_id,
                             .rank = h->rank,
                             .nranks = h->world,
                             .nnodes = -1,
                             .pid = (uint32_t)getpid(),
                             .t = c4_now_ns()};
  snprintf(c.name, sizeof c.name, "hostcoll");
  c4_host_name(c.host, sizeof c.host);
  ext_comm(&c);
}

int c4_hostcoll_ring_init(struct c4_hostcoll *h, struct c4_netapi *api, int dev,
                          struct c4_bootstrap *bs) {
  return c4_hostcoll_ring_init_group(h, api, dev, bs, NULL, bs->world);
}

int c4_hostcoll_ring_init_group(struct c4_hostcoll *h, struct c4_netapi *api, int dev,
                                struct c4_bootstrap *bs, const int *members, int n) {
  memset(h, 0, sizeof *h);
  h->api = api;
  h->rank = 0;
  while (members && h->rank < n && members[h->rank] != bs->rank)
    h->rank++;
  if (!members) h->rank = bs->rank;
  h->world = n;
  if (n < 1 || h->rank >= n) return C4_EINVAL;
  h->inflight = (int)c4_env_long("C4_COLL_INFLIGHT", 4, 1, MAX_INFLIGHT);
  h->slice_bytes = (size_t)c4_env_long("C4_COLL_SLICE_BYTES", 1 << 20, 4096, 1 << 30);
  h->timeout_ms = (int)c4_env_long("C4_COLL_TIMEOUT_MS", 60000, 100, 3600000);
  if (h->world == 1) return 0;
  char mine[HANDLE_BYTES] = {0};
  char *all = calloc((size_t)h->world, HANDLE_BYTES);
  if (!all) return C4_ENOMEM;
  void *lcomm = NULL;
  int rc = 0;
  if (c4_netapi_listen(api, dev, mine, &lcomm) != ncclSuccess) {
    C4_WARN("hostcoll: rank %d: listen on device %d failed", h->rank, dev);
    rc = C4_EREMOTE;
    memset(mine, 0, sizeof mine); /* still take part, so the others fail fast, not on a timeout */
  }
  char *every = members ? calloc((size_t)bs->world, HANDLE_BYTES) : all;
  int brc = every ? c4_bootstrap_allgather(bs, mine, every, HANDLE_BYTES) : C4_ENOMEM;
  if (!rc) rc = brc;
  for (int i = 0; members && every && i < n; i++) /* the group's handles, in ring order */
    memcpy(all + (size_t)i * HANDLE_BYTES, every + (size_t)members[i] * HANDLE_BYTES, HANDLE_BYTES);
  if (every != all) free(every);
  char *next = all + (size_t)((h->rank + 1) % h->world) * HANDLE_BYTES;
  uint64_t start = c4_now_ns(), deadline = start + (uint64_t)h->timeout_ms * 1000000ull;
  while (!rc && (!h->send_comm || !h->recv_comm)) {
    if (!h->send_comm && c4_netapi_connect(api, dev, next, &h->send_comm) != ncclSuccess)
      rc = C4_EREMOTE;
    if (!rc && !h->recv_comm && c4_netapi_accept(api, lcomm, &h->recv_comm) != ncclSuccess)
      rc = C4_EREMOTE;
    if (!rc && c4_now_ns() > deadline) {
      C4_WARN("hostcoll: rank %d could not connect its ring neighbours within %d ms", h->rank,
              h->timeout_ms);
      rc = C4_EREMOTE;
    }
    if (!rc && (!h->send_comm || !h->recv_comm)) c4_idle(c4_now_ns() - start);
  }
  if (lcomm) c4_netapi_close_listen(api, lcomm);
  if (!rc) find_ext(h, all);
  free(all);
  if (!rc && (c4_netapi_reg_mr(api, h->send_comm, NULL, 0, &h->send_mh) != ncclSuccess ||
              c4_netapi_reg_mr(api, h->recv_comm, NULL, 0, &h->recv_mh) != ncclSuccess))
    rc = C4_EREMOTE;
  if (rc) c4_hostcoll_ring_close(h);
  return rc;
}

typedef void (*slice_done_fn)(void *arg, size_t offset, size_t len);

/* One pipelined exchange: what is sent and received, in slices, and how far each side is
 * (posted, done). */
struct shift_state {
  const char *sbuf;
  char *rbuf;
  size_t sbytes, rbytes, ns, nr, ps, pr, ds, dr;
  void *sreq[MAX_INFLIGHT], *rreq[MAX_INFLIGHT];
  int stag, rtag;
};

/* The length of slice i of a buffer of bytes. */
static size_t slice_len(const struct c4_hostcoll *h, size_t bytes, size_t i) {
  size_t off = i * h->slice_bytes;
  return bytes - off < h->slice_bytes ? bytes - off : h->slice_bytes;
}

/* Posts receives, then sends, up to h->inflight ahead of what is done. Returns 1 when it posted
 * any, 0 when none, C4_EREMOTE when the plugin failed. */
static int post_slices(struct c4_hostcoll *h, struct shift_state *x) {
  int moved = 0;
  while (x->pr < x->nr && x->pr - x->dr < (size_t)h->inflight) {
    void *req = NULL;
    if (c4_netapi_irecv(h->api, h->recv_comm, x->rbuf + x->pr * h->slice_bytes,
                        slice_len(h, x->rbytes, x->pr), x->rtag, h->recv_mh, &req) != ncclSuccess)
      return C4_EREMOTE;
    if (!req) break;
    x->rreq[x->pr++ % MAX_INFLIGHT] = req;
    moved = 1;
  }
  while (x->ps < x->ns && x->ps - x->ds < (size_t)h->inflight) {
    void *req = NULL;
    if (c4_netapi_isend(h->api, h->send_comm, (void *)(x->sbuf + x->ps * h->slice_bytes),
                        slice_len(h, x->sbytes, x->ps), x->stag, h->send_mh, &req) != ncclSuccess)
      return C4_EREMOTE;
    if (!req) break;
    x->sreq[x->ps++ % MAX_INFLIGHT] = req;
    moved = 1;
  }
  return moved;
}

/* Tests the oldest receive (running on_recv on it when done), then the oldest send. Returns 1
 * when either completed, 0 when neither, C4_EREMOTE when the plugin failed. */
static int reap_slices(struct c4_hostcoll *h, struct shift_state *x, slice_done_fn on_recv,
                       void *arg) {
  int moved = 0, done = 0, size = 0;
  if (x->dr < x->pr) {
    if (c4_netapi_test(h->api, x->rreq[x->dr % MAX_INFLIGHT], &done, &size) != ncclSuccess)
      return C4_EREMOTE;
    if (done) {
      if (on_recv) on_recv(arg, x->dr * h->slice_bytes, (size_t)size);
      x->dr++;
      moved = 1;
    }
  }
  if (x->ds < x->ps) {
    if (c4_netapi_test(h->api, x->sreq[x->ds % MAX_INFLIGHT], &done, &size) != ncclSuccess)
      return C4_EREMOTE;
    if (done) {
      x->ds++;
      moved = 1;
    }
  }
  return moved;
}

/* The pipelined exchange; on_recv (may be NULL) runs on every received slice in order. */
static int shift(struct c4_hostcoll *h, const char *sbuf, size_t sbytes, char *rbuf, size_t rbytes,
                 slice_done_fn on_recv, void *arg) {
  struct shift_state x = {.sbuf = sbuf,
                          .rbuf = rbuf,
                          .sbytes = sbytes,
                          .rbytes = rbytes,
                          .ns = (sbytes + h->slice_bytes - 1) / h->slice_bytes,
                          .nr = (rbytes + h->slice_bytes - 1) / h->slice_bytes,
                          .stag = h->rank,
                          .rtag = (h->rank + h->world - 1) % h->world};
  uint64_t last = c4_now_ns();
  while (x.ds < x.ns || x.dr < x.nr) {
    int posted = post_slices(h, &x);
    if (posted < 0) return posted;
    int reaped = reap_slices(h, &x, on_recv, arg);
    if (reaped < 0) return reaped;
    if (posted || reaped) {
      last = c4_now_ns();
    } else {
      if (c4_now_ns() - last > (uint64_t)h->timeout_ms * 1000000ull) {
        C4_WARN("hostcoll: rank %d made no progress for %d ms (peer stalled or gone)", h->rank,
                h->timeout_ms);
        return C4_EREMOTE;
      }
      c4_idle(c4_now_ns() - last);
    }
  }
  return 0;
}

struct reduce_arg {
  float *dst;
  const float *src;
};

static void add_slice(void *p, size_t offset, size_t len) {
  struct reduce_arg *a = p;
  size_t first = offset / sizeof(float), cnt = len / sizeof(float);
  for (size_t i = first; i < first + cnt; i++)
    a->dst[i] += a->src[i];
}

void c4_hostcoll_segment(size_t count, int world, int idx, size_t *off, size_t *len) {
  size_t base = count / (size_t)world, extra = count % (size_t)world;
  *off = (size_t)idx * base + ((size_t)idx < extra ? (size_t)idx : extra);
  *len = base + ((size_t)idx < extra ? 1 : 0);
}

static int allreduce(struct c4_hostcoll *h, float *buf, size_t count);

int c4_hostcoll_allreduce_f32(struct c4_hostcoll *h, float *buf, size_t count) {
  if (h->world == 1 || count == 0) return 0;
  uint64_t t_arrive = c4_now_ns();
  if (h->ext_enter) h->ext_enter();
  int rc = allreduce(h, buf, count);
  if (!rc && h->ext_done) { /* a failed one never completed: like a hung collective, no record */
    struct c4_coll_record r = {.comm = h->comm_id,
                               .seq = h->seq,
                               .rank = h->rank,
                               .nranks = h->world,
                               .nchannels = 1,
                               .root = -1,
                               .count = count,
                               .bytes = count * sizeof(float),
                               .t_arrive = t_arrive,
                               .t_enqueued = t_arrive,
                               .t_done = c4_now_ns()};
    snprintf(r.func, sizeof r.func, "AllReduce");
    snprintf(r.dtype, sizeof r.dtype, "ncclFloat32");
    snprintf(r.algo, sizeof r.algo, "Ring");
    snprintf(r.proto, sizeof r.proto, "Simple");
    h->ext_done(&r);
  }
  h->seq++;
  return rc;
}

static int allreduce(struct c4_hostcoll *h, float *buf, size_t count) {
  int W = h->world;
  size_t maxseg = count / (size_t)W + 1;
  if (h->tmp_count < maxseg) {
    float *t = realloc(h->tmp, maxseg * sizeof(float));
    if (!t) return C4_ENOMEM;
    h->tmp = t;
    h->tmp_count = maxseg;
  }
  for (int s = 0; s < W - 1; s++) { /* reduce-scatter */
    size_t soff, slen, roff, rlen;
    c4_hostcoll_segment(count, W, (h->rank - s + W) % W, &soff, &slen);
    c4_hostcoll_segment(count, W, (h->rank - s - 1 + 2 * W) % W, &roff, &rlen);
    struct reduce_arg arg = {buf + roff, h->tmp};
    if (slen + rlen == 0) continue;
    int rc = shift(h, (const char *)(buf + soff), slen * sizeof(float), (char *)h->tmp,
                   rlen * sizeof(float), add_slice, &arg);
    if (rc) return rc;
  }
  for (int s = 0; s < W - 1; s++) { /* allgather */
    size_t soff, slen, roff, rlen;
    c4_hostcoll_segment(count, W, (h->rank + 1 - s + W) % W, &soff, &slen);
    c4_hostcoll_segment(count, W, (h->rank - s + W) % W, &roff, &rlen);
    if (slen + rlen == 0) continue;
    int rc = shift(h, (const char *)(buf + soff), slen * sizeof(float), (char *)(buf + roff),
                   rlen * sizeof(float), NULL, NULL);
    if (rc) return rc;
  }
  return 0;
}

void c4_hostcoll_ring_close(struct c4_hostcoll *h) {
  if (h->send_comm) {
    if (h->send_mh) c4_netapi_dereg_mr(h->api, h->send_comm, h->send_mh);
    c4_netapi_close_send(h->api, h->send_comm);
  }
  if (h->recv_comm) {
    if (h->recv_mh) c4_netapi_dereg_mr(h->api, h->recv_comm, h->recv_mh);
    c4_netapi_close_recv(h->api, h->recv_comm);
  }
  free(h->tmp);
  memset(h, 0, sizeof *h);
}
