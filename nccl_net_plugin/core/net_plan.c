/* net_plan.c -- reads the traffic plan (C4_PLAN) into source-port and interface bindings per
 * directed host pair, and keeps the current one, re-read when its file changes. */
#include "net_plan.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_log.h"

#define PLAN_MAX_BYTES (64 << 20)
#define CHECK_EVERY_NS 1000000000ull
/* Replaced plans kept before the oldest is freed. A reader holds a plan only while it copies one
 * pair's bindings, and reloads are at least CHECK_EVERY_NS apart, so a plan is freed at least
 * RETIRED_MAX seconds after it stopped being current: long after its last reader let go. */
#define RETIRED_MAX 16

struct c4_netplan_stats c4_netplan_stats;

/* ---- the parser: bytes in, plan out ---- */

static int fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(char *err, size_t errlen, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (err && errlen) vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return C4_EINVAL;
}

void c4_netplan_free(struct c4_netplan *p) {
  if (!p) return;
  for (int i = 0; i < p->npairs; i++)
    free(p->pairs[i].binds);
  free(p->pairs);
  free(p);
}

const struct c4_netplan_pair *c4_netplan_find(const struct c4_netplan *p, const char *src,
                                              const char *dst) {
  if (!p) return NULL;
  for (int i = 0; i < p->npairs; i++)
    if (strcmp(p->pairs[i].src, src) == 0 && strcmp(p->pairs[i].dst, dst) == 0) return &p->pairs[i];
  return NULL;
}

/* A string field shorter than cap, copied to out. Returns 0, or C4_EINVAL with err filled. */
static int host_field(json_t *flow, size_t i, const char *key, char *out, size_t cap, char *err,
                      size_t errlen) {
  json_t *v = json_object_get(flow, key);
  if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= cap ||
      strlen(json_string_value(v)) != json_string_length(v))
    return fail(err, errlen, "flows[%zu].%s is not a host name (a string of 1 to %zu bytes)", i,
                key, cap - 1);
  memcpy(out, json_string_value(v), json_string_length(v) + 1);
  return 0;
}

/* Appends flow i's binding to its pair (made on first sight). */
static int add_flow(struct c4_netplan *p, size_t *cap, const char *src, const char *dst,
                    const struct c4_netplan_bind *b, char *err, size_t errlen) {
  struct c4_netplan_pair *pair = (struct c4_netplan_pair *)c4_netplan_find(p, src, dst);
  if (!pair) {
    if ((size_t)p->npairs == *cap) {
      size_t n = *cap ? *cap * 2 : 8;
      struct c4_netplan_pair *grown = realloc(p->pairs, n * sizeof *grown);
      if (!grown) return fail(err, errlen, "out of memory");
      p->pairs = grown;
      *cap = n;
    }
    pair = &p->pairs[p->npairs++];
    memset(pair, 0, sizeof *pair);
    memcpy(pair->src, src, strlen(src) + 1);
    memcpy(pair->dst, dst, strlen(dst) + 1);
  }
  /* grow by doubling: nbinds is a power of two whenever the array is full */
  if ((pair->nbinds & (pair->nbinds - 1)) == 0) {
    size_t n = pair->nbinds ? (size_t)pair->nbinds * 2 : 1;
    struct c4_netplan_bind *grown = realloc(pair->binds, n * sizeof *grown);
    if (!grown) return fail(err, errlen, "out of memory");
    pair->binds = grown;
  }
  pair->binds[pair->nbinds++] = *b;
  return 0;
}

/* An optional integer field 0..max into *out (-1 when absent or null). Returns 0 or C4_EINVAL. */
static int opt_int(json_t *flow, const char *key, long long max, long long *out) {
  json_t *v = json_object_get(flow, key);
  *out = -1;
  if (!v || json_is_null(v)) return 0;
  if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
    return C4_EINVAL;
  *out = json_integer_value(v);
  return 0;
}

