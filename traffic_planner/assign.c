/* assign.c -- flow-to-path assignment on a leaf-spine fabric: greedy largest-first placement,
 * then local moves off the busiest links; ECMP's random hashing and a lower bound to compare. */
#include "assign.h"

#include <stdlib.h>

#include "c4_err.h"
#include "port_sched.h"

#define SECONDS_PER_GBIT 8e-9 /* bytes * 8 / (gbps * 1e9) */
#define MAX_PASSES 64         /* local search ends well before; this only bounds a cycle */
/* Branch-and-bound nodes per host and direction. Planning only needs a better placement, which
 * comes early; the bound needs the search to end (a host with ~20 flows on 8 ports proves its
 * optimum in ~50k nodes), and hosts no busier than the bound so far end at once. */
#define PLAN_NODES 5000
#define BOUND_NODES 200000

/* Every directed link's load, indexed as the topology is: tx/rx by global port, up/down by
 * leaf * nspines + spine. inv_* hold seconds per byte, 0 where a link does not exist. */
struct loads {
  const struct c4_plan_topo *t;
  double *tx, *rx, *up, *down, *inv_port, *inv_up;
};

static int loads_init(struct loads *l, const struct c4_plan_topo *t) {
  size_t np = (size_t)t->nports, nu = (size_t)t->nleaves * (size_t)t->nspines;
  l->t = t;
  l->tx = calloc(3 * np + 3 * nu, sizeof(double)); /* one allocation for every array */
  if (!l->tx) return C4_ENOMEM;
  l->rx = l->tx + np;
  l->inv_port = l->rx + np;
  l->up = l->inv_port + np;
  l->down = l->up + nu;
  l->inv_up = l->down + nu;
  for (size_t p = 0; p < np; p++)
    l->inv_port[p] = SECONDS_PER_GBIT / t->ports[p].gbps;
  for (size_t u = 0; u < nu; u++)
    l->inv_up[u] = t->uplink_gbps[u] > 0 ? SECONDS_PER_GBIT / t->uplink_gbps[u] : 0;
  return 0;
}

static void loads_free(struct loads *l) { free(l->tx); }

/* Adds (sign 1) or removes (sign -1) a flow's bytes along its path. */
static void loads_add(struct loads *l, const struct c4_plan_flow *f, const struct c4_plan_path *p,
                      double sign) {
  const struct c4_plan_topo *t = l->t;
  int sp = t->hosts[f->src].port0 + p->src_port, dp = t->hosts[f->dst].port0 + p->dst_port;
  double w = sign * (double)f->bytes;
  l->tx[sp] += w * l->inv_port[sp];
  l->rx[dp] += w * l->inv_port[dp];
  if (p->spine >= 0) {
    int u = t->ports[sp].leaf * t->nspines + p->spine,
        d = t->ports[dp].leaf * t->nspines + p->spine;
    l->up[u] += w * l->inv_up[u];
    l->down[d] += w * l->inv_up[d];
  }
}

static double max2(double a, double b) { return a > b ? a : b; }

/* The path's cost if f took it: its busiest link's load after, then (to break ties) the sum. */
struct cost {
  double max, sum;
};

static int cheaper(struct cost a, struct cost b) {
  return a.max < b.max || (a.max == b.max && a.sum < b.sum);
}

/* The best spine between two leaves for w more bytes, or -1 when no spine joins them. */
static int best_spine(const struct loads *l, int from, int to, double w, struct cost *c) {
  int S = l->t->nspines, best = -1;
  for (int s = 0; s < S; s++) {
    int u = from * S + s, d = to * S + s;
    if (!l->inv_up[u] || !l->inv_up[d]) continue;
    double a = l->up[u] + w * l->inv_up[u], b = l->down[d] + w * l->inv_up[d];
    struct cost k = {max2(a, b), a + b};
    if (best < 0 || cheaper(k, *c)) best = s, *c = k;
  }
  return best;
}

/* The least loaded port of a host on each leaf it reaches, for w more bytes in one direction. */
struct choice {
  int leaf, port; /* port_idx */
  double load;
};

