/* net_helper.c -- helper threads that move large messages over a comm's data sockets.
 *
 * Senders: each helper owns the data sockets s with s % nhelpers == its index and takes chunks in
 * posting order from one shared cursor (claim_seq, claim_off), so a socket that drains faster
 * simply takes more chunks. Receivers: each helper reads chunk headers on its sockets and places
 * the payload at its offset in the posted buffer. The caller's thread never waits for a helper:
 * it publishes with atomics and wakes a helper only when that helper is asleep. With
 * C4_NTHREADS=0 there are no threads: the caller's thread runs the same steps inside test(), as
 * NCCL's socket transport does without helper threads (best where cores are scarce). */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#include <linux/sockios.h> /* SIOCOUTQ */

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_log.h"
#include "c4_thread.h"
#include "net_comm.h"
#include "net_path_report.h"
#include "net_paths.h"
#include "net_plan.h"
#include "net_rate_sample.h"
#include "net_sock.h"

#define MIN_CHUNK (16u << 10)
#define IDLE_POLL_MS 100
#define GATE_MIN_NS 50000ull    /* a held-back socket looks again after 50 us at the soonest */
#define GATE_MAX_NS 20000000ull /* and 20 ms at the latest (its rate may be stale) */

struct sock_state {
  int fd;
  int index;
  uint8_t hdr[C4_CHUNK_HDR_SIZE];
  size_t hdr_done;
  struct c4_request *req; /* chunk in progress, or NULL */
  char *payload;
  uint32_t len;
  uint32_t moved;
  int want_out;
  int eof;           /* receive: the peer closed this socket between chunks */
  uint64_t t_claim;  /* send: when the chunk in progress was taken */
  uint32_t done_len; /* send: the last chunk finished and not yet counted in the path weights */
  uint64_t done_ns;  /* its time from being taken to its last byte written */
  int waited;        /* send: the chunk in progress met a full send buffer or its pacer */
  int done_waited;   /* the same for the last chunk finished */
  struct c4_rate_sampler rate;      /* send: its path's rate samples */
  uint64_t waited_bytes, waited_ns; /* send: running counts of the chunks whose writes waited */
  uint64_t hold_until; /* send: no chunk before this time (its kernel queue is too long) */
};

struct c4_helper {
  pthread_t thread;
  struct c4_comm *comm;
  int efd;
  atomic_int sleeping;
  int nsock;
  struct sock_state sock[C4_MAX_NSOCKS];
};

/* Socket i's chunk of a message: its share of the message (its weight over the sum of weights;
 * even, 1/nsocks, without weights), at most C4_CHUNK_BYTES times its weight, at least MIN_CHUNK:
 * a path at a quarter of the others' rate takes a quarter-size chunk, which lands about when
 * theirs do, also when the fastest's chunk is cut to C4_CHUNK_BYTES. While a fair re-measure is
 * open: even, at most C4_PATHS_FAIR_CHUNK. */
static uint32_t chunk_len(const struct c4_comm *c, int i, uint64_t size, uint64_t off) {
  int weighted = c->cfg.path_weights && c->nsocks > 1;
  double share = weighted ? c4_paths_share(&c->paths, i) : 1.0 / c->nsocks;
  int fair = weighted && c4_paths_fair_open(&c->paths);
  double weight = weighted && !fair ? c4_paths_weight(&c->paths, i) : 1;
  uint64_t want = (uint64_t)((double)size * share + 0.5);
  uint64_t most = (uint64_t)((double)c->cfg.chunk_bytes * weight);
  if (fair && most > C4_PATHS_FAIR_CHUNK) most = C4_PATHS_FAIR_CHUNK;
  if (want > most) want = most;
  if (want < MIN_CHUNK) want = MIN_CHUNK;
  uint64_t left = size - off;
  return (uint32_t)(left < want ? left : want);
}

/* Counts socket s's last finished chunk, at rate (0: bytes only; held: its sample was dropped as
 * the reader's), in the path weights (claim lock held), and says in the log when its path falls
 * behind the others or catches up. */
