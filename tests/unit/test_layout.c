/* test_layout.c -- `c4train --layout auto`: the candidates are exactly the layouts that keep the
 * global batch (pipeline stages dividing the ranks and at most the layers, micro-batch sizes
 * dividing the batch, a micro-batch for every replica; documents data-parallel only); and the
 * program probes them all, prints the table, picks the fastest probe and trains with it. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check_run.h"
#include "layout.h"

START_TEST(candidates_keep_the_global_batch_and_fit_the_ranks) {
  struct train_opts o = {.cfg = {.layers = 4}, .micro_batch = 4, .microbatches = 4};
  struct layout_probe c[64];
  int n = layout_candidates(&o, 4, c, 64);
  /* pp 1 (4 replicas): B 1, 2, 4 (16 / 8 = 2 micro-batches < 4 replicas: out); pp 2 (2
   * replicas): B 1, 2, 4, 8; pp 4 (1 replica): B 1, 2, 4, 8, 16 */
  ck_assert_int_eq(n, 3 + 4 + 5);
  for (int i = 0; i < n; i++) {
    ck_assert_int_eq(c[i].micro_batch * c[i].microbatches, 16);
    ck_assert_int_eq(4 % c[i].pp, 0);
    ck_assert_int_ge(c[i].microbatches, 4 / c[i].pp);
  }
  o.cfg.layers = 2; /* no stage without a layer: pp 4 is out */
  n = layout_candidates(&o, 4, c, 64);
  ck_assert_int_eq(n, 3 + 4);
  o.max_context = 64; /* documents: pipelines too, the same candidates */
  n = layout_candidates(&o, 4, c, 64);
  ck_assert_int_eq(n, 3 + 4);
  ck_assert_int_eq(c[n - 1].pp, 2);
  o.max_context = 0;
  o.cfg.layers = 4;
  /* 3 ranks: pp 1 (3 replicas) B 1, 2, 4; pp 3 (1 replica) B 1 to 16 */
  ck_assert_int_eq(layout_candidates(&o, 3, c, 64), 3 + 5);
}
END_TEST

START_TEST(the_program_probes_every_candidate_and_trains_with_the_fastest) {
  const char *b = getenv("C4_BUILD_DIR");
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "%s/bin/c4train --local-ranks 2 --layout auto --probe-steps 5 --layers 2 --width 16 "
           "--heads 2 --context 16 --micro-batch 2 --microbatches 2 --steps 6 --eval-windows 2",
           b ? b : "build");
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  char line[1024];
  int rows = 0, done = 0, best_pp = 0, best_b = 0, chose_pp = -1, chose_b = -1;
  double best = 0, chose = -1;
  while (fgets(line, sizeof line, p)) {
    int pp, dp, mb, mbs;
    double tps, mem, secs;
    if (sscanf(line, "%d %d %d %d %lf %lf %lf", &pp, &dp, &mb, &mbs, &tps, &mem, &secs) == 7) {
      rows++;
      ck_assert_int_eq(pp * dp, 2);
      ck_assert_int_eq(mb * mbs, 4);
      ck_assert_double_gt(tps, 0);
      ck_assert_double_gt(mem, 1);
      if (tps > best) {
        best = tps;
        best_pp = pp;
        best_b = mb;
      }
    }
    sscanf(line, "layout auto: --pp %d --micro-batch %d --microbatches %*d (%lf", &chose_pp,
           &chose_b, &chose);
    done |= strncmp(line, "done: 6 steps", 13) == 0;
  }
  ck_assert_int_eq(pclose(p), 0);
  /* pp 1: B 1 (4 micro-batches), 2; pp 2: B 1, 2, 4 */
  ck_assert_int_eq(rows, 5);
  ck_assert_int_eq(chose_pp, best_pp);
  ck_assert_int_eq(chose_b, best_b);
  ck_assert_double_eq_tol(chose, best, 0.5);
  ck_assert(done);
}
END_TEST

/* A probe is timed as its planners leave the layout: a drill's slow rank re-split away in a
 * probe drops that probe's steps before the re-split from its rate (the table's timed steps). */
START_TEST(a_probe_is_timed_after_its_planners_moved_the_work) {
  const char *b = getenv("C4_BUILD_DIR");
  char cmd[1024];
  snprintf(cmd, sizeof cmd,
           "%s/bin/c4train --local-ranks 2 --layout auto --probe-steps 16 --layers 2 --width 16 "
           "--heads 2 --context 16 --micro-batch 1 --microbatches 8 --steps 6 --eval-windows 2 "
           "--slow 1:3.0 --straggler-wait 0",
           b ? b : "build");
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  char line[1024];
  int pp1_steps = -1, pp2_steps = -1;
  while (fgets(line, sizeof line, p)) {
    int pp, dp, mb, mbs, steps;
    double tps, mem, secs, err;
    if (sscanf(line, "%d %d %d %d %lf %lf %lf %lf %d", &pp, &dp, &mb, &mbs, &tps, &mem, &secs, &err,
               &steps) == 9 &&
        mb == 1)
      *(pp == 1 ? &pp1_steps : &pp2_steps) = steps;
  }
  ck_assert_int_eq(pclose(p), 0);
  /* 16 steps, the first two not timed: 14 unless the planners moved work */
  ck_assert_msg(pp1_steps > 0 && pp1_steps < 14, "pp 1 timed %d steps", pp1_steps);
  ck_assert_int_gt(pp2_steps, 0);
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("layout");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 240);
  tcase_add_test(tc, candidates_keep_the_global_batch_and_fit_the_ranks);
  tcase_add_test(tc, the_program_probes_every_candidate_and_trains_with_the_fastest);
  tcase_add_test(tc, a_probe_is_timed_after_its_planners_moved_the_work);
  suite_add_tcase(s, tc);
  return s;
}

int main(void) { return c4_check_run(suite()); }