static int best_ports(const struct loads *l, int host, const double *load, double w,
                      struct choice *out) {
  const struct c4_plan_host *h = &l->t->hosts[host];
  int n = 0;
  for (int k = 0; k < h->nports; k++) {
    int p = h->port0 + k, leaf = l->t->ports[p].leaf, i = 0;
    double v = load[p] + w * l->inv_port[p];
    while (i < n && out[i].leaf != leaf)
      i++;
    if (i == n)
      out[n++] = (struct choice){leaf, k, v};
    else if (v < out[i].load)
      out[i].port = k, out[i].load = v;
  }
  return n;
}

/* The cheapest path for f given every other flow's load; its cost in *c. -1 when none exists. */
static int best_path(const struct loads *l, const struct c4_plan_flow *f, struct choice *sc,
                     struct choice *dc, struct c4_plan_path *out, struct cost *c) {
  double w = (double)f->bytes;
  int ns = best_ports(l, f->src, l->tx, w, sc), nd = best_ports(l, f->dst, l->rx, w, dc), found = 0;
  for (int i = 0; i < ns; i++)
    for (int j = 0; j < nd; j++) {
      struct cost k = {max2(sc[i].load, dc[j].load), sc[i].load + dc[j].load}, up;
      int spine = -1;
      if (sc[i].leaf != dc[j].leaf) {
        if ((spine = best_spine(l, sc[i].leaf, dc[j].leaf, w, &up)) < 0) continue;
        k.max = max2(k.max, up.max);
        k.sum += up.sum;
      }
      if (!found || cheaper(k, *c)) {
        *out = (struct c4_plan_path){sc[i].port, dc[j].port, spine};
        *c = k;
        found = 1;
      }
    }
  return found ? 0 : -1;
}

/* The cost of f's current path: each of its links' load. */
static struct cost path_cost(const struct loads *l, const struct c4_plan_flow *f,
                             const struct c4_plan_path *p) {
  const struct c4_plan_topo *t = l->t;
  int sp = t->hosts[f->src].port0 + p->src_port, dp = t->hosts[f->dst].port0 + p->dst_port;
  struct cost c = {max2(l->tx[sp], l->rx[dp]), l->tx[sp] + l->rx[dp]};
  if (p->spine >= 0) {
    int u = t->ports[sp].leaf * t->nspines + p->spine,
        d = t->ports[dp].leaf * t->nspines + p->spine;
    c.max = max2(c.max, max2(l->up[u], l->down[d]));
    c.sum += l->up[u] + l->down[d];
  }
  return c;
}

static double loads_max(const struct loads *l) {
  const struct c4_plan_topo *t = l->t;
  double m = 0;
  for (int p = 0; p < t->nports; p++)
    m = max2(m, max2(l->tx[p], l->rx[p]));
  for (int u = 0; u < t->nleaves * t->nspines; u++)
    m = max2(m, max2(l->up[u], l->down[u]));
  return m;
}

struct order {
  uint64_t bytes;
  int flow;
};

static int larger_first(const void *a, const void *b) {
  const struct order *x = a, *y = b;
  if (x->bytes != y->bytes) return x->bytes < y->bytes ? 1 : -1;
  return x->flow - y->flow;
}

static int check_flows(const struct c4_plan_topo *t, const struct c4_plan_flow *flows, int n) {
  for (int i = 0; i < n; i++)
    if (flows[i].src < 0 || flows[i].src >= t->nhosts || flows[i].dst < 0 ||
        flows[i].dst >= t->nhosts)
      return C4_EINVAL;
  return 0;
}

/* Moves flows whose path holds the busiest link to their cheapest path while that is strictly
 * cheaper; the busiest link's load can only go down. Flows elsewhere stay: they do not set the
 * max, and leaving them keeps this fast. Returns how many moved. */
