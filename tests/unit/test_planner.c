/* test_planner.c -- the straggler planner reproduces FIELD.md's figures, splits exactly (checked
 * against brute force), keeps the total, leaves out a rank too slow to help, respects memory
 * limits, and re-plans only as Malleus's hysteresis says. */
#include <check.h>
#include <math.h>
#include <stdlib.h>

#include "../check_run.h"
#include "planner.h"

static int sum(const int *v, int n) {
  int s = 0;
  for (int i = 0; i < n; i++)
    s += v[i];
  return s;
}

START_TEST(eight_way_data_parallel_with_one_gpu_at_half_speed_keeps_88_9_percent) {
  double slow[8] = {2, 1, 1, 1, 1, 1, 1, 1};
  int mb[8];
  double t = c4_split_microbatches(64, 8, slow, mb);
  ck_assert_int_eq(sum(mb, 8), 64);
  ck_assert_double_eq_tol(8.0 / t, 0.889, 0.001); /* healthy: 8 micro-batches each */
  ck_assert_int_eq(mb[0], 4);
  /* the alternatives FIELD.md lists: uniform 50%, dropping the GPU 80%, continuous 93.75% */
  ck_assert_double_eq_tol(8.0 / (8 * 2.0), 0.5, 1e-9);
  double seven[7] = {1, 1, 1, 1, 1, 1, 1};
  int mb7[7];
  ck_assert_double_eq_tol(8.0 / c4_split_microbatches(64, 7, seven, mb7), 0.8, 1e-9);
  ck_assert_double_eq_tol(8.0 / (64 / 7.5), 0.9375, 1e-9);
}
END_TEST

/* 2 pipelines x 4 stages, 16 layers each, one GPU of pipeline 0 at half speed, 64 micro-batches:
 * a pipeline's time per micro-batch is its slowest stage's. */
START_TEST(two_pipelines_of_four_stages_keep_88_9_percent_with_layers_and_data_resplit) {
  double stage_slow[4] = {1, 2, 1, 1}, healthy[4] = {1, 1, 1, 1};
  int layers[4], even[4];
  double t_healthy = c4_split_layers(16, 4, healthy, NULL, even); /* 4 layers a stage */
  ck_assert_double_eq_tol(t_healthy, 4, 1e-9);
  /* data re-split only: the slow stage keeps its 4 layers, so pipeline 0 runs at half speed */
  double only_data[2] = {2, 1};
  int mb[2];
  double t = c4_split_microbatches(64, 2, only_data, mb);
  ck_assert_double_eq_tol(32.0 / t, 0.744, 0.001);
  /* layers first: the slow GPU gets fewer layers; then the data follows the pipelines' speeds */
  double t0 = c4_split_layers(16, 4, stage_slow, NULL, layers);
  ck_assert_int_eq(sum(layers, 4), 16);
  ck_assert_int_lt(layers[1], 4);
  double pipes[2] = {t0 / t_healthy, 1};
  t = c4_split_microbatches(64, 2, pipes, mb);
  ck_assert_int_eq(mb[0] + mb[1], 64);
  ck_assert_double_eq_tol(32.0 / t, 0.889, 0.001);
}
END_TEST

/* The best max(out[i] / rate[i]) over every split of a small total, by enumeration. */
static double brute(int total, int n, const double *rate, const int *cap, int i, double worst) {
  if (i == n - 1) {
    if (cap && total > cap[i]) return INFINITY;
    double t = total ? total / rate[i] : 0;
    return t > worst ? t : worst;
  }
  double best = INFINITY;
  for (int k = 0; k <= total && (!cap || k <= cap[i]); k++) {
    double t = k ? k / rate[i] : 0;
    double b = brute(total - k, n, rate, cap, i + 1, t > worst ? t : worst);
    if (b < best) best = b;
  }
  return best;
}

/* The best max(out[i] * slow[i]) over every split with one unit or more each, by enumeration. */
static double brute_at_least_one(int total, int n, const double *slow, int i, double worst) {
  if (i == n - 1) return total < 1 ? INFINITY : fmax(worst, total * slow[i]);
  double best = INFINITY;
  for (int k = 1; k <= total - (n - 1 - i); k++)
    best = fmin(best, brute_at_least_one(total - k, n, slow, i + 1, fmax(worst, k * slow[i])));
  return best;
}

START_TEST(micro_batch_splits_with_one_each_are_exact_against_brute_force) {
  srand(11);
  for (int trial = 0; trial < 300; trial++) {
    int n = 2 + rand() % 3, total = n + rand() % 10, out[4];
    double slow[4];
    for (int i = 0; i < n; i++)
      slow[i] = trial % 3 ? 0.8 + (rand() % 100) / 20.0 : 1.0 + (rand() % 100) / 4.0;
    double want = brute_at_least_one(total, n, slow, 0, 0);
    double got = c4_split_microbatches(total, n, slow, out);
    ck_assert_int_eq(sum(out, n), total);
    for (int i = 0; i < n; i++)
      ck_assert_int_ge(out[i], 1);
    ck_assert_msg(fabs(got - want) < 1e-9, "trial %d: got %f, best %f", trial, got, want);
  }
}
END_TEST