static void count_finished_chunk(struct c4_comm *c, struct sock_state *s, double rate,
                                 double span_ns, int held) {
  if (!s->done_len) return;
  if (held) c->paths.held[s->index]++;
  c4_paths_sample_rate(&c->paths, s->index, s->done_len, rate, span_ns);
  s->done_len = 0;
  int change = c->cfg.path_weights ? c4_paths_changed(&c->paths, s->index) : 0;
  if (change)
    C4_INFO("connection to %s (pid %u, rank %d): data socket %d %s (%.2f of the fastest path's "
            "rate; its chunks are sized to match)",
            c->peer.host, c->peer.pid, c->peer.rank, s->index,
            change == C4_PATHS_SLOWED ? "is on a slow path" : "is back to speed",
            c4_paths_weight(&c->paths, s->index));
}

/* Bytes in a data socket's kernel queue not yet acknowledged (SIOCOUTQ: no socket lock taken), or
 * -1 when the kernel does not say. */
static long queued_bytes(int fd) {
  int q;
  return ioctl(fd, SIOCOUTQ, &q) == 0 ? q : -1;
}

/* Holds socket s back from its chunk of len bytes (of a message of size) while the fastest path
 * would deliver its own chunk sooner (c4_paths_excess), for about the time s's path needs to
 * drain the excess. Claim lock held. */
static int hold_back(struct c4_comm *c, struct sock_state *s, uint32_t len, uint64_t size) {
  int f = c4_paths_fastest(&c->paths);
  if (c->nsocks < 2 || !c->cfg.path_weights || f < 0 || f == s->index) return 0;
  long queued = queued_bytes(s->fd), fastest_queued = queued_bytes(c->data_fd[f]);
  if (queued < 0 || fastest_queued < 0) return 0;
  uint64_t excess = c4_paths_excess(&c->paths, s->index, (uint64_t)queued, (uint64_t)fastest_queued,
                                    len, chunk_len(c, f, size, 0));
  if (!excess) return 0;
  double ns = (double)excess / c->paths.rate[s->index];
  uint64_t wait = ns < GATE_MIN_NS ? GATE_MIN_NS : ns > GATE_MAX_NS ? GATE_MAX_NS : (uint64_t)ns;
  s->hold_until = c4_now_ns() + wait;
  return 1;
}

/* The fair re-measure's part of a claim (claim lock held; c4_paths_fair_tick): opens one when a
 * path sized off even is due, and feeds it socket s's kernel counts (k; NULL: not read).
 * Returns what c4_paths_fair_progress returned, *done filled in when it closed one. */
static int fair_remeasure(struct c4_comm *c, struct sock_state *s, const struct c4_tcp_counts *k,
                          struct c4_paths_fair_done *done) {
  int judged = -1;
  if (c->claim_seq < atomic_load(&c->posted) || c4_paths_fair_open(&c->paths)) {
    uint64_t now = c4_now_ns();
    c4_paths_fair_tick(&c->paths, now);
    if (k) {
      struct c4_paths_count count = {k->acked, k->busy_us * 1000, s->waited_bytes, s->waited_ns,
                                     k->held_us * 1000};
      judged = c4_paths_fair_progress(&c->paths, s->index, &count, now, done);
    }
  }
  atomic_store_explicit(&c->fair_open, c4_paths_fair_open(&c->paths), memory_order_relaxed);
  return judged;
}

/* c4mon's verdicts, pushed in a plan (net_plan.h): when the set of paths to avoid changed, each
 * data socket whose planned path it names is kept to the floor weight, and the others are let
 * back (claim lock held; one atomic load when nothing changed). */
static void follow_avoid(struct c4_comm *c) {
  uint64_t gen = c4_netplan_avoid_gen();
  if (gen == c->avoid_gen) return;
  c->avoid_gen = gen;
  for (int i = 0; i < c->nsocks; i++) {
    int on = c->data_path[i] && c4_netplan_avoided(c->data_path[i]);
    if (on == c->paths.avoid[i]) continue;
    c4_paths_avoid(&c->paths, i, on);
    C4_INFO("connection to %s (pid %u, rank %d): data socket %d %s (c4mon's pushed plan)",
            c->peer.host, c->peer.pid, c->peer.rank, i,
            on ? "kept off its path, which c4mon found congested" : "let back onto its path");
  }
}

/* A re-measure closed: both sockets' rates under even shares go to c4mon as path records (the
 * only ones a socket sized off even sends), and the log says what it found. */
