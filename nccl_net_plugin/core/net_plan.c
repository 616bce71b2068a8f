/* net_plan.c -- reads the traffic plan (C4_PLAN) into source-port and interface bindings per
 * directed host pair, and keeps the current one, re-read when its file changes. */
#include "net_plan.h"

#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_hash.h"
#include "c4_log.h"
#include "c4_planfile.h"

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
  free(p->avoid);
  free(p);
}

uint64_t c4_netplan_path_hash(const char *name) {
  uint64_t h = c4_fnv1a_str(C4_FNV_OFFSET, name);
  return h ? h : 1;
}

const struct c4_netplan_pair *c4_netplan_find(const struct c4_netplan *p, const char *src,
                                              const char *dst) {
  if (!p) return NULL;
  for (int i = 0; i < p->npairs; i++)
    if (strcmp(p->pairs[i].src, src) == 0 && strcmp(p->pairs[i].dst, dst) == 0) return &p->pairs[i];
  return NULL;
}

/* Appends a flow's binding to its pair (made on first sight). */
static int add_flow(struct c4_netplan *p, size_t *cap, const struct c4_planfile_flow *f, char *err,
                    size_t errlen) {
  struct c4_netplan_pair *pair = (struct c4_netplan_pair *)c4_netplan_find(p, f->src, f->dst);
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
    memcpy(pair->src, f->src, sizeof pair->src);
    memcpy(pair->dst, f->dst, sizeof pair->dst);
  }
  /* grow by doubling: nbinds is a power of two whenever the array is full */
  if ((pair->nbinds & (pair->nbinds - 1)) == 0) {
    size_t n = pair->nbinds ? (size_t)pair->nbinds * 2 : 1;
    struct c4_netplan_bind *grown = realloc(pair->binds, n * sizeof *grown);
    if (!grown) return fail(err, errlen, "out of memory");
    pair->binds = grown;
  }
  struct c4_netplan_bind *b = &pair->binds[pair->nbinds++];
  *b = (struct c4_netplan_bind){.path_hash = f->path ? c4_netplan_path_hash(f->path) : 0,
                                .src_port = f->src_port,
                                .flow_label = f->flow_label,
                                .sl = f->sl,
                                .path_bits = f->path_bits};
  memcpy(b->ifname, f->ifname, sizeof b->ifname);
  return 0;
}

/* Groups the flows of file (freed here) by host pair into *out. Returns 0 or C4_EINVAL. */
static int group_flows(struct c4_planfile *file, struct c4_netplan **out, char *err,
                       size_t errlen) {
  struct c4_netplan *p = calloc(1, sizeof *p);
  int rc = p ? 0 : fail(err, errlen, "out of memory");
  size_t cap = 0;
  for (size_t i = 0; rc == 0 && i < file->nflows; i++)
    rc = add_flow(p, &cap, &file->flows[i], err, errlen);
  if (rc == 0 && file->navoid && !(p->avoid = calloc(file->navoid, sizeof *p->avoid)))
    rc = fail(err, errlen, "out of memory");
  for (size_t i = 0; rc == 0 && i < file->navoid; i++)
    p->avoid[p->navoid++] = c4_netplan_path_hash(file->avoid[i]);
  c4_planfile_free(file);
  if (rc != 0) {
    c4_netplan_free(p);
    return rc;
  }
  *out = p;
  return 0;
}

int c4_netplan_parse(const char *buf, size_t len, struct c4_netplan **out, char *err,
                     size_t errlen) {
  *out = NULL;
  struct c4_planfile *file;
  if (c4_planfile_parse(buf, len, C4_PLANFILE_FLOWS, &file, err, errlen) != 0) return C4_EINVAL;
  return group_flows(file, out, err, errlen);
}

/* ---- the paths to avoid, for comms already connected ---- */

/* One set, immutable once published. */
struct avoid_set {
  int n;
  uint64_t hash[];
};
static _Atomic(struct avoid_set *) avoid_now;
static atomic_ulong avoid_gen;
static pthread_mutex_t avoid_writer = PTHREAD_MUTEX_INITIALIZER; /* writers only: never a comm */
static struct avoid_set *avoid_retired[RETIRED_MAX];
static int avoid_retired_next;

/* Publishes the avoid set of a plan c4mon pushed (the telemetry thread; the mutex only orders
 * writers, e.g. a test's). A reader holds a set only while it compares a few hashes; one replaced
 * is freed RETIRED_MAX sets later. Out of memory: the old set stays, logged. */
static void publish_avoid(const struct c4_netplan *p) {
  struct avoid_set *set = malloc(sizeof *set + (size_t)p->navoid * sizeof set->hash[0]);
  if (!set) {
    C4_WARN("out of memory for the plan's paths to avoid; the old ones stay");
    return;
  }
  set->n = p->navoid;
  if (p->navoid) memcpy(set->hash, p->avoid, (size_t)p->navoid * sizeof set->hash[0]);
  pthread_mutex_lock(&avoid_writer);
  struct avoid_set *old = atomic_exchange(&avoid_now, set);
  int changed = !old || old->n != set->n ||
                memcmp(old->hash, set->hash, (size_t)set->n * sizeof set->hash[0]) != 0;
  free(avoid_retired[avoid_retired_next]);
  avoid_retired[avoid_retired_next] = old;
  avoid_retired_next = (avoid_retired_next + 1) % RETIRED_MAX;
  if (changed) atomic_fetch_add_explicit(&avoid_gen, 1, memory_order_release);
  pthread_mutex_unlock(&avoid_writer);
  atomic_fetch_add(&c4_netplan_stats.avoid_sets, 1);
}

uint64_t c4_netplan_avoid_gen(void) {
  return atomic_load_explicit(&avoid_gen, memory_order_acquire);
}

int c4_netplan_avoided(uint64_t path_hash) {
  const struct avoid_set *set = atomic_load_explicit(&avoid_now, memory_order_acquire);
  for (int i = 0; path_hash && set && i < set->n; i++)
    if (set->hash[i] == path_hash) return 1;
  return 0;
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
  struct c4_planfile *file;
  struct c4_netplan *p = NULL;
  if (c4_planfile_read(path, C4_PLANFILE_FLOWS, &file, err, errlen) == 0)
    group_flows(file, &p, err, errlen);
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
    C4_WARN_SETTING("C4_PLAN=%s: %s; ignoring the plan, data sockets use ephemeral ports", path,
                    err);
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
  publish_avoid(p); /* at once, for the comms already connected, whatever C4_PLAN says */
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
  pthread_mutex_lock(&avoid_writer);
  free(atomic_exchange(&avoid_now, NULL));
  for (int i = 0; i < RETIRED_MAX; i++) {
    free(avoid_retired[i]);
    avoid_retired[i] = NULL;
  }
  avoid_retired_next = 0;
  pthread_mutex_unlock(&avoid_writer);
  seen_valid = 0;
  atomic_store(&last_check_ns, 0);
  atomic_store(&from_file, 0);
}
