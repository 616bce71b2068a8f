/* net_accept.c -- the listening side: hands out the handle, then accepts and checks incoming
 * connections without ever blocking, grouping a connector's control and data sockets into one
 * receive comm. Anything that is not a c4 connector is closed, counted and logged. */
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
#include "net_sock.h"

#define MAX_PENDING 256

struct pending {
  int fd;
  uint64_t t_open;
  size_t got;
  uint8_t buf[C4_HELLO_SIZE];
  int ready; /* hello received and checked */
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

static void reject(struct c4_listen_comm *l, int i, const char *why) {
  struct pending *p = &l->pend[i];
  C4_WARN("listener on device %d rejected a connection from %s: %s", l->dev, p->from, why);
  atomic_fetch_add(&c4_transport_stats.rejected_peers, 1);
  close(p->fd);
  l->pend[i] = l->pend[--l->npend];
}

static void take_new_connections(struct c4_listen_comm *l) {
  char from[sizeof l->pend[0].from];
  int fd;
  while ((fd = c4_handshake_accept(l->fd, "device", l->dev, from, sizeof from)) >= 0) {
    if (l->npend == MAX_PENDING)
      reject(l, 0, "too many unfinished handshakes; dropping the oldest");
    struct pending *p = &l->pend[l->npend++];
    memset(p, 0, sizeof *p);
    p->fd = fd;
    p->t_open = c4_now_ns();
    memcpy(p->from, from, sizeof p->from);
  }
}

/* Reads hellos; returns after checking every pending connection once. */
static void read_hellos(struct c4_listen_comm *l) {
  uint64_t now = c4_now_ns();
  uint64_t limit = (uint64_t)l->cfg.handshake_timeout_ms * 1000000ull;
  char err[160];
  for (int i = 0; i < l->npend;) {
    struct pending *p = &l->pend[i];
    if (!p->ready) {
      ssize_t k = c4_sock_recv_some(p->fd, p->buf + p->got, C4_HELLO_SIZE - p->got);
      if (k < 0) {
        snprintf(err, sizeof err, "closed after %zu of %d hello bytes", p->got, C4_HELLO_SIZE);
        reject(l, i, err);
        continue;
      }
      p->got += (size_t)k;
      if (p->got == C4_HELLO_SIZE) {
        if (c4_handshake_check_hello(p->fd, p->buf, l->nonce, &p->hello, err, sizeof err) != 0) {
          reject(l, i, err);
          continue;
        }
        p->ready = 1;
      }
    }
    if (now - p->t_open > limit) {
      snprintf(err, sizeof err, "%s within %d ms (C4_HANDSHAKE_TIMEOUT_MS)",
               p->ready ? "its comm did not complete" : "no complete hello",
               l->cfg.handshake_timeout_ms);
      reject(l, i, err);
      continue;
    }
    i++;
  }
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
  for (int i = 0; i < l->npend; i++)
    close(l->pend[i].fd);
  close(l->fd);
  free(l);
  return 0;
}
