/* det_plan.c -- the part of a traffic plan (docs/plan-format.md) detection reads: which path
 * each directed host pair's traffic takes, so that hot cells sharing a path name the path. */
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "c4_hash.h"
#include "c4_log.h"
#include "c4_planfile.h"
#include "det_internal.h"

#define PAIR_CAP (1 << 20)
#define MAX_PATHS 4096

struct pair {
  char *key; /* "src\ndst" */
  int path;
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
    for (long i = 0; i < PAIR_CAP; i++)
      free(pairs[i].key);
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

/* Enters path idx's host pairs into the table; a pair listed under two paths belongs to the
 * last. */
static int add_pairs(const char *path, const struct c4_planfile_path *pp, int idx) {
  for (size_t k = 0; k < pp->npairs; k++) {
    char key[2 * C4_HOST_MAX + 2];
    snprintf(key, sizeof key, "%s\n%s", pp->pairs[k].src, pp->pairs[k].dst);
    struct pair *s = slot(key);
    if (!s) return fail(path, "too many host pairs");
    if (!s->key && !(s->key = strdup(key))) return fail(path, "out of memory");
    s->path = idx;
  }
  return 0;
}

int det_plan_load(const char *path) {
  det_plan_reset();
  struct c4_planfile *plan;
  char why[300];
  if (c4_planfile_read(path, C4_PLANFILE_PATHS, &plan, why, sizeof why) != 0)
    return fail(path, why);
  int rc = 0;
  if (plan->npaths > MAX_PATHS)
    rc = fail(path, "more than 4096 paths");
  else if (!(pairs = calloc(PAIR_CAP, sizeof *pairs)))
    rc = fail(path, "out of memory");
  for (size_t i = 0; rc == 0 && i < plan->npaths; i++) {
    int idx = npaths++;
    if (!(names[idx] = strdup(plan->paths[i].id)))
      rc = fail(path, "out of memory");
    else
      rc = add_pairs(path, &plan->paths[i], idx);
  }
  c4_planfile_free(plan);
  return rc;
}

int det_plan_path_of(const char *src_host, const char *dst_host) {
  if (!pairs) return -1;
  char key[2 * C4_HOST_MAX + 2];
  snprintf(key, sizeof key, "%s\n%s", src_host, dst_host);
  struct pair *s = slot(key);
  return s && s->key ? s->path : -1;
}

const char *det_plan_path_name(int path) { return path >= 0 && path < npaths ? names[path] : ""; }

int det_plan_npaths(void) { return npaths; }
