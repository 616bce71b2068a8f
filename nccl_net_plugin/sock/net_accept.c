/* net_accept.c -- the listening side: hands out the handle, then accepts and checks incoming
 * connections without ever blocking, grouping a connector's control and data sockets into one
 * receive comm. Anything that is not a c4 connector is closed and counted; connections that have
 * not proven they hold the handle never take a proven one's slot (net_pending.h, net_admit.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_log.h"
#include "net_comm.h"
#include "net_handshake.h"
#include "net_pending.h"
#include "net_sock.h"

#define MAX_PENDING 256 /* proven and unproven (these at most C4_ADMIT_UNPROVEN_MAX) */

struct pending {
  struct c4_pending h; /* fd, age, proof, slot, address (net_pending.h) */
  size_t got;
  uint8_t buf[C4_HELLO_SIZE];
  int ready; /* hello received and checked */
  struct c4_wire_hello hello;
};

struct c4_listen_comm {
  struct c4_pending_table t; /* over pend[] */
  uint64_t nccl_comm;
  struct c4_identity self;
  struct c4_transport_config cfg;
  struct pending pend[MAX_PENDING];
};

int c4_transport_listen(const struct c4_transport_config *cfg, int dev, uint64_t nccl_comm,
                        const struct sockaddr_storage *addr, void *handle,
                        struct c4_listen_comm **out) {
  struct c4_listen_comm *l = calloc(1, sizeof *l);
  if (!l) return C4_ENOMEM;
  l->t = (struct c4_pending_table){.what = "listener on device",
                                   .accept_what = "device",
                                   .max = MAX_PENDING,
                                   .item_size = sizeof l->pend[0],
                                   .items = l->pend};
  int rc = c4_pending_listen(&l->t, cfg, dev, addr, handle, &l->self);
  if (rc != 0) {
    free(l);
    return rc;
  }
  l->nccl_comm = nccl_comm;
  l->cfg = *cfg;
  *out = l;
  return 0;
}

/* Reads what pending connection i has sent and checks it. Returns 0 when it stays, -1 when it
 * was rejected (and removed). */
static int advance(void *ctx, int i, uint64_t now) {
  struct c4_listen_comm *l = ctx;
  struct pending *p = &l->pend[i];
  char err[160];
  if (!p->ready) {
    ssize_t k = c4_sock_recv_some(p->h.fd, p->buf + p->got, C4_HELLO_SIZE - p->got);
    if (k < 0) {
      snprintf(err, sizeof err, "closed after %zu of %d hello bytes", p->got, C4_HELLO_SIZE);
      return c4_pending_reject(&l->t, i, err), -1;
    }
    p->got += (size_t)k;
    if (c4_pending_judge(&l->t, i, p->buf, p->got) != 0) return C4_EPROTO;
    if (p->got == C4_HELLO_SIZE) {
      if (c4_handshake_check_hello(p->h.fd, p->buf, l->t.nonce, &p->hello, err, sizeof err) != 0)
        return c4_pending_reject(&l->t, i, err), -1;
      p->ready = 1;
    }
  }
  if (now - p->h.t_open > (uint64_t)l->cfg.handshake_timeout_ms * 1000000ull) {
    snprintf(err, sizeof err, "%s within %d ms (C4_HANDSHAKE_TIMEOUT_MS)",
             p->ready ? "its comm did not complete" : "no complete hello",
             l->cfg.handshake_timeout_ms);
    return c4_pending_reject(&l->t, i, err), -1;
  }
  return 0;
}

/* Reads hellos; returns after checking every pending connection once. */
static void read_hellos(struct c4_listen_comm *l) {
  uint64_t now = c4_now_ns();
  for (int i = 0; i < l->t.npend;)
    if (advance(l, i, now) == 0) i++;
}

/* Finds a control connection whose data connections have all arrived and builds its comm. */
static int assemble(struct c4_listen_comm *l, struct c4_comm **out) {
  for (int i = 0; i < l->t.npend; i++) {
    struct pending *ctl = &l->pend[i];
    if (!ctl->ready || ctl->hello.kind != C4_HELLO_CTRL) continue;
    int n = ctl->hello.nsocks;
    int idx[C4_MAX_NSOCKS];
    int found = 0;
    for (int k = 0; k < n; k++)
      idx[k] = -1;
    for (int j = 0; j < l->t.npend; j++) {
      struct pending *d = &l->pend[j];
      if (d->ready && d->hello.kind == C4_HELLO_DATA && d->hello.conn_id == ctl->hello.conn_id &&
          d->hello.nsocks == n && idx[d->hello.index] < 0) {
        idx[d->hello.index] = j;
        found++;
      }
    }
    if (found < n) continue;
    uint8_t ack[C4_ACK_SIZE];
    c4_wire_put_ack(ack, C4_ACK_OK);
    if (c4_sock_send_some(ctl->h.fd, ack, sizeof ack) != sizeof ack) {
      c4_pending_reject(&l->t, i, "could not send the handshake ack");
      return 0;
    }
    int ctrl_fd = ctl->h.fd;
    int data_fd[C4_MAX_NSOCKS];
    struct c4_wire_hello hello = ctl->hello;
    for (int k = 0; k < n; k++)
      data_fd[k] = l->pend[idx[k]].h.fd;
    /* remove the n+1 pending entries, highest index first so swaps do not disturb the rest */
    int used[C4_MAX_NSOCKS + 1];
    for (int k = 0; k < n; k++)
      used[k] = idx[k];
    used[n] = i;
    for (int a = 0; a <= n; a++)
      for (int b = a + 1; b <= n; b++)
        if (used[b] > used[a]) {
          int t = used[a];
          used[a] = used[b];
          used[b] = t;
        }
    for (int k = 0; k <= n; k++)
      c4_pending_forget(&l->t, used[k]); /* their fds now belong to the comm */
    return c4_comm_create(0, &l->cfg, l->t.dev, l->nccl_comm, hello.conn_id, &l->self, &hello.id,
                          ctrl_fd, data_fd, NULL, n, out);
  }
  return 0;
}

int c4_transport_accept(struct c4_listen_comm *l, struct c4_comm **out) {
  *out = NULL;
  c4_pending_take_new(&l->t, advance, l);
  read_hellos(l);
  return assemble(l, out);
}

int c4_transport_close_listen(struct c4_listen_comm *l) {
  if (!l) return 0;
  c4_pending_close_all(&l->t);
  free(l);
  return 0;
}
