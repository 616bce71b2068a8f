/* seq_cost.c -- the sequence cost model's fit: non-negative least squares (Lawson and Hanson's
 * active set, on the normal equations) for the fixed part and the per-sequence coefficients on
 * the window's steps, each divided by its rank's factor, alternated with the factors (medians of
 * measured over predicted). */
#include "seq_cost.h"
#include "c4_err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define NCOEF (1 + SEQ_COST_FEATURES) /* fixed, then one per feature */
#define ROUNDS 6

int seq_cost_init(struct seq_cost *m, int ranks, int max_len, double flops_per_token,
                  double flops_per_sq_token) {
  memset(m, 0, sizeof *m);
  m->ranks = ranks;
  m->a = flops_per_token;
  m->b = flops_per_sq_token;
  for (double k = SEQ_COST_FIRST_KNOT; k < max_len && m->nknots < SEQ_COST_KNOTS; k *= 2) {
    m->knot[m->nknots++] = k;
    if (1.5 * k < max_len && m->nknots < SEQ_COST_KNOTS) m->knot[m->nknots++] = 1.5 * k;
  }
  m->speed = malloc((size_t)ranks * sizeof *m->speed);
  m->noise = calloc((size_t)ranks, sizeof *m->noise);
  m->win = calloc((size_t)ranks * SEQ_COST_WINDOW, sizeof *m->win);
  if (!m->speed || !m->noise || !m->win) {
    seq_cost_free(m);
    return C4_ENOMEM;
  }
  for (int r = 0; r < ranks; r++)
    m->speed[r] = 1.0;
  return 0;
}

void seq_cost_free(struct seq_cost *m) {
  free(m->speed);
  free(m->noise);
  free(m->win);
  memset(m, 0, sizeof *m);
}

void seq_cost_features(const struct seq_cost *m, int len, double *f) {
  f[0] += len;
  f[1] += (double)len * len;
  for (int j = 0; j < m->nknots; j++)
    if (len > m->knot[j]) f[2 + j] += len * (len - m->knot[j]);
}

