/* ib_comm.c -- a connected verbs comm: its verbs objects, clear-to-send, RDMA writes with
 * immediate spread over the QPs, completions, flush, timing records, close. Runs on the caller's
 * thread only (NCCL's proxy): no helper threads, no locks on the data path. */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_log.h"
#include "c4_random.h"
#include "c4_telemetry.h"
#include "ib_comm.h"
#include "ib_paths.h"
#include "ib_props.h"
#include "nccl_net_abi.h"
#include "net_stats.h"

enum { WR_DATA = 1, WR_CTS = 2, WR_FLUSH = 3, WR_RECV = 4 };
#define FLUSH_AT (C4_IB_SLOTS * C4_IB_CTS_SIZE) /* receive: 8 bytes flush reads land in */
#define CTRL_SIZE (FLUSH_AT + 64)
#define IB_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

static uint64_t wr_id(int kind, int qp, int idx) {
  return (uint64_t)kind << 16 | (uint64_t)qp << 8 | (uint64_t)idx;
}

void c4_ib_comm_fail(struct c4_ib_comm *c, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int first = c4_comm_fail_first(&c->failed, c->failure, sizeof c->failure, code, fmt, ap);
  va_end(ap);
  if (!first) return;
  C4_WARN("verbs %s comm %016llx (%s:%d): %s", c->is_send ? "send" : "receive",
          (unsigned long long)c->conn_id, c->d->name, c->d->port, c->failure);
}

/* ---- setup and teardown ---- */

static int post_recv(struct c4_ib_comm *c, int q) {
  struct ibv_recv_wr wr = {.wr_id = wr_id(WR_RECV, q, 0), .sg_list = NULL, .num_sge = 0}, *bad;
  return ibv_post_recv(c->qp[q], &wr, &bad);
}

void c4_ib_comm_free(struct c4_ib_comm *c) {
  if (!c) return;
  c4_ib_watch_remove(c);
  if (c->flush_qp) c4_ib_v.destroy_qp(c->flush_qp);
  for (int q = 0; q < c->nqps; q++)
    if (c->qp[q]) c4_ib_v.destroy_qp(c->qp[q]);
  if (c->cq) c4_ib_v.destroy_cq(c->cq);
  if (c->ctrl_mr) c4_ib_v.dereg_mr(c->ctrl_mr);
  free(c->ctrl);
  free(c);
}

/* The comm's CQ and its registered control memory (the clear-to-send FIFO). Returns 0 or a
 * negative C4_E* code (logged). */
static int make_cq_and_ctrl(struct c4_ib_comm *c) {
  struct c4_ib_dev *d = c->d;
  int cqe = c->nqps * (C4_IB_SEND_DEPTH + C4_IB_RECV_DEPTH) + C4_IB_SEND_DEPTH;
  if (!(c->cq = c4_ib_v.create_cq(d->ctx, cqe, NULL, NULL, 0))) {
    C4_WARN("%s:%d: couldn't create a CQ of %d entries: %s", d->name, d->port, cqe,
            strerror(errno));
    return C4_ESYS;
  }
  if (posix_memalign((void **)&c->ctrl, 4096, CTRL_SIZE) != 0) return C4_ENOMEM;
  memset(c->ctrl, 0, CTRL_SIZE);
  if (!(c->ctrl_mr = c4_ib_v.reg_mr(d->pd, c->ctrl, CTRL_SIZE, IB_ACCESS))) {
    C4_WARN("%s:%d: couldn't register the comm's control memory: %s", d->name, d->port,
            strerror(errno));
    return C4_ESYS;
  }
  return 0;
}

/* The data QPs (a receiver's with its receives posted) and a receiver's flush QP for GPU
 * memory. Returns 0 or a negative C4_E* code (logged). */