static int move_pass(struct loads *l, const struct c4_plan_flow *flows, const struct order *ord,
                     int n, struct c4_plan_path *paths, struct choice *sc, struct choice *dc) {
  double top = loads_max(l);
  int moved = 0;
  for (int i = 0; i < n; i++) {
    int f = ord[i].flow;
    struct cost now = path_cost(l, &flows[f], &paths[f]), c;
    if (now.max < top) continue;
    struct c4_plan_path p;
    loads_add(l, &flows[f], &paths[f], -1);
    best_path(l, &flows[f], sc, dc, &p, &c); /* the current path is there, so one is found */
    if (c.max < now.max) paths[f] = p, moved++;
    loads_add(l, &flows[f], &paths[f], 1);
  }
  return moved;
}

/* Flows grouped by source host (side 0) or destination host (side 1), for swaps. */
struct by_host {
  int *start, *list;
};

static int by_host_init(struct by_host *g, const struct c4_plan_topo *t,
                        const struct c4_plan_flow *flows, int n, int side) {
  g->start = calloc((size_t)t->nhosts + 1, sizeof(int));
  g->list = malloc(sizeof(int) * (size_t)(n ? n : 1));
  if (!g->start || !g->list) return C4_ENOMEM;
  for (int i = 0; i < n; i++)
    g->start[(side ? flows[i].dst : flows[i].src) + 1]++;
  for (int h = 0; h < t->nhosts; h++)
    g->start[h + 1] += g->start[h];
  for (int i = 0; i < n; i++)
    g->list[g->start[side ? flows[i].dst : flows[i].src]++] = i;
  for (int h = t->nhosts; h > 0; h--) /* the fill moved each start to the next host's */
    g->start[h] = g->start[h - 1];
  g->start[0] = 0;
  return 0;
}

static void by_host_free(struct by_host *g) {
  free(g->start);
  free(g->list);
}

/* One host's port of a flow on one side: the global port index. */
static int *port_of(struct c4_plan_path *p, int side) { return side ? &p->dst_port : &p->src_port; }

/* Swaps two flows of one host between two of its ports on one leaf (the spines stay valid) when
 * that lowers a busiest port: what moves cannot do when every flow on that port is bigger than
 * the gap to the others. Rounds repeat on the new busiest ports while any swap is made (each
 * swap narrows two ports' loads, so this ends); returns how many swaps were made. */
static int swap_pass(struct loads *l, const struct c4_plan_flow *flows, struct c4_plan_path *paths,
                     const struct by_host *g, int side) {
  const struct c4_plan_topo *t = l->t;
  double *load = side ? l->rx : l->tx;
  int swaps = 0, round;
  do {
    double top = loads_max(l);
    round = 0;
    for (int h = 0; h < t->nhosts; h++) {
      int p0 = t->hosts[h].port0;
      for (int i = g->start[h]; i < g->start[h + 1]; i++) {
        int f = g->list[i], p = p0 + *port_of(&paths[f], side);
        if (load[p] < top) continue;
        for (int j = g->start[h]; j < g->start[h + 1]; j++) {
          int e = g->list[j], q = p0 + *port_of(&paths[e], side);
          if (q == p || t->ports[q].leaf != t->ports[p].leaf || flows[e].bytes >= flows[f].bytes)
            continue;
          double d = (double)(flows[f].bytes - flows[e].bytes);
          if (max2(load[p] - d * l->inv_port[p], load[q] + d * l->inv_port[q]) >= load[p]) continue;
          loads_add(l, &flows[f], &paths[f], -1);
          loads_add(l, &flows[e], &paths[e], -1);
          *port_of(&paths[f], side) = q - p0;
          *port_of(&paths[e], side) = p - p0;
          loads_add(l, &flows[f], &paths[f], 1);
          loads_add(l, &flows[e], &paths[e], 1);
          round++;
          break;
        }
      }
    }
    swaps += round;
  } while (round);
  return swaps;
}

/* Scratch for resched_pass, each array as long as the most flows or ports one host has. */
struct group {
  struct order *o;   /* the group's flows, largest first */
  double *w, *inv;   /* their bytes in that order; its ports' seconds per byte */
  int *port, *ports; /* the scheduler's placement (index into ports); global port indices */
};

