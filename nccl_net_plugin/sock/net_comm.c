/* net_comm.c -- a connected comm: posting sends and receives, the control socket, test, close. */
#include "net_comm.h"

#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_log.h"
#include "c4_telemetry.h"
#include "net_sock.h"
#include "net_stats.h"

/* C4_TCP_CONGESTION on a sending data socket. A kernel without that congestion control (or one
 * that does not allow it here) leaves the socket on the system's: counted, and said once. */
static void set_congestion(int fd, const char *name) {
  static atomic_int said;
  if (setsockopt(fd, IPPROTO_TCP, TCP_CONGESTION, name, (socklen_t)strlen(name)) == 0) return;
  int err = errno;
  atomic_fetch_add(&c4_transport_stats.congestion_refused, 1);
  if (!atomic_exchange(&said, 1))
    C4_WARN_SETTING(
        "C4_TCP_CONGESTION=%s: the kernel refused it (%s; net.ipv4.tcp_available_congestion_"
        "control lists what it has): data sockets keep the system's congestion control",
        name, strerror(err));
}

/* A socket's local port in host order, 0 when the kernel does not say: read once here, so the
 * path records the helpers send carry it without a system call each. */
static uint16_t local_port(int fd) {
  struct sockaddr_storage sa;
  socklen_t len = sizeof sa;
  if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0) return 0;
  if (sa.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&sa)->sin_port);
  if (sa.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
  return 0;
}

int c4_comm_create(int is_send, const struct c4_transport_config *cfg, int dev, uint64_t nccl_comm,
                   uint64_t conn_id, const struct c4_identity *self, const struct c4_identity *peer,
                   int ctrl_fd, const int *data_fd, const uint64_t *data_path, int nsocks,
                   struct c4_comm **out) {
  struct c4_comm *c = calloc(1, sizeof *c);
  if (!c) {
    close(ctrl_fd);
    for (int i = 0; i < nsocks; i++)
      close(data_fd[i]);
    return C4_ENOMEM;
  }
  c->is_send = is_send;
  c->dev = dev;
  c->cfg = *cfg;
  c->nccl_comm = nccl_comm;
  c->conn_id = conn_id;
  c->self = *self;
  c->peer = *peer;
  c4_fault_conn_init(&c->fault, is_send, peer->rank);
  c->ctrl_fd = ctrl_fd;
  c->nsocks = nsocks;
  c4_paths_init(&c->paths, nsocks);
  c->link = (struct c4_link_info){.magic = C4_LINK_MAGIC,
                                  .conn_id = conn_id,
                                  .dir = (uint8_t)(is_send ? C4_DIR_SEND : C4_DIR_RECV)};
  memcpy(c->data_fd, data_fd, sizeof(int) * (size_t)nsocks);
  for (int i = 0; i < nsocks; i++) {
    c->data_port[i] = local_port(data_fd[i]);
    c->data_path[i] = data_path ? data_path[i] : 0;
  }
  pthread_mutex_init(&c->claim_lock, NULL);
  for (int i = 0; i < C4_MAX_REQUESTS; i++) {
    c->reqs[i].comm = c;
    atomic_store(&c->reqs[i].seq, UINT64_MAX);
  }
  int rc = c4_sock_tune(ctrl_fd);
  for (int i = 0; i < nsocks && rc == 0; i++)
    rc = c4_sock_tune(data_fd[i]);
  /* Multipath: a sending data socket queues little beyond what its path has in flight, so the
   * time a chunk takes to write is its path's pace, and a slow path cannot hoard chunks in its
   * kernel buffer that the other paths would have delivered sooner. */
  for (int i = 0; i < nsocks && rc == 0 && is_send && nsocks > 1 && cfg->notsent_lowat; i++)
    if (setsockopt(data_fd[i], IPPROTO_TCP, TCP_NOTSENT_LOWAT, &cfg->notsent_lowat,
                   sizeof cfg->notsent_lowat) != 0)
      C4_TRACE("TCP_NOTSENT_LOWAT not taken on data socket %d: %s", i, strerror(errno));
  for (int i = 0; i < nsocks && rc == 0 && is_send && cfg->congestion[0]; i++)
    set_congestion(data_fd[i], cfg->congestion);
  if (rc == 0) rc = c4_helpers_start(c);
  if (rc == 0) c4_watch_add(c);
  if (rc != 0) {
    close(ctrl_fd);
    for (int i = 0; i < nsocks; i++)
      close(data_fd[i]);
    pthread_mutex_destroy(&c->claim_lock);
    free(c);
    return rc;
  }
  *out = c;
  return 0;
}