static int parse_flow(struct c4_netplan *p, size_t *cap, json_t *flow, size_t i, char *err,
                      size_t errlen) {
  if (!json_is_object(flow)) return fail(err, errlen, "flows[%zu] is not an object", i);
  char src[C4_HOST_MAX], dst[C4_HOST_MAX];
  if (host_field(flow, i, "src", src, sizeof src, err, errlen) != 0 ||
      host_field(flow, i, "dst", dst, sizeof dst, err, errlen) != 0)
    return C4_EINVAL;
  struct c4_netplan_bind b = {.flow_label = -1, .sl = -1, .path_bits = -1};
  long long n;
  if (opt_int(flow, "flow_label", 0xfffff, &n) != 0)
    return fail(err, errlen, "flows[%zu].flow_label is not an integer 0..1048575 or null", i);
  b.flow_label = (int32_t)n;
  if (opt_int(flow, "sl", 15, &n) != 0)
    return fail(err, errlen, "flows[%zu].sl is not an integer 0..15 or null", i);
  b.sl = (int16_t)n;
  if (opt_int(flow, "path_bits", 127, &n) != 0)
    return fail(err, errlen, "flows[%zu].path_bits is not an integer 0..127 or null", i);
  b.path_bits = (int16_t)n;
  json_t *v = json_object_get(flow, "src_port");
  if (v && !json_is_null(v)) {
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 65535)
      return fail(err, errlen, "flows[%zu].src_port is not an integer 1..65535 or null", i);
    b.src_port = (uint16_t)json_integer_value(v);
  }
  v = json_object_get(flow, "ifname");
  if (v && !json_is_null(v)) {
    if (!json_is_string(v) || json_string_length(v) >= IFNAMSIZ ||
        strlen(json_string_value(v)) != json_string_length(v))
      return fail(err, errlen,
                  "flows[%zu].ifname is not an interface name (under %d bytes) or null", i,
                  IFNAMSIZ);
    memcpy(b.ifname, json_string_value(v), json_string_length(v) + 1);
  }
  v = json_object_get(flow, "src_port_idx");
  if (v && (!json_is_integer(v) || json_integer_value(v) < 0))
    return fail(err, errlen, "flows[%zu].src_port_idx is not an integer >= 0", i);
  v = json_object_get(flow, "path");
  if (v && !json_is_string(v) && !json_is_null(v))
    return fail(err, errlen, "flows[%zu].path is not a string", i);
  return add_flow(p, cap, src, dst, &b, err, errlen);
}

int c4_netplan_parse(const char *buf, size_t len, struct c4_netplan **out, char *err,
                     size_t errlen) {
  *out = NULL;
  json_error_t jerr;
  json_t *root = json_loadb(buf, len, 0, &jerr);
  if (!root) return fail(err, errlen, "not JSON: line %d: %s", jerr.line, jerr.text);
  int rc = C4_EINVAL;
  struct c4_netplan *p = NULL;
  json_t *v = json_object_get(root, "v");
  if (!json_is_object(root)) {
    fail(err, errlen, "not a JSON object");
    goto done;
  }
  if (!json_is_integer(v) || json_integer_value(v) != 1) {
    fail(err, errlen, "\"v\" is not 1 (this reader knows version 1 only)");
    goto done;
  }
  json_t *flows = json_object_get(root, "flows");
  if (flows && !json_is_array(flows)) {
    fail(err, errlen, "\"flows\" is not an array");
    goto done;
  }
  if (!(p = calloc(1, sizeof *p))) {
    rc = fail(err, errlen, "out of memory");
    goto done;
  }
  size_t cap = 0, i;
  json_t *flow;
  json_array_foreach(flows, i, flow) {
    if ((rc = parse_flow(p, &cap, flow, i, err, errlen)) != 0) goto done;
  }
  rc = 0;
  *out = p;
  p = NULL;
done:
  c4_netplan_free(p);
  json_decref(root);
  return rc;
}

/* ---- the current plan: C4_PLAN, re-read when the file changes ---- */

/* What a plan file looked like when it was last read; a change means read it again. */
struct file_sig {
  int exists;
  dev_t dev;
  ino_t ino;
  off_t size;
  struct timespec mtime;
  char path[4096];
};

static _Atomic(struct c4_netplan *) current;
static _Atomic uint64_t last_check_ns;
static atomic_int reloading;
/* Owned by the thread that holds `reloading`. */
static struct file_sig seen;
static int seen_valid;
static struct c4_netplan *retired[RETIRED_MAX];
static int retired_next;

static void sig_of(const char *path, const struct stat *st, struct file_sig *s) {
  memset(s, 0, sizeof *s);
  snprintf(s->path, sizeof s->path, "%s", path);
  if (!st) return;
  s->exists = 1;
  s->dev = st->st_dev;
  s->ino = st->st_ino;
  s->size = st->st_size;
  s->mtime = st->st_mtim;
}

static int sig_same(const struct file_sig *a, const struct file_sig *b) {
  return a->exists == b->exists && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
         a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec &&
         strcmp(a->path, b->path) == 0;
}

/* Makes p current (NULL: no plan). The one it replaces is kept a while (RETIRED_MAX). */
static void install(struct c4_netplan *p) {
  struct c4_netplan *old = atomic_exchange(&current, p);
  if (!old) return;
  c4_netplan_free(retired[retired_next]);
  retired[retired_next] = old;
  retired_next = (retired_next + 1) % RETIRED_MAX;
}

/* Reads and parses path without blocking on anything but the read of a regular file. Returns the
 * plan, or NULL with what is wrong in err. */
