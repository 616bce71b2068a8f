/* pipe.c -- each rank listens twice (for its previous stage and for its next), the handles are
 * allgathered over the bootstrap, then the rank connects to each neighbour's listener meant for
 * it and accepts on its own, polling all four together so no rank waits on another. */
#include "pipe.h"

#include <stdio.h>
#include <string.h>

#include "c4_clock.h"
#include "c4_env.h"
#include "c4_err.h"
#include "c4_idle.h"

#define HANDLE NCCL_NET_HANDLE_MAXSIZE

static int timed_out(const struct pipe *p, uint64_t since) {
  return c4_now_ns() - since > (uint64_t)p->timeout_ms * 1000000ull;
}

int pipe_init(struct pipe *p, struct dp *d, int prev, int next, int in_flight, char *err,
              size_t errlen) {
  memset(p, 0, sizeof *p);
  p->api = &d->api;
  p->prev = prev;
  p->next = next;
  p->eager_pieces = PIPE_EAGER_REQUESTS / (in_flight > 1 ? in_flight : 1);
  p->timeout_ms = (int)c4_env_long("C4_COLL_TIMEOUT_MS", 60000, 100, 3600000);
  char mine[2 * HANDLE] = {0}, all[(size_t)d->world * 2 * HANDLE];
  void *listen[2] = {NULL, NULL};
  int rc = 0;
  for (int side = 0; side < 2; side++) /* [0] hears the previous stage, [1] the next */
    if (c4_netapi_listen(p->api, 0, mine + side * HANDLE, &listen[side]) != ncclSuccess) rc = -1;
  if (c4_bootstrap_allgather(&d->bs, mine, all, sizeof mine)) rc = -1;
  int peer[2] = {prev, next};
  uint64_t start = c4_now_ns();
  for (int todo = 1; !rc && todo;) {
    todo = 0;
    for (int side = 0; side < 2 && !rc; side++) {
      if (peer[side] < 0) continue;
      /* my previous stage accepts me on its listener for the next, and the other way round */
      char *theirs = all + (size_t)peer[side] * 2 * HANDLE + (side == 0 ? HANDLE : 0);
      if (!p->send[side] && c4_netapi_connect(p->api, 0, theirs, &p->send[side]) != ncclSuccess)
        rc = -1;
      if (!rc && !p->recv[side] &&
          c4_netapi_accept(p->api, listen[side], &p->recv[side]) != ncclSuccess)
        rc = -1;
      if (!p->send[side] || !p->recv[side]) todo = 1;
    }
    if (!rc && todo) {
      if (timed_out(p, start)) rc = -1;
      c4_idle(c4_now_ns() - start);
    }
  }
  for (int side = 0; side < 2; side++) {
    if (listen[side]) c4_netapi_close_listen(p->api, listen[side]);
    if (!rc && p->send[side] &&
        (c4_netapi_reg_mr(p->api, p->send[side], NULL, 0, &p->send_mh[side]) != ncclSuccess ||
         c4_netapi_reg_mr(p->api, p->recv[side], NULL, 0, &p->recv_mh[side]) != ncclSuccess))
      rc = -1;
  }
  if (rc) {
    snprintf(err, errlen, "the pipeline links to ranks %d and %d did not connect", prev, next);
    pipe_close(p);
  }
  return rc;
}

/* Tests every pending send once; C4_EREMOTE when the plugin fails. Sets *moved when one finished.
 */
static int drive(struct pipe *p, int *moved) {
  for (int i = 0; i < PIPE_PENDING; i++) {
    if (!p->pending[i]) continue;
    int done = 0, size = 0;
    if (c4_netapi_test(p->api, p->pending[i], &done, &size) != ncclSuccess) return C4_EREMOTE;
    if (done) {
      p->pending[i] = NULL;
      *moved = 1;
    }
  }
  return 0;
}

/* How many pieces a message of `bytes` goes in: the same on both sides. */
static size_t pieces_of(const struct pipe *p, size_t bytes) {
  size_t n = bytes ? (bytes + PIPE_PIECE - 1) / PIPE_PIECE : 1;
  return n <= (size_t)p->eager_pieces ? n : 1;
}

/* The bytes of piece i (at i * PIPE_PIECE) of a message of `bytes` in n pieces. */
static size_t piece_bytes(size_t bytes, size_t n, size_t i) {
  size_t left = bytes - i * PIPE_PIECE;
  return n > 1 && left > PIPE_PIECE ? PIPE_PIECE : left;
}

