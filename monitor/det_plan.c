/* det_plan.c -- the part of a traffic plan (docs/plan-format.md) detection reads: which path
 * each directed host pair's traffic takes, so that hot cells sharing a path name the path. */
#include <stdlib.h>
#include <string.h>

#include "c4_cli.h"
#include "c4_err.h"
#include "c4_log.h"
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

static uint64_t hash(const char *s) {
  uint64_t h = 1469598103934665603ull;
  for (; *s; s++)
    h = (h ^ (uint8_t)*s) * 1099511628211ull;
  return h;
}

static struct pair *slot(const char *key) {
  for (uint64_t i = hash(key) & (PAIR_CAP - 1), n = 0; n < PAIR_CAP;
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

int det_plan_load(const char *path) {
  det_plan_reset();
  json_error_t je;
  json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
  if (!doc) {
    char why[300];
    c4_cli_json_why(&je, why, sizeof why);
    return fail(path, why);
  }
  json_t *v = json_object_get(doc, "v"), *paths = json_object_get(doc, "paths");
  int rc = 0;
  if (!json_is_integer(v) || json_integer_value(v) != 1)
    rc = fail(path, "\"v\" is missing or not 1");
  else if (!json_is_array(paths))
    rc = fail(path, "\"paths\" is missing or not an array");
  else if (!(pairs = calloc(PAIR_CAP, sizeof *pairs)))
    rc = fail(path, "out of memory");
  size_t i, k;
  json_t *p, *pr;
  if (!rc) json_array_foreach(paths, i, p) {
      const char *id = json_string_value(json_object_get(p, "id"));
      json_t *list = json_object_get(p, "pairs");
      char why[120];
      if (!id || !json_is_array(list)) {
        snprintf(why, sizeof why, "paths[%zu] needs a string \"id\" and an array \"pairs\"", i);
        rc = fail(path, why);
        break;
      }
      if (npaths == MAX_PATHS) {
        rc = fail(path, "more than 4096 paths");
        break;
      }
      int idx = npaths++;
      names[idx] = strdup(id);
      json_array_foreach(list, k, pr) {
        const char *a = json_string_value(json_array_get(pr, 0));
        const char *b = json_string_value(json_array_get(pr, 1));
        char key[2 * C4_HOST_MAX + 2];
        if (!a || !b || json_array_size(pr) != 2 || strlen(a) >= C4_HOST_MAX ||
            strlen(b) >= C4_HOST_MAX) {
          snprintf(why, sizeof why, "paths[%zu].pairs[%zu] is not [SRC_HOST, DST_HOST]", i, k);
          rc = fail(path, why);
          break;
        }
        snprintf(key, sizeof key, "%s\n%s", a, b);
        struct pair *s = slot(key);
        if (!s) {
          rc = fail(path, "too many host pairs");
          break;
        }
        if (!s->key) s->key = strdup(key);
        s->path = idx;
      }
      if (rc) break;
    }
  json_decref(doc);
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
