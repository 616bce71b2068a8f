/* test_median.c -- the delay matrix's order statistics give exactly what sorting gives: at every
 * position of short arrays (the sorting network), on both sides of the histogram's threshold, and
 * on the values that strain it (duplicates, negatives, one far outlier, a range too narrow to
 * divide into buckets); and a signal's noise window (det_noise) fits the median, MAD and upper tail
 * that sorting its last DET_NOISE_LEN samples gives, and a held hot run joins it only when
 * released. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../check_run.h"
#include "det_median.h"
#include "det_noise.h"

#define MAXN 100000

static float v[MAXN], sorted[MAXN], work[MAXN], pick[MAXN];

static int by_value(const void *a, const void *b) {
  float x = *(const float *)a, y = *(const float *)b;
  return (x > y) - (x < y);
}

/* Every k asked of det_kth (or a spread of them for long arrays) and the lower median of v[0..n)
 * against the sorted copy. */
static void check_against_sort(int n) {
  memcpy(sorted, v, (size_t)n * sizeof *v);
  qsort(sorted, (size_t)n, sizeof *sorted, by_value);
  int step = n <= 64 ? 1 : n / 7;
  for (int k = 0; k < n; k += step) {
    memcpy(work, v, (size_t)n * sizeof *v);
    float got = det_kth(work, n, k, pick);
    ck_assert_msg(got == sorted[k], "n=%d k=%d: %g, sorted %g", n, k, got, sorted[k]);
  }
  memcpy(work, v, (size_t)n * sizeof *v);
  float med = det_lower_median(work, n, pick);
  ck_assert_msg(med == sorted[(n - 1) / 2], "n=%d median %g, sorted %g", n, med,
                sorted[(n - 1) / 2]);
}

static float uniform(float lo, float hi) {
  return lo + (hi - lo) * (float)rand() / (float)RAND_MAX;
}

START_TEST(short_arrays_give_every_order_statistic_exactly) {
  srand(7);
  for (int n = 1; n <= 20; n++)
    for (int round = 0; round < 200; round++) {
      for (int i = 0; i < n; i++) /* few distinct values: ties and signs at every position */
        v[i] = (float)(rand() % 7 - 3) * 0.5f;
      check_against_sort(n);
    }
  memset(work, 0, sizeof work);
  ck_assert(det_lower_median(work, 0, pick) == 0);
}
END_TEST

START_TEST(long_arrays_give_the_same_value_as_sorting) {
  srand(11);
  int sizes[] = {4095, 4096, 4097, 30000, MAXN};
  for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
    int n = sizes[s];
    for (int i = 0; i < n; i++) /* log(ns per byte) of healthy cells: a narrow band */
      v[i] = uniform(-2.6f, -2.2f);
    check_against_sort(n);
    for (int i = 0; i < n; i++) /* heavy duplicates: most values in one bucket */
      v[i] = (float)(rand() % 3) - 2.5f;
    check_against_sort(n);
    v[n / 3] = 40.0f; /* one far outlier stretches the buckets */
    v[n / 2] = -40.0f;
    check_against_sort(n);
  }
}
END_TEST

START_TEST(degenerate_ranges_fall_back_and_stay_exact) {
  int n = 5000;
  for (int i = 0; i < n; i++) /* all equal */
    v[i] = 1.25f;
  check_against_sort(n);
  for (int i = 0; i < n; i++) /* a range of a few denormals: its bucket scale is infinite */
    v[i] = FLT_TRUE_MIN * (float)(i % 5);
  check_against_sort(n);
  for (int i = 0; i < n; i++) /* the widest finite range */
    v[i] = i % 2 ? FLT_MAX : -FLT_MAX;
  v[7] = 0;
  check_against_sort(n);
}
END_TEST

/* The window's fit against a reference from qsort over the samples it holds: samples go in as
 * log factors and are kept to 1 / 4096, so the reference rounds them the same way. */
static void check_noise_fit(const struct det_noise *x, const float *hist, int added) {
  int n = added - DET_NOISE_DELAY; /* the last DET_NOISE_DELAY samples are still held back */
  if (n > DET_NOISE_LEN) n = DET_NOISE_LEN;
  int first = added - DET_NOISE_DELAY - n;
  for (int i = 0; i < n; i++)
    sorted[i] = (float)lrintf(hist[first + i] * 4096.0f) / 4096.0f;
  qsort(sorted, (size_t)n, sizeof *sorted, by_value);
  float med = sorted[n / 2];
  float tail = x->for_median ? (sorted[n - 1 - (n < 64 ? 1 : 2)] - med) / det_noise_tail_z(n)
                             : (sorted[n - 1 - n / 32] - med) / 1.88f;
  for (int i = 0; i < n; i++)
    work[i] = fabsf(sorted[i] - med);
  qsort(work, (size_t)n, sizeof *work, by_value);
  float mad = 1.4826f * work[n / 2];
  ck_assert_msg(x->n == n, "window holds %d, expected %d", x->n, n);
  ck_assert_msg(x->base == med, "after %d samples: base %g, sorting %g", added, x->base, med);
  ck_assert_msg(x->spread == (mad > tail ? mad : tail), "after %d samples: spread %g, sorting %g",
                added, x->spread, mad > tail ? mad : tail);
}

/* A window of a rank's compute ratios (behind its median of 12) younger than 32 samples read its
 * tail from its largest sample: one compute blip of 3x among its first 20 lifted the rank's
 * threshold from 1.1x to 3.5x, and a 2x straggler that began then went unnamed (detect_bench,
 * 16 ranks, seed 8). Fed to a median, one outlier now moves the spread little and two (a burst)
 * still widen it. Other windows keep a young window's largest as its tail. The tail's normal
 * distances are the normal quantiles of 1/12 and 2/64 above the median. */