/* Posts one plugin send of message `message`, driving what is in flight while the plugin or the
 * pending table is full. */
static int post_one(struct pipe *p, int side, const void *buf, size_t bytes, int message) {
  uint64_t start = c4_now_ns();
  for (;;) {
    int slot = 0;
    while (slot < PIPE_PENDING && p->pending[slot])
      slot++;
    void *req = NULL;
    if (slot < PIPE_PENDING && c4_netapi_isend(p->api, p->send[side], (void *)buf, bytes, side,
                                               p->send_mh[side], &req) != ncclSuccess)
      return C4_EREMOTE;
    if (req) {
      p->pending[slot] = req;
      p->message[slot] = message;
      return 0;
    }
    int moved = 0; /* full: make room by driving what is in flight */
    if (drive(p, &moved) || timed_out(p, start)) return C4_EREMOTE;
    c4_idle(c4_now_ns() - start);
  }
}

int pipe_isend(struct pipe *p, int to_next, const void *buf, size_t bytes) {
  int side = to_next ? 1 : 0;
  if (!p->send[side]) return C4_EINVAL; /* no link that way */
  int message = p->next_message;
  p->next_message = (p->next_message + 1) & 0x3fffffff;
  size_t n = pieces_of(p, bytes);
  for (size_t i = 0; i < n; i++)
    if (post_one(p, side, (const char *)buf + i * PIPE_PIECE, piece_bytes(bytes, n, i), message))
      return C4_EREMOTE;
  return message;
}

/* 1 while a piece of that message is in flight. */
static int in_flight(const struct pipe *p, int message) {
  for (int i = 0; i < PIPE_PENDING; i++)
    if (p->pending[i] && p->message[i] == message) return 1;
  return 0;
}

int pipe_wait(struct pipe *p, int handle) {
  uint64_t last = c4_now_ns();
  while (handle >= 0 && in_flight(p, handle)) {
    int moved = 0;
    if (drive(p, &moved)) return C4_EREMOTE;
    if (moved) last = c4_now_ns();
    if (timed_out(p, last)) return C4_EREMOTE;
    if (!moved) c4_idle(c4_now_ns() - last);
  }
  return 0;
}

/* Receives one plugin message of exactly `bytes`. */
static int recv_one(struct pipe *p, int side, void *buf, size_t bytes) {
  void *req = NULL;
  uint64_t last = c4_now_ns();
  while (!req) {
    /* the tag is the sender's side: its send to its next stage arrives on my side 0 */
    if (c4_netapi_irecv(p->api, p->recv[side], buf, bytes, 1 - side, p->recv_mh[side], &req) !=
        ncclSuccess)
      return C4_EREMOTE;
    int moved = 0;
    if (!req && (drive(p, &moved) || timed_out(p, last))) return C4_EREMOTE;
    if (!req) c4_idle(c4_now_ns() - last);
  }
  for (;;) {
    int done = 0, size = 0, moved = 0;
    if (c4_netapi_test(p->api, req, &done, &size) != ncclSuccess) return C4_EREMOTE;
    if (done) return (size_t)size == bytes ? 0 : -1;
    if (drive(p, &moved)) return C4_EREMOTE;
    if (moved) last = c4_now_ns();
    if (timed_out(p, last)) return C4_EREMOTE;
    if (!moved) c4_idle(c4_now_ns() - last);
  }
}

int pipe_recv(struct pipe *p, int from_next, void *buf, size_t bytes) {
  int side = from_next ? 1 : 0;
  if (!p->recv[side]) return C4_EINVAL;
  size_t n = pieces_of(p, bytes);
  for (size_t i = 0; i < n; i++) {
    int rc = recv_one(p, side, (char *)buf + i * PIPE_PIECE, piece_bytes(bytes, n, i));
    if (rc) return rc;
  }
  return 0;
}

void pipe_close(struct pipe *p) {
  for (int i = 0; i < PIPE_PENDING; i++)
    if (p->pending[i] && pipe_wait(p, p->message[i])) break;
  for (int side = 0; side < 2; side++) {
    if (p->send[side]) {
      if (p->send_mh[side]) c4_netapi_dereg_mr(p->api, p->send[side], p->send_mh[side]);
      c4_netapi_close_send(p->api, p->send[side]);
    }
    if (p->recv[side]) {
      if (p->recv_mh[side]) c4_netapi_dereg_mr(p->api, p->recv[side], p->recv_mh[side]);
      c4_netapi_close_recv(p->api, p->recv[side]);
    }
  }
  memset(p, 0, sizeof *p);
}
