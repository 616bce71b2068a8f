/* seq_assign.c -- exact branch and bound for a few sequences, longest-processing-time first with
 * moves and swaps for many, and first-fit-decreasing packing into micro-batches. */
#include "seq_assign.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double seq_assign_time(int n, const double *cost, int ranks, const double *speed, double fixed,
                       const int *rank_of) {
  double load[ranks], worst = 0;
  for (int r = 0; r < ranks; r++)
    load[r] = fixed;
  for (int i = 0; i < n; i++)
    load[rank_of[i]] += cost[i];
  for (int r = 0; r < ranks; r++)
    if (speed[r] * load[r] > worst) worst = speed[r] * load[r];
  return worst;
}

static int cmp_desc(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x < y) - (x > y);
}

static int cmp_asc(const void *a, const void *b) { return -cmp_desc(a, b); }

/* Three bounds, the largest taken: all of the work spread over the ranks in proportion to their
 * speeds; and, for each k up to ranks + 1, the k costliest sequences: either each on a rank of
 * its own (at best the costliest on the fastest, and so on down) or two of them sharing one (at
 * best the two cheapest of them on the fastest rank). */
double seq_assign_lower_bound(int n, const double *cost, int ranks, const double *speed,
                              double fixed) {
  int top = n < ranks + 1 ? n : ranks + 1;
  double total = 0, rate = 0, c[top > 0 ? top : 1], s[ranks];
  for (int i = 0; i < n; i++)
    total += cost[i];
  for (int r = 0; r < ranks; r++) {
    rate += 1.0 / speed[r];
    s[r] = speed[r];
  }
  qsort(s, (size_t)ranks, sizeof *s, cmp_asc);
  double *all = malloc((size_t)(n > 0 ? n : 1) * sizeof *all),
         bound = (total + ranks * fixed) / rate;
  if (!all) return bound;
  memcpy(all, cost, (size_t)n * sizeof *all);
  qsort(all, (size_t)n, sizeof *all, cmp_desc);
  memcpy(c, all, (size_t)top * sizeof *c);
  free(all);
  for (int k = 1; k <= top; k++) {
    double apart = INFINITY, shared = k >= 2 ? s[0] * (fixed + c[k - 2] + c[k - 1]) : INFINITY;
    if (k <= ranks) {
      apart = 0;
      for (int i = 0; i < k; i++)
        apart = fmax(apart, s[i] * (fixed + c[i]));
    }
    double b = fmin(apart, shared);
    bound = b > bound ? b : bound;
  }
  return bound;
}

/* Sequence order by decreasing cost (ties by index, so every rank computes the same order). */
static int by_cost_desc(const void *a, const void *b, void *arg) {
  const double *cost = arg;
  int i = *(const int *)a, j = *(const int *)b;
  if (cost[i] != cost[j]) return cost[i] < cost[j] ? 1 : -1;
  return (i > j) - (i < j);
}

static void order_by_cost(int n, const double *cost, int *order) {
  for (int i = 0; i < n; i++)
    order[i] = i;
  qsort_r(order, (size_t)n, sizeof *order, by_cost_desc, (void *)cost);
}

struct search {
  int n, ranks;
  const double *cost, *speed;
  const int *order;
  double *load, best;
  int *cur, *best_of;
};

/* Places order[k..n) on top of the loads so far; keeps the best complete assignment. Two ranks
 * of the same speed and load are interchangeable: only the first is tried. */
static void branch(struct search *s, int k, double worst) {
  if (worst >= s->best) return;
  if (k == s->n) {
    s->best = worst;
    memcpy(s->best_of, s->cur, (size_t)s->n * sizeof *s->cur);
    return;
  }
  int i = s->order[k];
  for (int r = 0; r < s->ranks; r++) {
    int same = 0;
    for (int q = 0; q < r && !same; q++)
      same = s->speed[q] == s->speed[r] && s->load[q] == s->load[r];
    if (same) continue;
    s->load[r] += s->cost[i];
    s->cur[i] = r;
    double t = s->speed[r] * s->load[r];
    branch(s, k + 1, t > worst ? t : worst);
    s->load[r] -= s->cost[i];
  }
}

/* Greedy: each sequence, costliest first, where it would finish earliest. */
static void greedy(int n, const double *cost, int ranks, const double *speed, const int *order,
                   double *load, int *rank_of) {
  for (int k = 0; k < n; k++) {
    int i = order[k], pick = 0;
    for (int r = 1; r < ranks; r++)
      if (speed[r] * (load[r] + cost[i]) < speed[pick] * (load[pick] + cost[i])) pick = r;
    load[pick] += cost[i];
    rank_of[i] = pick;
  }
}

