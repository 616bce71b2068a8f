/* layer_plan.c -- one step of the layer re-split's decisions. c4mon's straggler factor for a
 * stage counts (when larger than the measured one) for LAYER_PLAN_WINDOW steps after it appears,
 * as in resplit.c, to move before the window has filled. A split changes only when it pays 5%
 * under the slowdowns it is made for (stages under the straggler threshold count as healthy:
 * planning on noise would hand the fastest one more layers, which it then finishes last); when
 * every stage reads healthy the even split comes back, and the healed stage's window starts
 * afresh (its slow steps would read it slow again, and the split would flap). */
#include "layer_plan.h"

#include <stdlib.h>
#include <string.h>

#include "planner.h"

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* The lower median of v[0..n) (reorders v): the middle one, the smaller of two middles. */
static double lower_median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return v[(n - 1) / 2];
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int layer_plan_init(struct layer_plan *p, int stages, int layers, const int *max_layers,
                    int enabled) {
  memset(p, 0, sizeof *p);
  p->stages = stages;
  p->layers = layers;
  p->enabled = enabled;
  size_t n = (size_t)stages, w = n * LAYER_PLAN_WINDOW;
  p->split = calloc(n, sizeof *p->split);
  p->even = calloc(n, sizeof *p->even);
  p->max_layers = max_layers ? calloc(n, sizeof *p->max_layers) : NULL;
  p->slowdown = calloc(n, sizeof *p->slowdown);
  p->planned = calloc(n, sizeof *p->planned);
  p->ends = calloc(n, sizeof *p->ends);
  p->rel = calloc(w, sizeof *p->rel);
  p->endw = calloc(w, sizeof *p->endw);
  p->count = calloc(n, sizeof *p->count);
  p->next = calloc(n, sizeof *p->next);
  p->monitor = calloc(n, sizeof *p->monitor);
  p->monitor_age = calloc(n, sizeof *p->monitor_age);
  if (!p->split || !p->even || (max_layers && !p->max_layers) || !p->slowdown || !p->planned ||
      !p->ends || !p->rel || !p->endw || !p->count || !p->next || !p->monitor || !p->monitor_age) {
    layer_plan_free(p);
    return -1;
  }
  if (max_layers) memcpy(p->max_layers, max_layers, n * sizeof *max_layers);
  double ones[stages];
  for (int s = 0; s < stages; s++)
    ones[s] = p->slowdown[s] = p->planned[s] = 1.0;
  if (c4_split_layers(layers, stages, ones, NULL, p->even) < 0 || layers < stages) {
    layer_plan_free(p);
    return -1;
  }
  memcpy(p->split, p->even, n * sizeof *p->split);
  return 0;
}

void layer_plan_free(struct layer_plan *p) {
  free(p->split);
  free(p->even);
  free(p->max_layers);
  free(p->slowdown);
  free(p->planned);
  free(p->ends);
  free(p->rel);
  free(p->endw);
  free(p->count);
  free(p->next);
  free(p->monitor);
  free(p->monitor_age);
  memset(p, 0, sizeof *p);
}

double layer_plan_time(const struct layer_plan *p, const int *split, const double *slowdown) {
  double worst = 0;
  for (int s = 0; s < p->stages; s++) {
    double t = slowdown[s] * (split[s] + p->ends[s]);
    if (t > worst) worst = t;
  }
  return worst;
}

/* The step's ratios into the windows, then every stage's slowdown and ends from its window;
 * returns 1 when every stage has enough steps to say. */
static int measure(struct layer_plan *p, const struct layer_plan_report *rep) {
  int S = p->stages, n = 0, ready = 1;
  double pace[S], sorted[S], ends[S];
  for (int s = 0; s < S; s++) {
    pace[s] = ends[s] = 0;
    if (rep[s].layers < 1 || !(rep[s].layers_s > 0) || !(rep[s].busy_s > 0)) continue;
    ends[s] = rep[s].layers * rep[s].ends_s / rep[s].layers_s;
    pace[s] = rep[s].busy_s / (rep[s].layers + ends[s]);
    sorted[n++] = pace[s];
  }
  double common = n ? lower_median(sorted, n) : 0;
  for (int s = 0; s < S; s++) {
    if (common > 0 && pace[s] > 0) {
      int at = s * LAYER_PLAN_WINDOW + p->next[s];
      p->rel[at] = pace[s] / common;
      p->endw[at] = ends[s];
      p->next[s] = (p->next[s] + 1) % LAYER_PLAN_WINDOW;
      if (p->count[s] < LAYER_PLAN_WINDOW) p->count[s]++;
    }
    if (p->count[s] < LAYER_PLAN_MIN_STEPS) {
      ready = 0;
      continue;
    }
    double r[LAYER_PLAN_WINDOW], e[LAYER_PLAN_WINDOW];
    memcpy(r, p->rel + s * LAYER_PLAN_WINDOW, sizeof r);
    memcpy(e, p->endw + s * LAYER_PLAN_WINDOW, sizeof e);
    p->slowdown[s] = median(r, p->count[s]);
    p->ends[s] = median(e, p->count[s]);
  }
  for (int s = 0; s < S; s++) {
    if (rep[s].monitor_factor != p->monitor[s]) p->monitor_age[s] = 0;
    p->monitor[s] = rep[s].monitor_factor;
    p->monitor_age[s]++;
    if (p->monitor_age[s] <= LAYER_PLAN_WINDOW && p->monitor[s] > p->slowdown[s])
      p->slowdown[s] = p->monitor[s];
  }
  return ready;
}

int layer_plan_step(struct layer_plan *p, const struct layer_plan_report *rep) {
  int S = p->stages;
  if (!measure(p, rep) || !p->enabled || !c4_split_needs_replan(S, p->planned, p->slowdown))
    return 0;
  double want[S];
  int slow = 0, cand[S];
  for (int s = 0; s < S; s++) {
    want[s] = p->slowdown[s] < C4_SPLIT_STRAGGLER ? 1.0 : p->slowdown[s];
    slow |= want[s] > 1.0;
  }
  if (!slow)
    memcpy(cand, p->even, sizeof cand);
  else if (c4_split_layers_ends(p->layers, S, want, p->ends, p->max_layers, cand) < 0 ||
           layer_plan_time(p, cand, want) >= 0.95 * layer_plan_time(p, p->split, want))
    return 0;
  for (int s = 0; s < S; s++)
    if (p->planned[s] >= C4_SPLIT_STRAGGLER && want[s] < C4_SPLIT_STRAGGLER)
      p->count[s] = p->next[s] = 0; /* healed: measured afresh */
  int changed = memcmp(cand, p->split, sizeof cand) != 0;
  memcpy(p->split, cand, sizeof cand);
  memcpy(p->planned, want, sizeof want);
  return changed;
}