static int make_qps(struct c4_ib_comm *c) {
  struct c4_ib_dev *d = c->d;
  int rc;
  for (int q = 0; q < c->nqps; q++) {
    if ((rc = c4_ib_qp_create(d, c->cq, &c->qp[q])) != 0) return rc;
    c->psn[q] = (uint32_t)(c4_random_u64() & 0xffffff);
    for (int k = 0; !c->is_send && k < C4_IB_RECV_DEPTH; k++)
      if ((errno = post_recv(c, q)) != 0) {
        C4_WARN("%s:%d: couldn't post receives: %s", d->name, d->port, strerror(errno));
        return C4_ESYS;
      }
  }
  if (!c->is_send && (d->ptr_support & NCCL_PTR_CUDA))
    return c4_ib_qp_create(d, c->cq, &c->flush_qp);
  return 0;
}

int c4_ib_comm_new(int is_send, const struct c4_transport_config *cfg, int dev, int nqps,
                   struct c4_ib_comm **out, struct c4_ib_qpinfo *mine) {
  struct c4_ib_dev *d = c4_ib_dev_get(dev);
  if (!d || nqps < 1 || nqps > C4_IB_MAX_QPS) return C4_EINVAL;
  struct c4_ib_comm *c = calloc(1, sizeof *c);
  if (!c) return C4_ENOMEM;
  c->is_send = is_send;
  c->dev = dev;
  c->cfg = *cfg;
  c->d = d;
  c->nqps = nqps;
  for (int i = 0; i < C4_IB_SLOTS; i++) {
    c->reqs[i].comm = c;
    atomic_store(&c->reqs[i].seq, UINT64_MAX);
    c->flushes[i].comm = c;
    c->flushes[i].is_flush = 1;
  }
  int rc = make_cq_and_ctrl(c);
  if (rc == 0) rc = make_qps(c);
  if (rc != 0) {
    c4_ib_comm_free(c);
    return rc;
  }
  *mine = (struct c4_ib_qpinfo){.nqps = (uint16_t)nqps,
                                .lid = d->lid,
                                .lmc = d->lmc,
                                .link_layer = d->link_layer,
                                .mtu = d->mtu,
                                .fifo_addr = is_send ? (uint64_t)(uintptr_t)c->ctrl : 0,
                                .fifo_rkey = is_send ? c->ctrl_mr->rkey : 0};
  memcpy(mine->gid, d->gid.raw, 16);
  for (int q = 0; q < nqps; q++)
    mine->qp[q] = (struct c4_ib_qp_addr){.qpn = c->qp[q]->qp_num, .psn = c->psn[q]};
  *out = c;
  return 0;
}

int c4_ib_comm_connect(struct c4_ib_comm *c, uint64_t nccl_comm, uint64_t conn_id,
                       const struct c4_identity *self, const struct c4_identity *peer,
                       const struct c4_ib_qpinfo *remote) {
  c->nccl_comm = nccl_comm;
  c->conn_id = conn_id;
  c->self = *self;
  c->peer = *peer;
  c->fifo_addr = remote->fifo_addr;
  c->fifo_rkey = remote->fifo_rkey;
  struct c4_netplan_bind plan[C4_IB_MAX_QPS];
  int nplan = c4_netplan_bindings(self->host, peer->host, plan, c->nqps);
  c4_ib_qp_paths(conn_id, c->nqps, c->d->link_layer, remote->lmc, plan, nplan, c->path);
  for (int q = 0; q < c->nqps; q++) {
    int rc = c4_ib_qp_connect(c->d, c->qp[q], remote, q, &c->path[q], c->psn[q]);
    if (rc != 0) return rc;
  }
  if (c->flush_qp) { /* connected to itself: reads through it order the GPU's view of our writes */
    struct c4_ib_qpinfo me = {.nqps = 1,
                              .lid = c->d->lid,
                              .lmc = c->d->lmc,
                              .link_layer = c->d->link_layer,
                              .mtu = c->d->mtu};
    memcpy(me.gid, c->d->gid.raw, 16);
    uint32_t psn = (uint32_t)(c4_random_u64() & 0xffffff);
    me.qp[0] = (struct c4_ib_qp_addr){.qpn = c->flush_qp->qp_num, .psn = psn};
    int rc = c4_ib_qp_connect(c->d, c->flush_qp, &me, 0, NULL, psn);
    if (rc != 0) return rc;
  }
  c->rx.nqps = c->nqps;
  c4_paths_init(&c->paths, c->nqps);
  c->link = (struct c4_link_info){.magic = C4_LINK_MAGIC,
                                  .conn_id = conn_id,
                                  .dir = (uint8_t)(c->is_send ? C4_DIR_SEND : C4_DIR_RECV)};
  if (nplan > 0)
    C4_INFO("verbs comm %016llx to %s: %d of %d QPs on planned paths", (unsigned long long)conn_id,
            peer->host, nplan < c->nqps ? nplan : c->nqps, c->nqps);
  c4_ib_watch_add(c);
  return 0;
}

