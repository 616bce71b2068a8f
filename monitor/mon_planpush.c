/* mon_planpush.c -- the traffic plan c4mon pushes: kept parsed, its identity watched, and cut
 * per host (a rank needs only its own host's flows: a plan for 1,024 hosts is megabytes, one
 * host's part a few kilobytes). */
#include "mon_planpush.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "c4_err.h"
#include "c4_frame.h"
#include "c4_log.h"
#include "c4_planfile.h"

static struct {
  char *path;
  struct c4_planfile *plan; /* its flows */
  struct stat seen;
} pp;

static int same_file(const struct stat *a, const struct stat *b) {
  return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
         a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec;
}

/* Reads the file's flows, checked as the plugin checks them; NULL with the reason logged. */
static struct c4_planfile *read_flows(const char *path) {
  struct c4_planfile *plan;
  char why[300];
  if (c4_planfile_read(path, C4_PLANFILE_FLOWS, &plan, why, sizeof why) != 0) {
    C4_WARN("c4mon: --plan %s: %s", path, why);
    return NULL;
  }
  return plan;
}

int mon_planpush_load(const char *path) {
  mon_planpush_reset();
  if (!path) return 0;
  if (stat(path, &pp.seen) != 0 || !(pp.plan = read_flows(path))) {
    if (!pp.plan) C4_WARN("c4mon: cannot read the plan %s", path);
    return C4_EINVAL;
  }
  pp.path = strdup(path);
  return pp.path ? 0 : C4_ENOMEM;
}

int mon_planpush_check(void) {
  struct stat st;
  if (!pp.path || stat(pp.path, &st) != 0 || same_file(&st, &pp.seen)) return 0;
  pp.seen = st;
  struct c4_planfile *plan = read_flows(pp.path);
  if (!plan) return 0; /* logged; the ranks keep the last good plan */
  c4_planfile_free(pp.plan);
  pp.plan = plan;
  C4_INFO("c4mon: the plan %s changed: %zu flows, pushing it to the ranks", pp.path, plan->nflows);
  return 1;
}

/* {"v":1,"flows":[the flows whose src is host],"avoid":avoid}, or NULL when out of memory. Takes
 * avoid's reference. */
static json_t *flows_of(const char *host, json_t *avoid) {
  json_t *mine = json_array();
  for (size_t i = 0; mine && i < pp.plan->nflows; i++)
    if (!strcmp(pp.plan->flows[i].src, host) &&
        json_array_append_new(mine, c4_planfile_flow_json(&pp.plan->flows[i])) != 0) {
      json_decref(mine);
      json_decref(avoid);
      return NULL;
    }
  if (!mine) {
    json_decref(avoid);
    return NULL;
  }
  return json_pack("{s:i, s:o, s:o}", "v", 1, "flows", mine, "avoid", avoid);
}

json_t *mon_planpush_flows_on(const char *path) {
  json_t *out = json_array();
  for (size_t i = 0; out && pp.plan && i < pp.plan->nflows; i++) {
    const struct c4_planfile_flow *f = &pp.plan->flows[i];
    if (!f->path || strcmp(f->path, path)) continue;
    size_t k;
    json_t *m, *same = NULL;
    json_array_foreach(
        out, k, m) if (!strcmp(json_string_value(json_object_get(m, "src")), f->src) &&
                       !strcmp(json_string_value(json_object_get(m, "dst")), f->dst)) same = m;
    if (same)
      json_object_set_new(same, "flows",
                          json_integer(json_integer_value(json_object_get(same, "flows")) + 1));
    else
      json_array_append_new(out,
                            json_pack("{s:s, s:s, s:i}", "src", f->src, "dst", f->dst, "flows", 1));
  }
  return out;
}

char *mon_planpush_for_host(const char *host, json_t *avoid, size_t *len) {
  if (!pp.plan) {
    json_decref(avoid);
    return NULL;
  }
  json_t *doc = flows_of(host, avoid);
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
  c4_planfile_free(pp.plan);
  memset(&pp, 0, sizeof pp);
}
