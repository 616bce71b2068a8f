/* test_sched_1f1b.c -- the 1F1B order: every stage runs each micro-batch's forward and backward
 * once, in order, never holds more than its slots, and a pipeline of stages that follow it (each
 * waiting for its neighbours as c4train's stages do) neither deadlocks nor idles more than
 * (P - 1) / (m + P - 1) when every stage takes as long. */
#include <check.h>
#include <stdlib.h>

#include "../check_run.h"
#include "sched_1f1b.h"

START_TEST(each_stage_runs_every_pass_once_in_order_within_its_slots) {
  for (int P = 1; P <= 8; P++)
    for (int m = 1; m <= 12; m++)
      for (int s = 0; s < P; s++) {
        struct sched_op op[24];
        ck_assert_int_eq(sched_1f1b(s, P, m, op), 2 * m);
        int f = 0, b = 0, most = 0;
        for (int k = 0; k < 2 * m; k++) {
          if (op[k].backward) {
            ck_assert_int_eq(op[k].microbatch, b++);
            ck_assert_int_le(b, f); /* a backward follows its forward */
          } else {
            ck_assert_int_eq(op[k].microbatch, f++);
          }
          if (f - b > most) most = f - b;
        }
        ck_assert_int_eq(f, m);
        ck_assert_int_eq(b, m);
        ck_assert_int_eq(most, sched_1f1b_in_flight(s, P, m));
      }
}
END_TEST

/* Runs P stages on their 1F1B orders as c4train does: a forward waits for the previous stage's
 * forward of that micro-batch, a backward for the next stage's backward; times tf and tb.
 * Returns the makespan, -1 on a deadlock; *busy gets one stage's busy time. */
static double simulate(int P, int m, double tf, double tb, double *busy) {
  struct sched_op op[8][64];
  double fdone[8][32], bdone[8][32], clock[8] = {0};
  int at[8] = {0};
  for (int s = 0; s < P; s++) {
    sched_1f1b(s, P, m, op[s]);
    for (int i = 0; i < m; i++)
      fdone[s][i] = bdone[s][i] = -1;
  }
  for (int progress = 1; progress;) {
    progress = 0;
    for (int s = 0; s < P; s++) {
      if (at[s] == 2 * m) continue;
      struct sched_op o = op[s][at[s]];
      double ready = clock[s];
      if (!o.backward && s > 0) {
        if (fdone[s - 1][o.microbatch] < 0) continue;
        if (fdone[s - 1][o.microbatch] > ready) ready = fdone[s - 1][o.microbatch];
      }
      if (o.backward && s < P - 1) {
        if (bdone[s + 1][o.microbatch] < 0) continue;
        if (bdone[s + 1][o.microbatch] > ready) ready = bdone[s + 1][o.microbatch];
      }
      clock[s] = ready + (o.backward ? tb : tf);
      (o.backward ? bdone : fdone)[s][o.microbatch] = clock[s];
      at[s]++;
      progress = 1;
    }
  }
  double end = 0;
  for (int s = 0; s < P; s++) {
    if (at[s] < 2 * m) return -1;
    if (clock[s] > end) end = clock[s];
  }
  *busy = m * (tf + tb);
  return end;
}

START_TEST(a_pipeline_following_it_idles_p_minus_1_over_m_plus_p_minus_1) {
  for (int P = 1; P <= 8; P++)
    for (int m = 1; m <= 24; m++) {
      double busy, end = simulate(P, m, 1.0, 2.0, &busy);
      ck_assert_msg(end > 0, "P %d m %d: deadlock", P, m);
      ck_assert_double_eq_tol(1 - busy / end, (P - 1.0) / (m + P - 1.0), 1e-12);
    }
}
END_TEST

int main(void) {
  Suite *s = suite_create("sched_1f1b");
  TCase *tc = tcase_create("sched_1f1b");
  tcase_add_test(tc, each_stage_runs_every_pass_once_in_order_within_its_slots);
  tcase_add_test(tc, a_pipeline_following_it_idles_p_minus_1_over_m_plus_p_minus_1);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