static void fair_report(struct c4_comm *c, int judged, const struct c4_paths_fair_done *d) {
  c4_path_report(c, d->i, d->bytes_i, d->busy_i);
  c4_path_report(c, d->f, d->bytes_f, d->busy_f);
  C4_TRACE("connection to %s (pid %u, rank %d): data socket %d re-measured with an even share over "
           "%.0f ms: %.3g against %.3g bytes/ns on data socket %d (%s)",
           c->peer.host, c->peer.pid, c->peer.rank, d->i, d->busy_i / 1e6, d->bytes_i / d->busy_i,
           d->busy_f > 0 ? d->bytes_f / d->busy_f : 0.0, d->f,
           judged ? "back to speed" : "still slow");
}

/* Takes the next chunk in posting order for socket s. Returns 1 with s filled in, or 0. The
 * kernel's counts are read (a syscall, outside the claim lock) when a chunk finished or a fair
 * re-measure is open. A rate sample goes to c4mon as a path record unless the socket is sized off
 * even (it measures slow for its small share, net_paths.h: the re-measures, under even shares,
 * say what its path delivers) or a re-measure is open (the sample spans its start). */
static int claim_chunk(struct c4_comm *c, struct sock_state *s) {
  int got = 0, multipath = c->nsocks > 1 && c->cfg.path_weights;
  struct c4_tcp_counts k;
  int have = multipath &&
             (s->done_len || atomic_load_explicit(&c->fair_open, memory_order_relaxed)) &&
             c4_tcp_progress(s->fd, &k) == 0;
  double span_ns, paced = 0;
  int held;
  if (__builtin_expect(c->fault.active, 0))
    paced = c4_fault_pace_rate(&c->fault, c4_now_ns(), s->index);
  struct c4_chunk_done done = {s->done_len, s->done_ns, s->done_waited};
  double rate = c4_rate_sample(&s->rate, have ? &k : NULL, &done, paced, &span_ns, &held);
  struct c4_paths_fair_done fair;
  int judged = -1;
  pthread_mutex_lock(&c->claim_lock);
  int report =
      span_ns > 0 && !c4_paths_fair_open(&c->paths) && c4_paths_weight(&c->paths, s->index) >= 1;
  count_finished_chunk(c, s, rate, span_ns, held);
  if (multipath) {
    follow_avoid(c);
    judged = fair_remeasure(c, s, have ? &k : NULL, &fair);
  }
  while (c->claim_seq < atomic_load(&c->posted)) {
    struct c4_request *r = &c->reqs[c->claim_seq % C4_MAX_REQUESTS];
    if (atomic_load_explicit(&r->seq, memory_order_acquire) != c->claim_seq || r->is_inline ||
        c->claim_off >= r->size) {
      c->claim_seq++;
      c->claim_off = 0;
      continue;
    }
    uint32_t len = chunk_len(c, s->index, r->size, c->claim_off);
    if (hold_back(c, s, len, r->size)) break;
    struct c4_wire_chunk ch = {
        .seq = c->claim_seq, .offset = c->claim_off, .len = len, .total = r->size};
    c4_wire_put_chunk(s->hdr, &ch);
    s->hdr_done = 0;
    s->req = r;
    s->payload = r->buf + c->claim_off;
    s->len = len;
    s->moved = 0;
    s->t_claim = c4_now_ns();
    s->waited = 0;
    c->claim_off += len;
    got = 1;
    break;
  }
  pthread_mutex_unlock(&c->claim_lock);
  if (got && multipath) { /* the counts the chunk's own time is judged from */
    if (!have) have = c4_tcp_progress(s->fd, &k) == 0;
    c4_rate_sample_claimed(&s->rate, have ? &k : NULL);
  }
  if (report) c4_path_report(c, s->index, rate * span_ns, span_ns); /* for c4mon */
  if (judged >= 0) fair_report(c, judged, &fair);
  return got;
}

static void note_first_byte(struct c4_request *r) {
  if (!r->comm->cfg.timing) return;
  uint64_t zero = 0;
  if (atomic_load_explicit(&r->t_first_byte, memory_order_relaxed) == 0)
    atomic_compare_exchange_strong(&r->t_first_byte, &zero, c4_now_ns());
}

static void chunk_moved(struct c4_request *r, uint32_t len, uint64_t total) {
  uint64_t done = atomic_fetch_add(&r->done_bytes, len) + len;
  if (done == total) c4_request_complete(r);
}

/* A sending socket without a chunk takes the next one, unless it is held (its own hold, or its
 * C4_FAULT pacer: the other paths take the chunks then). Returns 1 when it has a chunk. */