START_TEST(one_outlier_in_a_young_median_fed_window_does_not_make_its_spread) {
  ck_assert_float_eq_tol(det_noise_tail_z(12), 1.383f, 0.002f);
  ck_assert_float_eq_tol(det_noise_tail_z(64), 1.863f, 0.002f);
  struct det_noise_knobs k = det_noise_knobs(1e-4, 1.05);
  struct det_noise calm = {0}, blip = {0}, burst = {0}, plain = {0};
  det_noise_for_median(&calm);
  det_noise_for_median(&blip);
  det_noise_for_median(&burst);
  for (int i = 0; i < 20 + DET_NOISE_DELAY; i++) {
    float v = 0.01f * (float)((i * 7) % 5 - 2); /* -0.02..0.02, steady */
    det_noise_add(&calm, v);
    det_noise_add(&blip, i == 5 ? logf(3) : v);
    det_noise_add(&plain, i == 5 ? logf(3) : v);
    det_noise_add(&burst, i == 5 || i == 9 ? logf(3) : v);
  }
  ck_assert_int_eq(blip.n, 20);
  float m_calm = det_noise_margin(&calm, &k), m_blip = det_noise_margin(&blip, &k);
  ck_assert_float_lt(m_blip, 1.5f * m_calm);
  ck_assert_float_lt(m_blip, logf(1.3f));
  ck_assert_float_gt(det_noise_margin(&burst, &k), 3 * m_calm);
  ck_assert_float_gt(det_noise_margin(&plain, &k), 3 * m_calm);
}
END_TEST

START_TEST(noise_window_fits_what_sorting_gives) {
  srand(13);
  static float hist[4000];
  for (int round = 0; round < 20; round++) {
    struct det_noise x = {0};
    if (round % 2) det_noise_for_median(&x);
    int added = 0;
    for (int i = 0; i < 4000; i++) {
      /* calm noise, ties (a coarse grid), bursts and a level that moves: every path of the
       * sorted window's insert and evict */
      float f = round % 3 == 0   ? (float)(rand() % 9 - 4) * 0.01f
                : round % 3 == 1 ? uniform(-0.05f, 0.05f) + (rand() % 50 == 0 ? 0.8f : 0)
                                 : uniform(-0.02f, 0.02f) + (float)(i / 500) * 0.1f;
      hist[added++] = f;
      det_noise_add(&x, f);
      /* a fit comes every other sample while the window fills, every 8th once full */
      if (x.since == 0 && x.n >= DET_NOISE_MIN) check_noise_fit(&x, hist, added);
    }
  }
}
END_TEST

/* Two windows fed the same samples, one through a hold: equal in every sample and place. */
static void ck_same_window(const struct det_noise *a, const struct det_noise *b) {
  ck_assert_int_eq(a->n, b->n);
  ck_assert_int_eq(a->nheld, b->nheld);
  ck_assert_mem_eq(a->v, b->v, sizeof a->v);
  ck_assert_mem_eq(a->held, b->held, sizeof a->held);
}

START_TEST(a_held_run_joins_its_window_only_when_released_and_never_when_dropped) {
  struct det_noise direct = {0}, through = {0};
  struct det_noise_hold h = {0};
  for (int i = 0; i < 20; i++) {
    det_noise_add(&direct, 0.01f * (float)(i % 5));
    det_noise_add(&through, 0.01f * (float)(i % 5));
  }
  /* a burst of 5 held, then released: the window as if each came in turn */
  for (int i = 0; i < 5; i++) {
    det_noise_hold(&h, &through, 0.5f + 0.1f * (float)i);
    ck_assert_int_eq(through.n + through.nheld, 20);
  }
  det_noise_release(&h, &through);
  ck_assert_int_eq(h.n, 0);
  for (int i = 0; i < 5; i++)
    det_noise_add(&direct, 0.5f + 0.1f * (float)i);
  ck_same_window(&direct, &through);
  /* a run that made a verdict: dropped with what the window still held back, the window's kept
   * samples untouched */
  for (int i = 0; i < 3; i++)
    det_noise_hold(&h, &through, 2.0f);
  det_noise_hold_drop(&h, &through);
  det_noise_release(&h, &through);
  det_noise_drop(&direct);
  ck_same_window(&direct, &through);
  /* a run longer than the hold: its oldest samples join, in order, as the newest come */
  for (int i = 0; i < DET_NOISE_HOLD + 3; i++)
    det_noise_hold(&h, &through, 0.2f + 0.01f * (float)i);
  ck_assert_int_eq(h.n, DET_NOISE_HOLD);
  for (int i = 0; i < 3; i++)
    det_noise_add(&direct, 0.2f + 0.01f * (float)i);
  ck_same_window(&direct, &through);
  ck_assert_float_eq(h.v[0], 0.2f + 0.01f * 3);
}
END_TEST

int main(void) {
  Suite *s = suite_create("median");
  TCase *tc = tcase_create("median");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, short_arrays_give_every_order_statistic_exactly);
  tcase_add_test(tc, long_arrays_give_the_same_value_as_sorting);
  tcase_add_test(tc, degenerate_ranges_fall_back_and_stay_exact);
  tcase_add_test(tc, noise_window_fits_what_sorting_gives);
  tcase_add_test(tc, one_outlier_in_a_young_median_fed_window_does_not_make_its_spread);
  tcase_add_test(tc, a_held_run_joins_its_window_only_when_released_and_never_when_dropped);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
