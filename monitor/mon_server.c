/* mon_server.c -- c4mon serve: epoll over a listener and every rank's connection. A connection
 * gets a CHALLENGE at once, must answer with a HELLO whose MAC proves the job token within 5 s
 * (or with a STATUS that proves it, mon_gate.h), then streams RECORDS, HEARTBEATs and TIME probes.
 * Before the HELLO it can send nothing else and c4mon holds at most one HELLO's bytes for it.
 * Anything malformed or out of range closes that connection alone, counted; a frame with one bad
 * record is dropped whole. Record times are moved into c4mon's clock with the rank's offset. */
#include "mon_server.h"

#include <errno.h>
#include <jansson.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_frame.h"
#include "c4_log.h"
#include "c4_rxtime.h"
#include "c4_text.h"
#include "det.h"
#include "mon_addr.h"
#include "mon_events.h"
#include "mon_gate.h"
#include "mon_pathplan.h"
#include "mon_pipeline.h"
#include "mon_planpush.h"
#include "mon_windows.h"

#define HELLO_TIMEOUT_NS 5000000000ull
#define MIN_RECORD 34 /* the shortest encoded record (a link record) */
#define MAX_BATCH ((C4_FRAME_MAX_PAYLOAD - 2) / MIN_RECORD)
#define TRIM_AFTER 256 /* closed connections after which freed memory goes back to the system */

enum { WAIT_HELLO, UP, SENDING_STATUS };

struct conn {
  int fd, state;
  uint8_t nonce[C4_FRAME_NONCE];
  uint64_t t_open, t_read; /* t_read: when the last bytes read had arrived */
  uint8_t *buf;
  size_t len, cap;
  struct c4_hello hello;
  const struct c4_det_job *job; /* the hello's, once it is welcome */
  struct c4_heartbeat hb;
  uint64_t records;
  uint8_t *out; /* SENDING_STATUS: the framed reply, and how much of it has gone */
  size_t out_len, out_off;
};

#define RATE_SECONDS 10
static struct {
  const struct mon_opts *o;
  int lfd, efd;
  struct conn **conn; /* by fd */
  int nconn_max;
  uint64_t t_start, accepted, rejected, bad_frames, lost, clean_exits, status_refused;
  struct mon_sink sink;
  int connected, sending, closed_since_trim;
  struct c4_record *batch; /* one RECORDS frame, checked whole before any record is taken */
  /* records taken by the second over the last RATE_SECONDS, for a rate that is now's: the
   * lifetime average said 449/s with no rank connected */
  uint64_t rate_t[RATE_SECONDS + 1], rate_n[RATE_SECONDS + 1];
  int rate_at;
} mon;

/* What a connection's handlers return when they closed it, or when it now only sends (a status
 * reply): the loop stops reading from it. 0 is "go on". */
#define CONN_CLOSED (-1)

