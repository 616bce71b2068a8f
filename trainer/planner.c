/* planner.c -- exact integer splitting by searching the bottleneck time. For a time T, worker i
 * can do floor(T * rate[i]) units (capped): T is feasible when those sum to at least total. The
 * optimum is one of the breakpoints k / rate[i]; a bisection over T finds the smallest feasible
 * one up to rounding, and the split is then trimmed back to total, taking units off whoever is
 * the bottleneck, which cannot raise it. */
#include "planner.h"
#include "c4_err.h"

#include <math.h>
#include <stdlib.h>

static long fill(double t, int n, const double *rate, const double *fixed, const int *cap,
                 int least, int *out) {
  long sum = 0;
  for (int i = 0; i < n; i++) {
    double left = t - (fixed ? fixed[i] : 0);
    double k = rate[i] > 0 && left > 0 ? floor(left * rate[i] * (1 + 1e-12)) : 0;
    long v = (long)k;
    if (cap && v > cap[i]) v = cap[i];
    if (v < least) v = least;
    out[i] = (int)v;
    sum += v;
  }
  return sum;
}

/* A worker's time: its fixed time (fixed NULL: none) plus its units at its rate. */
static double busy(int i, const double *rate, const double *fixed, const int *out) {
  return (fixed ? fixed[i] : 0) + out[i] / rate[i];
}

/* c4_split_units with every worker given at least `least` units (least * n <= total, least <=
 * every cap) and a fixed time fixed[i] besides its units (NULL: none): the same search, and the
 * trim never takes a worker below least. */
static double split_at_least(int total, int n, const double *rate, const double *fixed,
                             const int *cap, int least, int *out) {
  if (n < 1 || total < 0 || (long)least * n > total) return C4_EINVAL;
  double best_rate = 0;
  long room = 0;
  for (int i = 0; i < n; i++) {
    if (rate[i] > best_rate) best_rate = rate[i];
    room += rate[i] > 0 ? (cap ? cap[i] : total) : 0;
  }
  if (best_rate <= 0 || room < total) return C4_EINVAL;
  double lo = 0, hi = total / best_rate;
  for (int i = 0; fixed && i < n; i++)
    hi += fixed[i];
  while (fill(hi, n, rate, fixed, cap, least, out) < total) /* caps may push it further */
    hi *= 2;
  for (int it = 0; it < 200; it++) {
    double mid = (lo + hi) / 2;
    if (fill(mid, n, rate, fixed, cap, least, out) >= total)
      hi = mid;
    else
      lo = mid;
  }
  long sum = fill(hi, n, rate, fixed, cap, least, out);
  while (sum > total) { /* trim from the current bottleneck */
    int worst = -1;
    for (int i = 0; i < n; i++)
      if (out[i] > least &&
          (worst < 0 || busy(i, rate, fixed, out) > busy(worst, rate, fixed, out)))
        worst = i;
    out[worst]--;
    sum--;
  }
  double t = 0;
  for (int i = 0; i < n; i++)
    if (out[i] > 0 && busy(i, rate, fixed, out) > t) t = busy(i, rate, fixed, out);
  return t;
}

double c4_split_units(int total, int n, const double *rate, const int *cap, int *out) {
  return split_at_least(total, n, rate, NULL, cap, 0, out);
}

static double *rates_of(int n, const double *slowdown) {
  double *r = malloc((size_t)n * sizeof *r);
  for (int i = 0; r && i < n; i++)
    r[i] = slowdown[i] > 0 ? 1 / slowdown[i] : 0;
  return r;
}

double c4_split_microbatches(int total, int n, const double *slowdown, int *out) {
  double *r = n > 0 ? rates_of(n, slowdown) : NULL;
  double t = r ? split_at_least(total, n, r, NULL, NULL, total >= n, out) : -1;
  free(r);
  return t;
}

double c4_split_layers(int layers, int stages, const double *slowdown, const int *max_layers,
                       int *out) {
  double *r = stages > 0 ? rates_of(stages, slowdown) : NULL;
  double t = r ? c4_split_units(layers, stages, r, max_layers, out) : -1;
  free(r);
  return t;
}

double c4_split_layers_ends(int layers, int stages, const double *slowdown, const double *ends,
                            const int *max_layers, int *out) {
  double *r = stages > 0 ? rates_of(stages, slowdown) : NULL;
  double *fixed = r ? malloc((size_t)stages * sizeof *fixed) : NULL;
  for (int i = 0; fixed && i < stages; i++)
    fixed[i] = ends[i] * slowdown[i];
  double t =
      fixed && layers >= stages ? split_at_least(layers, stages, r, fixed, max_layers, 1, out) : -1;
  free(r);
  free(fixed);
  return t;
}

int c4_split_needs_replan(int n, const double *planned, const double *measured) {
  for (int i = 0; i < n; i++)
    if ((fabs(measured[i] - planned[i]) >= C4_SPLIT_MOVE &&
         (measured[i] >= C4_SPLIT_STRAGGLER || planned[i] >= C4_SPLIT_STRAGGLER)) ||
        (planned[i] >= C4_SPLIT_STRAGGLER && measured[i] < C4_SPLIT_HEALED))
      return 1;
  return 0;
}