/* ---- completions ---- */

static void complete(struct c4_ib_comm *c, struct c4_ib_request *r, uint64_t bytes) {
  r->total = bytes;
  atomic_store_explicit(&r->done_bytes, bytes, memory_order_relaxed);
  if (c->cfg.timing) atomic_store_explicit(&r->t_done, c4_now_ns(), memory_order_relaxed);
  atomic_store_explicit(&r->state, C4_IB_REQ_DONE, memory_order_release);
}

static const char *kind_name(int kind) {
  switch (kind) {
  case WR_DATA: return "an RDMA write of data";
  case WR_CTS: return "a clear-to-send write";
  case WR_FLUSH: return "a flush read";
  default: return "a receive";
  }
}

/* A write-with-immediate arrived on QP q: one part of the next message on that QP. */
static void on_imm(struct c4_ib_comm *c, int q, uint32_t imm) {
  if ((errno = post_recv(c, q)) != 0) {
    c4_ib_comm_fail(c, C4_ESYS, "couldn't post a receive on QP %d: %s", q, strerror(errno));
    return;
  }
  uint64_t seq = 0;
  int rc = c4_ib_rx_on_imm(&c->rx, q, imm, c->next_post, &seq);
  struct c4_ib_request *r = &c->reqs[seq % C4_IB_SLOTS];
  int ours =
      rc != C4_EPROTO && atomic_load(&r->seq) == seq && atomic_load(&r->state) == C4_IB_REQ_POSTED;
  if (rc == C4_EREMOTE) {
    if (ours) {
      r->error = C4_EREMOTE;
      atomic_store_explicit(&r->state, C4_IB_REQ_ERROR, memory_order_release);
    }
    c4_ib_comm_fail(c, C4_EREMOTE,
                    "sender %s (pid %u, rank %d) refused message %llu: it does not fit the "
                    "receive posted here (tag %d, %llu bytes)",
                    c->peer.host, c->peer.pid, c->peer.rank, (unsigned long long)seq,
                    ours ? r->tag : -1, ours ? (unsigned long long)r->size : 0ull);
    return;
  }
  if (rc != 0 || !ours) {
    c4_ib_comm_fail(c, C4_EPROTO,
                    "peer %s (pid %u) wrote %u bytes on QP %d for message %llu, which is not "
                    "awaiting data",
                    c->peer.host, c->peer.pid, imm, q, (unsigned long long)seq);
    return;
  }
  if (r->rx.parts == 0 && c->cfg.timing)
    atomic_store_explicit(&r->t_first_byte, c4_now_ns(), memory_order_relaxed);
  rc = c4_ib_rx_msg_add(&r->rx, imm, c->nqps, r->size);
  atomic_store_explicit(&r->done_bytes, r->rx.bytes, memory_order_relaxed);
  if (rc < 0) {
    r->error = rc;
    atomic_store_explicit(&r->state, C4_IB_REQ_ERROR, memory_order_release);
    c4_ib_comm_fail(c, rc,
                    "message %llu from %s (pid %u, rank %d) is larger than the %llu bytes "
                    "posted here",
                    (unsigned long long)seq, c->peer.host, c->peer.pid, c->peer.rank,
                    (unsigned long long)r->size);
  } else if (rc == 1) {
    complete(c, r, r->rx.bytes);
  }
}

