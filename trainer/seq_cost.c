/* seq_cost.c -- the sequence cost model's fit: non-negative least squares for (fixed, a, b) on
 * the window's steps, each divided by its rank's factor, alternated with the factors (medians of
 * measured over predicted). */
#include "seq_cost.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NCOEF 3
#define ROUNDS 6

int seq_cost_init(struct seq_cost *m, int ranks, double flops_per_token,
                  double flops_per_sq_token) {
  memset(m, 0, sizeof *m);
  m->ranks = ranks;
  m->a = flops_per_token;
  m->b = flops_per_sq_token;
  m->speed = malloc((size_t)ranks * sizeof *m->speed);
  m->win = calloc((size_t)ranks * SEQ_COST_WINDOW, sizeof *m->win);
  if (!m->speed || !m->win) {
    seq_cost_free(m);
    return -1;
  }
  for (int r = 0; r < ranks; r++)
    m->speed[r] = 1.0;
  return 0;
}

void seq_cost_free(struct seq_cost *m) {
  free(m->speed);
  free(m->win);
  memset(m, 0, sizeof *m);
}

double seq_cost_of(const struct seq_cost *m, int len) {
  return m->a * len + m->b * (double)len * len;
}

void seq_cost_add(struct seq_cost *m, const struct seq_cost_sample *steps) {
  for (int r = 0; r < m->ranks; r++)
    m->win[r * SEQ_COST_WINDOW + m->next] = steps[r];
  m->next = (m->next + 1) % SEQ_COST_WINDOW;
  if (m->count < SEQ_COST_WINDOW) m->count++;
  if (m->count >= SEQ_COST_MIN_STEPS) seq_cost_fit(m);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Solves the k x k system A x = y (Gaussian elimination, partial pivots) in place; 0, or -1 when
 * it is singular relative to its scale. */
static int solve(int k, double A[NCOEF][NCOEF], double *y, double *x) {
  double scale = 0;
  for (int i = 0; i < k; i++)
    scale = fmax(scale, fabs(A[i][i]));
  for (int c = 0; c < k; c++) {
    int p = c;
    for (int r = c + 1; r < k; r++)
      if (fabs(A[r][c]) > fabs(A[p][c])) p = r;
    if (!(fabs(A[p][c]) > 1e-12 * scale)) return -1;
    for (int j = 0; j < k; j++) {
      double t = A[c][j];
      A[c][j] = A[p][j];
      A[p][j] = t;
    }
    double t = y[c];
    y[c] = y[p];
    y[p] = t;
    for (int r = c + 1; r < k; r++) {
      double f = A[r][c] / A[c][c];
      for (int j = c; j < k; j++)
        A[r][j] -= f * A[c][j];
      y[r] -= f * y[c];
    }
  }
  for (int c = k - 1; c >= 0; c--) {
    double s = y[c];
    for (int j = c + 1; j < k; j++)
      s -= A[c][j] * x[j];
    x[c] = s / A[c][c];
  }
  return 0;
}

/* Least squares of t / speed on the features whose `use` is set, the others held at 0. The
 * features are scaled to unit size first (tokens and squared tokens differ by orders of
 * magnitude). Each sample's error is taken relative to its time, so a long step does not outweigh
 * a short one. Returns 0 with coef set, or -1. */
static int least_squares(const struct seq_cost *m, const int *use, double *coef) {
  double A[NCOEF][NCOEF] = {{0}}, y[NCOEF] = {0}, x[NCOEF] = {0}, norm[NCOEF] = {0};
  int idx[NCOEF], k = 0;
  for (int j = 0; j < NCOEF; j++)
    if (use[j]) idx[k++] = j;
  int n = 0;
  for (int r = 0; r < m->ranks; r++)
    for (int s = 0; s < m->count; s++) {
      const struct seq_cost_sample *p = &m->win[r * SEQ_COST_WINDOW + s];
      if (!(p->tokens > 0) || !(p->secs > 0)) continue;
      double f[NCOEF] = {1, p->tokens, p->sumsq};
      for (int j = 0; j < NCOEF; j++)
        norm[j] = fmax(norm[j], f[j]);
      n++;
    }
  if (n < k + 1) return -1;
  for (int r = 0; r < m->ranks; r++)
    for (int s = 0; s < m->count; s++) {
      const struct seq_cost_sample *p = &m->win[r * SEQ_COST_WINDOW + s];
      if (!(p->tokens > 0) || !(p->secs > 0)) continue;
      double t = p->secs / m->speed[r], w = 1.0 / (t * t);
      double f[NCOEF] = {1 / norm[0], p->tokens / norm[1], p->sumsq / norm[2]};
      for (int i = 0; i < k; i++) {
        for (int j = 0; j < k; j++)
          A[i][j] += w * f[idx[i]] * f[idx[j]];
        y[i] += w * f[idx[i]] * t;
      }
    }
  if (solve(k, A, y, x)) return -1;
  for (int j = 0; j < NCOEF; j++)
    coef[j] = 0;
  for (int i = 0; i < k; i++)
    coef[idx[i]] = x[i] / norm[idx[i]];
  return 0;
}

/* Non-negative: a coefficient that comes out negative (noise on a term too small to see) is
 * dropped and the rest refitted. */
static int fit_coefficients(const struct seq_cost *m, double *coef) {
  int use[NCOEF] = {1, 1, 1};
  for (int tries = 0; tries < NCOEF; tries++) {
    if (least_squares(m, use, coef)) return -1;
    int worst = -1;
    for (int j = 0; j < NCOEF; j++)
      if (coef[j] < 0 && (worst < 0 || coef[j] < coef[worst])) worst = j;
    if (worst < 0) return coef[1] > 0 || coef[2] > 0 ? 0 : -1;
    use[worst] = 0;
  }
  return -1;
}

int seq_cost_fit(struct seq_cost *m) {
  double coef[NCOEF], *speed = malloc((size_t)m->ranks * sizeof *speed);
  double ratio[SEQ_COST_WINDOW];
  if (!speed) return 0;
  memcpy(speed, m->speed, (size_t)m->ranks * sizeof *speed);
  if (!m->fitted)
    for (int r = 0; r < m->ranks; r++)
      m->speed[r] = 1.0;
  int ok = 0;
  for (int round = 0; round < ROUNDS; round++) {
    if (fit_coefficients(m, coef)) break;
    ok = 1;
    double sp[m->ranks];
    int known = 0;
    for (int r = 0; r < m->ranks; r++) {
      int n = 0;
      for (int s = 0; s < m->count; s++) {
        const struct seq_cost_sample *p = &m->win[r * SEQ_COST_WINDOW + s];
        double pred = coef[0] + coef[1] * p->tokens + coef[2] * p->sumsq;
        if (p->tokens > 0 && p->secs > 0 && pred > 0) ratio[n++] = p->secs / pred;
      }
      m->speed[r] = n ? median(ratio, n) : m->speed[r];
      if (n) sp[known++] = m->speed[r];
    }
    /* the median rank is 1: the coefficients are its times */
    double mid = known ? median(sp, known) : 1;
    for (int r = 0; r < m->ranks; r++)
      m->speed[r] /= mid;
  }
  if (ok) ok = fit_coefficients(m, coef) == 0; /* at the settled factors */
  if (ok) {
    m->fixed = coef[0];
    m->a = coef[1];
    m->b = coef[2];
    m->fitted = 1;
  } else {
    memcpy(m->speed, speed, (size_t)m->ranks * sizeof *speed);
  }
  free(speed);
  return ok;
}
