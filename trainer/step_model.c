/* step_model.c -- the fit, in two stages. The fixed part: each step gives a rank up to two
 * points (micro-batches done, compute seconds), one at the end of its first micro-batch and one
 * at the end of its last; a line through a rank's points by Theil-Sen (the median of the slopes
 * between every two points with different micro-batch counts) has an intercept, the median of
 * the ranks' intercepts is a step's estimate, and the fixed part the median of the last
 * STEP_MODEL_FIXED_HISTORY steps' estimates: the same code on the same kind of machine, and one
 * rank's first micro-batch is too noisy to trust alone (a fixed part that jumps with it moves
 * every slowdown: (t - fixed) / micro-batches magnifies noise as fixed nears t). The part per
 * micro-batch: for each rank, the median over its steps of (step time - fixed part) /
 * micro-batches. Medians, so a step disturbed by the machine's other work moves neither. */
#include "step_model.h"
#include "c4_err.h"

#include <stdlib.h>
#include <string.h>

#define POINTS (2 * STEP_MODEL_WINDOW)

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

/* Median of v[0..n) (reorders v); n > 0. */
static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int step_model_init(struct step_model *m, int ranks) {
  memset(m, 0, sizeof *m);
  m->ranks = ranks;
  m->win = calloc((size_t)ranks * STEP_MODEL_WINDOW, sizeof *m->win);
  m->count = calloc((size_t)ranks, sizeof *m->count);
  m->next = calloc((size_t)ranks, sizeof *m->next);
  if (m->win && m->count && m->next) return 0;
  step_model_free(m);
  return C4_ENOMEM;
}

void step_model_free(struct step_model *m) {
  free(m->win);
  free(m->count);
  free(m->next);
  memset(m, 0, sizeof *m);
}

static int lines_fixed(const struct step_model *m, double *fixed);

void step_model_add(struct step_model *m, const struct step_sample *steps) {
  double fixed[m->ranks], per_mb[m->ranks], ratio[m->ranks];
  int n = 0;
  int fitted = step_model_fit(m, fixed, per_mb);
  for (int r = 0; r < m->ranks; r++) {
    if (steps[r].microbatches < 1 || !(steps[r].total_s > 0)) continue;
    if (fitted && per_mb[r] > 0)
      ratio[n++] = steps[r].total_s / (fixed[r] + per_mb[r] * steps[r].microbatches);
    else if (!fitted) /* before any fit: time per micro-batch against the first step's */
      ratio[n++] = steps[r].total_s / steps[r].microbatches;
  }
  double common = n ? median(ratio, n) : 1;
  if (!fitted && n) {
    if (!(m->first_per_mb > 0)) m->first_per_mb = common;
    common /= m->first_per_mb;
  }
  for (int r = 0; r < m->ranks; r++) {
    if (steps[r].microbatches < 1) continue;
    struct step_sample *to = &m->win[r * STEP_MODEL_WINDOW + m->next[r]];
    *to = steps[r];
    to->first_s /= common;
    to->total_s /= common;
    m->next[r] = (m->next[r] + 1) % STEP_MODEL_WINDOW;
    if (m->count[r] < STEP_MODEL_WINDOW) m->count[r]++;
  }
  double f;
  if (lines_fixed(m, &f)) {
    m->fixed_hist[m->fixed_next] = f;
    m->fixed_next = (m->fixed_next + 1) % STEP_MODEL_FIXED_HISTORY;
    if (m->fixed_count < STEP_MODEL_FIXED_HISTORY) m->fixed_count++;
  }
}

void step_model_forget(struct step_model *m, int rank) {
  if (rank < 0 || rank >= m->ranks) return;
  m->count[rank] = m->next[rank] = 0;
}

int step_model_samples(const struct step_model *m, int rank) {
  return rank >= 0 && rank < m->ranks ? m->count[rank] : 0;
}

/* A rank's points; returns how many. */
static int points(const struct step_model *m, int rank, double *k, double *t) {
  int n = 0;
  for (int s = 0; s < m->count[rank]; s++) {
    const struct step_sample *p = &m->win[rank * STEP_MODEL_WINDOW + s];
    k[n] = 1;
    t[n++] = p->first_s;
    if (p->microbatches > 1) {
      k[n] = p->microbatches;
      t[n++] = p->total_s;
    }
  }
  return n;
}