/* QP q's write of request r completed: a rate sample of its bytes over the time from posting. */
static void sample_write(struct c4_ib_comm *c, struct c4_ib_request *r, int q) {
  if (!r->qp_len[q]) return;
  uint64_t ns = c4_now_ns() - r->t_wr;
  c4_paths_sample_rate(&c->paths, q, r->qp_len[q], (double)r->qp_len[q] / (double)(ns ? ns : 1),
                       (double)r->probe_span[q]);
}

static void on_wc(struct c4_ib_comm *c, const struct ibv_wc *wc) {
  int kind = (int)(wc->wr_id >> 16) & 0xff, q = (int)(wc->wr_id >> 8) & 0xff;
  int idx = (int)wc->wr_id & 0xff;
  if (wc->status != IBV_WC_SUCCESS) {
    c4_ib_comm_fail(c, C4_EREMOTE,
                    "%s on QP %d to %s (pid %u, rank %d) failed: %s (vendor error 0x%x); the "
                    "peer is gone or the path to it is broken",
                    kind_name(kind), q, c->peer.host, c->peer.pid, c->peer.rank,
                    c4_ib_v.wc_status_str(wc->status), wc->vendor_err);
    return;
  }
  if (kind == WR_RECV && wc->opcode != IBV_WC_RECV_RDMA_WITH_IMM) {
    c4_ib_comm_fail(c, C4_EPROTO, "peer %s (pid %u) sent on QP %d instead of writing", c->peer.host,
                    c->peer.pid, q);
    return;
  }
  if (kind == WR_RECV) {
    on_imm(c, q, ntohl(wc->imm_data));
    return;
  }
  if (kind == WR_CTS) {
    c->cts_outstanding--;
    return;
  }
  if (kind == WR_FLUSH) {
    if (idx < C4_IB_SLOTS) complete(c, &c->flushes[idx], 0);
    return;
  }
  struct c4_ib_request *r = &c->reqs[idx % C4_IB_SLOTS];
  if (kind != WR_DATA || q >= c->nqps || atomic_load(&r->state) != C4_IB_REQ_POSTED) return;
  sample_write(c, r, q);
  if (--r->pending == 0) complete(c, r, r->size);
}

static void poll_cq(struct c4_ib_comm *c) {
  struct ibv_wc wc[16];
  for (int round = 0; round < 4 && !atomic_load(&c->failed); round++) {
    int n = ibv_poll_cq(c->cq, 16, wc);
    if (n < 0) {
      c4_ib_comm_fail(c, C4_ESYS, "polling the completion queue failed");
      return;
    }
    for (int i = 0; i < n; i++)
      on_wc(c, &wc[i]);
    if (n < 16) return;
  }
}

/* ---- posting ---- */

static struct c4_ib_request *slot_take(struct c4_ib_comm *c) {
  struct c4_ib_request *r = &c->reqs[c->next_post % C4_IB_SLOTS];
  return atomic_load_explicit(&r->state, memory_order_acquire) == C4_IB_REQ_FREE ? r : NULL;
}

static void slot_fill(struct c4_ib_comm *c, struct c4_ib_request *r, void *data, uint64_t size,
                      int tag) {
  r->buf = data;
  r->size = size;
  r->tag = tag;
  r->error = 0;
  r->total = 0;
  r->pending = 0;
  r->rx = (struct c4_ib_rx_msg){0};
  atomic_store_explicit(&r->done_bytes, 0, memory_order_relaxed);
  atomic_store_explicit(&r->t_first_byte, 0, memory_order_relaxed);
  atomic_store_explicit(&r->t_done, 0, memory_order_relaxed);
  atomic_store_explicit(&r->t_posted, c->cfg.timing ? c4_now_ns() : 0, memory_order_relaxed);
  atomic_store_explicit(&r->state, C4_IB_REQ_POSTED, memory_order_relaxed);
  atomic_store_explicit(&r->seq, c->next_post, memory_order_release);
}

