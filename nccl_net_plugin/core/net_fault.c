/* net_fault.c -- C4_FAULT: parsing the fault list, and the checks the transport's hooks call. */
#include "net_fault.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_clock.h"
#include "c4_env.h"
#include "c4_err.h"
#include "c4_log.h"

struct c4_fault_stats c4_fault_stats;

/* ---- parsing ------------------------------------------------------------------------------ */

#define TEXT_MAX 64 /* longest clause text quoted in an error */

static void clause_error(struct c4_fault_spec *out, int index, const char *text, size_t len,
                         const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static void clause_error(struct c4_fault_spec *out, int index, const char *text, size_t len,
                         const char *fmt, ...) {
  if (out->nerr >= C4_FAULT_MAX) return;
  char *e = out->err[out->nerr++];
  int shown = len > TEXT_MAX ? TEXT_MAX : (int)len;
  int k = snprintf(e, C4_FAULT_ERR_MAX, "C4_FAULT clause %d \"%.*s%s\": ", index, shown, text,
                   len > TEXT_MAX ? "..." : "");
  if (k < 0 || k >= C4_FAULT_ERR_MAX) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(e + k, (size_t)(C4_FAULT_ERR_MAX - k), fmt, ap);
  va_end(ap);
}

/* A non-negative integer that fills v[0..len). */
static int parse_int(const char *v, size_t len, long max, long *out) {
  char buf[32];
  if (len == 0 || len >= sizeof buf) return C4_EINVAL;
  memcpy(buf, v, len);
  buf[len] = 0;
  char *end = NULL;
  errno = 0;
  long x = strtol(buf, &end, 10);
  if (errno || *end || buf[0] == '-' || buf[0] == '+' || x < 0 || x > max) return C4_EINVAL;
  *out = x;
  return 0;
}

/* A finite non-negative decimal number that fills v[0..len). */
static int parse_num(const char *v, size_t len, double *out) {
  char buf[32];
  if (len == 0 || len >= sizeof buf) return C4_EINVAL;
  memcpy(buf, v, len);
  buf[len] = 0;
  char *end = NULL;
  errno = 0;
  double x = strtod(buf, &end);
  if (errno || *end || !isfinite(x) || x < 0 || buf[0] == '-' || buf[0] == '+') return C4_EINVAL;
  *out = x;
  return 0;
}

static size_t trim(const char **s, size_t len) {
  while (len && (**s == ' ' || **s == '\t')) {
    (*s)++;
    len--;
  }
  while (len && ((*s)[len - 1] == ' ' || (*s)[len - 1] == '\t'))
    len--;
  return len;
}

#define MAX_SECONDS 1e6 /* windows beyond ~11 days are surely typos */

/* One clause being parsed: where errors go, the clause's text, and what its items gave. */
struct clause_parse {
  struct c4_fault_spec *out;
  int index;
  const char *s;
  size_t len;
  struct c4_fault_clause *c;
  int have_us, have_mbps, have_for, have_time;
};

#define BAD(x, ...) (clause_error((x)->out, (x)->index, (x)->s, (x)->len, __VA_ARGS__), C4_EINVAL)

/* The kind before the colon (klen bytes at kind). */
static int parse_kind(struct clause_parse *x, const char *kind, size_t klen) {
  if (klen == 5 && !memcmp(x->s, "delay", 5))
    x->c->kind = C4_FAULT_DELAY;
  else if (klen == 4 && !memcmp(x->s, "rate", 4))
    x->c->kind = C4_FAULT_RATE;
  else if (klen == 5 && !memcmp(x->s, "stall", 5))
    x->c->kind = C4_FAULT_STALL;
  else
    return BAD(x, "unknown kind \"%.*s\" (delay, rate or stall)", (int)(klen > 16 ? 16 : klen),
               kind);
  return 0;
}

#define KEY(k) (keylen == sizeof(k) - 1 && !memcmp(key, k, keylen))

/* peer=, rank=, sock=: who the fault applies to. */
static int parse_who(struct clause_parse *x, const char *key, size_t keylen, const char *val,
                     size_t vlen) {
  struct c4_fault_clause *c = x->c;
  long v;
  if (KEY("sock")) {
    if (c->kind != C4_FAULT_RATE) return BAD(x, "sock applies to rate only");
    if (parse_int(val, vlen, C4_FAULT_SOCKS - 1, &v) != 0)
      return BAD(x, "sock is not an integer in [0, %d]", C4_FAULT_SOCKS - 1);
    c->sock = (int)v;
    return 0;
  }
  if (KEY("peer") && c->kind == C4_FAULT_STALL)
    return BAD(x, "peer does not apply to stall (it stalls every peer)");
  if (parse_int(val, vlen, INT_MAX, &v) != 0)
    return BAD(x, "%.*s is not an integer", (int)keylen, key);
  *(KEY("peer") ? &c->peer : &c->rank) = (int)v;
  return 0;
}

/* us=, mbps=: how much. */
static int parse_amount(struct clause_parse *x, const char *key, size_t keylen, const char *val,
                        size_t vlen) {
  struct c4_fault_clause *c = x->c;
  long v;
  double d;
  if (KEY("us")) {
    if (c->kind != C4_FAULT_DELAY) return BAD(x, "us applies to delay only");
    if (parse_int(val, vlen, 60000000L, &v) != 0)
      return BAD(x, "us is not an integer in [0, 60000000]");
    c->us = (uint64_t)v;
    x->have_us = 1;
    return 0;
  }
  if (c->kind != C4_FAULT_RATE) return BAD(x, "mbps applies to rate only");
  if (parse_num(val, vlen, &d) != 0 || d < 0.001 || d > 1e6)
    return BAD(x, "mbps is not a number in [0.001, 1000000]");
  c->mbps = d;
  x->have_mbps = 1;
  return 0;
}

/* after_s=, for_s=, from_step=, to_step=: when. */
static int parse_when(struct clause_parse *x, const char *key, size_t keylen, const char *val,
                      size_t vlen) {
  struct c4_fault_clause *c = x->c;
  long v;
  double d;
  if (KEY("from_step") || KEY("to_step")) {
    if (parse_int(val, vlen, INT_MAX, &v) != 0 || v < 1)
      return BAD(x, "%.*s is not a step number in [1, %d]", (int)keylen, key, INT_MAX);
    *(KEY("from_step") ? &c->from_step : &c->to_step) = (uint64_t)v;
    return 0;
  }
  if (parse_num(val, vlen, &d) != 0 || d > MAX_SECONDS || (KEY("for_s") && d <= 0))
    return BAD(x, "%.*s is not a number of seconds in %s", (int)keylen, key,
               KEY("for_s") ? "(0, 1000000]" : "[0, 1000000]");
  uint64_t ns = (uint64_t)llround(d * 1e9);
  x->have_time = 1;
  if (KEY("for_s")) {
    c->for_ns = ns;
    x->have_for = 1;
  } else {
    c->after_ns = ns;
  }
  return 0;
}

/* One key=value item (ilen bytes at item, trimmed). */
static int parse_item(struct clause_parse *x, const char *item, size_t ilen) {
  const char *eq = memchr(item, '=', ilen);
  if (!eq) return BAD(x, "\"%.*s\" is not key=value", (int)ilen, item);
  const char *key = item;
  size_t keylen = trim(&key, (size_t)(eq - item));
  const char *val = eq + 1;
  size_t vlen = trim(&val, ilen - (size_t)(eq - item) - 1);
  if (KEY("peer") || KEY("rank") || KEY("sock")) return parse_who(x, key, keylen, val, vlen);
  if (KEY("us") || KEY("mbps")) return parse_amount(x, key, keylen, val, vlen);
  if (KEY("after_s") || KEY("for_s") || KEY("from_step") || KEY("to_step"))
    return parse_when(x, key, keylen, val, vlen);
  return BAD(x, "unknown key \"%.*s\"", (int)(keylen > 16 ? 16 : keylen), key);
}

#undef KEY

/* What the clause as a whole must hold once every item is read. */
static int check_clause(struct clause_parse *x) {
  struct c4_fault_clause *c = x->c;
  if (c->to_step && !c->from_step) c->from_step = 1;
  if (c->from_step) {
    /* a stall stops the steps that would end it; a window is either steps or seconds */
    if (c->kind == C4_FAULT_STALL) return BAD(x, "stall takes after_s/for_s, not steps");
    if (x->have_time) return BAD(x, "give steps (from_step/to_step) or seconds, not both");
    if (c->to_step && c->to_step < c->from_step) return BAD(x, "to_step is before from_step");
  }
  if (c->kind != C4_FAULT_STALL && c->peer < 0)
    return BAD(x, "%s needs peer=RANK", c->kind == C4_FAULT_DELAY ? "delay" : "rate");
  if ((c->kind == C4_FAULT_DELAY && !x->have_us) || (c->kind == C4_FAULT_RATE && !x->have_mbps))
    return BAD(x, "%s", c->kind == C4_FAULT_DELAY ? "delay needs us=N" : "rate needs mbps=M");
  /* A stall from init to the end would only hang the job: demand a window. */
  if (c->kind == C4_FAULT_STALL && !x->have_for && c->after_ns == 0)
    return BAD(x, "stall needs after_s= or for_s=");
  return 0;
}

/* Parses one clause "kind:key=value,..." into *c. Returns 0, or -1 after recording an error. */
static int parse_clause(struct c4_fault_spec *out, int index, const char *s, size_t len,
                        struct c4_fault_clause *c) {
  struct clause_parse x = {.out = out, .index = index, .s = s, .len = len, .c = c};
  const char *colon = memchr(s, ':', len);
  const char *kind = s;
  size_t klen = trim(&kind, colon ? (size_t)(colon - s) : len);
  *c = (struct c4_fault_clause){.rank = -1, .peer = -1, .sock = -1};
  if (parse_kind(&x, kind, klen) != 0) return C4_EINVAL;
  const char *p = colon ? colon + 1 : s + len, *end = s + len;
  while (p < end) {
    const char *comma = memchr(p, ',', (size_t)(end - p));
    const char *item = p;
    size_t ilen = trim(&item, (size_t)((comma ? comma : end) - p));
    p = comma ? comma + 1 : end;
    if (ilen != 0 && parse_item(&x, item, ilen) != 0) return C4_EINVAL;
  }
  return check_clause(&x);
}

#undef BAD

void c4_fault_parse(const char *spec, struct c4_fault_spec *out) {
  memset(out, 0, sizeof *out);
  if (!spec) return;
  int index = 0;
  const char *p = spec;
  while (*p) {
    const char *semi = strchr(p, ';');
    size_t raw = semi ? (size_t)(semi - p) : strlen(p);
    const char *s = p;
    size_t len = trim(&s, raw);
    p = semi ? semi + 1 : p + raw;
    index++;
    if (len == 0) continue; /* "a;;b" or a trailing ';' */
    struct c4_fault_clause c;
    if (parse_clause(out, index, s, len, &c) != 0) continue;
    if (out->n == C4_FAULT_MAX) {
      clause_error(out, index, s, len, "more than %d clauses", C4_FAULT_MAX);
      continue;
    }
    out->clause[out->n++] = c;
  }
}

/* ---- the faults of this process ----------------------------------------------------------- */

/* Written once by c4_fault_load before any comm exists, read-only afterwards: the data path
 * reads it without locks. */
static struct {
  int n;
  struct c4_fault_clause clause[C4_FAULT_MAX];
  uint64_t t0; /* the plugin's init, on c4_now_ns's clock */
  int has_stall;
} faults;

static _Atomic uint64_t cur_step; /* c4_fault_set_step's; 0 until a program reports one */

void c4_fault_set_step(uint64_t step) {
  atomic_store_explicit(&cur_step, step, memory_order_relaxed);
}

void c4_fault_load(void) {
  const char *spec = getenv("C4_FAULT");
  if (!spec || !*spec) return;
  static struct c4_fault_spec parsed; /* too big for a helper's stack; loaded once */
  c4_fault_parse(spec, &parsed);
  for (int i = 0; i < parsed.nerr; i++)
    C4_WARN_SETTING("%s; clause ignored", parsed.err[i]);
  int self = c4_env_rank();
  faults.t0 = c4_now_ns();
  for (int i = 0; i < parsed.n; i++) {
    const struct c4_fault_clause *c = &parsed.clause[i];
    if (c->rank >= 0 && c->rank != self) continue;
    faults.clause[faults.n++] = *c;
    faults.has_stall |= c->kind == C4_FAULT_STALL;
    const char *what = c->kind == C4_FAULT_DELAY  ? "delay"
                       : c->kind == C4_FAULT_RATE ? "rate"
                                                  : "stall";
    if (c->from_step)
      C4_INFO("C4_FAULT: rank %d applies %s peer %d us %llu mbps %g in steps %llu to %llu", self,
              what, c->peer, (unsigned long long)c->us, c->mbps, (unsigned long long)c->from_step,
              (unsigned long long)c->to_step);
    else
      C4_INFO("C4_FAULT: rank %d applies %s peer %d us %llu mbps %g after %.3f s for %.3f s", self,
              what, c->peer, (unsigned long long)c->us, c->mbps, (double)c->after_ns / 1e9,
              c->for_ns ? (double)c->for_ns / 1e9 : INFINITY);
  }
}

static int window_open(const struct c4_fault_clause *c, uint64_t now) {
  if (c->from_step) {
    uint64_t step = atomic_load_explicit(&cur_step, memory_order_relaxed);
    return step >= c->from_step && (c->to_step == 0 || step <= c->to_step);
  }
  uint64_t from = faults.t0 + c->after_ns;
  return now >= from && (c->for_ns == 0 || now < from + c->for_ns);
}

void c4_fault_conn_init(struct c4_fault_conn *f, int is_send, int peer_rank) {
  *f = (struct c4_fault_conn){0};
  for (int i = 0; i < faults.n; i++) {
    const struct c4_fault_clause *c = &faults.clause[i];
    if (!is_send || c->peer < 0 || c->peer != peer_rank) continue;
    if (c->kind == C4_FAULT_DELAY) f->delay_mask |= 1u << i;
    if (c->kind == C4_FAULT_RATE) f->rate_mask |= 1u << i;
  }
  f->active = faults.has_stall || f->delay_mask || f->rate_mask;
}

uint64_t c4_fault_send_delay(const struct c4_fault_conn *f, uint64_t now) {
  uint64_t ns = 0;
  for (int i = 0; i < faults.n; i++)
    if ((f->delay_mask >> i & 1) && window_open(&faults.clause[i], now))
      ns += faults.clause[i].us * 1000;
  if (ns) atomic_fetch_add_explicit(&c4_fault_stats.delayed_sends, 1, memory_order_relaxed);
  return ns;
}

/* The stall window that holds the process at now, or NULL. */
static const struct c4_fault_clause *stall_at(uint64_t now) {
  if (!faults.has_stall) return NULL;
  for (int i = 0; i < faults.n; i++)
    if (faults.clause[i].kind == C4_FAULT_STALL && window_open(&faults.clause[i], now))
      return &faults.clause[i];
  return NULL;
}

int c4_fault_stalled(const struct c4_fault_conn *f, uint64_t now) {
  (void)f; /* stalls hold every comm of the process alike */
  if (!stall_at(now)) return 0;
  atomic_fetch_add_explicit(&c4_fault_stats.stalled_calls, 1, memory_order_relaxed);
  return 1;
}

/* Nanoseconds one byte takes at the slowest rate clause open at now, among the clauses for the
 * whole connection (sock < 0) or those naming data socket sock (sock >= 0); 0: not paced. */
static double pace_ns_per_byte(const struct c4_fault_conn *f, uint64_t now, int sock) {
  double ns = 0;
  for (int i = 0; i < faults.n; i++)
    if ((f->rate_mask >> i & 1) && faults.clause[i].sock == sock &&
        window_open(&faults.clause[i], now)) {
      double c = 8000.0 / faults.clause[i].mbps; /* 8 bits / (M * 1e6 bit/s) in ns */
      if (c > ns) ns = c;
    }
  return ns;
}

/* The pacer: a token bucket kept as the time its debt is paid (tat). A write may go when the debt
 * is paid and takes at most one burst; idle time banks at most one burst, which also absorbs the
 * oversleep of a millisecond poll so the long-run rate stays at the clause's. */
#define BURST_NS 4000000ull /* 4 ms of the rate */
#define BURST_MIN 16384     /* but never writes so small that syscalls dominate */

/* One bucket's allowance of want bytes at ns per byte. */
static size_t bucket_allow(_Atomic uint64_t *tat, double ns, uint64_t now, size_t want) {
  if (ns == 0) return want;
  if (atomic_load_explicit(tat, memory_order_relaxed) > now) {
    atomic_fetch_add_explicit(&c4_fault_stats.paced_waits, 1, memory_order_relaxed);
    return 0;
  }
  size_t burst = (size_t)((double)BURST_NS / ns);
  if (burst < BURST_MIN) burst = BURST_MIN;
  return want < burst ? want : burst;
}

static void bucket_charge(_Atomic uint64_t *tat, double ns, uint64_t now, size_t sent) {
  if (ns == 0 || sent == 0) return;
  uint64_t cost = (uint64_t)((double)sent * ns);
  uint64_t floor = now > BURST_NS ? now - BURST_NS : 0;
  uint64_t old = atomic_load_explicit(tat, memory_order_relaxed), next;
  do {
    next = (old > floor ? old : floor) + cost;
  } while (!atomic_compare_exchange_weak_explicit(tat, &old, next, memory_order_relaxed,
                                                  memory_order_relaxed));
}

/* A socket's writes pass two buckets: the connection's (clauses without sock=) and, for a data
 * socket, its own (clauses naming it); the stricter one decides. */
size_t c4_fault_pace_allow(struct c4_fault_conn *f, uint64_t now, int sock, size_t want) {
  size_t allow = bucket_allow(&f->tat, pace_ns_per_byte(f, now, -1), now, want);
  if (sock >= 0 && sock < C4_FAULT_SOCKS && allow)
    allow = bucket_allow(&f->tat_sock[sock], pace_ns_per_byte(f, now, sock), now, allow);
  return allow;
}

void c4_fault_pace_charge(struct c4_fault_conn *f, uint64_t now, int sock, size_t sent) {
  bucket_charge(&f->tat, pace_ns_per_byte(f, now, -1), now, sent);
  if (sock >= 0 && sock < C4_FAULT_SOCKS)
    bucket_charge(&f->tat_sock[sock], pace_ns_per_byte(f, now, sock), now, sent);
}

double c4_fault_pace_rate(const struct c4_fault_conn *f, uint64_t now, int sock) {
  double ns = pace_ns_per_byte(f, now, -1);
  if (sock >= 0 && sock < C4_FAULT_SOCKS) {
    double own = pace_ns_per_byte(f, now, sock);
    if (own > ns) ns = own;
  }
  return ns > 0 ? 1.0 / ns : 0;
}

int c4_fault_hold_ms(const struct c4_fault_conn *f, uint64_t now, int sock) {
  uint64_t until = 0;
  const struct c4_fault_clause *st = stall_at(now);
  if (st) until = st->for_ns ? faults.t0 + st->after_ns + st->for_ns : UINT64_MAX;
  uint64_t tat = atomic_load_explicit(&f->tat, memory_order_relaxed);
  if (f->rate_mask && tat > now && tat > until) until = tat;
  if (sock >= 0 && sock < C4_FAULT_SOCKS) {
    tat = atomic_load_explicit(&f->tat_sock[sock], memory_order_relaxed);
    if (f->rate_mask && tat > now && tat > until) until = tat;
  }
  if (until <= now) return C4_NONE;
  uint64_t ms = (until - now + 999999) / 1000000;
  return ms > INT_MAX ? INT_MAX : (int)ms;
}
