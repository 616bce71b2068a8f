/* mon_planpush.c -- the traffic plan c4mon pushes: kept parsed, its identity watched, and cut
 * per host (a rank needs only its own host's flows: a plan for 1,024 hosts is megabytes, one
 * host's part a few kilobytes). */
#include "mon_planpush.h"
#include "c4_cli.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "c4_err.h"
#include "c4_frame.h"
#include "c4_log.h"

static struct {
  char *path;
  json_t *flows; /* the plan's flows[] */
  struct stat seen;
} pp;

static int same_file(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
         a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Reads the file's flows[]; NULL with the reason logged. */
static json_t *read_flows(const char *path) {
  json_error_t e;
  json_t *root = json_load_file(path, 0, &e);
  if (!root) {
    char why[300];
    C4_WARN("c4mon: --plan %s: %s", path, c4_cli_json_why(&e, why, sizeof why));
    return NULL;
  }
  json_t *v = json_object_get(root, "v"), *flows = json_object_get(root, "flows");
  if (!json_is_integer(v) || json_integer_value(v) != 1) {
    C4_WARN("c4mon: --plan %s: v is not 1", path);
  } else if (flows && !json_is_array(flows)) {
    C4_WARN("c4mon: --plan %s: flows is not an array", path);
  } else {
    json_t *out = flows ? json_incref(flows) : json_array();
    json_decref(root);
    return out;
  }
  json_decref(root);
  return NULL;
}

int mon_planpush_load(const char *path) {
  mon_planpush_reset();
  if (!path) return 0;
  if (stat(path, &pp.seen) != 0 || !(pp.flows = read_flows(path))) {
    if (!pp.flows) C4_WARN("c4mon: cannot read the plan %s", path);
    return C4_EINVAL;
  }
  pp.path = strdup(path);
  return pp.path ? 0 : C4_ENOMEM;
}

int mon_planpush_check(void) {
  struct stat st;
  if (!pp.path || stat(pp.path, &st) != 0 || same_file(&st, &pp.seen)) return 0;
  pp.seen = st;
  json_t *flows = read_flows(pp.path);
  if (!flows) return 0; /* logged; the ranks keep the last good plan */
  json_decref(pp.flows);
  pp.flows = flows;
  C4_INFO("c4mon: the plan %s changed: %zu flows, pushing it to the ranks", pp.path,
          json_array_size(flows));
  return 1;
}

char *mon_planpush_for_host(const char *host, size_t *len) {
  if (!pp.flows) return NULL;
  json_t *mine = json_array(), *f;
  size_t i;
  json_array_foreach(pp.flows, i, f) {
    const char *src = json_string_value(json_object_get(f, "src"));
    if (src && !strcmp(src, host)) json_array_append(mine, f);
  }
  json_t *doc = json_pack("{s:i, s:o}", "v", 1, "flows", mine);
  char *s = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
  json_decref(doc);
  if (s && strlen(s) > C4_FRAME_PLAN_MAX) {
    C4_WARN("c4mon: the plan for host %s is larger than %u bytes; not pushed", host,
            C4_FRAME_PLAN_MAX);
    free(s);
    s = NULL;
  }
  if (s) *len = strlen(s);
  return s;
}

void mon_planpush_reset(void) {
  free(pp.path);
  json_decref(pp.flows);
  memset(&pp, 0, sizeof pp);
}
