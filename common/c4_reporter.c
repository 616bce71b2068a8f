/* c4_reporter.c -- the job side of the stream protocol: a non-blocking connection state machine
 * driven by the telemetry thread's ticks. Records are encoded only when a RECORDS frame is built,
 * so the queue holds plain records and dropping the oldest is a pointer move. */
#include "c4_reporter.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_env.h"
#include "c4_err.h"
#include "c4_frame.h"
#include "c4_log.h"
#include "c4_owned_fd.h"
#include "c4_rxtime.h"

enum { DOWN, CONNECTING, WAIT_CHALLENGE, WAIT_WELCOME, UP };

#define OUT_CAP (C4_FRAME_HDR + C4_FRAME_MAX_PAYLOAD)
#define IN_CAP (C4_FRAME_HDR + C4_FRAME_MAX_PAYLOAD) /* a whole PLAN frame */
#define BACKOFF_MIN 100000000ull
#define BACKOFF_MAX 5000000000ull
#define TIME_PERIOD 2000000000ull
#define HANDSHAKE_NS 5000000000ull
#define COMMS_MAX 4096 /* communicators remembered for re-announcing; more are sent once only */

static struct {
  int on;
  char host[256], port[16], job[C4_FRAME_NAME], token[256];
  char where[280]; /* host:port as messages name it ([v6]:port), made once */
  uint64_t hb_ns;
  atomic_int state; /* read by c4_reporter_await_plan on another thread */
  int fd;
  struct c4_owned_fd own; /* fd, while it is still c4's: the program may close or replace it */
  int reached;            /* a connect to c4mon's address went through, once at least */
  uint64_t next_try, backoff, since;
  char said[160]; /* the last reason for a dropped connection said, until one comes up */
  struct c4_record *q;
  size_t q_cap, q_head, q_len;
  struct c4_record *comms; /* every comm record pushed, sent again after each reconnect (a
                            * restarted c4mon learns the job's communicators and hosts) */
  size_t ncomms, comms_cap, announce; /* comms[announce..ncomms) wait to be sent again */
  uint8_t out[OUT_CAP];
  size_t out_len, out_off;
  uint8_t in[IN_CAP];
  size_t in_len;
  uint64_t in_arrived; /* when the bytes of the last read had arrived */
  uint64_t next_hb, next_time, t1;
  _Atomic(void (*)(uint64_t *, uint64_t *)) progress;
  _Atomic(void (*)(const char *, size_t)) on_plan;
  char *plan; /* a pushed plan being assembled: plan_have of plan_total bytes */
  uint32_t plan_total, plan_have;
  atomic_int plan_due; /* c4mon's WELCOME said a plan follows, and it has not arrived yet */
  _Atomic uint64_t sent, dropped, connects, failures;
  _Atomic int64_t offset;
  _Atomic uint64_t rtt;
} rep = {.fd = -1};