/* Is [data, data + size) inside registration m? */
static int covers(const struct c4_ib_mr *m, const void *data, uint64_t size) {
  uintptr_t a = (uintptr_t)data;
  return m && a >= m->start && a <= m->end && size <= m->end - a;
}

/* Tells the receiver message seq was refused: a zero-length write with the error immediate. */
static void post_refusal(struct c4_ib_comm *c, const struct c4_ib_cts *cts) {
  struct ibv_send_wr wr = {.wr_id = wr_id(WR_CTS, 0, 0),
                           .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
                           .imm_data = htonl(C4_IB_IMM_ERR),
                           .wr.rdma = {.remote_addr = cts->addr, .rkey = cts->rkey}},
                     *bad;
  (void)ibv_post_send(c->qp[0], &wr, &bad);
}

/* The clear-to-send for message seq, when the receiver has written it. Returns 0, C4_EAGAIN (not
 * posted on the other side yet), or C4_EPROTO (a bad entry: the comm fails). */
static int read_cts(struct c4_ib_comm *c, uint64_t seq, struct c4_ib_cts *cts) {
  const uint8_t *entry = c->ctrl + (seq % C4_IB_SLOTS) * C4_IB_CTS_SIZE;
  /* The receiver's NIC writes the entry in one PCIe write, its mark (last 8 bytes) last: once
   * the mark is seen (acquire), the rest is there too (NCCL's IB transport relies on the same). */
  uint64_t mark = le64toh(__atomic_load_n((const uint64_t *)(entry + 24), __ATOMIC_ACQUIRE));
  uint8_t snap[C4_IB_CTS_SIZE];
  int rc = C4_EAGAIN;
  if (mark > seq) {
    memcpy(snap, entry, sizeof snap);
    rc = c4_ib_cts_get(snap, seq, cts);
  }
  if (rc != 0 && rc != C4_EAGAIN) {
    c4_ib_comm_fail(c, C4_EPROTO, "receiver %s (pid %u) wrote a bad clear-to-send for message %llu",
                    c->peer.host, c->peer.pid, (unsigned long long)seq);
    return C4_EPROTO;
  }
  return rc;
}

/* Message seq (size bytes, tag) against the receive the peer posted: 0, or the comm fails (and
 * the receiver is told) with C4_ETRUNC or the tag mismatch's code. */
static int check_fit(struct c4_ib_comm *c, const struct c4_ib_cts *cts, uint64_t seq, size_t size,
                     int tag) {
  int rc = c4_ib_cts_match(cts, tag, size);
  if (rc == 0) return 0;
  post_refusal(c, cts);
  c4_ib_comm_fail(c, rc,
                  "message %llu (%zu bytes, tag %d) does not fit the receive %s (pid %u, rank "
                  "%d) posted: %llu bytes, tag %d (%s)",
                  (unsigned long long)seq, size, tag, c->peer.host, c->peer.pid, c->peer.rank,
                  (unsigned long long)cts->size, cts->tag,
                  rc == C4_ETRUNC ? "the message is larger" : "the tags differ");
  return rc;
}

/* Splits request r's message over the QPs (by path weight) and posts one RDMA write with
 * immediate per QP into the receive cts names. A post that fails fails the comm and the request. */
