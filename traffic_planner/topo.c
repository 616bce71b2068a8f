/* topo.c -- reads the fabric's topology file (docs/topology.md) into arrays the planner indexes,
 * and builds synthetic fabrics for tests and benchmarks. */
#include "topo.h"
#include "c4_cli.h"
#include "c4_err.h"

#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Errors read "WHAT: FIELD: reason"; every reader below names the field it looks at. */
static void fail(char *err, size_t errlen, const char *what, const char *fmt, ...) {
  int n = snprintf(err, errlen, "%s: ", what);
  if (n < 0 || (size_t)n >= errlen) return;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
  va_end(ap);
}

static const char *get_str(json_t *o, const char *key) {
  return json_string_value(json_object_get(o, key));
}

static int find_name(char **names, int n, const char *name) {
  for (int i = 0; i < n; i++)
    if (!strcmp(names[i], name)) return i;
  return C4_NONE;
}

static const struct c4_plan_topo *sort_topo; /* qsort has no context argument */
static int by_host_name(const void *a, const void *b) {
  return strcmp(sort_topo->hosts[*(const int *)a].name, sort_topo->hosts[*(const int *)b].name);
}

/* Sorts the host index and rejects a name used twice (a flow could not say which host it means). */
static int index_hosts(struct c4_plan_topo *t) {
  t->by_name = malloc(sizeof(int) * (size_t)(t->nhosts ? t->nhosts : 1));
  if (!t->by_name) return C4_ENOMEM;
  for (int i = 0; i < t->nhosts; i++)
    t->by_name[i] = i;
  sort_topo = t;
  qsort(t->by_name, (size_t)t->nhosts, sizeof(int), by_host_name);
  for (int i = 1; i < t->nhosts; i++)
    if (!strcmp(t->hosts[t->by_name[i]].name, t->hosts[t->by_name[i - 1]].name))
      return t->by_name[i] + 1;
  return 0;
}

int c4_plan_topo_host(const struct c4_plan_topo *t, const char *name) {
  int lo = 0, hi = t->nhosts - 1;
  while (lo <= hi) {
    int mid = (lo + hi) / 2, c = strcmp(t->hosts[t->by_name[mid]].name, name);
    if (!c) return t->by_name[mid];
    if (c < 0)
      lo = mid + 1;
    else
      hi = mid - 1;
  }
  return C4_NONE;
}

/* Reads "leaves" or "spines": an array of objects with a unique string "name". */
static int read_names(json_t *root, const char *key, char ***out, int *n, char *err, size_t errlen,
                      const char *what) {
  json_t *a = json_object_get(root, key);
  if (!json_is_array(a) || json_array_size(a) == 0) {
    fail(err, errlen, what, "%s: missing or not a non-empty array", key);
    return C4_EINVAL;
  }
  *out = calloc(json_array_size(a), sizeof(char *));
  if (!*out) return fail(err, errlen, what, "out of memory"), -1;
  size_t i;
  json_t *v;
  json_array_foreach(a, i, v) {
    const char *name = get_str(v, "name");
    if (!name) return fail(err, errlen, what, "%s[%zu].name: missing or not a string", key, i), -1;
    if (find_name(*out, *n, name) >= 0)
      return fail(err, errlen, what, "%s[%zu].name: \"%s\" used twice", key, i, name), -1;
    if (!((*out)[(*n)++] = strdup(name))) return fail(err, errlen, what, "out of memory"), -1;
  }
  return 0;
}

static int read_port(struct c4_plan_topo *t, json_t *p, size_t h, size_t k, char *err,
                     size_t errlen, const char *what) {
  struct c4_plan_port *port = &t->ports[t->nports];
  json_t *idx = json_object_get(p, "port");
  const char *ifname = get_str(p, "ifname"), *addr = get_str(p, "addr"), *leaf = get_str(p, "leaf");
  double gbps = json_number_value(json_object_get(p, "gbps"));
  char field[64];
  snprintf(field, sizeof field, "hosts[%zu].ports[%zu]", h, k);
  if (!json_is_integer(idx) || json_integer_value(idx) != (json_int_t)k)
    return fail(err, errlen, what, "%s.port: missing or not %zu (ports are listed in order)", field,
                k),
           -1;
  if (!ifname) return fail(err, errlen, what, "%s.ifname: missing or not a string", field), -1;
  if (!addr) return fail(err, errlen, what, "%s.addr: missing or not a string", field), -1;
  if (!leaf) return fail(err, errlen, what, "%s.leaf: missing or not a string", field), -1;
  if (!json_is_number(json_object_get(p, "gbps")) || !(gbps > 0) || gbps > 1e6)
    return fail(err, errlen, what, "%s.gbps: missing or not a rate > 0", field), -1;
  port->leaf = find_name(t->leaf_names, t->nleaves, leaf);
  if (port->leaf < 0) return fail(err, errlen, what, "%s.leaf: no leaf \"%s\"", field, leaf), -1;
  port->gbps = gbps;
  t->nports++; /* counted first, so that c4_plan_topo_free frees what the next lines allocate */
  if (!(port->ifname = strdup(ifname)) || !(port->addr = strdup(addr)))
    return fail(err, errlen, what, "out of memory"), -1;
  return 0;
}

