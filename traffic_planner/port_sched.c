/* port_sched.c -- least-makespan placement of one host's flows on its ports: largest-first greedy,
 * then a depth-first branch and bound over the flows, largest first. */
#include "port_sched.h"
#include "c4_err.h"

#include <stdlib.h>

struct search {
  const double *w, *inv;
  int n, m;
  double *load, *rest; /* load[m]: per port so far; rest[i]: bytes of flows i..n-1 */
  int *cur, *best_port;
  double best, floor; /* the best busiest load found; stop at floor (none is lighter, or enough) */
  long nodes, limit;
};

/* Tries every port for flow i, cheapest first, keeping only what can still beat s->best. */
static void dfs(struct search *s, int i, double top) {
  if (i == s->n) {
    s->best = top;
    for (int k = 0; k < s->n; k++)
      s->best_port[k] = s->cur[k];
    return;
  }
  /* Volume: to beat best, port p can take less than (best - load[p]) / inv[p] more bytes, and
   * none at all when that is below the smallest flow left (w[n - 1]): the rest must fit under the
   * sum of that room. */
  double room = 0;
  for (int p = 0; p < s->m; p++) {
    double r = (s->best - s->load[p]) / s->inv[p];
    if (r > s->w[s->n - 1]) room += r;
  }
  if (s->rest[i] >= room) return;
  int cand[s->m], nc = 0;
  double after[s->m];
  for (int p = 0; p < s->m; p++) {
    double v = s->load[p] + s->w[i] * s->inv[p];
    int same = 0; /* ports alike in rate and load lead to the same subtrees: try one of them */
    for (int q = 0; q < p && !same; q++)
      same = s->inv[q] == s->inv[p] && s->load[q] == s->load[p];
    if (same || v >= s->best) continue;
    int k = nc++;
    for (; k > 0 && after[k - 1] > v; k--)
      cand[k] = cand[k - 1], after[k] = after[k - 1];
    cand[k] = p, after[k] = v;
  }
  for (int k = 0; k < nc && after[k] < s->best && s->best > s->floor; k++) {
    if (++s->nodes > s->limit) return;
    int p = cand[k];
    double was = s->load[p];
    s->load[p] = after[k];
    s->cur[i] = p;
    dfs(s, i + 1, top > after[k] ? top : after[k]);
    s->load[p] = was;
  }
}

double c4_plan_sched_ports(const double *w, int n, const double *inv, int m, double enough,
                           long limit, int *port, int *exact) {
  struct search s = {.w = w, .inv = inv, .n = n, .m = m, .best_port = port, .limit = limit};
  *exact = 0;
  s.load = malloc(sizeof(double) * (size_t)(m + n + 1) + sizeof(int) * (size_t)(n ? n : 1));
  if (!s.load) return C4_ENOMEM;
  s.rest = s.load + m;
  s.cur = (int *)(s.rest + n + 1);
  double cap = 0, fastest = inv[0];
  for (int p = 0; p < m; p++) {
    s.load[p] = 0;
    cap += 1 / inv[p];
    fastest = inv[p] < fastest ? inv[p] : fastest;
  }
  s.rest[n] = 0;
  for (int i = n - 1; i >= 0; i--)
    s.rest[i] = s.rest[i + 1] + w[i];
  /* the largest flow on the fastest port, and every byte spread over all the capacity */
  s.floor = n ? w[0] * fastest : 0;
  s.floor = s.rest[0] / cap > s.floor ? s.rest[0] / cap : s.floor;
  s.floor = enough > s.floor ? enough : s.floor;
  s.floor *= 1 + C4_PLAN_SCHED_TOL; /* equal flows add up a rounding error above their share */
  for (int i = 0; i < n; i++) {     /* greedy: each flow where it ends lightest */
    int b = 0;
    for (int p = 1; p < m; p++)
      if (s.load[p] + w[i] * inv[p] < s.load[b] + w[i] * inv[b]) b = p;
    s.load[b] += w[i] * inv[b];
    port[i] = b;
    s.best = s.load[b] > s.best ? s.load[b] : s.best;
  }
  for (int p = 0; p < m; p++)
    s.load[p] = 0;
  if (s.best > s.floor) dfs(&s, 0, 0);
  *exact = s.nodes <= s.limit;
  free(s.load);
  return s.best;
}