static void post_writes(struct c4_ib_comm *c, struct c4_ib_request *r, void *data, size_t size,
                        const struct c4_ib_mr *m, const struct c4_ib_cts *cts, uint64_t seq) {
  double w[C4_IB_MAX_QPS];
  r->t_wr = c4_now_ns();
  c4_ib_qp_weights(&c->paths, c->skipped_since, r->t_wr, c->cfg.path_weights, w, r->probe_span);
  c4_ib_sched_split(size, c->nqps, w, c4_ib_cfg.min_share, r->qp_len);
  r->pending = c->nqps;
  int probed = 0; /* a QP given 1 to be re-measured, and this message reached it */
  for (int q = 0; q < c->nqps; q++)
    if (r->qp_len[q]) {
      probed |= r->probe_span[q] > 0;
      c->skipped_since[q] = 0;
    } else if (!c->skipped_since[q]) {
      c->skipped_since[q] = r->t_wr;
    }
  c->probes += (uint64_t)probed;
  if (c->cfg.timing) atomic_store_explicit(&r->t_first_byte, r->t_wr, memory_order_relaxed);
  uint64_t off = 0;
  for (int q = 0; q < c->nqps; q++) {
    struct ibv_sge sge = {.addr = (uint64_t)(uintptr_t)data + off,
                          .length = (uint32_t)r->qp_len[q],
                          .lkey = m ? m->lkey : 0};
    struct ibv_send_wr wr = {.wr_id = wr_id(WR_DATA, q, (int)(seq % C4_IB_SLOTS)),
                             .sg_list = r->qp_len[q] ? &sge : NULL,
                             .num_sge = r->qp_len[q] ? 1 : 0,
                             .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
                             .send_flags = IBV_SEND_SIGNALED,
                             .imm_data = htonl((uint32_t)r->qp_len[q]),
                             .wr.rdma = {.remote_addr = cts->addr + off, .rkey = cts->rkey}},
                       *bad;
    if ((errno = ibv_post_send(c->qp[q], &wr, &bad)) != 0) {
      c4_ib_comm_fail(c, C4_ESYS, "couldn't post an RDMA write on QP %d: %s", q, strerror(errno));
      r->error = C4_ESYS;
      atomic_store_explicit(&r->state, C4_IB_REQ_ERROR, memory_order_release);
      break;
    }
    off += r->qp_len[q];
  }
}

int c4_ib_isend(struct c4_ib_comm *c, void *data, size_t size, int tag, void *mhandle,
                struct c4_ib_request **req) {
  *req = NULL;
  int failed = atomic_load(&c->failed);
  if (failed) return failed;
  struct c4_ib_request *r = slot_take(c);
  if (!r) {
    poll_cq(c);
    return atomic_load(&c->failed);
  }
  uint64_t seq = c->next_post;
  struct c4_ib_cts cts;
  int rc = read_cts(c, seq, &cts);
  if (rc == C4_EAGAIN) { /* not posted on the other side yet: NCCL calls again */
    poll_cq(c);
    return atomic_load(&c->failed);
  }
  if (rc != 0 || (rc = check_fit(c, &cts, seq, size, tag)) != 0) return rc;
  struct c4_ib_mr *m = mhandle;
  if (size && !covers(m, data, size)) {
    C4_WARN("isend of %zu bytes at %p: the buffer is not inside its registration", size, data);
    return C4_EINVAL;
  }
  slot_fill(c, r, data, size, tag);
  c->next_post++;
  post_writes(c, r, data, size, m, &cts, seq);
  *req = r;
  return 0;
}