static int read_hosts(struct c4_plan_topo *t, json_t *root, char *err, size_t errlen,
                      const char *what) {
  json_t *a = json_object_get(root, "hosts"), *h, *p;
  if (!json_is_array(a) || json_array_size(a) == 0)
    return fail(err, errlen, what, "hosts: missing or not a non-empty array"), -1;
  size_t i, k, total = 0;
  json_array_foreach(a, i, h) {
    json_t *ports = json_object_get(h, "ports");
    if (!json_is_array(ports) || json_array_size(ports) == 0)
      return fail(err, errlen, what, "hosts[%zu].ports: missing or not a non-empty array", i), -1;
    total += json_array_size(ports);
  }
  t->hosts = calloc(json_array_size(a), sizeof *t->hosts);
  t->ports = calloc(total, sizeof *t->ports);
  if (!t->hosts || !t->ports) return fail(err, errlen, what, "out of memory"), -1;
  json_array_foreach(a, i, h) {
    const char *name = get_str(h, "name");
    if (!name) return fail(err, errlen, what, "hosts[%zu].name: missing or not a string", i), -1;
    struct c4_plan_host *host = &t->hosts[t->nhosts++];
    if (!(host->name = strdup(name))) return fail(err, errlen, what, "out of memory"), -1;
    host->port0 = t->nports;
    json_array_foreach(json_object_get(h, "ports"), k, p) {
      if (read_port(t, p, i, k, err, errlen, what) < 0) return C4_EINVAL;
      host->nports++;
    }
  }
  return 0;
}

/* Leaf-spine links give the uplink capacities (two links between one pair add up); host links
 * must name a host and a leaf, but a port's rate is its own "gbps". */
static int read_links(struct c4_plan_topo *t, json_t *root, char *err, size_t errlen,
                      const char *what) {
  json_t *a = json_object_get(root, "links"), *l;
  if (!json_is_array(a)) return fail(err, errlen, what, "links: missing or not an array"), -1;
  size_t i;
  json_array_foreach(a, i, l) {
    const char *end[2] = {get_str(l, "a"), get_str(l, "b")};
    double gbps = json_number_value(json_object_get(l, "gbps"));
    int leaf = -1, spine = -1, host = 0;
    for (int e = 0; e < 2; e++) {
      const char *key = e ? "b" : "a";
      if (!end[e])
        return fail(err, errlen, what, "links[%zu].%s: missing or not a string", i, key), -1;
      int li = find_name(t->leaf_names, t->nleaves, end[e]);
      int si = find_name(t->spine_names, t->nspines, end[e]);
      int hi = c4_plan_topo_host(t, end[e]);
      if (li >= 0 && leaf < 0)
        leaf = li;
      else if (si >= 0 && spine < 0)
        spine = si;
      else if (hi >= 0 && !host)
        host = 1;
      else
        return fail(err, errlen, what, "links[%zu].%s: no host, leaf or spine \"%s\" to join", i,
                    key, end[e]),
               -1;
    }
    if (leaf < 0 || (spine < 0 && !host))
      return fail(err, errlen, what, "links[%zu]: joins no leaf to a host or spine", i), -1;
    if (!json_is_number(json_object_get(l, "gbps")) || !(gbps > 0) || gbps > 1e6)
      return fail(err, errlen, what, "links[%zu].gbps: missing or not a rate > 0", i), -1;
    if (spine >= 0) t->uplink_gbps[leaf * t->nspines + spine] += gbps;
  }
  return 0;
}

/* Takes the parsed document (and frees it). */
static struct c4_plan_topo *from_json(json_t *root, const char *what, char *err, size_t errlen) {
  struct c4_plan_topo *t = calloc(1, sizeof *t);
  json_t *v = json_object_get(root, "v");
  const char *name = get_str(root, "name");
  if (!t) {
    fail(err, errlen, what, "out of memory");
    goto fail_root;
  }
  if (!json_is_integer(v) || json_integer_value(v) != 1) {
    fail(err, errlen, what, "v: missing or not 1");
    goto fail_topo;
  }
  if (!(t->name = strdup(name ? name : ""))) goto fail_topo;
  if (read_names(root, "leaves", &t->leaf_names, &t->nleaves, err, errlen, what) < 0 ||
      read_names(root, "spines", &t->spine_names, &t->nspines, err, errlen, what) < 0 ||
      read_hosts(t, root, err, errlen, what) < 0)
    goto fail_topo;
  int dup = index_hosts(t);
  if (dup) {
    fail(err, errlen, what, dup > 0 ? "hosts[%d].name: used twice" : "out of memory", dup - 1);
    goto fail_topo;
  }
  t->uplink_gbps = calloc((size_t)t->nleaves * (size_t)t->nspines, sizeof(double));
  if (!t->uplink_gbps || read_links(t, root, err, errlen, what) < 0) goto fail_topo;
  json_decref(root);
  return t;
fail_topo:
  c4_plan_topo_free(t);
fail_root:
  json_decref(root);
  return NULL;
}

