/* net_accept.c -- the listening side: hands out the handle, then accepts and checks incoming
 * connections without ever blocking, grouping a connector's control and data sockets into one
 * receive comm. Anything that is not a c4 connector is closed and counted; connections that have
 * not proven they hold the handle never take a proven one's slot (net_admit.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_log.h"
#include "net_admit.h"
#include "net_comm.h"
#include "net_handshake.h"
#include "net_sock.h"

#define MAX_PENDING 256 /* proven and unproven (these at most C4_ADMIT_UNPROVEN_MAX) */

struct pending {
  int fd;
  uint64_t t_open;
  size_t got;
  uint8_t buf[C4_HELLO_SIZE];
  int proven; /* its first C4_ADMIT_PROOF_BYTES carried this listener's nonce */
  int slot;   /* holds one of the process's unproven slots (c4_admit_take) */
  int ready;  /* hello received and checked */
  struct c4_wire_hello hello;
  char from[96];
};

struct c4_listen_comm {
  int fd;
  int dev;
  uint64_t nonce;
  uint64_t nccl_comm;
  struct c4_identity self;
  struct c4_transport_config cfg;
  int npend;
  int nunproven;
  struct pending pend[MAX_PENDING];
};

int c4_transport_listen(const struct c4_transport_config *cfg, int dev, uint64_t nccl_comm,
                        const struct sockaddr_storage *addr, void *handle,
                        struct c4_listen_comm **out) {
  struct c4_listen_comm *l = calloc(1, sizeof *l);
  if (!l) return C4_ENOMEM;
  int fd = c4_handshake_listen(cfg, dev, addr, handle, &l->nonce, &l->self);
  if (fd < 0) {
    free(l);
    return fd;
  }
  l->fd = fd;
  l->dev = dev;
  l->nccl_comm = nccl_comm;
  l->cfg = *cfg;
  *out = l;
  return 0;
}

/* Closes pending connection i: a proven one is logged each time (its peer holds our handle, so
 * this is a real misconfiguration), an unproven one only in the flood summary. */
static void reject(struct c4_listen_comm *l, int i, const char *why) {
  struct pending *p = &l->pend[i];
  if (p->proven) {
    C4_WARN("listener on device %d rejected a connection from %s: %s", l->dev, p->from, why);
    atomic_fetch_add(&c4_transport_stats.rejected_peers, 1);
  } else {
    c4_admit_closed("listener on device", l->dev, p->from, why);
    if (p->slot) c4_admit_release();
    l->nunproven--;
  }
  close(p->fd);
  l->pend[i] = l->pend[--l->npend];
}

/* Reads what pending connection i has sent and checks it. Returns 0 when it stays, -1 when it
 * was rejected (and removed). */
static int advance(struct c4_listen_comm *l, int i, uint64_t now) {
  struct pending *p = &l->pend[i];
  char err[160];
  if (!p->ready) {
    ssize_t k = c4_sock_recv_some(p->fd, p->buf + p->got, C4_HELLO_SIZE - p->got);
    if (k < 0) {
      snprintf(err, sizeof err, "closed after %zu of %d hello bytes", p->got, C4_HELLO_SIZE);
      return reject(l, i, err), -1;
    }
    p->got += (size_t)k;
    if (!p->proven) {
      int judged = c4_admit_judge(p->buf, p->got, l->nonce);
      if (judged == C4_ADMIT_BAD) return reject(l, i, "its first bytes are not a hello for us"), -1;
      if (judged == C4_ADMIT_PROVEN) {
        p->proven = 1;
        l->nunproven--;
        if (p->slot) c4_admit_release();
        p->slot = 0;
      }
    }
    if (p->got == C4_HELLO_SIZE) {
      if (c4_handshake_check_hello(p->fd, p->buf, l->nonce, &p->hello, err, sizeof err) != 0)
        return reject(l, i, err), -1;
      p->ready = 1;
    }
  }
  if (now - p->t_open > (uint64_t)l->cfg.handshake_timeout_ms * 1000000ull) {
    snprintf(err, sizeof err, "%s within %d ms (C4_HANDSHAKE_TIMEOUT_MS)",
             p->ready ? "its comm did not complete" : "no complete hello",
             l->cfg.handshake_timeout_ms);
    return reject(l, i, err), -1;
  }
  return 0;
}

/* Evicts the oldest unproven connection other than *keep (whose index is updated if the removal
 * moved it; keep may be NULL). Returns 0, or -1 when there is none. */
