/* det_plan.c -- the part of a traffic plan (docs/plan-format.md) detection reads: which path
 * each directed host pair's traffic takes, so that hot cells sharing a path name the path, and
 * which path each of a pair's flows takes (data socket i of a pair binds to its flow i), so that
 * a data socket's rate (path records) speaks for its path. */
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "c4_hash.h"
#include "c4_log.h"
#include "c4_planfile.h"
#include "det_internal.h"

#define PAIR_CAP (1 << 20)
#define MAX_PATHS 4096
#define MAX_FLOWS 64 /* a pair's flows kept: C4_MAX_NSOCKS */

struct pair {
  char *key; /* "src\ndst" */
  int path;  /* from paths[]; -1: none */
  int nflows;
  struct flow {
    int path;          /* index of flows[].path */
    uint16_t src_port; /* 0: none planned */
  } * flows;           /* the pair's flows in the file's order, NULL when none */
};

static struct pair *pairs;
static char *names[MAX_PATHS];
static int npaths;

static struct pair *slot(const char *key) {
  for (uint64_t i = c4_fnv1a_str(C4_FNV_BASIS_OLD, key) & (PAIR_CAP - 1), n = 0; n < PAIR_CAP;
       i = (i + 1) & (PAIR_CAP - 1), n++)
    if (!pairs[i].key || !strcmp(pairs[i].key, key)) return &pairs[i];
  return NULL;
}

void det_plan_reset(void) {
  if (pairs)
    for (long i = 0; i < PAIR_CAP; i++) {
      free(pairs[i].key);
      free(pairs[i].flows);
    }
  free(pairs);
  pairs = NULL;
  for (int i = 0; i < npaths; i++)
    free(names[i]);
  npaths = 0;
}

static int fail(const char *path, const char *what) {
  c4_log(C4_LOG_WARN, __FILE__, __LINE__, "c4mon: --plan %s: %s", path, what);
  det_plan_reset();
  return C4_EINVAL;
}

/* The pair src -> dst's slot, made when new (path -1); NULL when the table is full. */
static struct pair *pair_of(const char *a, const char *b) {
  char key[2 * C4_HOST_MAX + 2];
  snprintf(key, sizeof key, "%s\n%s", a, b);
  struct pair *s = slot(key);
  if (s && !s->key) {
    if (!(s->key = strdup(key))) return NULL;
    s->path = -1;
  }
  return s;
}

/* The index of the path named id, added when new; -1 past MAX_PATHS or out of memory. */
static int path_index(const char *id) {
  for (int i = 0; i < npaths; i++)
    if (!strcmp(names[i], id)) return i;
  if (npaths == MAX_PATHS || !(names[npaths] = strdup(id))) return C4_NONE;
  return npaths++;
}

/* Enters path idx's host pairs into the table; a pair listed under two paths belongs to the
 * last. */
static int add_pairs(const char *path, const struct c4_planfile_path *pp, int idx) {
  for (size_t k = 0; k < pp->npairs; k++) {
    struct pair *s = pair_of(pp->pairs[k].src, pp->pairs[k].dst);
    if (!s) return fail(path, "too many host pairs");
    s->path = idx;
  }
  return 0;
}

/* Each flow's path, in the order the plugin binds a pair's data sockets; flows without a path
 * keep their place (their socket's path is not known). */
static int add_flows(const char *path, const struct c4_planfile *plan) {
  for (size_t i = 0; i < plan->nflows; i++) {
    const struct c4_planfile_flow *f = &plan->flows[i];
    struct pair *s = pair_of(f->src, f->dst);
    int p = f->path ? path_index(f->path) : -1;
    if (!s || (f->path && p < 0)) return fail(path, "too many host pairs or paths");
    if (s->nflows == MAX_FLOWS) continue; /* no data socket binds past these */
    if (!s->flows && !(s->flows = calloc(MAX_FLOWS, sizeof *s->flows)))
      return fail(path, "out of memory");
    s->flows[s->nflows++] = (struct flow){p, f->src_port};
  }
  return 0;
}

int det_plan_load(const char *path) {
  det_plan_reset();
  struct c4_planfile *plan;
  char why[300];
  if (c4_planfile_read(path, C4_PLANFILE_PATHS | C4_PLANFILE_FLOWS, &plan, why, sizeof why) != 0)
    return fail(path, why);
  int rc = 0;
  if (plan->npaths > MAX_PATHS)
    rc = fail(path, "more than 4096 paths");
  else if (!(pairs = calloc(PAIR_CAP, sizeof *pairs)))
    rc = fail(path, "out of memory");
  for (size_t i = 0; rc == 0 && i < plan->npaths; i++) {
    int idx = path_index(plan->paths[i].id);
    rc = idx < 0 ? fail(path, "out of memory") : add_pairs(path, &plan->paths[i], idx);
  }
  if (rc == 0) rc = add_flows(path, plan);
  c4_planfile_free(plan);
  return rc;
}

static const struct pair *find(const char *src_host, const char *dst_host) {
  if (!pairs) return NULL;
  char key[2 * C4_HOST_MAX + 2];
  snprintf(key, sizeof key, "%s\n%s", src_host, dst_host);
  const struct pair *s = slot(key);
  return s && s->key ? s : NULL;
}

int det_plan_path_of(const char *src_host, const char *dst_host) {
  const struct pair *s = find(src_host, dst_host);
  return s ? s->path : -1;
}

int det_plan_split(const char *src_host, const char *dst_host) {
  const struct pair *s = find(src_host, dst_host);
  for (int i = 1; s && i < s->nflows; i++)
    if (s->flows[i].path != s->flows[0].path) return 1;
  return 0;
}

int det_plan_flow_paths(const char *src_host, const char *dst_host, int *paths, int max) {
  const struct pair *s = find(src_host, dst_host);
  int n = 0;
  for (int i = 0; s && i < s->nflows && n < max; i++)
    if (s->flows[i].path >= 0) paths[n++] = s->flows[i].path;
  return n;
}

int det_plan_sock_path(const char *src_host, const char *dst_host, int sock, int src_port) {
  const struct pair *s = find(src_host, dst_host);
  if (!s || !s->nflows) return C4_NONE;
  for (int i = 0; src_port && i < s->nflows; i++)
    if (s->flows[i].src_port == src_port) return s->flows[i].path;
  /* no port of the plan's: the bind fell back to an ephemeral port, the path is ECMP's choice */
  int planned = sock < s->nflows && s->flows[sock].src_port;
  return sock < s->nflows && (!planned || !src_port) ? s->flows[sock].path : -1;
}

const char *det_plan_path_name(int path) { return path >= 0 && path < npaths ? names[path] : ""; }

int det_plan_npaths(void) { return npaths; }
