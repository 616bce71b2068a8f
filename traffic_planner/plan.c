/* plan.c -- builds and writes the plan file: flows with their ports, spine, source port and flow
 * label, and per path the host pairs c4mon uses to name a congested path. */
#include "plan.h"
#include "c4_err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

long c4_plan_flow_label(int udp_src_port) {
  return udp_src_port >= 0xc000 && udp_src_port <= 0xffff ? udp_src_port - 0xc000 : -1;
}

/* A path's name: its spine, or for a flow within one leaf that leaf. Path numbers: spines
 * 0..S-1, then leaves. */
static int path_number(const struct c4_plan_topo *t, const struct c4_plan_flow *f,
                       const struct c4_plan_path *p) {
  if (p->spine >= 0) return p->spine;
  return t->nspines + t->ports[t->hosts[f->src].port0 + p->src_port].leaf;
}

static const char *path_name(const struct c4_plan_topo *t, int number) {
  return number < t->nspines ? t->spine_names[number] : t->leaf_names[number - t->nspines];
}

static int same_pair(const struct c4_plan_flow *a, const struct c4_plan_flow *b) {
  return a->src == b->src && a->dst == b->dst;
}

static const struct c4_plan_flow *sort_flows; /* qsort has no context argument */
static int by_pair(const void *a, const void *b) {
  const struct c4_plan_flow *x = &sort_flows[*(const int *)a], *y = &sort_flows[*(const int *)b];
  if (x->src != y->src) return x->src - y->src;
  if (x->dst != y->dst) return x->dst - y->dst;
  return *(const int *)a - *(const int *)b;
}

/* c4mon takes one path per directed pair: each pair goes under the path carrying most of its
 * bytes (ties: the lower path number). */
static json_t *pairs_json(const struct c4_plan_topo *t, const struct c4_plan_flow *flows, int n,
                          const struct c4_plan_path *paths) {
  int np = t->nspines + t->nleaves, *ord = malloc(sizeof(int) * (size_t)(n ? n : 1));
  double *bytes = calloc((size_t)np, sizeof(double));
  json_t **pairs = calloc((size_t)np, sizeof(json_t *)), *out = json_array();
  if (!ord || !bytes || !pairs || !out) goto fail;
  for (int i = 0; i < n; i++)
    ord[i] = i;
  sort_flows = flows;
  qsort(ord, (size_t)n, sizeof(int), by_pair);
  for (int i = 0, j; i < n; i = j) {
    int best = -1;
    for (j = i; j < n && same_pair(&flows[ord[i]], &flows[ord[j]]); j++)
      bytes[path_number(t, &flows[ord[j]], &paths[ord[j]])] += (double)flows[ord[j]].bytes;
    for (int k = i; k < j; k++) {
      int p = path_number(t, &flows[ord[k]], &paths[ord[k]]);
      if (best < 0 || bytes[p] > bytes[best] || (bytes[p] == bytes[best] && p < best)) best = p;
    }
    for (int k = i; k < j; k++)
      bytes[path_number(t, &flows[ord[k]], &paths[ord[k]])] = 0;
    if (!pairs[best] && !(pairs[best] = json_array())) goto fail;
    if (json_array_append_new(pairs[best], json_pack("[ss]", t->hosts[flows[ord[i]].src].name,
                                                     t->hosts[flows[ord[i]].dst].name)))
      goto fail;
  }
  for (int p = 0; p < np; p++)
    if (pairs[p]) {
      if (json_array_append_new(out, json_pack("{ssso}", "id", path_name(t, p), "pairs", pairs[p])))
        goto fail;
      pairs[p] = NULL;
    }
  goto done;
fail:
  json_decref(out);
  out = NULL;
done:
  for (int p = 0; pairs && p < np; p++)
    json_decref(pairs[p]);
  free(pairs);
  free(bytes);
  free(ord);
  return out;
}

/* One flow's entry. k counts earlier flows of its pair on its spine, so that they get distinct
 * source ports from the probe map. */
static json_t *flow_json(const struct c4_plan_topo *t, const struct c4_plan_flow *f,
                         const struct c4_plan_path *p, const struct c4_plan_portmap *ports, int k) {
  int tcp = 1, sport = -1;
  if (ports && p->spine >= 0)
    sport = c4_plan_portmap_pick(ports, f->src, f->dst, p->spine, k, &tcp);
  long label = sport >= 0 && !tcp ? c4_plan_flow_label(sport) : -1;
  const struct c4_plan_port *port = &t->ports[t->hosts[f->src].port0 + p->src_port];
  return json_pack("{sssssIsisisssssoso}", "src", t->hosts[f->src].name, "dst",
                   t->hosts[f->dst].name, "bytes", (json_int_t)f->bytes, "src_port_idx",
                   p->src_port, "dst_port_idx", p->dst_port, "ifname", port->ifname, "path",
                   path_name(t, path_number(t, f, p)), "src_port",
                   sport >= 0 ? json_integer(sport) : json_null(), "flow_label",
                   label >= 0 ? json_integer(label) : json_null());
}

json_t *c4_plan_json(const struct c4_plan_topo *t, const struct c4_plan_flow *flows, int n,
                     const struct c4_plan_path *paths, const struct c4_plan_portmap *ports) {
  json_t *list = json_array(), *pairs = pairs_json(t, flows, n, paths);
  int *ord = malloc(sizeof(int) * (size_t)(n ? n : 1)),
      *nth = malloc(sizeof(int) * (size_t)(n ? n : 1));
  int *count = calloc((size_t)(t->nspines + t->nleaves), sizeof(int));
  if (!list || !pairs || !ord || !nth || !count) goto fail;
  /* nth[f]: how many flows of f's pair and path come before it (count[] is zero between pairs) */
  for (int i = 0; i < n; i++)
    ord[i] = i;
  sort_flows = flows;
  qsort(ord, (size_t)n, sizeof(int), by_pair);
  for (int i = 0, j; i < n; i = j) {
    for (j = i; j < n && same_pair(&flows[ord[i]], &flows[ord[j]]); j++)
      nth[ord[j]] = count[path_number(t, &flows[ord[j]], &paths[ord[j]])]++;
    for (int k = i; k < j; k++)
      count[path_number(t, &flows[ord[k]], &paths[ord[k]])] = 0;
  }
  for (int i = 0; i < n; i++)
    if (json_array_append_new(list, flow_json(t, &flows[i], &paths[i], ports, nth[i]))) goto fail;
  free(ord);
  free(nth);
  free(count);
  return json_pack("{sisoso}", "v", 1, "paths", pairs, "flows", list);
fail:
  free(ord);
  free(nth);
  free(count);
  json_decref(list);
  json_decref(pairs);
  return NULL;
}

int c4_plan_write(const char *path, json_t *plan, char *err, size_t errlen) {
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
    snprintf(err, errlen, "%s: path too long", path);
    return C4_EINVAL;
  }
  if (json_dump_file(plan, tmp, JSON_COMPACT) < 0) {
    snprintf(err, errlen, "%s: cannot write %s: %s", path, tmp, strerror(errno));
    unlink(tmp);
    return C4_ESYS;
  }
  if (rename(tmp, path) < 0) {
    snprintf(err, errlen, "%s: cannot rename %s over it: %s", path, tmp, strerror(errno));
    unlink(tmp);
    return C4_ESYS;
  }
  return 0;
}