/* The median of (t - fixed) / k: the per-micro-batch part once the fixed part is known. */
static double per_mb_given(const double *k, const double *t, int n, double fixed) {
  double r[POINTS];
  for (int i = 0; i < n; i++)
    r[i] = (t[i] - fixed) / k[i];
  return median(r, n);
}

/* Theil-Sen over a rank's points: 1 with *fixed and *per_mb set, 0 when every point has the same
 * micro-batch count or the slope is not positive (then nothing separates the two parts). */
static int fit_line(const double *k, const double *t, int n, double *fixed, double *per_mb) {
  double slope[POINTS * (POINTS - 1) / 2], rest[POINTS];
  int ns = 0;
  for (int i = 0; i < n; i++)
    for (int j = i + 1; j < n; j++)
      if (k[i] != k[j]) slope[ns++] = (t[j] - t[i]) / (k[j] - k[i]);
  if (ns == 0) return 0;
  double b = median(slope, ns);
  if (!(b > 0)) return 0;
  for (int i = 0; i < n; i++)
    rest[i] = t[i] - b * k[i];
  *per_mb = b;
  *fixed = median(rest, n);
  return 1;
}

/* The median of the intercepts of the ranks' lines: 1 with *fixed set, 0 when no rank has one. */
static int lines_fixed(const struct step_model *m, double *fixed) {
  int lines = 0;
  double k[POINTS], t[POINTS], own[m->ranks > 0 ? m->ranks : 1], b;
  for (int r = 0; r < m->ranks; r++)
    if (m->count[r] >= STEP_MODEL_MIN_STEPS && fit_line(k, t, points(m, r, k, t), &own[lines], &b))
      lines++;
  if (lines) *fixed = median(own, lines);
  return lines > 0;
}

int step_model_fit(const struct step_model *m, double *fixed, double *per_mb) {
  int fitted = 0;
  double k[STEP_MODEL_WINDOW], t[STEP_MODEL_WINDOW], hist[STEP_MODEL_FIXED_HISTORY];
  memcpy(hist, m->fixed_hist, sizeof hist);
  double shared = m->fixed_count ? median(hist, m->fixed_count) : 0;
  if (shared < 0) shared = 0;
  for (int r = 0; r < m->ranks; r++) {
    fixed[r] = per_mb[r] = 0;
    int n = m->count[r];
    if (n < STEP_MODEL_MIN_STEPS) continue;
    for (int s = 0; s < n; s++) {
      const struct step_sample *p = &m->win[r * STEP_MODEL_WINDOW + s];
      k[s] = p->microbatches;
      t[s] = p->total_s;
    }
    fixed[r] = shared;
    per_mb[r] = per_mb_given(k, t, n, shared);
    if (!(per_mb[r] > 0)) { /* did all its work in less than the fixed part: none of it is fixed */
      fixed[r] = 0;
      per_mb[r] = per_mb_given(k, t, n, 0);
    }
    if (per_mb[r] > 0) fitted++;
  }
  return fitted;
}

double step_model_slowdowns(const struct step_model *m, double *slowdown, double *fixed_s) {
  if (m->ranks < 1) return 0;
  double fixed[m->ranks], per_mb[m->ranks], v[m->ranks];
  int n = 0;
  step_model_fit(m, fixed, per_mb);
  for (int r = 0; r < m->ranks; r++)
    if (per_mb[r] > 0) v[n++] = per_mb[r];
  if (n == 0) return 0;
  if (fixed_s) {
    double f[n];
    int k = 0;
    for (int r = 0; r < m->ranks; r++)
      if (per_mb[r] > 0) f[k++] = fixed[r];
    *fixed_s = median(f, k);
  }
  double mid = median(v, n);
  for (int r = 0; r < m->ranks; r++)
    if (per_mb[r] > 0) slowdown[r] = per_mb[r] / mid;
  return mid;
}