int c4_reporter_init(void) {
  const char *mon = getenv("C4_MONITOR");
  if (!mon || !*mon) return 0;
  const char *colon = strrchr(mon, ':');
  if (!colon || colon == mon || (size_t)(colon - mon) >= sizeof rep.host || !colon[1] ||
      strlen(colon + 1) >= sizeof rep.port) {
    C4_WARN_SETTING("C4_MONITOR=%s is not host:port; not streaming to c4mon", mon);
    return C4_EINVAL;
  }
  memcpy(rep.host, mon, (size_t)(colon - mon));
  rep.host[colon - mon] = 0;
  if (rep.host[0] == '[' && rep.host[strlen(rep.host) - 1] == ']') { /* [v6]:port */
    memmove(rep.host, rep.host + 1, strlen(rep.host));
    rep.host[strlen(rep.host) - 1] = 0;
  }
  snprintf(rep.port, sizeof rep.port, "%s", colon + 1);
  snprintf(rep.where, sizeof rep.where, strchr(rep.host, ':') ? "[%s]:%s" : "%s:%s", rep.host,
           rep.port);
  char *end = NULL;
  long port = strtol(rep.port, &end, 10);
  if (rep.port[0] < '0' || rep.port[0] > '9' || *end || port < 1 || port > 65535) {
    C4_WARN_SETTING(
        "C4_MONITOR=%s: the port is not a number from 1 to 65535; not streaming to c4mon", mon);
    return C4_EINVAL;
  }
  char first_line[sizeof rep.token];
  const char *job = c4_env_job(), *token = c4_env_token(first_line, sizeof first_line);
  if (strlen(job) >= sizeof rep.job) /* two jobs alike up to there would merge in c4mon */
    C4_WARN_SETTING("C4_JOB is longer than %zu bytes: c4mon sees only its first %zu",
                    sizeof rep.job - 1, sizeof rep.job - 1);
  snprintf(rep.job, sizeof rep.job, "%s", job);
  snprintf(rep.token, sizeof rep.token, "%s", token ? token : "");
  if (!token)
    C4_WARN_SETTING("C4_TOKEN is unset: c4mon will accept this job only if it has no token either");
  /* at most 4 s: c4mon counts a rank silent for its --lost-ms (10 s by default) as lost, and at
   * 20 s every healthy rank was paged lost, then recovered, at every heartbeat
   * (C4_HEARTBEAT_MAX_MS in c4_frame.h) */
  rep.hb_ns = (uint64_t)c4_env_long("C4_HEARTBEAT_MS", 1000, 10, C4_HEARTBEAT_MAX_MS) * 1000000ull;
  rep.q_cap = (size_t)c4_env_long("C4_REPORT_QUEUE", 65536, 16, 1 << 20); /* 224 MiB at most */
  rep.q = calloc(rep.q_cap, sizeof *rep.q);
  if (!rep.q) return C4_ENOMEM;
  rep.backoff = BACKOFF_MIN;
  rep.on = 1;
  c4_frame_crypto_init(); /* here, not on the telemetry thread: see c4_frame.h */
  return 1;
}

void c4_reporter_set_progress(void (*fn)(uint64_t *, uint64_t *)) {
  atomic_store(&rep.progress, fn);
}

/* Keeps a copy of comm record r for re-announcing (telemetry thread). */
static void remember_comm(const struct c4_record *r) {
  if (rep.ncomms == rep.comms_cap) {
    size_t cap = rep.comms_cap ? rep.comms_cap * 2 : 16;
    struct c4_record *grown = cap <= COMMS_MAX ? realloc(rep.comms, cap * sizeof *grown) : NULL;
    if (!grown) return;
    rep.comms = grown;
    rep.comms_cap = cap;
  }
  int idle = rep.announce == rep.ncomms;
  rep.comms[rep.ncomms++] = *r;
  if (idle) rep.announce = rep.ncomms; /* this one goes out through the queue */
}

void c4_reporter_push(const struct c4_record *r) {
  if (!rep.on) return;
  if (r->kind == C4_REC_COMM) remember_comm(r);
  if (rep.q_len == rep.q_cap) { /* full: the oldest goes */
    rep.q_head = (rep.q_head + 1) % rep.q_cap;
    rep.q_len--;
    atomic_fetch_add(&rep.dropped, 1);
  }
  rep.q[(rep.q_head + rep.q_len) % rep.q_cap] = *r;
  rep.q_len++;
}

/* Each reason is said once until a connection comes up: a C4_MONITOR that never answers was
 * silent (the job ran unmonitored without a word), and a refused token said so on every retry,
 * 32 times in 52 s. */
static void drop_connection(const char *why, uint64_t now) {
  if (rep.fd >= 0 && c4_owned_still(&rep.own)) close(rep.fd);
  if (strcmp(rep.said, why)) {
    C4_WARN("c4mon at %s: %s; %s", rep.where, why,
            rep.state == UP ? "reconnecting" : "the job runs on; retrying in the background");
    snprintf(rep.said, sizeof rep.said, "%s", why);
  }
  atomic_fetch_add(&rep.failures, 1);
  rep.fd = -1;
  rep.state = DOWN;
  rep.out_len = rep.out_off = rep.in_len = 0;
  rep.next_try = now + rep.backoff;
  rep.backoff = rep.backoff * 2 > BACKOFF_MAX ? BACKOFF_MAX : rep.backoff * 2;
}

