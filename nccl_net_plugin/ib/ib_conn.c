/* ib_conn.c -- setting up a verbs comm through the socket transport's handle and handshake: the
 * connector opens one TCP connection to the listener named in the handle, sends its hello (same
 * nonce, identity and checks as the socket transport) and its QP info; the listener checks both,
 * connects its QPs and answers with an ack and its QP info; the connector connects its QPs and
 * says it is ready, and the TCP connection closes. Nothing blocks: NCCL polls both sides. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_log.h"
#include "c4_random.h"
#include "ib_comm.h"
#include "net_handshake.h"
#include "net_pending.h"
#include "net_sock.h"
#include "net_stats.h"

#define MAX_PENDING 192 /* proven and unproven (these at most C4_ADMIT_UNPROVEN_MAX) */
#define HELLO_IN (C4_HELLO_SIZE + C4_IB_QPINFO_SIZE)
#define REPLY (C4_ACK_SIZE + C4_IB_QPINFO_SIZE)

/* ---- the listening side ---- */

struct ib_pending {
  struct c4_pending h; /* fd, age, proof, slot, address (net_pending.h) */
  int phase;           /* 0 reading hello + QP info, 1 writing the reply, 2 reading the ready ack */
  size_t got, sent;
  uint8_t in[HELLO_IN];
  uint8_t out[REPLY];
  struct c4_wire_hello hello;
  struct c4_ib_comm *comm;
};

struct c4_ib_listen {
  struct c4_pending_table t; /* over pend[] */
  uint64_t nccl_comm;
  struct c4_identity self;
  struct c4_transport_config cfg;
  struct c4_ib_comm *ready; /* a comm a handshake finished inside c4_pending_take_new */
  struct ib_pending pend[MAX_PENDING];
};

/* A pending connection's QPs, set up once its hello and QP info are in. */
static void drop_comm(void *entry) {
  struct ib_pending *p = entry;
  c4_ib_comm_free(p->comm);
  p->comm = NULL;
}

int c4_ib_listen(const struct c4_transport_config *cfg, int dev, uint64_t nccl_comm,
                 const struct sockaddr_storage *addr, void *handle, struct c4_ib_listen **out) {
  if (!c4_ib_dev_get(dev)) return C4_EINVAL;
  struct c4_ib_listen *l = calloc(1, sizeof *l);
  if (!l) return C4_ENOMEM;
  l->t = (struct c4_pending_table){.what = "verbs listener on device",
                                   .accept_what = "verbs device",
                                   .max = MAX_PENDING,
                                   .item_size = sizeof l->pend[0],
                                   .items = l->pend,
                                   .drop = drop_comm};
  int rc = c4_pending_listen(&l->t, cfg, dev, addr, handle, &l->self);
  if (rc != 0) {
    free(l);
    return rc;
  }
  l->nccl_comm = nccl_comm;
  l->cfg = *cfg;
  ((uint8_t *)handle)[C4_IB_HANDLE_MARK_AT] = C4_IB_HANDLE_MARK;
  *out = l;
  return 0;
}

/* Checks the hello as soon as it is in, so a socket-transport connector is turned away at once.
 * Returns 0 or a code with err filled. */
static int check_hello(struct c4_ib_listen *l, struct ib_pending *p, char *err, size_t errlen) {
  int rc = c4_handshake_check_hello(p->h.fd, p->in, l->t.nonce, &p->hello, err, errlen);
  if (rc != 0) return rc;
  if (p->hello.kind != C4_HELLO_CTRL || p->hello.nsocks != 1) {
    snprintf(err, errlen,
             "a socket-transport connection (hello kind %u, %u sockets) reached a "
             "verbs device: every rank must offer the same kinds of devices (C4_IB)",
             p->hello.kind, p->hello.nsocks);
    return C4_EPROTO;
  }
  return 0;
}

