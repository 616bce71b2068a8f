/* det_noise.c -- robust baselines: median, MAD and the upper tail over a sliding window. */
#include "det_noise.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#define SCALE 4096.0f
#define FLOOR 0.01f /* log units: no signal is trusted to be steadier than 1% */

/* The z whose upper normal tail is p: bisection on erfc, once at init. */
static double z_of(double p) {
  double lo = 0, hi = 40;
  for (int i = 0; i < 100; i++) {
    double mid = (lo + hi) / 2;
    if (0.5 * erfc(mid / sqrt(2)) > p)
      lo = mid;
    else
      hi = mid;
  }
  return (lo + hi) / 2;
}

struct det_noise_knobs det_noise_knobs(double p, double min_effect) {
  return (struct det_noise_knobs){.z = z_of(p), .min_log = log(min_effect)};
}

/* The k-th smallest (from 0) distance of the sorted s[0..n) from its element m: the distances
 * below m and above it are two sorted lists walked outward from m, merged until the k-th. */
static int kth_distance(const int16_t *s, int n, int m, int k) {
  int lo = m - 1, hi = m, d = 0;
  for (int taken = 0; taken <= k; taken++) {
    int below = lo >= 0 ? s[m] - s[lo] : INT32_MAX, above = hi < n ? s[hi] - s[m] : INT32_MAX;
    d = below < above ? below : above;
    lo -= below < above;
    hi += below >= above;
  }
  return d;
}

/* How many of a median-fed window's n samples lie above the one its tail is read from: a
 * thirty-second, and never none. Its largest sample was its tail while it held fewer than 32:
 * one compute blip of 3x among a rank's young ratios lifted its threshold from 1.1x to 3.5x for
 * seconds, and a 2x straggler that began then went unnamed. */
static int above_tail(int n) { return n / 32 > 1 ? n / 32 : 1; }

float det_noise_tail_z(int n) {
  static float z[DET_NOISE_LEN + 1];
  if (n < DET_NOISE_MIN || n > DET_NOISE_LEN) return NAN;
  if (!z[n]) z[n] = (float)z_of((double)above_tail(n) / n);
  return z[n];
}

/* Median, tail and MAD from the sorted window: each an index or a walk of n / 2 steps, where
 * three quickselects over a copy were a third of a 16,384-rank replay. The values are exactly
 * those selection gives (samples are multiples of 1 / 4096, so each difference is exact). */
static void fit(struct det_noise *x) {
  int n = x->n, m = n / 2;
  float med = (float)x->sorted[m] / SCALE;
  /* the 97th percentile (the third largest of 64) over its normal distance (1.88 standard
   * deviations): noise that comes in bursts (a busy host, a shared core) has a tail the MAD of
   * its calm majority misses */
  float tail = x->for_median
                   ? ((float)x->sorted[n - 1 - above_tail(n)] / SCALE - med) / det_noise_tail_z(n)
                   : ((float)x->sorted[n - 1 - n / 32] / SCALE - med) / 1.88f;
  float mad = 1.4826f * ((float)kth_distance(x->sorted, n, m, m) / SCALE);
  x->base = med;
  x->spread = mad > tail ? mad : tail;
  x->since = 0;
}

/* How many of the DET_NOISE_LEN values of s are below v: a count over the whole window, not a
 * binary search, so that the compiler compares a vector at a time and no branch depends on the
 * data (the search's mispredicted branches and the shifting loops were a twelfth of a
 * 16,384-rank replay). */
static int count_below(const int16_t *s, int16_t v) {
  int c = 0;
  for (int i = 0; i < DET_NOISE_LEN; i++)
    c += s[i] < v;
  return c;
}

/* The sorted window of n samples loses old (when full: n is DET_NOISE_LEN) and gains q. Full, old
 * is at place at (the first not below it: old is in the window), and q goes where the values
 * below it end once old is out; the values between the two places move by one toward at. */
static void sorted_swap(int16_t *s, int n, int full, int16_t old, int16_t q) {
  if (!full) {
    int to = 0;
    while (to < n && s[to] < q)
      to++;
    memmove(s + to + 1, s + to, (size_t)(n - to) * sizeof *s);
    s[to] = q;
    return;
  }
  int at = count_below(s, old), below_q = count_below(s, q);
  if (below_q > at) { /* old is below q: q's place is one lower once old is out */
    memmove(s + at, s + at + 1, (size_t)(below_q - 1 - at) * sizeof *s);
    s[below_q - 1] = q;
  } else {
    memmove(s + below_q + 1, s + below_q, (size_t)(at - below_q) * sizeof *s);
    s[below_q] = q;
  }
}

static void keep(struct det_noise *x, float v) {
  float q = v * SCALE;
  q = q > 32767 ? 32767 : q < -32767 ? -32767 : q;
  int16_t s = (int16_t)lrintf(q);
  int full = x->n == DET_NOISE_LEN;
  sorted_swap(x->sorted, x->n, full, x->v[x->pos], s);
  x->v[x->pos] = s;
  if (!full) x->n++;
  x->pos = (uint16_t)((x->pos + 1) % DET_NOISE_LEN);
  /* a fit only once the signal is judged, and every few samples after */
  if (++x->since >= (x->n < DET_NOISE_LEN ? 2 : 8) && x->n >= DET_NOISE_MIN) fit(x);
}

void det_noise_add(struct det_noise *x, float v) {
  if (x->nheld == DET_NOISE_DELAY) {
    keep(x, x->held[0]);
    for (int i = 1; i < DET_NOISE_DELAY; i++)
      x->held[i - 1] = x->held[i];
    x->nheld--;
  }
  x->held[x->nheld++] = v;
}

float det_noise_margin(const struct det_noise *x, const struct det_noise_knobs *k) {
  return det_noise_margin_scaled(x, k, 1);
}

float det_noise_margin_scaled(const struct det_noise *x, const struct det_noise_knobs *k,
                              float scale) {
  float spread = x->spread * scale > FLOOR ? x->spread * scale : FLOOR;
  float z = (float)k->z * (1.0f + 8.0f / (float)(x->n ? x->n : 1));
  float m = z * spread;
  return m > (float)k->min_log ? m : (float)k->min_log;
}

void det_noise_hold(struct det_noise_hold *h, struct det_noise *x, float v) {
  if (h->n == DET_NOISE_HOLD) {
    det_noise_add(x, h->v[0]);
    memmove(h->v, h->v + 1, (DET_NOISE_HOLD - 1) * sizeof *h->v);
    h->n--;
  }
  h->v[h->n++] = v;
}

void det_noise_release(struct det_noise_hold *h, struct det_noise *x) {
  for (int i = 0; i < h->n; i++)
    det_noise_add(x, h->v[i]);
  h->n = 0;
}
