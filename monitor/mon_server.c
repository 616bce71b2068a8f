/* mon_server.c -- c4mon serve: epoll over a listener and every rank's connection. A connection
 * gets a CHALLENGE at once, must answer with a HELLO whose MAC proves the job token within 5 s,
 * then streams RECORDS, HEARTBEATs and TIME probes. Anything malformed closes that connection
 * alone, counted. Record times are moved into c4mon's clock with the rank's reported offset. */
#include "mon_server.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
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
#include "det.h"
#include "mon_addr.h"
#include "mon_pipeline.h"
#include "mon_planpush.h"
#include "mon_windows.h"

#define HELLO_TIMEOUT_NS 5000000000ull

enum { WAIT_HELLO, UP };

struct conn {
  int fd, state;
  uint8_t nonce[C4_FRAME_NONCE];
  uint64_t t_open, t_read; /* t_read: when the last bytes read had arrived */
  uint8_t *buf;
  size_t len, cap;
  struct c4_hello hello;
  struct c4_heartbeat hb;
  uint64_t records;
};

static struct {
  const struct mon_opts *o;
  int lfd, efd;
  struct conn **conn; /* by fd */
  int nconn_max;
  uint64_t t_start, accepted, rejected, bad_frames, lost, clean_exits;
  struct mon_sink sink;
  int connected;
} mon;

static int split_addr(const char *s, char *host, size_t hl, char *port, size_t pl) {
  const char *colon = strrchr(s, ':');
  if (!colon || (size_t)(colon - s) >= hl || strlen(colon + 1) >= pl || !colon[1]) return C4_EINVAL;
  memcpy(host, s, (size_t)(colon - s));
  host[colon - s] = 0;
  snprintf(port, pl, "%s", colon + 1);
  return 0;
}