/* Hello and QP info are in: builds and connects the receive comm and prepares the reply. */
static int answer(struct c4_ib_listen *l, struct ib_pending *p, char *err, size_t errlen) {
  struct c4_ib_qpinfo remote, mine;
  int rc = c4_ib_qpinfo_get(p->in + C4_HELLO_SIZE, &remote, err, errlen);
  if (rc != 0) return rc;
  if (remote.link_layer != c4_ib_dev_get(l->t.dev)->link_layer) {
    snprintf(err, errlen, "the connector's port is %s, this one is not",
             remote.link_layer == C4_IB_LINK_ETH ? "RoCE" : "InfiniBand");
    return C4_EPROTO;
  }
  if ((rc = c4_ib_comm_new(0, &l->cfg, l->t.dev, remote.nqps, &p->comm, &mine)) != 0 ||
      (rc = c4_ib_comm_connect(p->comm, l->nccl_comm, p->hello.conn_id, &l->self, &p->hello.id,
                               &remote)) != 0) {
    snprintf(err, errlen, "could not set up its QPs here (see above)");
    return rc;
  }
  c4_wire_put_ack(p->out, C4_ACK_OK);
  c4_ib_qpinfo_put(p->out + C4_ACK_SIZE, &mine);
  p->phase = 1;
  return 0;
}

/* Advances pending connection i. Returns 1 when its comm is ready (taken into *out), 0 when it
 * waits, -1 when it was rejected (and removed). */
static int step(struct c4_ib_listen *l, int i, uint64_t now, struct c4_ib_comm **out) {
  struct ib_pending *p = &l->pend[i];
  char err[200];
  if (p->phase == 0) {
    ssize_t k = c4_sock_recv_some(p->h.fd, p->in + p->got, HELLO_IN - p->got);
    if (k < 0) {
      snprintf(err, sizeof err, "closed after %zu of %d handshake bytes", p->got, HELLO_IN);
      return c4_pending_reject(&l->t, i, err), -1;
    }
    size_t before = p->got;
    p->got += (size_t)k;
    if (c4_pending_judge(&l->t, i, p->in, p->got) != 0) return C4_EPROTO;
    if (before < C4_HELLO_SIZE && p->got >= C4_HELLO_SIZE &&
        check_hello(l, p, err, sizeof err) != 0)
      return c4_pending_reject(&l->t, i, err), -1;
    if (p->got == HELLO_IN && answer(l, p, err, sizeof err) != 0)
      return c4_pending_reject(&l->t, i, err), -1;
  }
  if (p->phase == 1) {
    ssize_t k = c4_sock_send_some(p->h.fd, p->out + p->sent, REPLY - p->sent);
    if (k < 0) return c4_pending_reject(&l->t, i, "closed before our reply went out"), -1;
    p->sent += (size_t)k;
    if (p->sent == REPLY) p->phase = 2, p->got = 0;
  }
  if (p->phase == 2) {
    ssize_t k = c4_sock_recv_some(p->h.fd, p->in + p->got, C4_ACK_SIZE - p->got);
    if (k < 0) return c4_pending_reject(&l->t, i, "closed instead of saying its QPs are ready"), -1;
    p->got += (size_t)k;
    if (p->got == C4_ACK_SIZE) {
      if (c4_wire_get_ack(p->in) != C4_ACK_OK)
        return c4_pending_reject(&l->t, i, "its ready ack is wrong"), -1;
      *out = p->comm;
      close(p->h.fd);
      c4_pending_forget(&l->t, i); /* the comm is the caller's now */
      return 1;
    }
  }
  if (now - p->h.t_open > (uint64_t)l->cfg.handshake_timeout_ms * 1000000ull) {
    snprintf(err, sizeof err, "handshake not complete within %d ms (C4_HANDSHAKE_TIMEOUT_MS)",
             l->cfg.handshake_timeout_ms);
    return c4_pending_reject(&l->t, i, err), -1;
  }
  return 0;
}

/* step over the pending table's callback: the comm a finished handshake hands out waits in
 * l->ready until c4_ib_accept returns it. */
static int advance(void *ctx, int i, uint64_t now) {
  struct c4_ib_listen *l = ctx;
  return step(l, i, now, &l->ready);
}

int c4_ib_accept(struct c4_ib_listen *l, struct c4_ib_comm **out) {
  *out = NULL;
  l->ready = NULL;
  if (c4_pending_take_new(&l->t, advance, l)) {
    *out = l->ready;
    return 0;
  }
  uint64_t now = c4_now_ns();
  for (int i = 0; i < l->t.npend;) {
    int rc = step(l, i, now, out);
    if (rc == 1) return 0;
    if (rc == 0) i++;
  }
  return 0;
}

int c4_ib_close_listen(struct c4_ib_listen *l) {
  if (!l) return 0;
  c4_pending_close_all(&l->t);
  free(l);
  return 0;
}