struct c4_plan_topo *c4_plan_topo_parse(const char *text, size_t len, const char *what, char *err,
                                        size_t errlen) {
  json_error_t jerr;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    fail(err, errlen, what, "line %d: %s", jerr.line, jerr.text);
    return NULL;
  }
  return from_json(root, what, err, errlen);
}

struct c4_plan_topo *c4_plan_topo_load(const char *path, char *err, size_t errlen) {
  json_error_t jerr;
  json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    char why[300];
    fail(err, errlen, path, "%s", c4_cli_json_why(&jerr, why, sizeof why));
    return NULL;
  }
  return from_json(root, path, err, errlen);
}

struct c4_plan_topo *c4_plan_topo_synth(int nhosts, int nports, int nleaves, int nspines,
                                        double port_gbps, double uplink_gbps) {
  if (nhosts < 1 || nports < 1 || nleaves < 1 || nspines < 1 || !(port_gbps > 0)) return NULL;
  struct c4_plan_topo *t = calloc(1, sizeof *t);
  if (!t) return NULL;
  t->name = strdup("synth");
  t->hosts = calloc((size_t)nhosts, sizeof *t->hosts);
  t->ports = calloc((size_t)nhosts * (size_t)nports, sizeof *t->ports);
  t->leaf_names = calloc((size_t)nleaves, sizeof(char *));
  t->spine_names = calloc((size_t)nspines, sizeof(char *));
  t->uplink_gbps = calloc((size_t)nleaves * (size_t)nspines, sizeof(double));
  if (!t->name || !t->hosts || !t->ports || !t->leaf_names || !t->spine_names || !t->uplink_gbps)
    goto fail;
  char buf[64];
  for (; t->nleaves < nleaves; t->nleaves++) {
    snprintf(buf, sizeof buf, "l%d", t->nleaves);
    if (!(t->leaf_names[t->nleaves] = strdup(buf))) goto fail;
  }
  for (; t->nspines < nspines; t->nspines++) {
    snprintf(buf, sizeof buf, "s%d", t->nspines);
    if (!(t->spine_names[t->nspines] = strdup(buf))) goto fail;
  }
  long total = (long)nhosts * nports;
  for (; t->nhosts < nhosts; t->nhosts++) {
    struct c4_plan_host *h = &t->hosts[t->nhosts];
    snprintf(buf, sizeof buf, "h%d", t->nhosts);
    if (!(h->name = strdup(buf))) goto fail;
    h->port0 = t->nports;
    for (; h->nports < nports; h->nports++, t->nports++) {
      struct c4_plan_port *p = &t->ports[t->nports];
      snprintf(buf, sizeof buf, "198.18.%d.%d", t->nports / 250, 2 + t->nports % 250);
      p->leaf = (int)((long)t->nports * nleaves / total); /* consecutive ports share a leaf */
      p->gbps = port_gbps;
      if (!(p->addr = strdup(buf))) goto fail;
      snprintf(buf, sizeof buf, "eth%d", h->nports);
      if (!(p->ifname = strdup(buf))) goto fail;
    }
  }
  /* Non-blocking: each leaf's uplinks carry as much as its busiest leaf's ports. */
  double up = uplink_gbps > 0 ? uplink_gbps
                              : port_gbps * (double)((total + nleaves - 1) / nleaves) / nspines;
  for (int i = 0; i < nleaves * nspines; i++)
    t->uplink_gbps[i] = up;
  if (index_hosts(t) != 0) goto fail;
  return t;
fail:
  c4_plan_topo_free(t);
  return NULL;
}

void c4_plan_topo_free(struct c4_plan_topo *t) {
  if (!t) return;
  for (int i = 0; i < t->nhosts; i++)
    free(t->hosts[i].name);
  for (int i = 0; i < t->nports; i++) {
    free(t->ports[i].ifname);
    free(t->ports[i].addr);
  }
  for (int i = 0; i < t->nleaves; i++)
    free(t->leaf_names[i]);
  for (int i = 0; i < t->nspines; i++)
    free(t->spine_names[i]);
  free(t->hosts);
  free(t->ports);
  free(t->leaf_names);
  free(t->spine_names);
  free(t->uplink_gbps);
  free(t->by_name);
  free(t->name);
  free(t);
}