static int take_chunk(struct c4_comm *c, struct sock_state *s) {
  if (s->hold_until) {
    if (c4_now_ns() < s->hold_until) return 0;
    s->hold_until = 0;
  }
  if (__builtin_expect(c->fault.active, 0) &&
      c4_fault_hold_ms(&c->fault, c4_now_ns(), s->index) >= 0)
    return 0;
  return claim_chunk(c, s);
}

/* C4_FAULT rate: cuts the n iovecs to what the comm's pacer allows now (shared by its sockets),
 * *now being the time asked. Returns 0 when it allows nothing. */
static int pace(struct c4_comm *c, struct sock_state *s, struct iovec *iov, int *n, uint64_t *now) {
  *now = c4_now_ns();
  size_t allow = c4_fault_pace_allow(&c->fault, *now, s->index,
                                     iov[0].iov_len + (*n > 1 ? iov[1].iov_len : 0));
  if (allow == 0) {
    s->waited = 1;
    return 0;
  }
  if (allow < iov[0].iov_len) {
    iov[0].iov_len = allow;
    *n = 1;
  } else if (*n > 1 && allow - iov[0].iov_len < iov[1].iov_len) {
    iov[1].iov_len = allow - iov[0].iov_len;
  }
  return 1;
}

/* k bytes of the chunk's header and payload went: the first byte's time, the header's progress,
 * and the chunk's completion. */
static void sent(struct sock_state *s, size_t k) {
  if (s->hdr_done == 0 && k > 0) note_first_byte(s->req);
  size_t h = C4_CHUNK_HDR_SIZE - s->hdr_done;
  if (k < h) {
    s->hdr_done += k;
    return;
  }
  s->hdr_done = C4_CHUNK_HDR_SIZE;
  s->moved += (uint32_t)(k - h);
  if (s->moved == s->len) {
    struct c4_request *r = s->req;
    s->req = NULL;
    s->done_len = s->len;
    s->done_ns = c4_now_ns() - s->t_claim;
    s->done_waited = s->waited;
    if (s->waited) {
      s->waited_bytes += s->len;
      s->waited_ns += s->done_ns;
    }
    chunk_moved(r, s->len, r->size);
  }
}

/* One non-blocking step on a sending socket. Returns 1 if bytes moved. */
static int send_step(struct c4_comm *c, struct sock_state *s) {
  if (!s->req && !take_chunk(c, s)) return 0;
  struct iovec iov[2];
  int n = 0;
  if (s->hdr_done < C4_CHUNK_HDR_SIZE)
    iov[n++] = (struct iovec){s->hdr + s->hdr_done, C4_CHUNK_HDR_SIZE - s->hdr_done};
  if (s->moved < s->len) iov[n++] = (struct iovec){s->payload + s->moved, s->len - s->moved};
  uint64_t now = 0;
  if (__builtin_expect(c->fault.active, 0) && !pace(c, s, iov, &n, &now)) return 0;
  struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
  ssize_t k = sendmsg(s->fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (__builtin_expect(c->fault.active, 0) && k > 0)
    c4_fault_pace_charge(&c->fault, now, s->index, (size_t)k);
  if (k < 0) {
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      s->want_out = 1;
      s->waited = 1;
      return 0;
    }
    c4_comm_fail(c, C4_EREMOTE, "data socket %d to %s (pid %u): send failed: %s", s->index,
                 c->peer.host, c->peer.pid, strerror(errno));
    return 0;
  }
  s->want_out = 0;
  sent(s, (size_t)k);
  return 1;
}