/* Re-places a host's flows on its ports on one leaf, per leaf and side, by c4_plan_sched_ports
 * when that lowers the busiest of those ports and it is a busiest link (others do not set the max,
 * and leaving them keeps this fast): swaps exchange one pair at a time, this the whole group. The
 * leaf stays, so every spine and uplink load stays as it was. Returns how many groups changed, or
 * C4_ENOMEM. */
static int resched_pass(struct loads *l, const struct c4_plan_flow *flows,
                        struct c4_plan_path *paths, const struct by_host *g, int side,
                        struct group *s) {
  const struct c4_plan_topo *t = l->t;
  double *load = side ? l->rx : l->tx, busiest = loads_max(l);
  int changed = 0;
  for (int h = 0; h < t->nhosts; h++) {
    int p0 = t->hosts[h].port0, np = t->hosts[h].nports;
    for (int k = 0; k < np; k++) {
      int leaf = t->ports[p0 + k].leaf, m = 0, n = 0, first = 1, exact;
      for (int j = 0; j < k; j++)
        first &= t->ports[p0 + j].leaf != leaf;
      if (!first) continue; /* this leaf's group was done at its first port */
      double top = 0;
      for (int j = k; j < np; j++)
        if (t->ports[p0 + j].leaf == leaf) {
          s->ports[m] = p0 + j;
          s->inv[m++] = l->inv_port[p0 + j];
          top = max2(top, load[p0 + j]);
        }
      if (top < busiest) continue;
      for (int i = g->start[h]; i < g->start[h + 1]; i++) {
        int f = g->list[i];
        if (t->ports[p0 + *port_of(&paths[f], side)].leaf == leaf)
          s->o[n++] = (struct order){flows[f].bytes, f};
      }
      qsort(s->o, (size_t)n, sizeof *s->o, larger_first);
      for (int i = 0; i < n; i++)
        s->w[i] = (double)s->o[i].bytes;
      double best = c4_plan_sched_ports(s->w, n, s->inv, m, 0, PLAN_NODES, s->port, &exact);
      if (best < 0) return C4_ENOMEM;
      if (best >= top * (1 - 1e-12)) continue; /* not a rounding error's worth of gain */
      for (int i = 0; i < n; i++) {
        int f = s->o[i].flow;
        loads_add(l, &flows[f], &paths[f], -1);
        *port_of(&paths[f], side) = s->ports[s->port[i]] - p0;
        loads_add(l, &flows[f], &paths[f], 1);
      }
      changed++;
    }
  }
  return changed;
}

/* Local search: moves, then swaps, then whole groups rescheduled, until none lowers a busiest
 * link. */
static int improve(struct loads *l, const struct c4_plan_flow *flows, const struct order *ord,
                   int n, struct c4_plan_path *paths, struct choice *sc, struct choice *dc) {
  const struct c4_plan_topo *t = l->t;
  struct by_host out = {0}, in = {0};
  size_t nf = (size_t)(n ? n : 1), np = (size_t)t->nports;
  struct group s = {.o = malloc(sizeof *s.o * nf),
                    .w = malloc(sizeof *s.w * (nf + np)),
                    .port = malloc(sizeof *s.port * (nf + np))};
  int rc = C4_ENOMEM;
  if (!s.o || !s.w || !s.port || by_host_init(&out, t, flows, n, 0) < 0 ||
      by_host_init(&in, t, flows, n, 1) < 0)
    goto out;
  s.inv = s.w + nf;
  s.ports = s.port + nf;
  for (int pass = 0; pass < MAX_PASSES; pass++) {
    if (move_pass(l, flows, ord, n, paths, sc, dc) || swap_pass(l, flows, paths, &out, 0) ||
        swap_pass(l, flows, paths, &in, 1))
      continue;
    int r_out = resched_pass(l, flows, paths, &out, 0, &s),
        r_in = resched_pass(l, flows, paths, &in, 1, &s);
    if (r_out < 0 || r_in < 0) goto out;
    if (!r_out && !r_in) break;
  }
  rc = 0;
out:
  by_host_free(&out);
  by_host_free(&in);
  free(s.o);
  free(s.w);
  free(s.port);
  return rc;
}