START_TEST(splits_are_exact_against_brute_force_and_keep_the_total) {
  srand(7);
  for (int trial = 0; trial < 300; trial++) {
    int n = 2 + rand() % 3, total = rand() % 13;
    double rate[4];
    int cap[4], out[4];
    for (int i = 0; i < n; i++) {
      rate[i] = 0.2 + (rand() % 100) / 25.0;
      cap[i] = 1 + rand() % 8;
    }
    const int *c = trial % 2 ? cap : NULL;
    double want = brute(total, n, rate, c, 0, 0);
    double got = c4_split_units(total, n, rate, c, out);
    if (isinf(want)) {
      ck_assert_double_eq(got, -1);
      continue;
    }
    ck_assert_int_eq(sum(out, n), total);
    for (int i = 0; c && i < n; i++)
      ck_assert_int_le(out[i], cap[i]);
    ck_assert_msg(fabs(got - want) < 1e-9, "trial %d: got %f, best %f", trial, got, want);
  }
}
END_TEST

START_TEST(a_rank_too_slow_to_help_keeps_one_micro_batch_and_memory_limits_hold) {
  double slow[4] = {1, 1, 1, 20};
  int mb[4];
  /* c4_split_units leaves it out; micro-batches keep it measured with one */
  double rate[4] = {1, 1, 1, 1.0 / 20};
  c4_split_units(12, 4, rate, NULL, mb);
  ck_assert_int_eq(mb[3], 0);
  ck_assert_double_eq_tol(c4_split_microbatches(12, 4, slow, mb), 20, 1e-9);
  ck_assert_int_eq(mb[3], 1);
  ck_assert_int_eq(sum(mb, 4), 12);
  ck_assert_double_eq_tol(c4_split_microbatches(3, 4, slow, mb), 1, 1e-9); /* fewer than ranks */
  ck_assert_int_eq(mb[3], 0);
  double even[3] = {1, 1, 1};
  int cap[3] = {2, 10, 10}, layers[3];
  ck_assert_double_eq_tol(c4_split_layers(12, 3, even, cap, layers), 5, 1e-9);
  ck_assert_int_le(layers[0], 2);
  int tight[3] = {2, 2, 2};
  ck_assert_double_eq(c4_split_layers(12, 3, even, tight, layers), -1);
  ck_assert_double_eq(c4_split_microbatches(4, 0, slow, mb), -1);
}
END_TEST

START_TEST(replanning_follows_the_straggler_threshold_and_the_move_hysteresis) {
  double planned[3] = {1.0, 1.0, 1.0};
  double jitter[3] = {1.15, 1.0, 0.9}, straggler[3] = {1.0, 1.35, 1.0};
  double small_move[3] = {1.0, 1.0, 1.25};
  ck_assert_int_eq(c4_split_needs_replan(3, planned, jitter), 0);
  ck_assert_int_eq(c4_split_needs_replan(3, planned, small_move), 0); /* a straggler, moved < 0.3 */
  ck_assert_int_eq(c4_split_needs_replan(3, planned, straggler), 1);
  double was[3] = {1.0, 2.0, 1.0}, slightly_better[3] = {1.0, 1.8, 1.0}, healed[3] = {1, 1, 1};
  ck_assert_int_eq(c4_split_needs_replan(3, was, slightly_better), 0);
  ck_assert_int_eq(c4_split_needs_replan(3, was, healed), 1);
  /* a plan made just over the threshold is undone when the rank reads healthy again */
  double barely[3] = {1.0, 1.25, 1.0}, back[3] = {1.0, 1.05, 1.0}, near[3] = {1.0, 1.12, 1.0};
  ck_assert_int_eq(c4_split_needs_replan(3, barely, back), 1);
  ck_assert_int_eq(c4_split_needs_replan(3, barely, near), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("planner");
  TCase *tc = tcase_create("planner");
  tcase_add_test(tc, eight_way_data_parallel_with_one_gpu_at_half_speed_keeps_88_9_percent);
  tcase_add_test(tc, two_pipelines_of_four_stages_keep_88_9_percent_with_layers_and_data_resplit);
  tcase_add_test(tc, splits_are_exact_against_brute_force_and_keep_the_total);
  tcase_add_test(tc, a_rank_too_slow_to_help_keeps_one_micro_batch_and_memory_limits_hold);
  tcase_add_test(tc, micro_batch_splits_with_one_each_are_exact_against_brute_force);
  tcase_add_test(tc, replanning_follows_the_straggler_threshold_and_the_move_hysteresis);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