/* Checks a received chunk header against the posted request it names. */
static int accept_chunk(struct c4_comm *c, struct sock_state *s) {
  struct c4_wire_chunk ch;
  if (c4_wire_get_chunk(s->hdr, &ch) != 0) {
    c4_comm_fail(c, C4_EPROTO, "data socket %d from %s (pid %u): malformed chunk header", s->index,
                 c->peer.host, c->peer.pid);
    return C4_EPROTO;
  }
  struct c4_request *r = &c->reqs[ch.seq % C4_MAX_REQUESTS];
  if (atomic_load_explicit(&r->state, memory_order_acquire) != C4_REQ_POSTED ||
      atomic_load_explicit(&r->seq, memory_order_acquire) != ch.seq || ch.total > r->size) {
    c4_comm_fail(c, C4_EPROTO,
                 "data socket %d from %s (pid %u): chunk for message %llu (%llu bytes) matches no "
                 "posted receive",
                 s->index, c->peer.host, c->peer.pid, (unsigned long long)ch.seq,
                 (unsigned long long)ch.total);
    return C4_EPROTO;
  }
  uint64_t known = 0;
  if (!atomic_compare_exchange_strong(&r->total, &known, ch.total) && known != ch.total) {
    c4_comm_fail(c, C4_EPROTO, "data socket %d: chunks of message %llu disagree on its size",
                 s->index, (unsigned long long)ch.seq);
    return C4_EPROTO;
  }
  note_first_byte(r);
  s->req = r;
  s->payload = r->buf + ch.offset;
  s->len = ch.len;
  s->moved = 0;
  if (ch.len == 0) {
    s->req = NULL;
    s->hdr_done = 0;
    chunk_moved(r, 0, ch.total);
  }
  return 0;
}

/* One non-blocking step on a receiving socket. Returns 1 if bytes moved. */
static int recv_step(struct c4_comm *c, struct sock_state *s) {
  ssize_t k;
  if (s->eof) return 0;
  if (!s->req) {
    k = c4_sock_recv_some(s->fd, s->hdr + s->hdr_done, C4_CHUNK_HDR_SIZE - s->hdr_done);
    if (k < 0) goto gone;
    if (k == 0) return 0;
    s->hdr_done += (size_t)k;
    if (s->hdr_done == C4_CHUNK_HDR_SIZE && accept_chunk(c, s) != 0) return 0;
    return 1;
  }
  k = c4_sock_recv_some(s->fd, s->payload + s->moved, s->len - s->moved);
  if (k < 0) goto gone;
  if (k == 0) return 0;
  s->moved += (uint32_t)k;
  if (s->moved == s->len) {
    struct c4_request *r = s->req;
    s->req = NULL;
    s->hdr_done = 0;
    chunk_moved(r, s->len, atomic_load(&r->total));
  }
  return 1;
gone:
  /* Between chunks, a close is the sender's normal end: what it sent has all been read. The comm
   * fails only if a receive then waits for more (c4_transport_test decides). Inside a chunk, the
   * message is cut short. */
  if (s->req || s->hdr_done) {
    if (!atomic_load(&c->stop))
      c4_comm_fail(c, C4_EREMOTE,
                   "data socket %d from %s (pid %u, rank %d) closed in the middle "
                   "of a chunk",
                   s->index, c->peer.host, c->peer.pid, c->peer.rank);
  } else {
    s->eof = 1;
    atomic_fetch_add(&c->data_eof, 1);
  }
  return 0;
}

/* Sleeps until a socket is ready, a wake arrives, or IDLE_POLL_MS passes. */
static void helper_wait(struct c4_helper *h) {
  struct c4_comm *c = h->comm;
  struct pollfd pfd[C4_MAX_NSOCKS + 1];
  int n = 0;
  pfd[n++] = (struct pollfd){.fd = h->efd, .events = POLLIN};
  int broken = atomic_load(&c->failed) != 0;
  int free_socks = 0;
  uint64_t timeout_ns = IDLE_POLL_MS * 1000000ull, now = 0;
  for (int i = 0; i < h->nsock && !broken; i++) {
    struct sock_state *s = &h->sock[i];
    /* a socket held back for its queue sleeps until its hold ends */
    if (s->hold_until && !s->req) {
      if (!now) now = c4_now_ns();
      if (s->hold_until > now) {
        if (s->hold_until - now < timeout_ns) timeout_ns = s->hold_until - now;
        continue;
      }
    }
    /* C4_FAULT: a socket that a stall or its pacer holds has work it may not do yet; it is left
     * out of the poll (ready, it would wake us again and again) and waited out by the timeout. */
    if (__builtin_expect(c->fault.active, 0)) {
      if (!now) now = c4_now_ns();
      int hold = c4_fault_hold_ms(&c->fault, now, s->index);
      if (hold >= 0) {
        if ((uint64_t)hold * 1000000ull < timeout_ns) timeout_ns = (uint64_t)hold * 1000000ull;
        continue;
      }
    }
    free_socks++;
    short ev = c->is_send ? (s->req && s->want_out ? POLLOUT : 0) : (s->eof ? 0 : POLLIN);
    if (ev) pfd[n++] = (struct pollfd){.fd = s->fd, .events = ev};
  }
  atomic_store(&h->sleeping, 1);
  /* Dekker with c4_helpers_wake: re-check for posted work after announcing sleep. */
  int work = c->is_send && free_socks && c->claim_seq < atomic_load(&c->posted);
  struct timespec ts = {(time_t)(timeout_ns / 1000000000ull), (long)(timeout_ns % 1000000000ull)};
  if (!work && !atomic_load(&c->stop)) ppoll(pfd, (nfds_t)n, &ts, NULL);
  atomic_store(&h->sleeping, 0);
  if (pfd[0].revents & POLLIN) {
    uint64_t v;
    if (read(h->efd, &v, sizeof v) < 0 && errno != EAGAIN)
      C4_WARN("helper wake read failed: %s", strerror(errno));
  }
}