int c4_plan_assign(const struct c4_plan_topo *t, const struct c4_plan_flow *flows, int n,
                   struct c4_plan_path *paths) {
  if (n < 0 || check_flows(t, flows, n)) return C4_EINVAL;
  struct loads l;
  struct order *ord = malloc(sizeof *ord * (size_t)(n ? n : 1));
  struct choice *sc = malloc(sizeof *sc * (size_t)t->nports * 2), *dc = sc ? sc + t->nports : NULL;
  int rc = C4_ENOMEM;
  if (!ord || !sc || loads_init(&l, t) < 0) goto out;
  for (int i = 0; i < n; i++)
    ord[i] = (struct order){flows[i].bytes, i};
  qsort(ord, (size_t)n, sizeof *ord, larger_first);
  rc = C4_EINVAL;
  for (int i = 0; i < n; i++) {
    int f = ord[i].flow;
    struct cost c;
    if (best_path(&l, &flows[f], sc, dc, &paths[f], &c) < 0) goto out_loads;
    loads_add(&l, &flows[f], &paths[f], 1);
  }
  rc = improve(&l, flows, ord, n, paths, sc, dc);
out_loads:
  loads_free(&l);
out:
  free(sc);
  free(ord);
  return rc;
}

/* Whether spine s has links to both leaves. */
static int joins(const struct c4_plan_topo *t, int from, int to, int s) {
  return t->uplink_gbps[from * t->nspines + s] > 0 && t->uplink_gbps[to * t->nspines + s] > 0;
}

/* Whether a flow can go from leaf `from` to leaf `to`: one leaf, or a spine joining both. */
static int leaves_joined(const struct c4_plan_topo *t, int from, int to) {
  for (int s = 0; from != to && s < t->nspines; s++)
    if (joins(t, from, to, s)) return 1;
  return from == to;
}

/* Whether port i of host a reaches port j of host b. */
static int ports_joined(const struct c4_plan_topo *t, const struct c4_plan_host *a, int i,
                        const struct c4_plan_host *b, int j) {
  return leaves_joined(t, t->ports[a->port0 + i].leaf, t->ports[b->port0 + j].leaf);
}

static int have_path(const struct c4_plan_topo *t, int src, int dst) {
  const struct c4_plan_host *a = &t->hosts[src], *b = &t->hosts[dst];
  for (int i = 0; i < a->nports; i++)
    for (int j = 0; j < b->nports; j++)
      if (ports_joined(t, a, i, b, j)) return 1;
  return 0;
}

int c4_plan_unroutable(const struct c4_plan_topo *t, const struct c4_plan_flow *flows, int n) {
  for (int i = 0; i < n; i++)
    if (!have_path(t, flows[i].src, flows[i].dst)) return i;
  return C4_NONE;
}

