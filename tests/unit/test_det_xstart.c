/* test_det_xstart.c -- start estimates for transfers without t_first: which cells count as
 * waiting behind another phase of the call. */
#include <check.h>
#include <math.h>

#include "../check_run.h"
#include "det_xstart.h"

enum { CLS = 20 };

/* Feeds cell `cell` n samples of log time per byte v; returns the last phase said (-1: none). */
static int feed(int cell, float v, int n) {
  int phase = -1;
  for (int i = 0; i < n; i++)
    det_xstart_usual(cell, 0, CLS, v, &phase);
  return phase;
}

/* A cell whose usual was once far below the others' (its starts estimated too late: it read
 * fast) and then came up to theirs must not leave them counted as a later phase for good: the
 * size class's fastest follows the cell that holds it. Before, it only went down, every cell of
 * the class read as a later phase, and a hand-written minimal trace's matrix went dark after
 * seconds (its samples all left out). */
START_TEST(a_cell_that_read_fast_once_does_not_put_the_others_in_a_later_phase_for_good) {
  det_xstart_reset();
  ck_assert_int_eq(feed(1, 0.0f, 20), 0);
  ck_assert_int_eq(feed(2, 0.0f, 20), 0);
  ck_assert_int_eq(feed(3, -3.0f, 20), 0); /* learned fast: the others now a later phase */
  ck_assert_int_eq(feed(1, 0.0f, 1), 1);
  ck_assert_int_eq(feed(3, 0.0f, 2000), 0); /* its usual comes up to theirs */
  ck_assert_int_eq(feed(1, 0.0f, 1), 0);
  ck_assert_int_eq(feed(2, 0.0f, 1), 0);
  det_xstart_reset();
}
END_TEST

/* A cell that stays well above the class's fastest is the later phase it was built to find (a
 * tree's broadcast behind its reduce). */
START_TEST(a_cell_that_stays_slower_than_the_fastest_is_a_later_phase) {
  det_xstart_reset();
  ck_assert_int_eq(feed(1, 0.0f, 20), 0);
  ck_assert_int_eq(feed(2, 1.0f, 20), 1);
  ck_assert_int_eq(feed(1, 0.0f, 500), 0);
  ck_assert_int_eq(feed(2, 1.0f, 1), 1);
  det_xstart_reset();
}
END_TEST

/* While a verdict stands on a cell its usual is held: a NIC slowed for good in a trace without
 * t_first was learned as its cells' usual within 25 s, and its verdict cleared while it was still
 * slow. Let go, the usual learns again. */
START_TEST(a_frozen_cells_usual_does_not_learn_its_fault) {
  det_xstart_reset();
  int phase;
  feed(1, 0.0f, 20);
  det_xstart_freeze(1, 1);
  feed(1, 1.0f, 2000);
  ck_assert_float_eq_tol(det_xstart_usual(1, 0, CLS, 1.0f, &phase), 1.0f, 1e-6);
  det_xstart_freeze(1, 0);
  feed(1, 1.0f, 2000);
  ck_assert_float_lt(det_xstart_usual(1, 0, CLS, 1.0f, &phase), 0.1f);
  det_xstart_reset();
}
END_TEST

int main(void) {
  Suite *s = suite_create("det_xstart");
  TCase *tc = tcase_create("phases");
  tcase_add_test(tc, a_cell_that_read_fast_once_does_not_put_the_others_in_a_later_phase_for_good);
  tcase_add_test(tc, a_cell_that_stays_slower_than_the_fastest_is_a_later_phase);
  tcase_add_test(tc, a_frozen_cells_usual_does_not_learn_its_fault);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