static void start_connect(uint64_t now) {
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res = NULL;
  if (getaddrinfo(rep.host, rep.port, &hints, &res) != 0 || !res) {
    drop_connection("cannot resolve", now);
    return;
  }
  rep.fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  int one = 1;
  if (rep.fd >= 0 && c4_owned_take(&rep.own, rep.fd) != 0) {
    close(rep.fd);
    rep.fd = -1;
  }
  if (rep.fd >= 0) setsockopt(rep.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (rep.fd >= 0) c4_rxtime_enable(rep.fd); /* a TIME answer's arrival, not the next tick */
  int rc = rep.fd < 0 ? -1 : connect(rep.fd, res->ai_addr, res->ai_addrlen);
  int e = errno; /* before freeaddrinfo can change it */
  freeaddrinfo(res);
  if (rc != 0 && e != EINPROGRESS) {
    char why[96];
    snprintf(why, sizeof why, "cannot connect: %s", strerror(e));
    drop_connection(why, now);
    return;
  }
  rep.state = CONNECTING;
  rep.since = now;
}

static void queue_frame(int type, const uint8_t *payload, size_t len) {
  c4_frame_put_header(rep.out + rep.out_len, type, (uint32_t)len);
  if (len) memcpy(rep.out + rep.out_len + C4_FRAME_HDR, payload, len);
  rep.out_len += C4_FRAME_HDR + len;
}

/* Writes what is pending. Returns 0, or -1 when the connection broke. */
static int flush_out(void) {
  while (rep.out_off < rep.out_len) {
    ssize_t k =
        send(rep.fd, rep.out + rep.out_off, rep.out_len - rep.out_off, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (k < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
    rep.out_off += (size_t)k;
  }
  rep.out_len = rep.out_off = 0;
  return 0;
}

/* Reads one whole frame if there is one: 1 with type/payload set, 0 if not yet, C4_EPROTO or
 * C4_EREMOTE broken. */
static int read_frame(int *type, uint8_t **payload, uint32_t *len) {
  for (;;) {
    if (rep.in_len >= C4_FRAME_HDR) {
      if (c4_frame_get_header(rep.in, type, len) != 0 || *len > IN_CAP - C4_FRAME_HDR)
        return C4_EPROTO;
      if (rep.in_len >= C4_FRAME_HDR + *len) {
        *payload = rep.in + C4_FRAME_HDR;
        return 1;
      }
    }
    ssize_t k = c4_rxtime_recv(rep.fd, rep.in + rep.in_len, IN_CAP - rep.in_len, MSG_DONTWAIT,
                               &rep.in_arrived);
    if (k == 0) return C4_EREMOTE;
    if (k < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR ? 0 : -1;
    rep.in_len += (size_t)k;
  }
}

static void consume_frame(uint32_t len) {
  size_t used = C4_FRAME_HDR + len;
  memmove(rep.in, rep.in + used, rep.in_len - used);
  rep.in_len -= used;
}

static void send_hello(void) {
  struct c4_hello h = {.pid = (uint32_t)getpid(), .rank = c4_env_rank()};
  snprintf(h.job, sizeof h.job, "%s", rep.job);
  c4_host_name(h.host, sizeof h.host);
  uint8_t payload[256];
  c4_frame_put_hello(payload, &h, rep.in + C4_FRAME_HDR, rep.token);
  queue_frame(C4_FRAME_HELLO, payload, c4_frame_hello_size());
}

/* Fills the output with a clock probe when one is due, a RECORDS frame from the queue, then a
 * heartbeat. The probe goes first: c4mon reads at most a frame's worth at a time, so a probe
 * behind a full RECORDS frame was read only after c4mon had decoded that frame, and half of the
 * wait counted as clock offset (7-16 ms with c4mon under ASan). */
static void refill(uint64_t now) {
  if (rep.out_len) return;
  if (now >= rep.next_time && !rep.t1) {
    uint64_t t[3] = {now, 0, 0};
    uint8_t b[C4_FRAME_TIME_SIZE];
    c4_frame_put_time(b, t);
    queue_frame(C4_FRAME_TIME, b, sizeof b);
    rep.t1 = now;
    rep.next_time = now + TIME_PERIOD;
  }
  if (rep.q_len || rep.announce < rep.ncomms) { /* re-announced comms first, then the queue */
    uint8_t *frame = rep.out + rep.out_len, *p = frame + C4_FRAME_HDR + 2;
    size_t room = OUT_CAP - rep.out_len - C4_FRAME_HDR - 2, used = 0;
    uint16_t n = 0, again_n = 0;
    while ((rep.q_len || rep.announce < rep.ncomms) && n < 0xffff) {
      int again = rep.announce < rep.ncomms;
      size_t k = c4_frame_put_record(p + used, room - used,
                                     again ? &rep.comms[rep.announce] : &rep.q[rep.q_head]);
      if (!k) break;
      used += k;
      n++;
      if (again) {
        rep.announce++;
        again_n++;
        continue;
      }
      rep.q_head = (rep.q_head + 1) % rep.q_cap;
      rep.q_len--;
    }
    frame[C4_FRAME_HDR] = (uint8_t)n;
    frame[C4_FRAME_HDR + 1] = (uint8_t)(n >> 8);
    c4_frame_put_header(frame, C4_FRAME_RECORDS, (uint32_t)(used + 2));
    rep.out_len += C4_FRAME_HDR + used + 2;
    atomic_fetch_add(&rep.sent, (uint64_t)(n - again_n)); /* the queue's records, once each */
  }
  if (now >= rep.next_hb && rep.out_len + C4_FRAME_HDR + C4_FRAME_HEARTBEAT_SIZE <= OUT_CAP) {
    struct c4_heartbeat hb = {.t = now,
                              .dropped = atomic_load(&rep.dropped),
                              .offset = atomic_load(&rep.offset),
                              .rtt = atomic_load(&rep.rtt)};
    void (*fn)(uint64_t *, uint64_t *) = atomic_load(&rep.progress);
    if (fn) fn(&hb.entered, &hb.done);
    uint8_t b[C4_FRAME_HEARTBEAT_SIZE];
    c4_frame_put_heartbeat(b, &hb);
    queue_frame(C4_FRAME_HEARTBEAT, b, sizeof b);
    rep.next_hb = now + rep.hb_ns;
  }
}

/* A TIME answer: keep the offset from the exchange with the smallest round trip. */
static void on_time(const uint8_t *p, uint32_t len, uint64_t t4) {
  uint64_t t[3];
  if (c4_frame_get_time(p, len, t) != 0 || t[0] != rep.t1) return;
  rep.t1 = 0;
  uint64_t rtt = (t4 - t[0]) - (t[2] - t[1]);
  uint64_t best = atomic_load(&rep.rtt);
  if (best && rtt > best * 2) return;
  int64_t off = ((int64_t)(t[1] - t[0]) + (int64_t)(t[2] - t4)) / 2;
  atomic_store(&rep.offset, off);
  atomic_store(&rep.rtt, rtt);
}

/* A PLAN part: parts come in order; a part at offset 0 starts a plan afresh, one out of order
 * drops what was gathered. A whole plan goes to the callback (the plugin's plan). */
static int on_plan_part(const uint8_t *p, uint32_t len) {
  uint32_t total, offset, n;
  const uint8_t *part;
  if (c4_frame_get_plan_part(p, len, &total, &offset, &part, &n) != 0) return C4_EPROTO;
  if (offset == 0) {
    free(rep.plan);
    rep.plan = malloc(total ? total : 1);
    rep.plan_total = total;
    rep.plan_have = 0;
    if (!rep.plan) return 0; /* no memory: this plan is skipped, the connection kept */
  }
  if (!rep.plan || total != rep.plan_total || offset != rep.plan_have) {
    free(rep.plan);
    rep.plan = NULL;
    return 0;
  }
  memcpy(rep.plan + offset, part, n);
  rep.plan_have += n;
  if (rep.plan_have == rep.plan_total) {
    void (*fn)(const char *, size_t) = atomic_load(&rep.on_plan);
    if (fn) fn(rep.plan, rep.plan_total);
    free(rep.plan);
    rep.plan = NULL;
    atomic_store(&rep.plan_due, 0);
  }
  return 0;
}

void c4_reporter_on_plan(void (*fn)(const char *json, size_t len)) {
  atomic_store(&rep.on_plan, fn);
}

int c4_reporter_await_plan(int timeout_ms) {
  if (!rep.on) return 0;
  uint64_t end = c4_now_ns() + (uint64_t)timeout_ms * 1000000ull;
  unsigned long failures = atomic_load(&rep.failures);
  while (c4_now_ns() < end) {
    if (rep.state == UP && !atomic_load(&rep.plan_due)) return 1;
    if (atomic_load(&rep.failures) != failures) return 0; /* c4mon is not there: no wait */
    usleep(1000);
  }
  return 0;
}

/* Moves a connection that is not up yet along: starts one when it is due, drops one whose
 * handshake is late, notices a connect that finished. Returns 1 when the tick goes on to read
 * frames, 0 when there is no connection to read (or it was just dropped). */
static int step_connect(uint64_t now) {
  if (rep.state == DOWN) {
    if (now >= rep.next_try) start_connect(now);
    if (rep.state == DOWN) return 0;
  }
  if (rep.state != UP && now - rep.since > HANDSHAKE_NS) {
    drop_connection("no handshake within 5 s (is it c4mon's rank port, and not its --metrics or "
                    "--subscribe port?)",
                    now);
    return 0;
  }
  if (rep.state == CONNECTING) {
    int err = 0;
    socklen_t l = sizeof err;
    if (getsockopt(rep.fd, SOL_SOCKET, SO_ERROR, &err, &l) != 0 || err) {
      char why[96];
      snprintf(why, sizeof why, "cannot connect: %s", strerror(err ? err : errno));
      drop_connection(why, now);
      return 0;
    }
    rep.state = WAIT_CHALLENGE;
    rep.reached = 1; /* a refusal after this is said as one, not as "never reached" */
  }
  return 1;
}

/* Ends the connection over the frame being read (len bytes), saying why. Returns C4_EPROTO. */
static int drop_at_frame(uint32_t len, const char *why, uint64_t now) {
  consume_frame(len);
  drop_connection(why, now);
  return C4_EPROTO;
}

/* One frame from c4mon, taken as the state it arrives in allows. Returns 0, or -1 when it ended
 * the connection. */
static int on_frame(int type, uint8_t *p, uint32_t len, uint64_t now) {
  if (rep.state == WAIT_CHALLENGE && type == C4_FRAME_CHALLENGE && len == C4_FRAME_CHALLENGE_SIZE) {
    send_hello();
    rep.state = WAIT_WELCOME;
  } else if (rep.state == WAIT_WELCOME && type == C4_FRAME_WELCOME && len >= 2) {
    if (p[0]) return drop_at_frame(len, "c4mon refused this job (wrong C4_TOKEN or C4_JOB?)", now);
    atomic_store(&rep.plan_due, p[1] & 1); /* before UP: see c4_reporter_await_plan */
    if (atomic_load(&rep.connects) > 0) rep.announce = 0; /* a new c4mon: tell it again */
    rep.state = UP;
    if (rep.said[0]) /* what was said last stands until it is taken back */
      C4_NOTE("c4mon at %s: connected, streaming again", rep.where);
    rep.said[0] = 0;
    rep.backoff = BACKOFF_MIN;
    rep.next_hb = rep.next_time = now;
    atomic_fetch_add(&rep.connects, 1);
  } else if (rep.state == UP && type == C4_FRAME_TIME) {
    on_time(p, len, rep.in_arrived);
  } else if (rep.state == UP && type == C4_FRAME_PLAN) {
    if (on_plan_part(p, len) != 0) return drop_at_frame(len, "c4mon sent a malformed plan", now);
  } else {
    return drop_at_frame(len, "c4mon sent an unexpected frame", now);
  }
  consume_frame(len);
  return 0;
}

/* Sends what waits: several frames a tick while records wait. */
static void send_queued(uint64_t now) {
  for (int frames = 0; frames < 16; frames++) {
    if (rep.state == UP) refill(now);
    if (flush_out() < 0) {
      drop_connection("connection lost", now);
      return;
    }
    if (rep.out_len || !rep.q_len) break;
  }
}

void c4_reporter_tick(uint64_t now) {
  if (!rep.on) return;
  if (rep.fd >= 0 && !c4_owned_still(&rep.own)) { /* its number names the program's file now */
    rep.fd = -1;
    drop_connection("the program closed or replaced c4's socket", now);
  }
  if (!step_connect(now)) return;
  int type, rc;
  uint8_t *p;
  uint32_t len;
  while ((rc = read_frame(&type, &p, &len)) == 1)
    if (on_frame(type, p, len, now) != 0) return;
  if (rc < 0) {
    drop_connection(rep.state == UP ? "connection lost"
                                    : "the far end closed before c4mon's handshake (is it c4mon's "
                                      "rank port, and not its --metrics or --subscribe port?)",
                    now);
    return;
  }
  send_queued(now);
}

void c4_reporter_finish(int timeout_ms) {
  if (!rep.on) return;
  uint64_t end = c4_now_ns() + (uint64_t)timeout_ms * 1000000ull;
  while (c4_now_ns() < end && (rep.state != UP || rep.q_len || rep.out_len)) {
    /* a c4mon this process never reached is not waited for: with C4_MONITOR naming a dead
     * address, every process's exit took the whole timeout (--layout auto's probes: 1.5 s of
     * probing became 8.5 s) */
    if (rep.state == DOWN && atomic_load(&rep.failures) && !atomic_load(&rep.connects)) break;
    c4_reporter_tick(c4_now_ns());
    usleep(1000);
  }
  if (rep.state == UP && !rep.out_len && c4_owned_still(&rep.own)) {
    queue_frame(C4_FRAME_BYE, NULL, 0);
    flush_out();
  }
  free(rep.plan);
  rep.plan = NULL;
  /* a job shorter than a connect's timeout, its c4mon behind a firewall that drops packets,
   * ended without a word: nothing had failed yet, so nothing had been said */
  if (!atomic_load(&rep.connects) && !rep.reached && rep.q_len + atomic_load(&rep.dropped) > 0)
    C4_WARN_SETTING("c4mon at %s was never reached: this process's %llu records were not "
                    "delivered",
                    rep.where, (unsigned long long)(rep.q_len + atomic_load(&rep.dropped)));
  atomic_fetch_add(&rep.dropped, rep.q_len); /* what could not be delivered */
  rep.q_len = 0;
  if (rep.fd >= 0 && c4_owned_still(&rep.own)) close(rep.fd);
  rep.fd = -1;
  rep.state = DOWN;
  rep.on = 0;
}

/* What a forked child dropped of the parent's (c4_reporter_forget_parent); volatile: stores no
 * compiler may leave out. */
static void *volatile left_at_fork[3];

void c4_reporter_forget_parent(void) {
  if (rep.fd >= 0 && c4_owned_still(&rep.own)) close(rep.fd); /* the child's copy only */
  rep.fd = -1;
  rep.state = DOWN;
  rep.on = 0; /* c4_reporter_init starts it again, in the child's name */
  /* dropped, not freed: the parent's telemetry thread may have been between a realloc or a free
   * and its pointer's store when the fork came (a free here would be a double free); kept
   * reachable, so that a leak checker does not fail the child's exit over them */
  left_at_fork[0] = rep.q;
  left_at_fork[1] = rep.comms;
  left_at_fork[2] = rep.plan;
  rep.q = rep.comms = NULL;
  rep.plan = NULL;
  rep.q_cap = rep.q_head = rep.q_len = rep.ncomms = rep.comms_cap = rep.announce = 0;
  rep.out_len = rep.out_off = rep.in_len = 0;
  rep.plan_total = rep.plan_have = 0;
  atomic_store(&rep.plan_due, 0);
  rep.next_try = 0;
  rep.reached = 0;
  rep.said[0] = 0;
  atomic_store(&rep.sent, 0);
  atomic_store(&rep.dropped, 0);
  atomic_store(&rep.connects, 0);
  atomic_store(&rep.failures, 0);
  atomic_store(&rep.offset, 0);
  atomic_store(&rep.rtt, 0);
}

void c4_reporter_stats(struct c4_reporter_stats *s) {
  s->sent = atomic_load(&rep.sent);
  s->dropped = atomic_load(&rep.dropped);
  s->connects = atomic_load(&rep.connects);
  s->failures = atomic_load(&rep.failures);
  s->connected = rep.state == UP;
  s->offset = atomic_load(&rep.offset);
  s->rtt = atomic_load(&rep.rtt);
}