double seq_cost_of(const struct seq_cost *m, int len) {
  double t = m->a * len + m->b * (double)len * len;
  for (int j = 0; j < m->nknots; j++)
    if (len > m->knot[j]) t += m->c[j] * len * (len - m->knot[j]);
  return t;
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

/* A sample's regressors: 1 for the fixed part, then its features. */
static void regressors(const struct seq_cost_sample *p, double *x) {
  x[0] = 1;
  memcpy(x + 1, p->f, sizeof p->f);
}

static int usable(const struct seq_cost_sample *p) { return p->f[0] > 0 && p->secs > 0; }

/* Solves the k x k system G z = h for the coefficients in set[0..k) (Gaussian elimination with
 * partial pivots on copies); 0, or -1 when it is singular relative to its scale. */
static int solve(int k, const int *set, double G[NCOEF][NCOEF], const double *h, double *z) {
  double A[NCOEF][NCOEF], y[NCOEF], scale = 0;
  for (int i = 0; i < k; i++) {
    for (int j = 0; j < k; j++)
      A[i][j] = G[set[i]][set[j]];
    y[i] = h[set[i]];
    scale = fmax(scale, fabs(A[i][i]));
  }
  for (int c = 0; c < k; c++) {
    int p = c;
    for (int r = c + 1; r < k; r++)
      if (fabs(A[r][c]) > fabs(A[p][c])) p = r;
    if (!(fabs(A[p][c]) > 1e-12 * scale)) return C4_EINVAL;
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
      s -= A[c][j] * z[j];
    z[c] = s / A[c][c];
  }
  return 0;
}

/* Lawson and Hanson's active set on min |X x - t|^2, x >= 0, given G = X'X and h = X't, over the
 * coefficients whose `allow` is set: a coefficient enters while the gradient favours it, and one
 * the unconstrained solve would make negative is moved back to the bound; one that the others
 * already say (a singular system) stays out. Sets x. */
static void nnls(int k, double G[NCOEF][NCOEF], const double *h, const int *allow, double *x) {
  int in[NCOEF] = {0}, set[NCOEF];
  double z[NCOEF];
  for (int j = 0; j < k; j++)
    x[j] = 0;
  for (int outer = 0; outer < 3 * k; outer++) {
    int best = -1;
    double bestw = 0;
    for (int j = 0; j < k; j++) {
      double w = h[j];
      for (int i = 0; i < k; i++)
        w -= G[j][i] * x[i];
      if (allow[j] && !in[j] && w > 1e-12 * (fabs(h[j]) + 1e-300) && w > bestw) best = j, bestw = w;
    }
    if (best < 0) return;
    in[best] = 1;
    for (int inner = 0; inner < 3 * k; inner++) {
      int n = 0;
      for (int j = 0; j < k; j++)
        if (in[j]) set[n++] = j;
      if (solve(n, set, G, h, z)) {
        in[best] = 0; /* it adds nothing the others do not say: leave it out */
        return;
      }
      double alpha = 1;
      int neg = 0;
      for (int i = 0; i < n; i++)
        if (z[i] <= 0) {
          neg = 1;
          double d = x[set[i]] - z[i];
          if (d > 0) alpha = fmin(alpha, x[set[i]] / d);
        }
      for (int i = 0; i < n; i++)
        x[set[i]] += (neg ? alpha : 1) * (z[i] - x[set[i]]);
      if (!neg) break;
      for (int i = 0; i < n; i++)
        if (x[set[i]] <= 0) in[set[i]] = 0, x[set[i]] = 0;
    }
  }
}

/* Non-negative least squares of t / speed on the regressors `allow` admits. The regressors are
 * scaled to unit size first (tokens and squared tokens differ by orders of magnitude), and each
 * sample's error is taken relative to its time, so a long step does not outweigh a short one.
 * Returns 0 with coef set (the per-token or per-squared-token cost positive), or -1. */
static int fit_coefficients(const struct seq_cost *m, const int *allow, double *coef) {
  double G[NCOEF][NCOEF] = {{0}}, h[NCOEF] = {0}, x[NCOEF], norm[NCOEF] = {0}, r[NCOEF];
  int n = 0, k = 0;
  for (int s = 0; s < m->ranks * m->count; s++) {
    const struct seq_cost_sample *p = &m->win[(s % m->ranks) * SEQ_COST_WINDOW + s / m->ranks];
    if (!usable(p)) continue;
    regressors(p, r);
    for (int j = 0; j < NCOEF; j++)
      norm[j] = fmax(norm[j], r[j]);
    n++;
  }
  for (int j = 0; j < NCOEF; j++)
    k += allow[j] && norm[j] > 0;
  if (n < k + 1) return C4_EINVAL;
  int ok[NCOEF];
  for (int j = 0; j < NCOEF; j++)
    ok[j] = allow[j] && norm[j] > 0;
  for (int s = 0; s < m->ranks * m->count; s++) {
    int rank = s % m->ranks;
    const struct seq_cost_sample *p = &m->win[rank * SEQ_COST_WINDOW + s / m->ranks];
    if (!usable(p)) continue;
    double t = p->secs / m->speed[rank], w = 1.0 / (t * t);
    regressors(p, r);
    for (int i = 0; i < NCOEF; i++) {
      if (!ok[i]) continue;
      for (int j = 0; j < NCOEF; j++)
        if (ok[j]) G[i][j] += w * (r[i] / norm[i]) * (r[j] / norm[j]);
      h[i] += w * (r[i] / norm[i]) * t;
    }
  }
  nnls(NCOEF, G, h, ok, x);
  for (int j = 0; j < NCOEF; j++)
    coef[j] = ok[j] ? x[j] / norm[j] : 0;
  return coef[1] > 0 || coef[2] > 0 ? 0 : -1;
}

static double predict(const double *coef, const struct seq_cost_sample *p) {
  double r[NCOEF], t = 0;
  regressors(p, r);
  for (int j = 0; j < NCOEF; j++)
    t += coef[j] * r[j];
  return t;
}

/* Root mean square of (predicted - measured) / measured over the window at the current factors. */
static double rel_error(const struct seq_cost *m, const double *coef) {
  double sum = 0;
  int n = 0;
  for (int s = 0; s < m->ranks * m->count; s++) {
    int rank = s % m->ranks;
    const struct seq_cost_sample *p = &m->win[rank * SEQ_COST_WINDOW + s / m->ranks];
    if (!usable(p)) continue;
    double e = m->speed[rank] * predict(coef, p) / p->secs - 1;
    sum += e * e;
    n++;
  }
  return n ? sqrt(sum / n) : 0;
}

/* Each rank's noise (seq_cost.h) at coefficients coef and the current factors. */
static void fit_noise(struct seq_cost *m, const double *coef) {
  double q[m->ranks], e[SEQ_COST_WINDOW], dev[SEQ_COST_WINDOW];
  for (int r = 0; r < m->ranks; r++) {
    int n = 0;
    for (int s = 0; s < m->count; s++) {
      int k = 0;
      double mine = 0;
      for (int j = 0; j < m->ranks; j++) {
        const struct seq_cost_sample *p = &m->win[j * SEQ_COST_WINDOW + s];
        double pred = m->speed[j] * predict(coef, p);
        if (!usable(p) || !(pred > 0)) continue;
        if (j == r) mine = p->secs / pred;
        q[k++] = p->secs / pred;
      }
      if (mine > 0 && k > 1) {
        double common = median(q, k);
        if (common > 0) e[n++] = mine / common;
      }
    }
    if (n < 3) {
      m->noise[r] = 0;
      continue;
    }
    double mid = median(e, n);
    for (int i = 0; i < n; i++)
      dev[i] = fabs(e[i] - mid);
    m->noise[r] = 1.4826 * median(dev, n);
  }
}

void seq_cost_risk_speed(const struct seq_cost *m, double *out) {
  for (int r = 0; r < m->ranks; r++)
    out[r] = m->speed[r] * (1 + m->noise[r]);
}

int seq_cost_fit(struct seq_cost *m) {
  double coef[NCOEF], *speed = malloc((size_t)m->ranks * sizeof *speed);
  double ratio[SEQ_COST_WINDOW];
  int allow[NCOEF];
  if (!speed) return 0;
  for (int j = 0; j < NCOEF; j++)
    allow[j] = j < 3 + m->nknots;
  memcpy(speed, m->speed, (size_t)m->ranks * sizeof *speed);
  if (!m->fitted)
    for (int r = 0; r < m->ranks; r++)
      m->speed[r] = 1.0;
  int ok = 0;
  for (int round = 0; round < ROUNDS; round++) {
    if (fit_coefficients(m, allow, coef)) break;
    ok = 1;
    double sp[m->ranks];
    int known = 0;
    for (int r = 0; r < m->ranks; r++) {
      int n = 0;
      for (int s = 0; s < m->count; s++) {
        const struct seq_cost_sample *p = &m->win[r * SEQ_COST_WINDOW + s];
        double pred = predict(coef, p);
        if (usable(p) && pred > 0) ratio[n++] = p->secs / pred;
      }
      m->speed[r] = n ? median(ratio, n) : m->speed[r];
      if (n) sp[known++] = m->speed[r];
    }
    /* the median rank is 1: the coefficients are its times */
    double mid = known ? median(sp, known) : 1;
    for (int r = 0; r < m->ranks; r++)
      m->speed[r] /= mid;
  }
  if (ok) ok = fit_coefficients(m, allow, coef) == 0; /* at the settled factors */
  if (ok) {
    m->fixed = coef[0];
    m->a = coef[1];
    m->b = coef[2];
    for (int j = 0; j < SEQ_COST_KNOTS; j++)
      m->c[j] = coef[3 + j];
    m->fitted = 1;
    m->err = rel_error(m, coef);
    fit_noise(m, coef);
    double quad[NCOEF];
    for (int j = 3; j < NCOEF; j++)
      allow[j] = 0;
    m->err_quadratic = fit_coefficients(m, allow, quad) == 0 ? rel_error(m, quad) : NAN;
  } else {
    memcpy(m->speed, speed, (size_t)m->ranks * sizeof *speed);
  }
  free(speed);
  return ok;
}