static int send_all_now(int fd, const uint8_t *p, size_t n) {
  while (n) { /* small control frames on a fresh or idle socket: fit in its buffer */
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k <= 0) return C4_ESYS;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static int send_frame(int fd, int type, const void *payload, size_t len) {
  uint8_t b[C4_FRAME_HDR + 64];
  if (len > sizeof b - C4_FRAME_HDR) return C4_EINVAL;
  c4_frame_put_header(b, type, (uint32_t)len);
  if (len) memcpy(b + C4_FRAME_HDR, payload, len);
  return send_all_now(fd, b, C4_FRAME_HDR + len);
}

static void close_conn(struct conn *c, const char *why, int counted_as_reject) {
  char host[4 * C4_FRAME_NAME + 8];
  if (why)
    C4_INFO("c4mon: closing connection (rank %d, %s): %s", c->hello.rank,
            mon_gate_escape(c->hello.host, host, sizeof host), why);
  if (counted_as_reject) mon.rejected++;
  if (c->state == UP) mon.connected--;
  if (c->state == SENDING_STATUS) mon.sending--;
  epoll_ctl(mon.efd, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  mon.conn[c->fd] = NULL;
  mon.closed_since_trim++;
  free(c->buf);
  free(c->out);
  free(c);
}

int c4_mon_server_adopt(int fd, uint8_t nonce[C4_FRAME_NONCE]) {
  if (fd >= mon.nconn_max) {
    close(fd);
    mon.rejected++;
    return C4_EINVAL;
  }
  struct conn *c = calloc(1, sizeof *c);
  if (!c) {
    close(fd);
    return C4_ENOMEM;
  }
  c->fd = fd;
  c4_rxtime_enable(fd); /* a TIME probe's arrival, not when c4mon got to reading it */
  c->t_open = c4_now_ns();
  c->hello.rank = -1;
  if (getrandom(c->nonce, sizeof c->nonce, 0) != sizeof c->nonce)
    for (size_t i = 0; i < sizeof c->nonce; i++)
      c->nonce[i] = (uint8_t)(c4_now_ns() >> (i % 8));
  if (nonce) memcpy(nonce, c->nonce, C4_FRAME_NONCE);
  uint8_t ch[C4_FRAME_CHALLENGE_SIZE];
  c4_frame_put_challenge(ch, c->nonce, c4_now_ns());
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
  mon.conn[fd] = c;
  mon.accepted++;
  if (epoll_ctl(mon.efd, EPOLL_CTL_ADD, fd, &ev) != 0 ||
      send_frame(fd, C4_FRAME_CHALLENGE, ch, sizeof ch) != 0) {
    close_conn(c, "could not send the challenge", 1);
    return C4_EREMOTE;
  }
  return 0;
}

static void accept_all(void) {
  int fd;
  while ((fd = accept4(mon.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0)
    c4_mon_server_adopt(fd, NULL);
}

/* Counts a record for its rank and hands it to the pipeline in the rank's clock offset. */
static void take_record(struct conn *c, struct c4_record *r) {
  c->records++;
  c4_mon_take_record(&mon.sink, c->job, c->hb.offset, r);
}

/* c4mon's own record of a rank's heartbeat or of the end of its stream, for detection and the
 * trace (never accepted from a rank). */
static void take_rank_event(struct conn *c, int event, uint64_t t, int64_t offset) {
  struct c4_record r = {.kind = C4_REC_RANK};
  r.rank = (struct c4_rank_record){.rank = c->hello.rank,
                                   .pid = c->hello.pid,
                                   .event = (uint8_t)event,
                                   .t = t,
                                   .entered = event == C4_RANK_HB ? c->hb.entered : 0,
                                   .done = event == C4_RANK_HB ? c->hb.done : 0,
                                   .dropped = event == C4_RANK_HB ? c->hb.dropped : 0};
  snprintf(r.rank.host, sizeof r.rank.host, "%s", c->hello.host);
  c4_mon_take_record(&mon.sink, c->job, offset, &r);
}

static json_t *status_json(void) {
  uint64_t now = c4_now_ns();
  double secs = (double)(now - mon.t_start) / 1e9;
  int oldest = (mon.rate_at + 1) % (RATE_SECONDS + 1); /* the ring's oldest second */
  if (!mon.rate_t[oldest]) oldest = 1;                 /* not full yet: its first */
  double span = (double)(now - (mon.rate_t[oldest] ? mon.rate_t[oldest] : mon.t_start)) / 1e9;
  uint64_t since = mon.rate_t[oldest] ? mon.rate_n[oldest] : 0;
  json_t *ranks = json_array();
  for (int fd = 0; fd < mon.nconn_max; fd++) {
    struct conn *c = mon.conn[fd];
    if (!c || c->state != UP) continue;
    json_array_append_new(
        ranks,
        json_pack("{s:s, s:i, s:s, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "job", c->hello.job, "rank",
                  c->hello.rank, "host", c->hello.host, "pid", (json_int_t)c->hello.pid, "records",
                  (json_int_t)c->records, "dropped", (json_int_t)c->hb.dropped, "entered",
                  (json_int_t)c->hb.entered, "done", (json_int_t)c->hb.done, "clock_offset_ns",
                  (json_int_t)c->hb.offset, "clock_rtt_ns", (json_int_t)c->hb.rtt));
  }
  return json_pack("{s:s, s:i, s:I, s:I, s:I, s:I, s:f, s:I, s:I, s:I, s:f, s:o, s:o}", "c4mon",
                   C4_VERSION, "ranks_connected", mon.connected, "accepted",
                   (json_int_t)mon.accepted, "rejected", (json_int_t)mon.rejected, "bad_frames",
                   (json_int_t)mon.bad_frames, "records", (json_int_t)mon.sink.records,
                   "records_per_s", span > 0 ? (double)(mon.sink.records - since) / span : 0.0,
                   "lost", (json_int_t)mon.lost, "clean_exits", (json_int_t)mon.clean_exits,
                   "status_refused", (json_int_t)mon.status_refused, "uptime_s", secs, "ranks",
                   ranks, "windows", c4_mon_windows_json());
}

json_t *c4_mon_server_status(void) {
  json_t *st = status_json();
  if (st) json_object_set_new(st, "detect", c4_det_state_json());
  return st;
}

/* Sends the rank on c its host's flows of the plan (--plan), in PLAN frames. Without blocking: a
 * host's part is a few KB and fits an idle socket's buffer; a connection that cannot take it is
 * closed (the rank reconnects and gets the plan with its welcome). Returns 0 or -1 (closed). */
static int push_plan(struct conn *c) {
  size_t n = 0;
  char *doc = mon.o->plan ? mon_planpush_for_host(c->hello.host, mon_pathplan_avoid(), &n) : NULL;
  if (!doc) return 0;
  size_t off = 0;
  int rc = 0;
  do {
    size_t part = n - off < C4_FRAME_MAX_PAYLOAD - C4_FRAME_PLAN_HDR
                      ? n - off
                      : C4_FRAME_MAX_PAYLOAD - C4_FRAME_PLAN_HDR;
    uint8_t hdr[C4_FRAME_HDR + C4_FRAME_PLAN_HDR];
    c4_frame_put_header(hdr, C4_FRAME_PLAN, (uint32_t)(C4_FRAME_PLAN_HDR + part));
    c4_frame_put_plan_hdr(hdr + C4_FRAME_HDR, (uint32_t)n, (uint32_t)off);
    if (send_all_now(c->fd, hdr, sizeof hdr) != 0 ||
        (part && send_all_now(c->fd, (const uint8_t *)doc + off, part) != 0))
      rc = -1;
    off += part;
  } while (off < n && rc == 0);
  free(doc);
  if (rc) close_conn(c, "could not push the plan", 0);
  return rc;
}

/* The closed loop (mon_pathplan.h): a path verdict raised or cleared changed the plan's avoid
 * list; every rank gets the plan again at once, and the events say what moved. */
static void push_avoid(uint64_t now) {
  int ranks = 0;
  for (int fd = 0; fd < mon.nconn_max; fd++)
    if (mon.conn[fd] && mon.conn[fd]->state == UP && push_plan(mon.conn[fd]) == 0) ranks++;
  mon_pathplan_announce(ranks, now);
}

/* Sends what is left of c's STATUS reply without blocking; closes c once it is out or the client
 * has gone. */
static void on_writable(struct conn *c) {
  while (c->out_off < c->out_len) {
    ssize_t k =
        send(c->fd, c->out + c->out_off, c->out_len - c->out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) return;
    if (k <= 0) break;
    c->out_off += (size_t)k;
  }
  close_conn(c, NULL, 0);
}

/* Answers an authenticated STATUS: the document goes out as STATUS_REPLY frames of at most
 * C4_FRAME_MAX_PAYLOAD bytes, the last one shorter (empty if need be), written as the client
 * reads them (a client that does not read costs a buffer until the 5 s deadline, never the loop's
 * time). Always returns -1: c is closed or now only sends. */
static int start_status(struct conn *c) {
  json_t *st = c4_mon_server_status();
  char *doc = st ? json_dumps(st, JSON_COMPACT) : NULL;
  json_decref(st);
  size_t n = doc ? strlen(doc) : 0, frames = n / C4_FRAME_MAX_PAYLOAD + 1;
  c->out = doc ? malloc(n + frames * C4_FRAME_HDR) : NULL;
  if (!c->out) {
    free(doc);
    close_conn(c, "out of memory for a status reply", 0);
    return CONN_CLOSED;
  }
  for (size_t f = 0, off = 0; f < frames; f++) {
    size_t part = n - off < C4_FRAME_MAX_PAYLOAD ? n - off : C4_FRAME_MAX_PAYLOAD;
    c4_frame_put_header(c->out + c->out_len, C4_FRAME_STATUS_REPLY, (uint32_t)part);
    memcpy(c->out + c->out_len + C4_FRAME_HDR, doc + off, part);
    c->out_len += C4_FRAME_HDR + part;
    off += part;
  }
  free(doc);
  free(c->buf); /* nothing more is read from a status client */
  c->buf = NULL;
  c->len = c->cap = 0;
  c->state = SENDING_STATUS;
  mon.sending++;
  struct epoll_event ev = {.events = EPOLLOUT, .data.fd = c->fd};
  if (epoll_ctl(mon.efd, EPOLL_CTL_MOD, c->fd, &ev) != 0) {
    close_conn(c, "could not wait to send the status", 0);
    return CONN_CLOSED;
  }
  on_writable(c);
  return CONN_CLOSED;
}

/* what, with the address the connection comes from ("a STATUS request at 10.0.0.7:40112"): a
 * refusal names the sender by its address, not only by the host name it claims. */
static const char *at_peer(int fd, const char *what, char *buf, size_t n) {
  struct sockaddr_storage a;
  socklen_t len = sizeof a;
  char host[NI_MAXHOST], port[NI_MAXSERV];
  if (getpeername(fd, (struct sockaddr *)&a, &len) != 0 ||
      getnameinfo((struct sockaddr *)&a, len, host, sizeof host, port, sizeof port,
                  NI_NUMERICHOST | NI_NUMERICSERV) != 0)
    snprintf(buf, n, "%s", what);
  else
    snprintf(buf, n, strchr(host, ':') ? "%s at [%s]:%s" : "%s at %s:%s", what, host, port);
  return buf;
}

/* The first frame of a connection that has not proven the token: a HELLO (checked) or a STATUS
 * (checked and rate-limited). Returns 0 to go on, -1 when the connection was closed or only
 * sends from now on. */
static int on_first_frame(struct conn *c, int type, const uint8_t *p, uint32_t len) {
  uint64_t now = c4_now_ns();
  char who[160];
  if (type == C4_FRAME_STATUS) {
    if (!c4_frame_status_verify(p, len, c->nonce, mon.o->token)) {
      mon_gate_refused(now, at_peer(c->fd, "a STATUS request", who, sizeof who), NULL, NULL,
                       "wrong token");
      close_conn(c, NULL, 1);
      return CONN_CLOSED;
    }
    if (mon.sending >= MON_GATE_STATUS_SENDING || !mon_gate_status_take(now)) {
      char why[64];
      snprintf(why, sizeof why, "over %d a second or %d at once", MON_GATE_STATUS_PER_S,
               MON_GATE_STATUS_SENDING);
      mon.status_refused++;
      mon_gate_refused(now, "a STATUS request", NULL, NULL, why);
      close_conn(c, NULL, 0);
      return CONN_CLOSED;
    }
    return start_status(c);
  }
  if (c4_frame_get_hello(p, len, &c->hello) != 0) {
    mon_gate_refused(now, at_peer(c->fd, "a connection", who, sizeof who), NULL, NULL,
                     "its HELLO is malformed");
    close_conn(c, NULL, 1);
    return CONN_CLOSED;
  }
  int proven = c4_frame_hello_verify(&c->hello, c->nonce, mon.o->token), ok = proven;
  if (ok) { /* once proven: a job or host name the rank chose never reaches a terminal raw (status,
             * top, events --text and timeline print them), nor jansson as bytes it refuses */
    c4_text_clean(c->hello.job);
    c4_text_clean(c->hello.host);
  }
  ok = ok && (!mon.o->job || !strcmp(mon.o->job, c->hello.job)) &&
       (c->job = c4_det_job(c->hello.job)) != NULL;            /* named once, here */
  uint8_t status[2] = {ok ? 0 : 1, ok && mon.o->plan ? 1 : 0}; /* 1: a PLAN follows */
  send_frame(c->fd, C4_FRAME_WELCOME, status, sizeof status);
  if (!ok) {
    char what[64];
    snprintf(what, sizeof what, "rank %d (pid %u)", c->hello.rank, c->hello.pid);
    mon_gate_refused(now, at_peer(c->fd, what, who, sizeof who), c->hello.job, c->hello.host,
                     !proven ? "wrong token (its C4_TOKEN is not c4mon's)"
                     : mon.o->job && strcmp(mon.o->job, c->hello.job)
                         ? "not the job c4mon serves (--job)"
                         : "too many jobs known already");
    close_conn(c, NULL, 1);
    return CONN_CLOSED;
  }
  c->state = UP;
  mon.connected++;
  return push_plan(c);
}

/* Decodes and checks every record of a RECORDS frame before any is taken. Returns the number of
 * records, or -1 (with the reason in why) when one is malformed or out of range. */
static int decode_records(struct conn *c, const uint8_t *p, uint32_t len, char *why, size_t wl) {
  if (len < 2) return snprintf(why, wl, "RECORDS shorter than its count"), -1;
  size_t n = (size_t)(p[0] | p[1] << 8), off = 2;
  if (n > (len - 2) / MIN_RECORD) return snprintf(why, wl, "%zu records cannot fit", n), -1;
  for (size_t i = 0; i < n; i++) {
    struct c4_record *r = &mon.batch[i];
    int k = c4_frame_get_record(p + off, len - off, r);
    const char *bad = NULL;
    if (k <= 0)
      bad = "malformed";
    else if (r->kind == C4_REC_RANK)
      bad = "a rank record (only c4mon writes those)";
    else if (c4_mon_record_check(r, c->hb.offset, &bad) != 0)
      (void)0;
    if (bad) return snprintf(why, wl, "record %zu of %zu: %s", i + 1, n, bad), -1;
    off += (size_t)k;
  }
  if (off != len) return snprintf(why, wl, "%zu bytes after the last record", len - off), -1;
  return (int)n;
}

/* Acts on one whole frame. Returns 0 to go on, -1 when the connection was closed. */
static int on_frame(struct conn *c, int type, const uint8_t *p, uint32_t len) {
  char why[160] = "malformed frame";
  if (c->state == WAIT_HELLO) return on_first_frame(c, type, p, len);
  if (type == C4_FRAME_RECORDS) {
    int n = decode_records(c, p, len, why, sizeof why);
    if (n < 0) goto bad;
    for (int i = 0; i < n; i++)
      take_record(c, &mon.batch[i]);
  } else if (type == C4_FRAME_HEARTBEAT) {
    struct c4_heartbeat hb;
    if (c4_frame_get_heartbeat(p, len, &hb) != 0 || c4_mon_time_ok(hb.t, hb.offset) != 0) {
      snprintf(why, sizeof why, "HEARTBEAT with a time, count or clock offset out of range");
      goto bad;
    }
    c->hb = hb;
    take_rank_event(c, C4_RANK_HB, c->hb.t, c->hb.offset);
  } else if (type == C4_FRAME_TIME) {
    uint64_t t[3];
    if (c4_frame_get_time(p, len, t) != 0) goto bad;
    t[1] = c->t_read; /* when its bytes came in: frames decoded before it do not count as delay */
    t[2] = c4_now_ns();
    uint8_t b[C4_FRAME_TIME_SIZE];
    c4_frame_put_time(b, t);
    send_frame(c->fd, C4_FRAME_TIME, b, sizeof b);
  } else if (type == C4_FRAME_BYE) {
    mon.clean_exits++;
    take_rank_event(c, C4_RANK_BYE, c4_now_ns(), 0);
    close_conn(c, NULL, 0);
    return CONN_CLOSED;
  } else {
    goto bad;
  }
  return 0;
bad:
  mon.bad_frames++;
  close_conn(c, why, 0);
  return CONN_CLOSED;
}

static void on_readable(struct conn *c) {
  for (;;) {
    /* the buffer is bounded by the state: one HELLO before it, one frame after */
    size_t limit = c->state == UP ? C4_FRAME_HDR + C4_FRAME_MAX_PAYLOAD : MON_GATE_PREAUTH_BYTES;
    if (c->cap - c->len < 4096 && c->cap < limit) {
      size_t cap = c->cap ? c->cap * 2 : c->state == UP ? 8192 : limit;
      if (cap > limit) cap = limit;
      uint8_t *b = realloc(c->buf, cap);
      if (!b) {
        close_conn(c, "out of memory", 0);
        return;
      }
      c->buf = b;
      c->cap = cap;
    }
    uint64_t arrived = 0;
    ssize_t k = c4_rxtime_recv(c->fd, c->buf + c->len, c->cap - c->len, MSG_DONTWAIT, &arrived);
    if (k == 0 || (k < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)) {
      if (c->state == UP) { /* gone without a BYE */
        mon.lost++;
        take_rank_event(c, C4_RANK_LOST, c4_now_ns(), 0);
      }
      close_conn(c, "connection ended", 0);
      return;
    }
    if (k < 0) break;
    c->len += (size_t)k;
    c->t_read = arrived;
    size_t pos = 0;
    for (;;) {
      int type;
      uint32_t len;
      if (c->len - pos < C4_FRAME_HDR) break;
      if (c4_frame_get_header(c->buf + pos, &type, &len) != 0) {
        mon.bad_frames++;
        close_conn(c, "bad frame header", c->state == WAIT_HELLO);
        return;
      }
      if (c->state == WAIT_HELLO && !mon_gate_first_frame_ok(type, len)) {
        mon_gate_refused(c4_now_ns(), "a connection", NULL, NULL,
                         "its first frame is not a HELLO or STATUS of the right size");
        close_conn(c, NULL, 1);
        return;
      }
      if (c->len - pos < C4_FRAME_HDR + len) break;
      if (on_frame(c, type, c->buf + pos + C4_FRAME_HDR, len) != 0) return;
      pos += C4_FRAME_HDR + len;
    }
    memmove(c->buf, c->buf + pos, c->len - pos);
    c->len -= pos;
  }
  if (c->len == 0 && c->cap > 8192) { /* idle: give the memory back */
    free(c->buf);
    c->buf = NULL;
    c->cap = 0;
  }
}

static void expire_handshakes(uint64_t now) {
  for (int fd = 0; fd < mon.nconn_max; fd++) {
    struct conn *c = mon.conn[fd];
    if (c && c->state != UP && now - c->t_open > HELLO_TIMEOUT_NS)
      close_conn(c, c->state == WAIT_HELLO ? "no HELLO within 5 s" : "status not read in 5 s",
                 c->state == WAIT_HELLO);
  }
  mon_gate_flush(now);
  if (mon.closed_since_trim >= TRIM_AFTER) { /* after a flood: the freed heap goes back */
    malloc_trim(0);
    mon.closed_since_trim = 0;
  }
}

int c4_mon_server_init(const struct mon_opts *o, int nconn_max) {
  memset(&mon, 0, sizeof mon);
  mon.o = o;
  mon.sink.out = o->record;
  mon.lfd = -1;
  mon.nconn_max = nconn_max;
  mon.conn = calloc((size_t)nconn_max, sizeof *mon.conn);
  mon.batch = malloc(MAX_BATCH * sizeof *mon.batch);
  mon.efd = epoll_create1(EPOLL_CLOEXEC);
  mon.t_start = c4_now_ns();
  if (!mon.conn || !mon.batch || mon.efd < 0) {
    c4_mon_server_fini();
    return C4_ENOMEM;
  }
  return 0;
}

void c4_mon_server_fini(void) {
  for (int fd = 0; mon.conn && fd < mon.nconn_max; fd++)
    if (mon.conn[fd]) close_conn(mon.conn[fd], NULL, 0);
  free(mon.conn);
  free(mon.batch);
  if (mon.efd >= 0) close(mon.efd);
  if (mon.lfd >= 0) close(mon.lfd);
  memset(&mon, 0, sizeof mon);
  mon.efd = mon.lfd = -1;
}

int c4_mon_server_pump(int fd) {
  struct conn *c = fd >= 0 && fd < mon.nconn_max ? mon.conn[fd] : NULL;
  if (c && c->state == SENDING_STATUS)
    on_writable(c);
  else if (c)
    on_readable(c);
  return fd >= 0 && fd < mon.nconn_max && mon.conn[fd] ? (mon.conn[fd]->state == UP) + 1 : 0;
}

/* Opens the listening socket on o->listen into mon.lfd. Returns 0 or a negative C4_E* code
 * (logged). */
static int open_listener(const struct mon_opts *o) {
  int port = 0, fd = c4_mon_listen("--listen", o->listen, 4096, &port);
  if (fd < 0) return fd;
  mon.lfd = fd;
  const char *colon = strrchr(o->listen, ':'); /* c4_mon_listen found one */
  C4_NOTE("c4mon: listening for ranks on %.*s:%d", (int)(colon - o->listen), o->listen, port);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = mon.lfd};
  if (epoll_ctl(mon.efd, EPOLL_CTL_ADD, mon.lfd, &ev) != 0) {
    C4_WARN("c4mon: cannot wait on the listening socket: %s", strerror(errno));
    return C4_ESYS;
  }
  return 0;
}

int c4_mon_serve(const struct mon_opts *o, volatile int *stop) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) { /* room for every rank */
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  int nconn_max =
      getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (1u << 20) ? (int)rl.rlim_cur : (1 << 20);
  int rc = c4_mon_server_init(o, nconn_max);
  if (rc == 0) rc = open_listener(o);
  if (rc == 0 && mon_planpush_load(o->plan) != 0) rc = C4_EINVAL;
  mon_pathplan_reset();
  if (rc == 0 && o->plan && c4_mon_events_add_sink(mon_pathplan_event, NULL) != 0)
    C4_WARN("c4mon: no room for the path verdicts' sink: the plan's avoid list stays empty");
  if (rc != 0) {
    c4_mon_server_fini();
    return rc;
  }
  if (!o->token[0])
    fprintf(stderr,
            "c4mon: WARNING: no job token (--token-file FILE or C4_TOKEN): any process that can "
            "reach %s can stream records into this c4mon, forge its verdicts and read its "
            "status\n",
            o->listen);
  struct epoll_event evs[256];
  uint64_t next_tick = 0, next_plan_check = 0, last_woke = c4_now_ns();
  while (!*stop) {
    int n = epoll_wait(mon.efd, evs, 256, 100);
    uint64_t woke = c4_now_ns();
    if (woke - last_woke > C4_DET_STALL_NS) { /* before the heartbeats that waited are read */
      C4_WARN("c4mon: did not run for %.1f s (stopped or starved): no rank is judged lost for "
              "%.0f s while it catches up",
              (double)(woke - last_woke) / 1e9, (double)C4_DET_STALL_NS / 1e9);
      c4_det_stalled(woke);
    }
    last_woke = woke;
    for (int i = 0; i < n; i++) {
      if (evs[i].data.fd == mon.lfd)
        accept_all();
      else
        c4_mon_server_pump(evs[i].data.fd);
    }
    if (o->record) fflush(o->record);
    expire_handshakes(c4_now_ns());
    uint64_t now = c4_now_ns();
    if (now >= next_plan_check) { /* a changed plan goes to every rank */
      if (mon_planpush_check())
        for (int fd = 0; fd < mon.nconn_max; fd++)
          if (mon.conn[fd] && mon.conn[fd]->state == UP) push_plan(mon.conn[fd]);
      next_plan_check = now + 1000000000ull;
    }
    if (now >= next_tick) { /* detection's clock, and the caller's periodic work */
      c4_det_advance(now);
      if (now >= mon.rate_t[mon.rate_at] + 1000000000ull) { /* one sample a second */
        mon.rate_at = (mon.rate_at + 1) % (RATE_SECONDS + 1);
        mon.rate_t[mon.rate_at] = now;
        mon.rate_n[mon.rate_at] = mon.sink.records;
      }
      if (mon_pathplan_pending()) push_avoid(now);
      if (o->tick) o->tick(o->tick_arg);
      next_tick = now + 100000000ull;
    }
  }
  c4_mon_server_fini();
  return 0;
}

/* Reads one whole frame into a malloc'd body (*body, *len). Returns 0 or C4_EPROTO. */
static int recv_frame(int fd, int *type, uint8_t **body, uint32_t *len) {
  uint8_t hdr[C4_FRAME_HDR];
  *body = NULL;
  ssize_t k = recv(fd, hdr, sizeof hdr, MSG_WAITALL);
  if (k == 0) return C4_EREMOTE; /* closed before a frame */
  if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return C4_ESYS; /* nothing in 5 s */
  if (k != sizeof hdr || c4_frame_get_header(hdr, type, len) != 0 || !(*body = malloc(*len + 1)))
    return C4_EPROTO;
  if (*len && recv(fd, *body, *len, MSG_WAITALL) != (ssize_t)*len) {
    free(*body);
    *body = NULL;
    return C4_EPROTO;
  }
  return 0;
}

const char *c4_mon_query_why(int rc) {
  switch (rc) {
  case C4_EINVAL: return "its host name does not resolve";
  case C4_ENOTFOUND: return "nothing answers there (is c4mon serve running, on this --listen?)";
  case C4_EPROTO:
    return "what answers there is not c4mon's rank port (its --metrics or --subscribe port?)";
  case C4_EREMOTE:
    return "c4mon refused the request: a wrong token (--token-file, C4_TOKEN), or too many "
           "status requests at once";
  case C4_EUSAGE:
    return "c4mon refused the request: no token was given (--token-file, or C4_TOKEN), or too "
           "many status requests at once";
  case C4_ESYS:
    return "no answer within 5 s: c4mon busy or stopped, or not its rank port (its --metrics or "
           "--subscribe port?)";
  default: return "no answer from c4mon";
  }
}

int c4_mon_query_status(const char *addr, const char *token, char **out) {
  *out = NULL;
  struct sockaddr_storage sa;
  socklen_t salen;
  if (c4_mon_parse_addr(addr, &sa, &salen) != 0) return C4_EINVAL;
  int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return C4_ESYS;
  struct timeval tv = {.tv_sec = 5};
  if (setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv) != 0) { /* no reply may hang us */
    close(fd);
    return C4_ESYS;
  }
  int rc = connect(fd, (struct sockaddr *)&sa, salen) == 0 ? 0 : C4_ENOTFOUND;
  /* c4mon sends its CHALLENGE first; the STATUS proves the token over its nonce */
  int type;
  uint8_t *body = NULL;
  uint32_t len;
  uint8_t nonce[C4_FRAME_NONCE], msg[C4_FRAME_HDR + C4_FRAME_MAC];
  uint64_t t_server;
  int got = rc ? 0 : recv_frame(fd, &type, &body, &len);
  if (!rc && (got != 0 || type != C4_FRAME_CHALLENGE ||
              c4_frame_get_challenge(body, len, nonce, &t_server) != 0))
    rc = got == C4_ESYS ? C4_ESYS : C4_EPROTO;
  free(body);
  c4_frame_put_header(msg, C4_FRAME_STATUS, C4_FRAME_MAC);
  if (!rc) c4_frame_put_status(msg + C4_FRAME_HDR, nonce, token ? token : "");
  if (!rc && send_all_now(fd, msg, sizeof msg) != 0) rc = C4_EREMOTE;
  /* the reply comes in frames; the last one is short */
  char *doc = NULL;
  size_t have = 0;
  for (int frames = 0; !rc; frames++) {
    int fr = frames > 1024 ? C4_EPROTO : recv_frame(fd, &type, &body, &len);
    if (fr != 0) { /* closed at once: refused; silent 5 s: busy or stopped */
      rc = fr == C4_ESYS ? C4_ESYS : fr == C4_EREMOTE && !frames ? C4_EREMOTE : C4_EPROTO;
      break;
    }
    if (type != C4_FRAME_STATUS_REPLY) {
      free(body);
      continue;
    }
    char *grown = realloc(doc, have + len + 1);
    if (!grown) {
      free(body);
      rc = C4_ENOMEM;
      break;
    }
    doc = grown;
    memcpy(doc + have, body, len);
    have += len;
    doc[have] = 0;
    free(body);
    if (len < C4_FRAME_MAX_PAYLOAD) break;
  }
  if (rc) {
    free(doc);
    doc = NULL;
  }
  close(fd);
  if (!rc && !doc) rc = C4_EPROTO;
  if (rc == C4_EREMOTE && (!token || !*token)) rc = C4_EUSAGE; /* none to prove */
  *out = doc;
  return rc;
}