/* ---- the connecting side ---- */

struct ib_connect {
  struct c4_wire_handle target;
  uint64_t conn_id;
  uint64_t t_start;
  int fd;
  int connected;
  int phase; /* 0 writing hello + QP info, 1 reading the reply, 2 writing the ready ack */
  size_t sent, got;
  uint8_t out[HELLO_IN];
  uint8_t in[REPLY];
  struct c4_identity self;
  struct c4_ib_comm *comm;
  char where[96];
};

/* Frees the connect state; the comm too unless keep_comm (it was handed out). */
static void state_free(void *handle, struct ib_connect *s, int keep_comm) {
  if (s->fd >= 0) close(s->fd);
  if (!keep_comm) c4_ib_comm_free(s->comm);
  free(s);
  c4_handshake_scratch_set(handle, NULL);
}

static int state_new(const struct c4_transport_config *cfg, int dev, void *handle,
                     struct ib_connect **out) {
  char err[160];
  if (((uint8_t *)handle)[C4_IB_HANDLE_MARK_AT] != C4_IB_HANDLE_MARK) {
    C4_WARN("connect on verbs device %d: the handle comes from a socket-transport device; every "
            "rank must offer the same kinds of devices (C4_IB, C4_IB_HCA)",
            dev);
    return C4_EPROTO;
  }
  struct ib_connect *s = calloc(1, sizeof *s);
  if (!s) return C4_ENOMEM;
  s->fd = -1;
  if (c4_wire_get_handle(handle, &s->target, err, sizeof err) != 0) {
    C4_WARN("connect on verbs device %d: %s", dev, err);
    free(s);
    return C4_EPROTO;
  }
  c4_sock_addr_str(&s->target.addr, s->where, sizeof s->where);
  s->conn_id = c4_random_u64();
  s->t_start = c4_now_ns();
  c4_wire_self_identity(&s->self, dev);
  struct c4_ib_qpinfo mine;
  int rc = c4_ib_comm_new(1, cfg, dev, c4_ib_cfg.nqps, &s->comm, &mine);
  if (rc != 0) {
    free(s);
    return rc;
  }
  struct c4_wire_hello h = {.version = C4_WIRE_VERSION,
                            .kind = C4_HELLO_CTRL,
                            .nonce = s->target.nonce,
                            .conn_id = s->conn_id,
                            .nsocks = 1,
                            .index = 0,
                            .id = s->self};
  c4_wire_put_hello(s->out, &h);
  c4_ib_qpinfo_put(s->out + C4_HELLO_SIZE, &mine);
  *out = s;
  return 0;
}

/* Connects the TCP socket, retrying refused connects for C4_CONNECT_TIMEOUT_MS. Returns 1 when
 * connected, 0 while waiting, or a negative code. */
static int tcp_step(const struct c4_transport_config *cfg, struct ib_connect *s) {
  if (s->connected) return 1;
  if (s->fd < 0 && (s->fd = c4_sock_connect_start(&s->target.addr)) < 0) {
    int rc = s->fd;
    s->fd = -1;
    C4_WARN("connect to %s: socket failed: %s", s->where, strerror(errno));
    return rc;
  }
  int e;
  int rc = c4_sock_connect_check(s->fd, &e);
  if (rc == 0) return 0;
  if (rc < 0) {
    uint64_t waited_ms = (c4_now_ns() - s->t_start) / 1000000ull;
    close(s->fd);
    s->fd = -1;
    if ((e == ECONNREFUSED || e == ETIMEDOUT || e == EHOSTUNREACH) &&
        waited_ms < (uint64_t)cfg->connect_timeout_ms)
      return 0;
    C4_WARN("connect to %s (pid %u, rank %d) failed after %llu ms: %s", s->where, s->target.id.pid,
            s->target.id.rank, (unsigned long long)waited_ms, strerror(e));
    return C4_EREMOTE;
  }
  s->connected = 1;
  return 1;
}