double seq_assign_in_order(int n, const double *cost, int ranks, const double *speed, double fixed,
                           int *rank_of) {
  double load[ranks];
  for (int r = 0; r < ranks; r++)
    load[r] = fixed;
  for (int i = 0; i < n; i++) {
    int pick = 0;
    for (int r = 1; r < ranks; r++)
      if (speed[r] * (load[r] + cost[i]) < speed[pick] * (load[pick] + cost[i])) pick = r;
    load[pick] += cost[i];
    rank_of[i] = pick;
  }
  return seq_assign_time(n, cost, ranks, speed, fixed, rank_of);
}

static int slowest(int ranks, const double *speed, const double *load) {
  int w = 0;
  for (int r = 1; r < ranks; r++)
    if (speed[r] * load[r] > speed[w] * load[w]) w = r;
  return w;
}

/* One improving move or swap off the slowest rank w: 1 when made. A change counts when the
 * larger of the two ranks' new times is below w's old time. */
static int improve(int n, const double *cost, int ranks, const double *speed, double *load,
                   int *rank_of) {
  int w = slowest(ranks, speed, load);
  double top = speed[w] * load[w];
  for (int i = 0; i < n; i++) {
    if (rank_of[i] != w) continue;
    for (int r = 0; r < ranks; r++) {
      if (r == w) continue;
      double tw = speed[w] * (load[w] - cost[i]), tr = speed[r] * (load[r] + cost[i]);
      if ((tw > tr ? tw : tr) < top * (1 - 1e-12)) {
        load[w] -= cost[i];
        load[r] += cost[i];
        rank_of[i] = r;
        return 1;
      }
      for (int j = 0; j < n; j++) {
        if (rank_of[j] != r || cost[j] >= cost[i]) continue;
        double d = cost[i] - cost[j];
        tw = speed[w] * (load[w] - d);
        tr = speed[r] * (load[r] + d);
        if ((tw > tr ? tw : tr) < top * (1 - 1e-12)) {
          load[w] -= d;
          load[r] += d;
          rank_of[i] = r;
          rank_of[j] = w;
          return 1;
        }
      }
    }
  }
  return 0;
}

double seq_assign_ranks(int n, const double *cost, int ranks, const double *speed, double fixed,
                        int *rank_of) {
  int *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
  double load[ranks];
  for (int r = 0; r < ranks; r++)
    load[r] = fixed;
  if (!order) { /* no memory for an order: round robin, still a valid assignment */
    for (int i = 0; i < n; i++)
      rank_of[i] = i % ranks;
    return seq_assign_time(n, cost, ranks, speed, fixed, rank_of);
  }
  order_by_cost(n, cost, order);
  greedy(n, cost, ranks, speed, order, load, rank_of);
  if (n <= SEQ_ASSIGN_EXACT) {
    int cur[SEQ_ASSIGN_EXACT];
    for (int r = 0; r < ranks; r++)
      load[r] = fixed;
    struct search s = {.n = n,
                       .ranks = ranks,
                       .cost = cost,
                       .speed = speed,
                       .order = order,
                       .load = load,
                       .best = seq_assign_time(n, cost, ranks, speed, fixed, rank_of) * (1 + 1e-12),
                       .cur = cur,
                       .best_of = rank_of};
    branch(&s, 0, 0);
  } else {
    for (int moves = 0; moves < 4 * n && improve(n, cost, ranks, speed, load, rank_of); moves++) {
    }
  }
  free(order);
  return seq_assign_time(n, cost, ranks, speed, fixed, rank_of);
}

static int by_len_desc(const void *a, const void *b, void *arg) {
  const int *len = arg;
  int i = *(const int *)a, j = *(const int *)b;
  if (len[i] != len[j]) return len[i] < len[j] ? 1 : -1;
  return (i > j) - (i < j);
}

int seq_assign_pack(int n, const int *len, int cap, int *mb_of) {
  int *order = malloc((size_t)(n > 0 ? n : 1) * sizeof *order);
  long *room = malloc((size_t)(n > 0 ? n : 1) * sizeof *room);
  int nmb = 0;
  if (!order || !room) { /* no memory to sort: one sequence a micro-batch, still within cap */
    for (int k = 0; k < n; k++)
      mb_of[k] = k;
    free(order);
    free(room);
    return n;
  }
  for (int k = 0; k < n; k++)
    order[k] = k;
  qsort_r(order, (size_t)n, sizeof *order, by_len_desc, (void *)len);
  for (int k = 0; k < n; k++) {
    int i = order[k], b = 0;
    while (b < nmb && room[b] < len[i])
      b++;
    if (b == nmb) room[nmb++] = cap;
    room[b] -= len[i];
    mb_of[i] = b;
  }
  free(order);
  free(room);
  return nmb;
}