static int evict_unproven_except(struct c4_listen_comm *l, int *keep) {
  int oldest = -1;
  for (int i = 0; i < l->npend; i++)
    if (!l->pend[i].proven && (!keep || i != *keep) &&
        (oldest < 0 || l->pend[i].t_open < l->pend[oldest].t_open))
      oldest = i;
  if (oldest < 0) return -1;
  reject(l, oldest, "evicted unproven: newer connections needed its slot");
  if (keep && *keep == l->npend) *keep = oldest; /* the last entry moved into the hole */
  return 0;
}

/* Takes at most C4_ADMIT_ACCEPTS_PER_CALL waiting connections and reads each at once, so that a
 * real connector's hello (already in the socket when it is accepted) proves it before any
 * eviction. An unproven newcomer over this listener's or the process's share evicts the oldest
 * unproven connection; proven ones are never evicted. */
static void take_new_connections(struct c4_listen_comm *l) {
  char from[sizeof l->pend[0].from];
  for (int n = 0; n < C4_ADMIT_ACCEPTS_PER_CALL; n++) {
    int fd = c4_handshake_accept(l->fd, "device", l->dev, from, sizeof from);
    if (fd < 0) return;
    if (l->npend == MAX_PENDING && evict_unproven_except(l, NULL) != 0) {
      C4_WARN("listener on device %d refused a connection from %s: %d handshakes that know our "
              "handle are unfinished",
              l->dev, from, l->npend);
      atomic_fetch_add(&c4_transport_stats.rejected_peers, 1);
      close(fd);
      continue;
    }
    int i = l->npend++;
    struct pending *p = &l->pend[i];
    memset(p, 0, sizeof *p);
    p->fd = fd;
    p->t_open = c4_now_ns();
    memcpy(p->from, from, sizeof p->from);
    l->nunproven++;
    if (advance(l, i, p->t_open) != 0 || l->pend[i].proven) continue;
    /* still unproven: it needs a process slot and a place within this listener's share */
    while (!(l->pend[i].slot = c4_admit_take()) && l->nunproven > 1)
      evict_unproven_except(l, &i);
    if (!l->pend[i].slot) {
      reject(l, i, "the process holds its limit of unproven connections");
      continue;
    }
    if (l->nunproven > C4_ADMIT_UNPROVEN_MAX) evict_unproven_except(l, &i);
  }
}

/* Reads hellos; returns after checking every pending connection once. */
static void read_hellos(struct c4_listen_comm *l) {
  uint64_t now = c4_now_ns();
  for (int i = 0; i < l->npend;)
    if (advance(l, i, now) == 0) i++;
}

/* Finds a control connection whose data connections have all arrived and builds its comm. */
static int assemble(struct c4_listen_comm *l, struct c4_comm **out) {
  for (int i = 0; i < l->npend; i++) {
    struct pending *ctl = &l->pend[i];
    if (!ctl->ready || ctl->hello.kind != C4_HELLO_CTRL) continue;
    int n = ctl->hello.nsocks;
    int idx[C4_MAX_NSOCKS];
    int found = 0;
    for (int k = 0; k < n; k++)
      idx[k] = -1;
    for (int j = 0; j < l->npend; j++) {
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
    if (c4_sock_send_some(ctl->fd, ack, sizeof ack) != sizeof ack) {
      reject(l, i, "could not send the handshake ack");
      return 0;
    }
    int ctrl_fd = ctl->fd;
    int data_fd[C4_MAX_NSOCKS];
    struct c4_wire_hello hello = ctl->hello;
    for (int k = 0; k < n; k++)
      data_fd[k] = l->pend[idx[k]].fd;
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
      l->pend[used[k]] = l->pend[--l->npend];
    return c4_comm_create(0, &l->cfg, l->dev, l->nccl_comm, hello.conn_id, &l->self, &hello.id,
                          ctrl_fd, data_fd, n, out);
  }
  return 0;
}

int c4_transport_accept(struct c4_listen_comm *l, struct c4_comm **out) {
  *out = NULL;
  take_new_connections(l);
  read_hellos(l);
  return assemble(l, out);
}

int c4_transport_close_listen(struct c4_listen_comm *l) {
  if (!l) return 0;
  for (int i = 0; i < l->npend; i++) {
    close(l->pend[i].fd);
    if (l->pend[i].slot) c4_admit_release();
  }
  close(l->fd);
  free(l);
  return 0;
}
