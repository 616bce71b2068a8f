/* portmap.c -- reads `c4plan probe` output (source port -> spine per host pair) and picks source
 * ports from it for planned flows. */
#include "portmap.h"
#include "c4_cli.h"
#include "c4_err.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int spine_index(const struct c4_plan_topo *t, const char *name) {
  for (int s = 0; s < t->nspines; s++)
    if (!strcmp(t->spine_names[s], name)) return s;
  return C4_NONE;
}

/* Fills e from the parsed file; returns the field at fault (for err), or NULL. */
static const char *read_entry(struct c4_plan_portmap_entry *e, json_t *root,
                              const struct c4_plan_topo *t, size_t *at) {
  json_t *v = json_object_get(root, "v"), *map = json_object_get(root, "map"), *x;
  const char *src = json_string_value(json_object_get(root, "src"));
  const char *dst = json_string_value(json_object_get(root, "dst"));
  const char *proto = json_string_value(json_object_get(root, "proto"));
  if (!json_is_integer(v) || json_integer_value(v) != 1) return "v: missing or not 1";
  if (!src || (e->src = c4_plan_topo_host(t, src)) < 0) return "src: not a host of the topology";
  if (!dst || (e->dst = c4_plan_topo_host(t, dst)) < 0) return "dst: not a host of the topology";
  if (!proto || (strcmp(proto, "tcp") && strcmp(proto, "udp")))
    return "proto: not \"tcp\" or \"udp\"";
  e->tcp = !strcmp(proto, "tcp");
  if (!json_is_array(map)) return "map: missing or not an array";
  size_t n = json_array_size(map);
  e->src_port = malloc(sizeof(int) * (n ? n : 1));
  e->spine = malloc(sizeof(int) * (n ? n : 1));
  if (!e->src_port || !e->spine) return "out of memory";
  size_t i;
  json_array_foreach(map, i, x) {
    *at = i;
    json_t *port = json_object_get(x, "src_port");
    const char *path = json_string_value(json_object_get(x, "path"));
    if (!json_is_integer(port) || json_integer_value(port) < 1 || json_integer_value(port) > 65535)
      return "src_port: missing or not a port 1..65535";
    /* a probe that reached no spine (same leaf, lost) says nothing about the path: skip it */
    int spine = path ? spine_index(t, path) : -1;
    if (spine < 0) continue;
    e->src_port[e->nports] = (int)json_integer_value(port);
    e->spine[e->nports++] = spine;
  }
  *at = (size_t)-1;
  return NULL;
}

static int add(struct c4_plan_portmap *m, json_t *root, const char *what,
               const struct c4_plan_topo *t, char *err, size_t errlen) {
  struct c4_plan_portmap_entry *more = realloc(m->e, sizeof *m->e * (size_t)(m->n + 1));
  if (!more) {
    json_decref(root);
    snprintf(err, errlen, "%s: out of memory", what);
    return C4_ENOMEM;
  }
  m->e = more;
  struct c4_plan_portmap_entry *e = &m->e[m->n++];
  memset(e, 0, sizeof *e);
  size_t at = (size_t)-1;
  const char *bad = read_entry(e, root, t, &at);
  json_decref(root);
  if (!bad) return 0;
  if (at != (size_t)-1)
    snprintf(err, errlen, "%s: map[%zu].%s", what, at, bad);
  else
    snprintf(err, errlen, "%s: %s", what, bad);
  free(e->src_port);
  free(e->spine);
  m->n--;
  return C4_EINVAL;
}

int c4_plan_portmap_parse(struct c4_plan_portmap *m, const char *text, size_t len, const char *what,
                          const struct c4_plan_topo *t, char *err, size_t errlen) {
  json_error_t jerr;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    snprintf(err, errlen, "%s: line %d: %s", what, jerr.line, jerr.text);
    return C4_EINVAL;
  }
  return add(m, root, what, t, err, errlen);
}

int c4_plan_portmap_load(struct c4_plan_portmap *m, const char *path, const struct c4_plan_topo *t,
                         char *err, size_t errlen) {
  json_error_t jerr;
  json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    char why[300];
    snprintf(err, errlen, "%s: %s", path, c4_cli_json_why(&jerr, why, sizeof why));
    return C4_EINVAL;
  }
  return add(m, root, path, t, err, errlen);
}

int c4_plan_portmap_pick(const struct c4_plan_portmap *m, int src, int dst, int spine, int k,
                         int *tcp) {
  for (int i = m->n - 1; i >= 0; i--) { /* a later file for the same pair is asked first */
    const struct c4_plan_portmap_entry *e = &m->e[i];
    if (e->src != src || e->dst != dst) continue;
    int count = 0;
    for (int j = 0; j < e->nports; j++)
      count += e->spine[j] == spine;
    for (int j = 0, want = count ? k % count : -1; count && j < e->nports; j++)
      if (e->spine[j] == spine && want-- == 0) {
        *tcp = e->tcp;
        return e->src_port[j];
      }
  }
  return C4_NONE;
}

void c4_plan_portmap_free(struct c4_plan_portmap *m) {
  for (int i = 0; i < m->n; i++) {
    free(m->e[i].src_port);
    free(m->e[i].spine);
  }
  free(m->e);
  m->n = 0;
  m->e = NULL;
}