int c4_ib_irecv(struct c4_ib_comm *c, void *data, size_t size, int tag, void *mhandle,
                struct c4_ib_request **req) {
  *req = NULL;
  int failed = atomic_load(&c->failed);
  if (failed) return failed;
  struct c4_ib_mr *m = mhandle;
  if (size && !covers(m, data, size)) {
    C4_WARN("irecv of %zu bytes at %p: the buffer is not inside its registration", size, data);
    return C4_EINVAL;
  }
  struct c4_ib_request *r = slot_take(c);
  if (!r || c->cts_outstanding >= C4_IB_SEND_DEPTH - 1) {
    poll_cq(c);
    return atomic_load(&c->failed);
  }
  uint64_t seq = c->next_post;
  uint8_t *entry = c->ctrl + (seq % C4_IB_SLOTS) * C4_IB_CTS_SIZE;
  struct c4_ib_cts cts = {.addr = (uint64_t)(uintptr_t)data,
                          .rkey = m ? m->rkey : 0,
                          .tag = tag,
                          .size = size,
                          .seq = seq};
  c4_ib_cts_put(entry, &cts);
  slot_fill(c, r, data, size, tag);
  c->next_post++;
  struct ibv_sge sge = {
      .addr = (uint64_t)(uintptr_t)entry, .length = C4_IB_CTS_SIZE, .lkey = c->ctrl_mr->lkey};
  struct ibv_send_wr wr = {.wr_id = wr_id(WR_CTS, 0, (int)(seq % C4_IB_SLOTS)),
                           .sg_list = &sge,
                           .num_sge = 1,
                           .opcode = IBV_WR_RDMA_WRITE,
                           .send_flags = IBV_SEND_SIGNALED,
                           .wr.rdma = {.remote_addr =
                                           c->fifo_addr + (seq % C4_IB_SLOTS) * C4_IB_CTS_SIZE,
                                       .rkey = c->fifo_rkey}},
                     *bad;
  if ((errno = ibv_post_send(c->qp[0], &wr, &bad)) != 0) {
    c4_ib_comm_fail(c, C4_ESYS, "couldn't post a clear-to-send write: %s", strerror(errno));
    r->error = C4_ESYS;
    atomic_store_explicit(&r->state, C4_IB_REQ_ERROR, memory_order_release);
  } else {
    c->cts_outstanding++;
  }
  *req = r;
  return 0;
}

int c4_ib_iflush(struct c4_ib_comm *c, void *data, void *mhandle, struct c4_ib_request **req) {
  *req = NULL;
  struct c4_ib_mr *m = mhandle;
  if (!c->flush_qp || !m || m->type == NCCL_PTR_HOST) return 0;
  int failed = atomic_load(&c->failed);
  if (failed) return failed;
  int idx = 0;
  while (idx < C4_IB_SLOTS && atomic_load(&c->flushes[idx].state) != C4_IB_REQ_FREE)
    idx++;
  if (idx == C4_IB_SLOTS) {
    C4_WARN("iflush: %d flushes already in flight on this comm", C4_IB_SLOTS);
    return C4_EINVAL;
  }
  struct c4_ib_request *f = &c->flushes[idx];
  atomic_store(&f->state, C4_IB_REQ_POSTED);
  struct ibv_sge sge = {
      .addr = (uint64_t)(uintptr_t)(c->ctrl + FLUSH_AT), .length = 1, .lkey = c->ctrl_mr->lkey};
  struct ibv_send_wr wr = {.wr_id = wr_id(WR_FLUSH, 0, idx),
                           .sg_list = &sge,
                           .num_sge = 1,
                           .opcode = IBV_WR_RDMA_READ,
                           .send_flags = IBV_SEND_SIGNALED,
                           .wr.rdma = {.remote_addr = (uint64_t)(uintptr_t)data, .rkey = m->rkey}},
                     *bad;
  if ((errno = ibv_post_send(c->flush_qp, &wr, &bad)) != 0) {
    atomic_store(&f->state, C4_IB_REQ_FREE);
    c4_ib_comm_fail(c, C4_ESYS, "couldn't post a flush read: %s", strerror(errno));
    return C4_ESYS;
  }
  *req = f;
  return 0;
}

/* ---- completion ---- */