/* splitmix64: small, seedable, and the same on every machine. */
static uint64_t next_random(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int c4_plan_hash(const struct c4_plan_topo *t, const struct c4_plan_flow *flows, int n,
                 uint64_t seed, struct c4_plan_path *paths) {
  if (n < 0 || check_flows(t, flows, n)) return C4_EINVAL;
  int S = t->nspines, *spines = malloc(sizeof(int) * (size_t)S);
  if (!spines) return C4_ENOMEM;
  for (int i = 0; i < n; i++) {
    const struct c4_plan_host *a = &t->hosts[flows[i].src], *b = &t->hosts[flows[i].dst];
    struct c4_plan_path *p = &paths[i];
    /* a random pair of ports among those that reach each other (a random pair of all could
     * have none: c4plan assign then failed on a routable fabric, one seed in two) */
    int pairs = 0;
    for (int x = 0; x < a->nports * b->nports; x++)
      pairs += ports_joined(t, a, x / b->nports, b, x % b->nports);
    if (!pairs) {
      free(spines);
      return C4_EINVAL;
    }
    int pick = (int)(next_random(&seed) % (uint64_t)pairs);
    for (int x = 0; x < a->nports * b->nports; x++)
      if (ports_joined(t, a, x / b->nports, b, x % b->nports) && pick-- == 0) {
        p->src_port = x / b->nports;
        p->dst_port = x % b->nports;
        break;
      }
    int from = t->ports[a->port0 + p->src_port].leaf, to = t->ports[b->port0 + p->dst_port].leaf;
    int k = 0;
    for (int s = 0; from != to && s < S; s++)
      if (joins(t, from, to, s)) spines[k++] = s;
    p->spine = from == to ? -1 : spines[next_random(&seed) % (uint64_t)k];
  }
  free(spines);
  return 0;
}

static int valid_path(const struct c4_plan_topo *t, const struct c4_plan_flow *f,
                      const struct c4_plan_path *p) {
  const struct c4_plan_host *a = &t->hosts[f->src], *b = &t->hosts[f->dst];
  if (p->src_port < 0 || p->src_port >= a->nports || p->dst_port < 0 || p->dst_port >= b->nports)
    return 0;
  int from = t->ports[a->port0 + p->src_port].leaf, to = t->ports[b->port0 + p->dst_port].leaf;
  if (from == to) return p->spine == -1;
  return p->spine >= 0 && p->spine < t->nspines && joins(t, from, to, p->spine);
}

double c4_plan_max_load(const struct c4_plan_topo *t, const struct c4_plan_flow *flows, int n,
                        const struct c4_plan_path *paths) {
  if (n < 0 || check_flows(t, flows, n)) return C4_EINVAL;
  struct loads l;
  if (loads_init(&l, t) < 0) return C4_ENOMEM;
  double m = 0;
  for (int i = 0; i < n && m >= 0; i++)
    if (valid_path(t, &flows[i], &paths[i]))
      loads_add(&l, &flows[i], &paths[i], 1);
    else
      m = -1;
  if (m >= 0) m = loads_max(&l);
  loads_free(&l);
  return m;
}

/* The leaf all of a host's ports are on, or -1 when they are on several. */
static int only_leaf(const struct c4_plan_topo *t, int host) {
  const struct c4_plan_host *h = &t->hosts[host];
  int leaf = t->ports[h->port0].leaf;
  for (int k = 1; k < h->nports; k++)
    if (t->ports[h->port0 + k].leaf != leaf) return C4_NONE;
  return leaf;
}

static int has_port_on(const struct c4_plan_topo *t, int host, int leaf) {
  const struct c4_plan_host *h = &t->hosts[host];
  for (int k = 0; k < h->nports; k++)
    if (t->ports[h->port0 + k].leaf == leaf) return 1;
  return 0;
}

static int larger_bytes(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? 1 : x > y ? -1 : 0;
}

/* A host's m ports carry its flows whole: of its k*m + 1 largest flows some port gets k + 1, so
 * that port carries at least the k + 1 smallest of them (w sorted largest first). In seconds, at
 * the host's fastest port rate. */
static double pigeonhole(double *w, int n, int m, double fastest_gbps) {
  qsort(w, (size_t)n, sizeof *w, larger_bytes);
  double best = 0;
  for (int k = 1; k * m < n; k++) {
    double s = 0;
    for (int i = k * m - k; i <= k * m; i++)
      s += w[i];
    best = max2(best, s);
  }
  return best * SECONDS_PER_GBIT / fastest_gbps;
}

/* bound raised to every host's least possible busiest port over its flows out (by_src) or in.
 * Any plan puts each flow whole on one port of each end, and a port's load one way is the sum of
 * what it carries, so no plan's busiest link is lighter than the best placement of one host's
 * flows on its ports alone, leaves and spines aside: c4_plan_sched_ports gives it when its search
 * ends, or shows it is no more than bound already is; otherwise the pigeonhole bound, itself below
 * that best, stands in. */
static double host_port_bound(const struct c4_plan_topo *t, const struct c4_plan_flow *flows, int n,
                              int by_src, double bound) {
  int H = t->nhosts, *start = calloc((size_t)H + 1, sizeof(int));
  int *port = malloc(sizeof(int) * (size_t)(n ? n : 1));
  double *w = malloc(sizeof(double) * (size_t)(n ? n : 1));
  double *inv = malloc(sizeof(double) * (size_t)t->nports);
  if (!start || !port || !w || !inv) goto out;
  for (int i = 0; i < n; i++)
    start[(by_src ? flows[i].src : flows[i].dst) + 1]++;
  for (int h = 0; h < H; h++)
    start[h + 1] += start[h];
  for (int i = 0; i < n; i++)
    w[start[by_src ? flows[i].src : flows[i].dst]++] = (double)flows[i].bytes;
  for (int h = H; h > 0; h--) /* the fill moved each start to the next host's */
    start[h] = start[h - 1];
  start[0] = 0;
  /* pigeonhole first, for every host: the higher bound is, the sooner each search below stops */
  for (int pass = 0; pass < 2; pass++)
    for (int h = 0; h < H; h++) {
      const struct c4_plan_host *host = &t->hosts[h];
      double fastest = 0, *hw = w + start[h];
      int hn = start[h + 1] - start[h], exact;
      for (int k = 0; k < host->nports; k++) {
        fastest = max2(fastest, t->ports[host->port0 + k].gbps);
        inv[k] = SECONDS_PER_GBIT / t->ports[host->port0 + k].gbps;
      }
      if (!pass) { /* pigeonhole also sorts hw largest first, for the search */
        bound = max2(bound, pigeonhole(hw, hn, host->nports, fastest));
        continue;
      }
      double best =
          c4_plan_sched_ports(hw, hn, inv, host->nports, bound, BOUND_NODES, port, &exact);
      if (exact) bound = max2(bound, best / (1 + C4_PLAN_SCHED_TOL));
    }
out:
  free(start);
  free(port);
  free(w);
  free(inv);
  return bound;
}

double c4_plan_lower_bound(const struct c4_plan_topo *t, const struct c4_plan_flow *flows, int n) {
  if (n < 0 || check_flows(t, flows, n)) return C4_EINVAL;
  int H = t->nhosts, L = t->nleaves;
  /* bytes out and in per host, then bytes that must go up from and down to each leaf */
  double *out = calloc(2 * (size_t)H + 2 * (size_t)L, sizeof(double));
  if (!out) return C4_ENOMEM;
  double *in = out + H, *leaf_up = in + H, *leaf_down = leaf_up + L, bound = 0;
  for (int i = 0; i < n; i++) {
    const struct c4_plan_flow *f = &flows[i];
    double w = (double)f->bytes, fast_src = 0, fast_dst = 0;
    out[f->src] += w;
    in[f->dst] += w;
    for (int k = 0; k < t->hosts[f->src].nports; k++)
      fast_src = max2(fast_src, t->ports[t->hosts[f->src].port0 + k].gbps);
    for (int k = 0; k < t->hosts[f->dst].nports; k++)
      fast_dst = max2(fast_dst, t->ports[t->hosts[f->dst].port0 + k].gbps);
    bound = max2(bound, w * SECONDS_PER_GBIT / (fast_src < fast_dst ? fast_src : fast_dst));
    int from = only_leaf(t, f->src), to = only_leaf(t, f->dst);
    if (from >= 0 && !has_port_on(t, f->dst, from)) leaf_up[from] += w;
    if (to >= 0 && !has_port_on(t, f->src, to)) leaf_down[to] += w;
  }
  for (int h = 0; h < H; h++) {
    double gbps = 0;
    for (int k = 0; k < t->hosts[h].nports; k++)
      gbps += t->ports[t->hosts[h].port0 + k].gbps;
    bound = max2(bound, max2(out[h], in[h]) * SECONDS_PER_GBIT / gbps);
  }
  for (int leaf = 0; leaf < L; leaf++) {
    double gbps = 0;
    for (int s = 0; s < t->nspines; s++)
      gbps += t->uplink_gbps[leaf * t->nspines + s];
    if (gbps > 0)
      bound = max2(bound, max2(leaf_up[leaf], leaf_down[leaf]) * SECONDS_PER_GBIT / gbps);
  }
  free(out);
  return host_port_bound(t, flows, n, 0, host_port_bound(t, flows, n, 1, bound));
}