/* The reply is in: checks it and connects our QPs to the listener's. */
static int take_reply(struct ib_connect *s, uint64_t nccl_comm) {
  int status = c4_wire_get_ack(s->in);
  if (status != C4_ACK_OK) {
    C4_WARN("connect to %s: %s", s->where, c4_handshake_ack_why(status));
    return C4_EPROTO;
  }
  struct c4_ib_qpinfo remote;
  char err[160];
  if (c4_ib_qpinfo_get(s->in + C4_ACK_SIZE, &remote, err, sizeof err) != 0) {
    C4_WARN("connect to %s: %s", s->where, err);
    return C4_EPROTO;
  }
  if (remote.nqps != s->comm->nqps || remote.link_layer != s->comm->d->link_layer) {
    C4_WARN("connect to %s: the listener answered with %u QPs on a %s port; we asked for %d on a "
            "%s port",
            s->where, remote.nqps, remote.link_layer == C4_IB_LINK_ETH ? "RoCE" : "InfiniBand",
            s->comm->nqps, s->comm->d->link_layer == C4_IB_LINK_ETH ? "RoCE" : "InfiniBand");
    return C4_EPROTO;
  }
  return c4_ib_comm_connect(s->comm, nccl_comm, s->conn_id, &s->self, &s->target.id, &remote);
}

/* Phase 0: sends our hello (as much as the socket takes). Returns 0, or C4_EREMOTE when the
 * listener closed. */
static int step_hello(struct ib_connect *s) {
  ssize_t k = c4_sock_send_some(s->fd, s->out + s->sent, HELLO_IN - s->sent);
  if (k < 0) {
    C4_WARN("connect to %s: the listener closed the connection during the handshake", s->where);
    return C4_EREMOTE;
  }
  s->sent += (size_t)k;
  if (s->sent == HELLO_IN) s->phase = 1;
  return 0;
}

/* Phase 1: reads the listener's reply and, once it is whole, connects our QPs and readies our
 * ack. Returns 0 or a negative C4_E* code (logged). */
static int step_reply(struct ib_connect *s, uint64_t nccl_comm) {
  ssize_t k = c4_sock_recv_some(s->fd, s->in + s->got, REPLY - s->got);
  if (k < 0) {
    C4_WARN("connect to %s (pid %u, rank %d): the listener closed the connection instead of "
            "answering; it is not a c4 verbs device of this version, or it rejected us (see its "
            "log)",
            s->where, s->target.id.pid, s->target.id.rank);
    return C4_EREMOTE;
  }
  s->got += (size_t)k;
  if (s->got < REPLY) return 0;
  int rc = take_reply(s, nccl_comm);
  if (rc != 0) return rc;
  c4_wire_put_ack(s->out, C4_ACK_OK);
  s->phase = 2;
  s->sent = 0;
  return 0;
}

/* Phase 2: sends our ready ack. Returns 1 once all of it went, 0 while some waits, or
 * C4_EREMOTE. */
static int step_ready(struct ib_connect *s) {
  ssize_t k = c4_sock_send_some(s->fd, s->out + s->sent, C4_ACK_SIZE - s->sent);
  if (k < 0) {
    C4_WARN("connect to %s: the listener closed before our ready ack", s->where);
    return C4_EREMOTE;
  }
  s->sent += (size_t)k;
  return s->sent == C4_ACK_SIZE;
}

int c4_ib_connect(const struct c4_transport_config *cfg, int dev, uint64_t nccl_comm, void *handle,
                  struct c4_ib_comm **out) {
  *out = NULL;
  struct ib_connect *s = c4_handshake_scratch_get(handle);
  int rc;
  if (!s) {
    if ((rc = state_new(cfg, dev, handle, &s)) != 0) return rc;
    c4_handshake_scratch_set(handle, s);
  }
  if ((rc = tcp_step(cfg, s)) <= 0) {
    if (rc < 0) state_free(handle, s, 0);
    return rc;
  }
  if (s->phase == 0 && (rc = step_hello(s)) != 0) goto fail;
  if (s->phase == 1 && (rc = step_reply(s, nccl_comm)) != 0) goto fail;
  if (s->phase == 2 && (rc = step_ready(s)) != 0) {
    if (rc < 0) goto fail;
    *out = s->comm;
    state_free(handle, s, 1);
    return 0;
  }
  uint64_t waited_ms = (c4_now_ns() - s->t_start) / 1000000ull;
  if (waited_ms > (uint64_t)cfg->connect_timeout_ms + (uint64_t)cfg->handshake_timeout_ms) {
    C4_WARN("connect to %s: handshake not complete after %llu ms", s->where,
            (unsigned long long)waited_ms);
    rc = C4_EREMOTE;
    goto fail;
  }
  return 0;
fail:
  state_free(handle, s, 0);
  return rc;
}
