/* net_connect.c -- the connecting side: opens the control and data connections to a handle,
 * says hello on each and waits for the listener's ack, all without blocking (NCCL polls). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_log.h"
#include "net_comm.h"
#include "net_sock.h"

#define SCRATCH_OFFSET 120 /* handle bytes 112..127 are 0 on the wire; connect keeps state here */

struct conn_sock {
  int fd;
  int connected;
  size_t hello_sent;
  uint8_t hello[C4_HELLO_SIZE];
};

struct connect_state {
  struct c4_wire_handle target;
  uint64_t conn_id;
  uint64_t t_start;
  int nsocks;
  struct conn_sock sock[C4_MAX_NSOCKS + 1]; /* [0] control, [1..nsocks] data */
  uint8_t ack[C4_ACK_SIZE];
  size_t ack_got;
  struct c4_identity self;
  char where[96];
};

static struct connect_state *scratch_get(void *handle) {
  struct connect_state *s;
  memcpy(&s, (uint8_t *)handle + SCRATCH_OFFSET, sizeof s);
  return s;
}

static void scratch_set(void *handle, struct connect_state *s) {
  memcpy((uint8_t *)handle + SCRATCH_OFFSET, &s, sizeof s);
}

static void state_free(void *handle, struct connect_state *s) {
  for (int i = 0; i <= s->nsocks; i++)
    if (s->sock[i].fd >= 0) close(s->sock[i].fd);
  free(s);
  scratch_set(handle, NULL);
}

static int state_new(const struct c4_transport_config *cfg, int dev, void *handle,
                     struct connect_state **out) {
  struct connect_state *s = calloc(1, sizeof *s);
  if (!s) return C4_ENOMEM;
  char err[160];
  if (c4_wire_get_handle(handle, &s->target, err, sizeof err) != 0) {
    C4_WARN("connect on device %d: %s", dev, err);
    free(s);
    return C4_EPROTO;
  }
  c4_sock_addr_str(&s->target.addr, s->where, sizeof s->where);
  s->conn_id = c4_random_u64();
  s->t_start = c4_now_ns();
  s->nsocks = cfg->nsocks;
  c4_wire_self_identity(&s->self, dev);
  for (int i = 0; i <= s->nsocks; i++) {
    struct c4_wire_hello h = {.version = C4_WIRE_VERSION,
                              .kind = i == 0 ? C4_HELLO_CTRL : C4_HELLO_DATA,
                              .nonce = s->target.nonce,
                              .conn_id = s->conn_id,
                              .nsocks = (uint16_t)s->nsocks,
                              .index = (uint16_t)(i == 0 ? 0 : i - 1),
                              .id = s->self};
    c4_wire_put_hello(s->sock[i].hello, &h);
    s->sock[i].fd = -1;
  }
  *out = s;
  return 0;
}

/* Advances one socket: (re)connect, then write its hello. Returns 1 when its hello is out. */
static int sock_step(const struct c4_transport_config *cfg, struct connect_state *s,
                     struct conn_sock *cs) {
  if (cs->fd < 0) {
    cs->fd = c4_sock_connect_start(&s->target.addr);
    if (cs->fd < 0) {
      C4_WARN("connect to %s: socket failed: %s", s->where, strerror(errno));
      return C4_ESYS;
    }
  }
  if (!cs->connected) {
    int e;
    int rc = c4_sock_connect_check(cs->fd, &e);
    if (rc == 0) return 0;
    if (rc < 0) {
      uint64_t waited_ms = (c4_now_ns() - s->t_start) / 1000000ull;
      if ((e == ECONNREFUSED || e == ETIMEDOUT || e == EHOSTUNREACH) &&
          waited_ms < (uint64_t)cfg->connect_timeout_ms) {
        close(cs->fd); /* retry on the next poll, as NCCL does for refused connects */
        cs->fd = -1;
        return 0;
      }
      C4_WARN("connect to %s (pid %u, rank %d) failed after %llu ms: %s", s->where,
              s->target.id.pid, s->target.id.rank, (unsigned long long)waited_ms, strerror(e));
      return C4_EREMOTE;
    }
    cs->connected = 1;
  }
  if (cs->hello_sent < C4_HELLO_SIZE) {
    ssize_t k =
        c4_sock_send_some(cs->fd, cs->hello + cs->hello_sent, C4_HELLO_SIZE - cs->hello_sent);
    if (k < 0) {
      C4_WARN("connect to %s: the listener closed the connection during the handshake", s->where);
      return C4_EREMOTE;
    }
    cs->hello_sent += (size_t)k;
  }
  return cs->hello_sent == C4_HELLO_SIZE;
}

int c4_transport_connect(const struct c4_transport_config *cfg, int dev, uint64_t nccl_comm,
                         void *handle, struct c4_comm **out) {
  *out = NULL;
  struct connect_state *s = scratch_get(handle);
  int rc;
  if (!s) {
    if ((rc = state_new(cfg, dev, handle, &s)) != 0) return rc;
    scratch_set(handle, s);
  }
  int all_sent = 1;
  for (int i = 0; i <= s->nsocks; i++) {
    rc = sock_step(cfg, s, &s->sock[i]);
    if (rc < 0) goto fail;
    all_sent &= rc;
  }
  uint64_t waited_ms = (c4_now_ns() - s->t_start) / 1000000ull;
  if (!all_sent || s->ack_got < C4_ACK_SIZE) {
    if (all_sent) {
      ssize_t k = c4_sock_recv_some(s->sock[0].fd, s->ack + s->ack_got, C4_ACK_SIZE - s->ack_got);
      if (k < 0) {
        C4_WARN("connect to %s (pid %u, rank %d): the listener closed the connection instead of "
                "acknowledging; it is not a c4 plugin of this version, or it rejected us (see its "
                "log)",
                s->where, s->target.id.pid, s->target.id.rank);
        rc = C4_EREMOTE;
        goto fail;
      }
      s->ack_got += (size_t)k;
    }
    if (s->ack_got < C4_ACK_SIZE) {
      if (waited_ms > (uint64_t)cfg->connect_timeout_ms + (uint64_t)cfg->handshake_timeout_ms) {
        C4_WARN("connect to %s: no handshake ack after %llu ms", s->where,
                (unsigned long long)waited_ms);
        rc = C4_EREMOTE;
        goto fail;
      }
      return 0;
    }
  }
  int status = c4_wire_get_ack(s->ack);
  if (status != C4_ACK_OK) {
    C4_WARN("connect to %s: %s", s->where,
            status == C4_EPROTO ? "the listener answered with something that is not a c4 ack"
            : status == C4_ACK_BAD_VERSION ? "the listener speaks another c4 wire version"
                                           : "the listener rejected our hello");
    rc = C4_EPROTO;
    goto fail;
  }
  int data_fd[C4_MAX_NSOCKS];
  for (int i = 0; i < s->nsocks; i++) {
    data_fd[i] = s->sock[i + 1].fd;
    s->sock[i + 1].fd = -1;
  }
  int ctrl_fd = s->sock[0].fd;
  s->sock[0].fd = -1;
  rc = c4_comm_create(1, cfg, dev, nccl_comm, s->conn_id, &s->self, &s->target.id, ctrl_fd, data_fd,
                      s->nsocks, out);
  state_free(handle, s);
  return rc;
fail:
  state_free(handle, s);
  return rc;
}