static void emit(struct c4_ib_comm *c, struct c4_ib_request *r, int ok, uint64_t bytes) {
  if (!c->cfg.timing) return;
  struct c4_xfer_record rec;
  c4_ib_request_record(c, r, ok ? C4_XFER_OK : C4_XFER_ERROR, bytes,
                       ok ? atomic_load_explicit(&r->t_done, memory_order_relaxed) : c4_now_ns(),
                       &rec);
  c4_telemetry_emit_xfer(&rec);
}

int c4_ib_test(struct c4_ib_request *r, int *done, size_t *size) {
  struct c4_ib_comm *c = r->comm;
  *done = 0;
  int st = atomic_load_explicit(&r->state, memory_order_acquire);
  if (st == C4_IB_REQ_POSTED) {
    poll_cq(c);
    st = atomic_load_explicit(&r->state, memory_order_acquire);
  }
  int failed = atomic_load(&c->failed);
  if (r->is_flush) {
    if (st == C4_IB_REQ_DONE || failed) atomic_store(&r->state, C4_IB_REQ_FREE);
    *done = st == C4_IB_REQ_DONE;
    return *done ? 0 : failed;
  }
  if (st == C4_IB_REQ_DONE) {
    emit(c, r, 1, r->total);
    if (size) *size = (size_t)r->total;
    *done = 1;
    atomic_store_explicit(&r->state, C4_IB_REQ_FREE, memory_order_release);
    return 0;
  }
  if (st == C4_IB_REQ_ERROR || failed) {
    emit(c, r, 0, atomic_load(&r->done_bytes));
    int code = st == C4_IB_REQ_ERROR && r->error ? r->error : failed;
    atomic_store_explicit(&r->state, C4_IB_REQ_FREE, memory_order_release);
    return code ? code : C4_EREMOTE;
  }
  return 0;
}

int c4_ib_reg_mr(struct c4_ib_comm *c, void *data, size_t size, int type, int fd, uint64_t offset,
                 void **mhandle) {
  if ((type & c->d->ptr_support) != type) {
    C4_WARN("regMr of memory type %d on %s:%d, which supports types 0x%x (GPUDirect RDMA needs "
            "nvidia_peermem or dma-buf)",
            type, c->d->name, c->d->port, c->d->ptr_support);
    return C4_EINVAL;
  }
  return c4_ib_mr_get(&c->d->mrc, data, size, type, fd, offset, (struct c4_ib_mr **)mhandle);
}

int c4_ib_dereg_mr(struct c4_ib_comm *c, void *mhandle) {
  c4_ib_mr_put(&c->d->mrc, mhandle);
  return 0;
}

struct c4_link_info *c4_ib_link_once(struct c4_ib_comm *c) {
  if (c->link_given) return NULL;
  c->link_given = 1;
  return &c->link;
}

/* At a send comm's close, one INFO line per QP: its path, what it carried, how fast, its weight
 * (what `make ib-check` reads to show the spread over paths). */
static void log_paths(const struct c4_ib_comm *c) {
  if (!c->is_send) return;
  for (int q = 0; q < c->nqps; q++) {
    const struct c4_netplan_bind *b = &c->path[q];
    char where[48];
    if (c->d->link_layer == C4_IB_LINK_ETH)
      snprintf(where, sizeof where, "flow label %d (UDP port %u)", b->flow_label,
               c4_ib_flow_label_to_sport((uint32_t)b->flow_label));
    else
      snprintf(where, sizeof where, "path bits %d", b->path_bits);
    C4_INFO("verbs send comm %016llx to %s: QP %d %s: %llu bytes in %llu writes, %.1f MB/s, "
            "weight %.3f; %llu messages re-measured a QP",
            (unsigned long long)c->conn_id, c->peer.host, q, where,
            (unsigned long long)c->paths.bytes[q], (unsigned long long)c->paths.chunks[q],
            c->paths.rate[q] * 1000, c4_paths_weight(&c->paths, q), (unsigned long long)c->probes);
  }
}

int c4_ib_close(struct c4_ib_comm *c) {
  log_paths(c);
  c4_ib_comm_free(c);
  return 0;
}