/* ---- control socket ---------------------------------------------------------------------- */

static int ctrl_queue(struct c4_comm *c, const struct c4_wire_ctrl *f, const char *payload,
                      size_t len, struct c4_request *req) {
  if (c->out_tail - c->out_head >= C4_CTRL_QUEUE) return C4_EAGAIN;
  struct c4_ctrl_out *o = &c->out[c->out_tail % C4_CTRL_QUEUE];
  c4_wire_put_ctrl(o->hdr, f);
  o->payload = payload;
  o->payload_len = len;
  o->sent = 0;
  o->req = req;
  o->not_before = 0;
  c->out_tail++;
  return 0;
}

/* Writes queued control frames (with their inline payloads) until the socket is full. */
static void ctrl_flush(struct c4_comm *c) {
  while (c->out_head != c->out_tail && !atomic_load(&c->failed)) {
    struct c4_ctrl_out *o = &c->out[c->out_head % C4_CTRL_QUEUE];
    struct iovec iov[2];
    int n = 0;
    if (o->sent < C4_CTRL_SIZE) iov[n++] = (struct iovec){o->hdr + o->sent, C4_CTRL_SIZE - o->sent};
    size_t psent = o->sent > C4_CTRL_SIZE ? o->sent - C4_CTRL_SIZE : 0;
    if (psent < o->payload_len)
      iov[n++] = (struct iovec){(void *)(o->payload + psent), o->payload_len - psent};
    uint64_t now = 0;
    /* C4_FAULT: a delayed send waits for its time; a paced one writes what the pacer allows. */
    if (__builtin_expect(c->fault.active, 0)) {
      now = c4_now_ns();
      if (o->sent == 0 && o->not_before > now) return;
      size_t allow =
          c4_fault_pace_allow(&c->fault, now, -1, iov[0].iov_len + (n > 1 ? iov[1].iov_len : 0));
      if (allow == 0) return;
      if (allow < iov[0].iov_len) {
        iov[0].iov_len = allow;
        n = 1;
      } else if (n > 1 && allow - iov[0].iov_len < iov[1].iov_len) {
        iov[1].iov_len = allow - iov[0].iov_len;
      }
    }
    struct msghdr msg = {.msg_iov = iov, .msg_iovlen = (size_t)n};
    ssize_t k = sendmsg(c->ctrl_fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (__builtin_expect(c->fault.active, 0) && k > 0)
      c4_fault_pace_charge(&c->fault, now, -1, (size_t)k);
    if (k < 0) {
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return;
      c4_comm_fail(c, C4_EREMOTE, "control connection to %s (pid %u, rank %d) failed: %s",
                   c->peer.host, c->peer.pid, c->peer.rank, strerror(errno));
      return;
    }
    if (o->sent == 0 && k > 0 && o->req && c->cfg.timing)
      atomic_store_explicit(&o->req->t_first_byte, c4_now_ns(), memory_order_relaxed);
    o->sent += (size_t)k;
    if (o->sent < C4_CTRL_SIZE + o->payload_len) return;
    if (o->req) {
      atomic_store(&o->req->done_bytes, o->payload_len);
      c4_request_complete(o->req);
    }
    c->out_head++;
  }
}

static void inline_done(struct c4_comm *c) {
  struct c4_request *r = c->rx_inline;
  atomic_store(&r->done_bytes, atomic_load(&r->total));
  c4_request_complete(r);
  c->rx_inline = NULL;
}

/* Receiver: a message that does not fit its posted receive. Tells the sender (ERR), fails the
 * request with a message naming both sides, and fails the comm: the stream cannot go on. */
static void reject_message(struct c4_comm *c, struct c4_request *r, const struct c4_wire_ctrl *f) {
  int code = f->arg != r->tag ? C4_EPROTO : C4_ETRUNC;
  struct c4_wire_ctrl err = {.type = C4_CTRL_ERR, .arg = code, .seq = f->seq, .size = r->size};
  ctrl_queue(c, &err, NULL, 0, NULL);
  ctrl_flush(c);
  r->error = code;
  atomic_store_explicit(&r->state, C4_REQ_ERROR, memory_order_release);
  c4_comm_fail(c, code,
               "message %llu from %s (pid %u, rank %d) has %llu bytes with tag %d; the receive "
               "posted here has %llu bytes with tag %d (%s)",
               (unsigned long long)f->seq, c->peer.host, c->peer.pid, c->peer.rank,
               (unsigned long long)f->size, f->arg, (unsigned long long)r->size, r->tag,
               c4_strerror(code));
}

/* Receiver: a DATA (eager, payload follows) or RTS (large, chunks follow once we answer CTS)
 * frame for the next message. Returns 1 when consumed, 0 when its receive is not posted yet
 * (the frame waits in the stage), or a negative code when the comm failed. */
static int ctrl_on_frame_recv(struct c4_comm *c, const struct c4_wire_ctrl *f) {
  if (f->type == C4_CTRL_ERR) {
    c4_comm_fail(c, C4_EREMOTE, "sender %s (pid %u, rank %d) failed message %llu: %s", c->peer.host,
                 c->peer.pid, c->peer.rank, (unsigned long long)f->seq,
                 c4_strerror(f->arg < 0 && f->arg >= C4_ENOTFOUND ? f->arg : C4_EREMOTE));
    return C4_EREMOTE;
  }
  if ((f->type != C4_CTRL_DATA && f->type != C4_CTRL_RTS) || f->seq != c->rx_expect) {
    c4_comm_fail(c, C4_EPROTO,
                 "peer %s (pid %u) sent control frame type %u for message %llu, "
                 "expected message %llu",
                 c->peer.host, c->peer.pid, f->type, (unsigned long long)f->seq,
                 (unsigned long long)c->rx_expect);
    return C4_EPROTO;
  }
  if (f->seq >= c->next_post) return 0;
  struct c4_request *r = &c->reqs[f->seq % C4_MAX_REQUESTS];
  c->rx_expect++;
  if (f->arg != r->tag || f->size > r->size) {
    reject_message(c, r, f);
    return C4_EPROTO;
  }
  atomic_store(&r->total, f->size);
  if (f->type == C4_CTRL_RTS) {
    c->large_pending++;
    r->large = 1;
    struct c4_wire_ctrl cts = {.type = C4_CTRL_CTS, .arg = r->tag, .seq = f->seq, .size = r->size};
    ctrl_queue(c, &cts, NULL, 0, NULL);
    return 1;
  }
  if (c->cfg.timing) atomic_store(&r->t_first_byte, c4_now_ns());
  c->rx_inline = r;
  c->rx_inline_left = f->size;
  if (f->size == 0) inline_done(c);
  return 1;
}

/* Sender: CTS for a large message (publish it to the helpers) or ERR (the receiver rejected a
 * message: fail with its reason). Returns 1, or a negative code when the comm failed. */
static int ctrl_on_frame_send(struct c4_comm *c, const struct c4_wire_ctrl *f) {
  struct c4_request *r = &c->reqs[f->seq % C4_MAX_REQUESTS];
  int ours = f->seq < c->next_post && atomic_load(&r->seq) == f->seq;
  if (f->type == C4_CTRL_ERR) {
    int code = f->arg < 0 && f->arg >= C4_ENOTFOUND ? f->arg : C4_EREMOTE;
    c4_comm_fail(c, code,
                 "receiver %s (pid %u, rank %d) rejected message %llu (%llu bytes, tag %d): its "
                 "posted receive has %llu bytes (%s)",
                 c->peer.host, c->peer.pid, c->peer.rank, (unsigned long long)f->seq,
                 ours ? (unsigned long long)r->size : 0ull, ours ? r->tag : -1,
                 (unsigned long long)f->size, c4_strerror(code));
    return code;
  }
  if (f->type != C4_CTRL_CTS || !ours || r->is_inline || f->seq < atomic_load(&c->posted) ||
      f->size < r->size) {
    c4_comm_fail(c, C4_EPROTO,
                 "peer %s (pid %u) sent control frame type %u for message %llu, "
                 "which is not awaiting a clear-to-send",
                 c->peer.host, c->peer.pid, f->type, (unsigned long long)f->seq);
    return C4_EPROTO;
  }
  atomic_store(&c->posted, f->seq + 1);
  c4_helpers_wake(c);
  return 1;
}

/* Moves inline payload bytes from the stage into the receive being filled. */
static size_t ctrl_fill_inline(struct c4_comm *c, const uint8_t *p, size_t n) {
  size_t take = n < c->rx_inline_left ? n : (size_t)c->rx_inline_left;
  struct c4_request *r = c->rx_inline;
  uint64_t off = atomic_load(&r->total) - c->rx_inline_left;
  memcpy(r->buf + off, p, take);
  c->rx_inline_left -= take;
  if (c->rx_inline_left == 0) inline_done(c);
  return take;
}

/* Acts on every whole frame in the stage, stopping at a frame whose receive is not posted yet. */
static void ctrl_parse(struct c4_comm *c) {
  size_t pos = 0;
  while (pos < c->stage_len && !atomic_load(&c->failed)) {
    if (c->rx_inline) {
      pos += ctrl_fill_inline(c, c->stage + pos, c->stage_len - pos);
      continue;
    }
    if (c->stage_len - pos < C4_CTRL_SIZE) break;
    struct c4_wire_ctrl f;
    if (c4_wire_get_ctrl(c->stage + pos, &f) != 0) {
      c4_comm_fail(c, C4_EPROTO, "peer %s (pid %u) sent a malformed control frame", c->peer.host,
                   c->peer.pid);
      return;
    }
    int rc = c->is_send ? ctrl_on_frame_send(c, &f) : ctrl_on_frame_recv(c, &f);
    if (rc <= 0) break;
    pos += C4_CTRL_SIZE;
  }
  memmove(c->stage, c->stage + pos, c->stage_len - pos);
  c->stage_len -= pos;
}

/* Reads what the control socket holds (bounded by the stage, so an eager sender cannot make us
 * buffer more than that) and acts on it. Large eager payloads go straight into the buffer. */
static void ctrl_poll(struct c4_comm *c) {
  for (int rounds = 0; rounds < 64 && !atomic_load(&c->failed); rounds++) {
    ssize_t k;
    int direct = c->rx_inline && c->stage_len == 0 && c->rx_inline_left >= C4_CTRL_STAGE;
    if (direct) {
      struct c4_request *r = c->rx_inline;
      uint64_t off = atomic_load(&r->total) - c->rx_inline_left;
      k = c4_sock_recv_some(c->ctrl_fd, r->buf + off, c->rx_inline_left);
    } else if (c->stage_len < C4_CTRL_STAGE) {
      k = c4_sock_recv_some(c->ctrl_fd, c->stage + c->stage_len, C4_CTRL_STAGE - c->stage_len);
    } else {
      return; /* stage full of frames whose receives are not posted yet */
    }
    if (k < 0) {
      /* A sender that closed after its last message is normal: the receives it satisfied are
       * in the stage or done. Only a message cut short, or a sender that is gone, fails now. */
      if (c->is_send || c->rx_inline)
        c4_comm_fail(c, C4_EREMOTE, "control connection closed by %s (pid %u, rank %d)%s",
                     c->peer.host, c->peer.pid, c->peer.rank,
                     c->rx_inline ? " in the middle of a message" : "");
      c->ctrl_eof = 1;
      return;
    }
    if (k == 0) return;
    if (direct) {
      c->rx_inline_left -= (uint64_t)k;
      if (c->rx_inline_left == 0) inline_done(c);
      continue;
    }
    c->stage_len += (size_t)k;
    size_t before = c->stage_len;
    ctrl_parse(c);
    if (c->stage_len == before && c->stage_len == C4_CTRL_STAGE) return;
  }
}

static void comm_progress(struct c4_comm *c) {
  ctrl_flush(c);
  ctrl_poll(c);
  if (c->large_pending) c4_helpers_progress_inline(c); /* data sockets idle otherwise */
}

/* ---- posting ----------------------------------------------------------------------------- */

static struct c4_request *slot_take(struct c4_comm *c) {
  struct c4_request *r = &c->reqs[c->next_post % C4_MAX_REQUESTS];
  if (atomic_load_explicit(&r->state, memory_order_acquire) != C4_REQ_FREE) return NULL;
  return r;
}

static void slot_fill(struct c4_comm *c, struct c4_request *r, void *data, uint64_t size, int tag) {
  r->buf = data;
  r->size = size;
  r->tag = tag;
  r->error = 0;
  r->is_inline = size <= c->cfg.inline_bytes;
  r->large = 0;
  atomic_store_explicit(&r->total, 0, memory_order_relaxed);
  atomic_store_explicit(&r->done_bytes, 0, memory_order_relaxed);
  atomic_store_explicit(&r->t_first_byte, 0, memory_order_relaxed);
  atomic_store_explicit(&r->t_done, 0, memory_order_relaxed);
  atomic_store_explicit(&r->t_posted, c->cfg.timing ? c4_now_ns() : 0, memory_order_relaxed);
  atomic_store_explicit(&r->state, C4_REQ_POSTED, memory_order_relaxed);
  atomic_store_explicit(&r->seq, c->next_post, memory_order_release);
}

/* C4_FAULT stall: inside the window the comm takes no request and moves nothing (a hung rank). */
static int stalled(struct c4_comm *c) {
  return __builtin_expect(c->fault.active, 0) && c4_fault_stalled(&c->fault, c4_now_ns());
}

int c4_transport_isend(struct c4_comm *c, void *data, size_t size, int tag,
                       struct c4_request **req) {
  *req = NULL;
  if (atomic_load(&c->failed)) return atomic_load(&c->failed);
  if (stalled(c)) return 0;
  struct c4_request *r = slot_take(c);
  if (!r || c->out_tail - c->out_head >= C4_CTRL_QUEUE) {
    comm_progress(c);
    return atomic_load(&c->failed);
  }
  uint64_t seq = c->next_post;
  slot_fill(c, r, data, size, tag);
  c->next_post++;
  if (!r->is_inline) {
    c->large_pending++;
    r->large = 1;
  }
  struct c4_wire_ctrl f = {
      .type = r->is_inline ? C4_CTRL_DATA : C4_CTRL_RTS, .arg = tag, .seq = seq, .size = size};
  ctrl_queue(c, &f, r->is_inline ? data : NULL, r->is_inline ? size : 0, r->is_inline ? r : NULL);
  /* C4_FAULT delay: the frame that starts the message (DATA or RTS) waits in the queue; the
   * request is posted (and timed) now, its first byte goes later. */
  if (__builtin_expect(c->fault.active, 0)) {
    uint64_t now = c4_now_ns(), d = c4_fault_send_delay(&c->fault, now);
    if (d) c->out[(c->out_tail - 1) % C4_CTRL_QUEUE].not_before = now + d;
  }
  ctrl_flush(c);
  *req = r;
  return 0;
}

int c4_transport_irecv(struct c4_comm *c, void *data, size_t size, int tag,
                       struct c4_request **req) {
  *req = NULL;
  if (atomic_load(&c->failed)) return atomic_load(&c->failed);
  if (stalled(c)) return 0;
  struct c4_request *r = slot_take(c);
  if (!r || c->out_tail - c->out_head >= C4_CTRL_QUEUE) return 0;
  slot_fill(c, r, data, size, tag);
  c->next_post++;
  if (c->stage_len) { /* a message may already be waiting for this receive */
    ctrl_parse(c);
    ctrl_flush(c);
  }
  *req = r;
  return 0;
}

/* ---- completion -------------------------------------------------------------------------- */

static void emit_record(struct c4_comm *c, struct c4_request *r, int ok, uint64_t bytes) {
  if (!c->cfg.timing) return;
  struct c4_xfer_record rec;
  c4_request_record(c, r, ok ? C4_XFER_OK : C4_XFER_ERROR, bytes,
                    ok ? atomic_load_explicit(&r->t_done, memory_order_relaxed) : c4_now_ns(),
                    &rec);
  c4_telemetry_emit_xfer(&rec);
}

static void slot_release(struct c4_request *r) {
  struct c4_comm *c = r->comm;
  if (r->large) c->large_pending--;
  atomic_store_explicit(&r->state, C4_REQ_FREE, memory_order_release);
}

int c4_transport_test(struct c4_request *r, int *done, size_t *size) {
  struct c4_comm *c = r->comm;
  *done = 0;
  if (stalled(c)) return 0; /* even a finished request is reported pending: the rank is hung */
  int st = atomic_load_explicit(&r->state, memory_order_acquire);
  if (st == C4_REQ_POSTED) {
    comm_progress(c);
    st = atomic_load_explicit(&r->state, memory_order_acquire);
  }
  if (st == C4_REQ_DONE) {
    uint64_t bytes = c->is_send ? r->size : atomic_load(&r->total);
    emit_record(c, r, 1, bytes);
    if (size) *size = (size_t)bytes;
    *done = 1;
    slot_release(r);
    return 0;
  }
  if (st == C4_REQ_ERROR) {
    emit_record(c, r, 0, 0);
    int code = r->error;
    slot_release(r);
    return code ? code : C4_EREMOTE;
  }
  uint64_t seq = atomic_load(&r->seq);
  if (!c->is_send && c->ctrl_eof &&
      atomic_load_explicit(&r->state, memory_order_acquire) == C4_REQ_POSTED &&
      (c->rx_expect <= seq || atomic_load(&c->data_eof) == c->nsocks))
    c4_comm_fail(c, C4_EREMOTE,
                 "%s (pid %u, rank %d) closed the connection before message %llu "
                 "arrived",
                 c->peer.host, c->peer.pid, c->peer.rank, (unsigned long long)seq);
  int failed = atomic_load(&c->failed);
  if (failed) {
    emit_record(c, r, 0, atomic_load(&r->done_bytes));
    slot_release(r);
    return failed;
  }
  return 0;
}

/* Reads and drops what the peer sent but we never read: closing a socket with unread data makes
 * the kernel answer with a reset, which can destroy data still on its way to the peer. */
static void drain_and_close(int fd) {
  char sink[4096];
  for (int i = 0; i < 256 && c4_sock_recv_some(fd, sink, sizeof sink) > 0; i++) {
  }
  close(fd);
}

struct c4_link_info *c4_transport_link_once(struct c4_comm *c) {
  if (c->link_given) return NULL;
  c->link_given = 1;
  return &c->link;
}

/* The log's account of a sending comm's paths at its close (INFO): what share of the bytes each
 * data socket carried and its last weight, so how the traffic spread can be read after a job. */
static void log_paths(const struct c4_comm *c) {
  uint64_t total = 0, chunks = 0;
  for (int i = 0; i < c->paths.n; i++) {
    total += c->paths.bytes[i];
    chunks += c->paths.chunks[i];
  }
  if (!c->is_send || c->paths.n < 2 || !total) return;
  char text[C4_PATHS_MAX * 24], noise[C4_PATHS_MAX * 24];
  size_t at = 0, nat = 0;
  for (int i = 0; i < c->paths.n && at < sizeof text && nat < sizeof noise; i++) {
    const struct c4_paths *p = &c->paths;
    at += (size_t)snprintf(text + at, sizeof text - at, "%s%d: %.3f (%.2f)", i ? ", " : "", i,
                           (double)p->bytes[i] / (double)total, c4_paths_weight(p, i));
    nat += (size_t)snprintf(noise + nat, sizeof noise - nat, "%s%d: %.3f (%.3f)", i ? ", " : "", i,
                            c4_paths_noise(p, i),
                            p->chunks[i] ? (double)p->uneven[i] / (double)p->chunks[i] : 0.0);
  }
  const struct c4_paths *p = &c->paths;
  uint64_t held = 0;
  for (int i = 0; i < p->n; i++)
    held += p->held[i];
  C4_INFO("connection to %s (pid %u, rank %d) closed: share of bytes (weight) per data socket: %s; "
          "sample noise (part of chunks off even shares): %s; re-measures with even shares: %llu "
          "(back to speed %llu, still slow %llu, no result %llu); rate samples dropped as the "
          "reader's (its window held them back): %llu of %llu chunks",
          c->peer.host, c->peer.pid, c->peer.rank, text, noise, (unsigned long long)p->fair_runs,
          (unsigned long long)p->fair_back, (unsigned long long)p->fair_slow,
          (unsigned long long)p->fair_dropped, (unsigned long long)held,
          (unsigned long long)chunks);
}

int c4_transport_close(struct c4_comm *c) {
  if (!c) return 0;
  c4_watch_remove(c);
  c4_helpers_stop(c);
  log_paths(c);
  drain_and_close(c->ctrl_fd);
  for (int i = 0; i < c->nsocks; i++)
    drain_and_close(c->data_fd[i]);
  pthread_mutex_destroy(&c->claim_lock);
  free(c);
  return 0;
}