static struct c4_netplan *read_plan(const char *path, char *err, size_t errlen) {
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0) {
    fail(err, errlen, "cannot open: %s", strerror(errno));
    return NULL;
  }
  struct stat st;
  struct c4_netplan *p = NULL;
  char *buf = NULL;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    fail(err, errlen, "not a regular file");
    goto done;
  }
  if (st.st_size > PLAN_MAX_BYTES) {
    fail(err, errlen, "larger than %d bytes", PLAN_MAX_BYTES);
    goto done;
  }
  size_t size = (size_t)st.st_size, got = 0;
  if (!(buf = malloc(size + 1))) {
    fail(err, errlen, "out of memory");
    goto done;
  }
  while (got < size) {
    ssize_t k = read(fd, buf + got, size - got);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      fail(err, errlen, "read failed: %s", strerror(errno));
      goto done;
    }
    if (k == 0) break; /* shrank while we read: parse what is there */
    got += (size_t)k;
  }
  c4_netplan_parse(buf, got, &p, err, errlen);
done:
  free(buf);
  close(fd);
  return p;
}

/* Runs by one thread at a time (the holder of `reloading`). */
static void check_file(const char *path) {
  struct stat st;
  struct file_sig now;
  int exists = stat(path, &st) == 0, stat_errno = errno;
  sig_of(path, exists ? &st : NULL, &now);
  if (seen_valid && sig_same(&now, &seen)) return;
  seen = now;
  seen_valid = 1;
  char err[256];
  struct c4_netplan *p = NULL;
  if (!exists)
    snprintf(err, sizeof err, "cannot read: %s", strerror(stat_errno));
  else
    p = read_plan(path, err, sizeof err);
  if (!p) {
    atomic_fetch_add(&c4_netplan_stats.bad_plans, 1);
    C4_WARN("C4_PLAN=%s: %s; ignoring the plan, data sockets use ephemeral ports", path, err);
  } else {
    atomic_fetch_add(&c4_netplan_stats.loads, 1);
    C4_INFO("C4_PLAN=%s: read %d host pairs", path, p->npairs);
  }
  install(p);
}

/* A plan c4mon pushed, waiting for the next connect to install it (the connect path owns the
 * plan state; the telemetry thread only hands over). */
static _Atomic(struct c4_netplan *) pushed;
static atomic_int from_file; /* the current plan was read from C4_PLAN */

void c4_netplan_push(const char *json, size_t len) {
  char err[256];
  struct c4_netplan *p = NULL;
  if (c4_netplan_parse(json, len, &p, err, sizeof err) != 0) {
    atomic_fetch_add(&c4_netplan_stats.bad_plans, 1);
    C4_WARN("the plan c4mon pushed: %s; ignored", err);
    return;
  }
  atomic_fetch_add(&c4_netplan_stats.pushes, 1);
  const char *path = getenv("C4_PLAN");
  if (path && *path)
    C4_INFO("c4mon pushed a plan (%d host pairs); C4_PLAN=%s takes precedence", p->npairs, path);
  else
    C4_INFO("c4mon pushed a plan: %d host pairs", p->npairs);
  c4_netplan_free(atomic_exchange(&pushed, p));
}

static void maybe_reload(void) {
  const char *path = getenv("C4_PLAN");
  if (!path || !*path) { /* no file: the plan is what c4mon pushed last, if anything */
    if ((atomic_load(&pushed) || atomic_load(&from_file)) && !atomic_exchange(&reloading, 1)) {
      struct c4_netplan *p = atomic_exchange(&pushed, NULL);
      if (p || atomic_load(&from_file)) install(p); /* C4_PLAN was unset: its plan goes */
      atomic_store(&from_file, 0);
      seen_valid = 0;
      atomic_store(&reloading, 0);
    }
    return;
  }
  uint64_t now = c4_now_ns(), last = atomic_load(&last_check_ns);
  if (last != 0 && now - last < CHECK_EVERY_NS) return;
  if (atomic_exchange(&reloading, 1)) return; /* another thread is checking: use what is there */
  atomic_store(&last_check_ns, now ? now : 1);
  check_file(path);
  atomic_store(&from_file, 1);
  atomic_store(&reloading, 0);
}

int c4_netplan_bindings(const char *src, const char *dst, struct c4_netplan_bind *out, int max) {
  const char *path = getenv("C4_PLAN");
  if ((!path || !*path) && !atomic_load(&current) && !atomic_load(&pushed)) return 0;
  maybe_reload();
  const struct c4_netplan_pair *pair = c4_netplan_find(atomic_load(&current), src, dst);
  if (!pair) return 0;
  int n = pair->nbinds < max ? pair->nbinds : max;
  memcpy(out, pair->binds, (size_t)n * sizeof *out);
  return n;
}

void c4_netplan_reset(void) {
  c4_netplan_free(atomic_exchange(&current, NULL));
  c4_netplan_free(atomic_exchange(&pushed, NULL));
  for (int i = 0; i < RETIRED_MAX; i++) {
    c4_netplan_free(retired[i]);
    retired[i] = NULL;
  }
  retired_next = 0;
  seen_valid = 0;
  atomic_store(&last_check_ns, 0);
  atomic_store(&from_file, 0);
}
