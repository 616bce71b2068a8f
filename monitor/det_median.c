/* det_median.c -- the k-th smallest and the lower median for the delay matrix: per evaluation at
 * 16,384 NICs a median of each size class over ~80,000 cells, one over all cells, and six per NIC
 * for the polish, nearly all of eight values or fewer. */
#include "det_median.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

/* Quickselect: the k-th smallest of v[0..n) (reorders v). */
static float select_kth(float *v, int n, int k) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    float pivot = v[(lo + hi) / 2];
    int i = lo, j = hi;
    while (i <= j) {
      while (v[i] < pivot)
        i++;
      while (v[j] > pivot)
        j--;
      if (i <= j) {
        float t = v[i];
        v[i++] = v[j];
        v[j--] = t;
      }
    }
    if (k <= j)
      hi = j;
    else if (k >= i)
      lo = i;
    else
      return v[k];
  }
  return v[k];
}

/* Many values: a histogram over their range finds the bucket holding it, and quickselect runs on
 * that bucket's values only. On tens of thousands of cells quickselect alone mispredicts about
 * every other comparison; the histogram's passes have no branch on the data. A bucket's number
 * rises with the value (one subtraction and one product, both monotonic), so the k-th smallest is
 * the (k - below)-th of its bucket, exactly what quickselect on everything would give. */
#define KTH_BUCKETS 1024
float det_kth(float *v, int n, int k, float *pick) {
  if (n < 4 * KTH_BUCKETS) return select_kth(v, n, k);
  float lo = v[0], hi = v[0];
  for (int i = 1; i < n; i++) {
    lo = v[i] < lo ? v[i] : lo;
    hi = v[i] > hi ? v[i] : hi;
  }
  float range = hi - lo, scale = (float)(KTH_BUCKETS - 1) / range;
  if (!(range > 0) || !isfinite(range) || !isfinite(scale)) /* one value, or no bucket width */
    return select_kth(v, n, k);
  int count[KTH_BUCKETS] = {0};
  for (int i = 0; i < n; i++) {
    int b = (int)((v[i] - lo) * scale);
    count[b < KTH_BUCKETS ? b : KTH_BUCKETS - 1]++;
  }
  int want = 0, below = 0;
  while (below + count[want] <= k)
    below += count[want++];
  int picked = 0;
  for (int i = 0; i < n; i++) {
    int b = (int)((v[i] - lo) * scale);
    pick[picked] = v[i];
    picked += (b < KTH_BUCKETS ? b : KTH_BUCKETS - 1) == want;
  }
  return select_kth(pick, picked, k - below);
}

/* A float's bits as an integer that orders as the float does (for all but NaN, which no cell
 * holds): negative values have their magnitude bits flipped. Its own inverse. */
static int32_t float_order_key(int32_t bits) { return bits ^ ((bits >> 31) & 0x7fffffff); }

/* Sorts eight order keys with a 19-comparator network: integer min and max compile to
 * conditional moves, so nothing depends on a branch predicted from the data. The polish takes six
 * medians per NIC per evaluation (100,000 at 16,384 NICs), nearly all of eight cells or fewer,
 * where insertion sort's mispredicted branches were most of its time. */
#define CMPSWAP(i, j)                                                                              \
  do {                                                                                             \
    int32_t a_ = w[i], b_ = w[j];                                                                  \
    w[i] = a_ < b_ ? a_ : b_;                                                                      \
    w[j] = a_ < b_ ? b_ : a_;                                                                      \
  } while (0)
static void sort8(int32_t w[8]) {
  CMPSWAP(0, 2);
  CMPSWAP(1, 3);
  CMPSWAP(4, 6);
  CMPSWAP(5, 7);
  CMPSWAP(0, 4);
  CMPSWAP(1, 5);
  CMPSWAP(2, 6);
  CMPSWAP(3, 7);
  CMPSWAP(0, 1);
  CMPSWAP(2, 3);
  CMPSWAP(4, 5);
  CMPSWAP(6, 7);
  CMPSWAP(2, 4);
  CMPSWAP(3, 5);
  CMPSWAP(1, 4);
  CMPSWAP(3, 6);
  CMPSWAP(1, 2);
  CMPSWAP(3, 4);
  CMPSWAP(5, 6);
}
#undef CMPSWAP

/* Up to eight values through the network (padded with the largest key, which sorts last), more
 * by quickselect. */
float det_lower_median(float *v, int n, float *pick) {
  if (!n) return 0;
  if (n > 8) return det_kth(v, n, (n - 1) / 2, pick);
  int32_t w[8];
  for (int i = 0; i < 8; i++) {
    int32_t bits;
    memcpy(&bits, &v[i < n ? i : 0], sizeof bits);
    w[i] = i < n ? float_order_key(bits) : INT32_MAX;
  }
  sort8(w);
  int32_t bits = float_order_key(w[(n - 1) / 2]);
  float median;
  memcpy(&median, &bits, sizeof median);
  return median;
}