static void *helper_main(void *arg) {
  struct c4_helper *h = arg;
  struct c4_comm *c = h->comm;
  while (!atomic_load(&c->stop)) {
    int moved = 0;
    /* C4_FAULT stall: no byte moves inside the window (helper_wait sleeps it out). */
    int stall = __builtin_expect(c->fault.active, 0) && c4_fault_stalled(&c->fault, c4_now_ns());
    if (!atomic_load(&c->failed) && !stall)
      for (int i = 0; i < h->nsock; i++)
        moved |= c->is_send ? send_step(c, &h->sock[i]) : recv_step(c, &h->sock[i]);
    if (!moved) helper_wait(h);
  }
  return NULL;
}

int c4_helpers_start(struct c4_comm *c) {
  int n = c->cfg.nthreads < c->nsocks ? c->cfg.nthreads : c->nsocks;
  c->helpers = calloc((size_t)(n ? n : 1), sizeof *c->helpers);
  if (!c->helpers) return C4_ENOMEM;
  for (int i = 0; i < c->nsocks; i++) {
    struct c4_helper *h = &c->helpers[n ? i % n : 0];
    h->sock[h->nsock++] = (struct sock_state){.fd = c->data_fd[i], .index = i};
  }
  if (n == 0) { /* C4_NTHREADS=0: the caller's thread moves the data inside isend/test */
    c->helpers[0].comm = c;
    c->helpers[0].efd = -1;
    return 0;
  }
  for (int i = 0; i < n; i++) {
    struct c4_helper *h = &c->helpers[i];
    h->comm = c;
    h->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    int rc = h->efd < 0 ? errno : c4_thread_start(&h->thread, NULL, helper_main, h);
    if (rc != 0) {
      C4_WARN("cannot start helper thread %d of %d: %s", i, n, strerror(rc));
      if (h->efd >= 0) close(h->efd);
      c->nhelpers = i;
      c4_helpers_stop(c);
      return C4_ESYS;
    }
    c->nhelpers = i + 1;
  }
  return 0;
}

int c4_helpers_progress_inline(struct c4_comm *c) {
  if (c->nhelpers || !c->helpers) return 0;
  struct c4_helper *h = &c->helpers[0];
  int any = 0;
  for (int round = 0; round < 64 && !atomic_load(&c->failed); round++) {
    int moved = 0;
    for (int i = 0; i < h->nsock; i++)
      moved |= c->is_send ? send_step(c, &h->sock[i]) : recv_step(c, &h->sock[i]);
    if (!moved) break;
    any = 1;
  }
  return any;
}

void c4_helpers_wake(struct c4_comm *c) {
  for (int i = 0; i < c->nhelpers; i++) {
    struct c4_helper *h = &c->helpers[i];
    if (atomic_load(&h->sleeping)) {
      uint64_t one = 1;
      if (write(h->efd, &one, sizeof one) < 0 && errno != EAGAIN)
        C4_WARN("helper wake failed: %s", strerror(errno));
    }
  }
}

void c4_helpers_stop(struct c4_comm *c) {
  atomic_store(&c->stop, 1);
  for (int i = 0; i < c->nhelpers; i++) {
    uint64_t one = 1;
    if (write(c->helpers[i].efd, &one, sizeof one) < 0 && errno != EAGAIN)
      C4_WARN("helper stop wake failed: %s", strerror(errno));
  }
  for (int i = 0; i < c->nhelpers; i++) {
    pthread_join(c->helpers[i].thread, NULL);
    close(c->helpers[i].efd);
  }
  free(c->helpers);
  c->helpers = NULL;
  c->nhelpers = 0;
}