static int send_all_now(int fd, const uint8_t *p, size_t n) {
  while (n) { /* small control frames on a fresh or idle socket: fit in its buffer */
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static int send_frame(int fd, int type, const void *payload, size_t len) {
  uint8_t b[C4_FRAME_HDR + 64];
  if (len > sizeof b - C4_FRAME_HDR) return -1;
  c4_frame_put_header(b, type, (uint32_t)len);
  if (len) memcpy(b + C4_FRAME_HDR, payload, len);
  return send_all_now(fd, b, C4_FRAME_HDR + len);
}

static void close_conn(struct conn *c, const char *why, int counted_as_reject) {
  if (why)
    C4_INFO("c4mon: closing connection (rank %d, %s): %s", c->hello.rank, c->hello.host, why);
  if (counted_as_reject) mon.rejected++;
  if (c->state == UP) mon.connected--;
  epoll_ctl(mon.efd, EPOLL_CTL_DEL, c->fd, NULL);
  close(c->fd);
  mon.conn[c->fd] = NULL;
  free(c->buf);
  free(c);
}

static void accept_all(void) {
  for (;;) {
    int fd = accept4(mon.lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd < 0) return;
    if (fd >= mon.nconn_max) {
      close(fd);
      mon.rejected++;
      continue;
    }
    struct conn *c = calloc(1, sizeof *c);
    if (!c) {
      close(fd);
      continue;
    }
    c->fd = fd;
    c4_rxtime_enable(fd); /* a TIME probe's arrival, not when c4mon got to reading it */
    c->t_open = c4_now_ns();
    c->hello.rank = -1;
    if (getrandom(c->nonce, sizeof c->nonce, 0) != sizeof c->nonce)
      for (size_t i = 0; i < sizeof c->nonce; i++)
        c->nonce[i] = (uint8_t)(c4_now_ns() >> (i % 8));
    uint8_t ch[C4_FRAME_CHALLENGE_SIZE];
    c4_frame_put_challenge(ch, c->nonce, c4_now_ns());
    struct epoll_event ev = {.events = EPOLLIN, .data.fd = fd};
    mon.conn[fd] = c;
    mon.accepted++;
    if (epoll_ctl(mon.efd, EPOLL_CTL_ADD, fd, &ev) != 0 ||
        send_frame(fd, C4_FRAME_CHALLENGE, ch, sizeof ch) != 0)
      close_conn(c, "could not send the challenge", 1);
  }
}

/* Counts a record for its rank and hands it to the pipeline in the rank's clock offset. */
static void take_record(struct conn *c, struct c4_record *r) {
  c->records++;
  c4_mon_take_record(&mon.sink, c->hello.job, c->hb.offset, r);
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
  c4_mon_take_record(&mon.sink, c->hello.job, offset, &r);
}

static json_t *status_json(void) {
  double secs = (double)(c4_now_ns() - mon.t_start) / 1e9;
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
  return json_pack("{s:s, s:i, s:I, s:I, s:I, s:I, s:f, s:I, s:I, s:f, s:o, s:o}", "c4mon",
                   C4_VERSION, "ranks_connected", mon.connected, "accepted",
                   (json_int_t)mon.accepted, "rejected", (json_int_t)mon.rejected, "bad_frames",
                   (json_int_t)mon.bad_frames, "records", (json_int_t)mon.sink.records,
                   "records_per_s", secs > 0 ? (double)mon.sink.records / secs : 0.0, "lost",
                   (json_int_t)mon.lost, "clean_exits", (json_int_t)mon.clean_exits, "uptime_s",
                   secs, "ranks", ranks, "windows", c4_mon_windows_json());
}

json_t *c4_mon_server_status(void) {
  json_t *st = status_json();
  if (st) json_object_set_new(st, "detect", c4_det_state_json());
  return st;
}

/* The document goes out as STATUS_REPLY frames of at most C4_FRAME_MAX_PAYLOAD bytes, the last
 * one shorter (empty if need be). Sent blocking, but with a 2 s send timeout, so a client that
 * does not read stalls c4mon for 2 s at most. */
static void send_status(struct conn *c) {
  json_t *st = c4_mon_server_status();
  char *doc = st ? json_dumps(st, JSON_COMPACT) : NULL;
  json_decref(st);
  if (!doc) return;
  int fl = fcntl(c->fd, F_GETFL);
  fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK);
  struct timeval tv = {.tv_sec = 2};
  setsockopt(c->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
  const char *p = doc;
  size_t left = strlen(doc);
  for (;;) {
    size_t n = left < C4_FRAME_MAX_PAYLOAD ? left : C4_FRAME_MAX_PAYLOAD;
    uint8_t hdr[C4_FRAME_HDR];
    c4_frame_put_header(hdr, C4_FRAME_STATUS_REPLY, (uint32_t)n);
    if (send_all_now(c->fd, hdr, sizeof hdr) != 0 ||
        (n && send_all_now(c->fd, (const uint8_t *)p, n) != 0))
      break;
    p += n;
    left -= n;
    if (n < C4_FRAME_MAX_PAYLOAD) break;
  }
  free(doc);
}

/* Sends the rank on c its host's flows of the plan (--plan), in PLAN frames. Without blocking: a
 * host's part is a few KB and fits an idle socket's buffer; a connection that cannot take it is
 * closed (the rank reconnects and gets the plan with its welcome). Returns 0 or -1 (closed). */
static int push_plan(struct conn *c) {
  size_t n = 0;
  char *doc = mon.o->plan ? mon_planpush_for_host(c->hello.host, &n) : NULL;
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

/* Acts on one whole frame. Returns 0 to go on, -1 when the connection was closed. */
static int on_frame(struct conn *c, int type, const uint8_t *p, uint32_t len) {
  if (c->state == WAIT_HELLO) {
    if (type == C4_FRAME_STATUS) {
      send_status(c);
      close_conn(c, NULL, 0);
      return -1;
    }
    if (type != C4_FRAME_HELLO || c4_frame_get_hello(p, len, &c->hello) != 0) {
      close_conn(c, "expected a HELLO", 1);
      return -1;
    }
    int ok = c4_frame_hello_verify(&c->hello, c->nonce, mon.o->token) &&
             (!mon.o->job || !strcmp(mon.o->job, c->hello.job));
    uint8_t status[2] = {ok ? 0 : 1, ok && mon.o->plan ? 1 : 0}; /* 1: a PLAN follows */
    send_frame(c->fd, C4_FRAME_WELCOME, status, sizeof status);
    if (!ok) {
      C4_WARN("c4mon: refused rank %d of job \"%s\" from %s (pid %u): wrong token or job",
              c->hello.rank, c->hello.job, c->hello.host, c->hello.pid);
      close_conn(c, NULL, 1);
      return -1;
    }
    c->state = UP;
    mon.connected++;
    return push_plan(c);
  }
  if (type == C4_FRAME_RECORDS) {
    if (len < 2) goto bad;
    size_t n = (size_t)(p[0] | p[1] << 8), off = 2;
    for (size_t i = 0; i < n; i++) {
      struct c4_record r;
      int k = c4_frame_get_record(p + off, len - off, &r);
      if (k <= 0 || r.kind == C4_REC_RANK) goto bad; /* a rank cannot speak for c4mon */
      off += (size_t)k;
      take_record(c, &r);
    }
    if (off != len) goto bad;
  } else if (type == C4_FRAME_HEARTBEAT) {
    if (c4_frame_get_heartbeat(p, len, &c->hb) != 0) goto bad;
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
    return -1;
  } else {
    goto bad;
  }
  return 0;
bad:
  mon.bad_frames++;
  close_conn(c, "malformed frame", 0);
  return -1;
}

static void on_readable(struct conn *c) {
  for (;;) {
    if (c->cap - c->len < 4096 && c->cap < C4_FRAME_HDR + C4_FRAME_MAX_PAYLOAD) {
      size_t cap = c->cap ? c->cap * 2 : 8192;
      if (cap > C4_FRAME_HDR + C4_FRAME_MAX_PAYLOAD) cap = C4_FRAME_HDR + C4_FRAME_MAX_PAYLOAD;
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
    if (c && c->state == WAIT_HELLO && now - c->t_open > HELLO_TIMEOUT_NS)
      close_conn(c, "no HELLO within 5 s", 1);
  }
}

int c4_mon_serve(const struct mon_opts *o, volatile int *stop) {
  memset(&mon, 0, sizeof mon);
  mon.o = o;
  mon.sink.out = o->record;
  char host[256], port[16];
  if (split_addr(o->listen, host, sizeof host, port, sizeof port) != 0) {
    C4_WARN("c4mon: --listen %s is not ADDR:PORT", o->listen);
    return C4_EINVAL;
  }
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res = NULL;
  if (getaddrinfo(host, port, &hints, &res) != 0 || !res) {
    C4_WARN("c4mon: cannot resolve %s", o->listen);
    return C4_EINVAL;
  }
  int one = 1;
  mon.lfd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  setsockopt(mon.lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (mon.lfd < 0 || bind(mon.lfd, res->ai_addr, res->ai_addrlen) != 0 || listen(mon.lfd, 4096)) {
    C4_WARN("c4mon: cannot listen on %s: %s", o->listen, strerror(errno));
    freeaddrinfo(res);
    if (mon.lfd >= 0) close(mon.lfd);
    return C4_ESYS;
  }
  freeaddrinfo(res);
  C4_NOTE("c4mon: listening for ranks on %s:%d", host, c4_mon_bound_port(mon.lfd));
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) { /* room for every rank */
    rl.rlim_cur = rl.rlim_max;
    setrlimit(RLIMIT_NOFILE, &rl);
  }
  mon.nconn_max =
      getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < (1u << 20) ? (int)rl.rlim_cur : (1 << 20);
  mon.conn = calloc((size_t)mon.nconn_max, sizeof *mon.conn);
  mon.efd = epoll_create1(EPOLL_CLOEXEC);
  struct epoll_event ev = {.events = EPOLLIN, .data.fd = mon.lfd};
  epoll_ctl(mon.efd, EPOLL_CTL_ADD, mon.lfd, &ev);
  mon.t_start = c4_now_ns();
  struct epoll_event evs[256];
  uint64_t next_tick = 0, next_plan_check = 0;
  if (mon_planpush_load(o->plan) != 0) {
    close(mon.efd);
    close(mon.lfd);
    free(mon.conn);
    return C4_EINVAL;
  }
  while (!*stop) {
    int n = epoll_wait(mon.efd, evs, 256, 100);
    for (int i = 0; i < n; i++) {
      if (evs[i].data.fd == mon.lfd)
        accept_all();
      else if (mon.conn[evs[i].data.fd])
        on_readable(mon.conn[evs[i].data.fd]);
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
      if (o->tick) o->tick(o->tick_arg);
      next_tick = now + 100000000ull;
    }
  }
  for (int fd = 0; fd < mon.nconn_max; fd++)
    if (mon.conn[fd]) close_conn(mon.conn[fd], NULL, 0);
  free(mon.conn);
  close(mon.efd);
  close(mon.lfd);
  return 0;
}

int c4_mon_query_status(const char *addr, char **out) {
  char host[256], port[16];
  if (split_addr(addr, host, sizeof host, port, sizeof port) != 0) return C4_EINVAL;
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
  if (getaddrinfo(host, port, &hints, &res) != 0 || !res) return C4_EINVAL;
  int fd = socket(res->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
  struct timeval tv = {.tv_sec = 5};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  int rc = fd >= 0 && connect(fd, res->ai_addr, res->ai_addrlen) == 0 ? 0 : C4_EREMOTE;
  freeaddrinfo(res);
  uint8_t hdr[C4_FRAME_HDR];
  c4_frame_put_header(hdr, C4_FRAME_STATUS, 0);
  if (!rc && send_all_now(fd, hdr, sizeof hdr) != 0) rc = C4_EREMOTE;
  /* c4mon sends its CHALLENGE first, then the reply in frames; the last one is short */
  char *doc = NULL;
  size_t have = 0;
  for (int frames = 0; !rc; frames++) {
    int type;
    uint32_t len;
    if (frames > 1024 || recv(fd, hdr, sizeof hdr, MSG_WAITALL) != sizeof hdr ||
        c4_frame_get_header(hdr, &type, &len) != 0) {
      rc = C4_EPROTO;
      break;
    }
    char *body = malloc(len + 1);
    if (!body || (len && recv(fd, body, len, MSG_WAITALL) != (ssize_t)len)) {
      free(body);
      rc = C4_EPROTO;
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
  if (fd >= 0) close(fd);
  if (!rc && !doc) rc = C4_EPROTO;
  *out = doc;
  return rc;
}
