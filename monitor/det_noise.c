/* det_noise.c -- robust baselines: median, MAD and the upper tail over a sliding window. */
#include "det_noise.h"

#include <math.h>

#include "det_median.h"

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

static void fit(struct det_noise *x) {
  float v[DET_NOISE_LEN], pick[DET_NOISE_LEN];
  int n = x->n;
  for (int i = 0; i < n; i++)
    v[i] = (float)x->v[i] / SCALE;
  float med = det_kth(v, n, n / 2, pick);
  /* the 97th percentile (the second largest of 64) over its normal distance (1.88 standard
   * deviations): noise that comes in bursts (a busy host, a shared core) has a tail the MAD of
   * its calm majority misses */
  float tail = (det_kth(v, n, n - 1 - n / 32, pick) - med) / 1.88f;
  for (int i = 0; i < n; i++)
    v[i] = fabsf(v[i] - med);
  float mad = 1.4826f * det_kth(v, n, n / 2, pick);
  x->base = med;
  x->spread = mad > tail ? mad : tail;
  x->since = 0;
}

static void keep(struct det_noise *x, float v) {
  float q = v * SCALE;
  q = q > 32767 ? 32767 : q < -32767 ? -32767 : q;
  x->v[x->pos] = (int16_t)lrintf(q);
  x->pos = (uint16_t)((x->pos + 1) % DET_NOISE_LEN);
  if (x->n < DET_NOISE_LEN) x->n++;
  /* a fit is three selections: only once the signal is judged, and every few samples after */
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
