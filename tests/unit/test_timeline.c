/* test_timeline.c -- `c4mon timeline`'s layout: labels on rows never overlap, stay inside the
 * plot and take no more rows than the most labels that overlap at one point; times fall on the
 * step axis where their steps ran; a run's JSON is read with bad lines named by file and line. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check_run.h"
#include "mon_tl_labels.h"
#include "mon_tl_run.h"

static double end_of(const struct tl_label *l) {
  return l->end > l->at + l->w ? l->end : l->at + l->w;
}

/* The most labels whose drawn spans (gap included) cover one point. */
static int most_overlapping(const struct tl_label *l, size_t n, double gap) {
  int best = 0;
  for (size_t i = 0; i < n; i++) { /* the depth is greatest at some label's left edge */
    int d = 0;
    for (size_t j = 0; j < n; j++)
      d += l[j].at <= l[i].at && end_of(&l[j]) + gap > l[i].at;
    if (d > best) best = d;
  }
  return best;
}

START_TEST(labels_on_one_row_never_overlap_and_rows_are_as_few_as_can_be) {
  srand(12345);
  const double left = 100, right = 1200, gap = 8;
  for (int trial = 0; trial < 2000; trial++) {
    size_t n = 1 + (size_t)(rand() % 24);
    struct tl_label l[24];
    for (size_t i = 0; i < n; i++) {
      double x = left + rand() % 1200 - 50; /* some start past either edge */
      double w = 20 + rand() % 300;
      double end = rand() % 2 ? x + rand() % 600 : x; /* a bar beyond the text, or none */
      l[i] = (struct tl_label){.x = x, .w = w, .end = end, .row = -1};
    }
    int rows = tl_labels_layout(l, n, left, right, gap);
    ck_assert_int_ge(rows, 1);
    for (size_t i = 0; i < n; i++) {
      ck_assert_int_ge(l[i].row, 0);
      ck_assert_int_lt(l[i].row, rows);
      ck_assert(l[i].at >= left && l[i].at + l[i].w <= right); /* inside the plot */
      if (l[i].x >= left && l[i].x + l[i].w <= right) ck_assert(l[i].at == l[i].x);
      for (size_t j = 0; j < i; j++) {
        if (l[i].row != l[j].row) continue;
        int apart = end_of(&l[i]) + gap <= l[j].at || end_of(&l[j]) + gap <= l[i].at;
        ck_assert_msg(apart, "trial %d: labels %zu and %zu overlap on row %d", trial, i, j,
                      l[i].row);
      }
    }
    ck_assert_int_eq(rows, most_overlapping(l, n, gap));
  }
}
END_TEST

START_TEST(the_demos_labels_share_a_row_only_when_apart) {
  /* a straggler raised at 300 px and cleared at 620, a slow link at 800: one row; a second
   * verdict raised while the first's label runs: a second row */
  struct tl_label l[3] = {{.x = 300, .w = 150, .end = 620},
                          {.x = 800, .w = 260, .end = 1100},
                          {.x = 400, .w = 120, .end = 500}};
  ck_assert_int_eq(tl_labels_layout(l, 2, 130, 1248, 8), 1);
  ck_assert_int_eq(l[0].row, 0);
  ck_assert_int_eq(l[1].row, 0);
  ck_assert_int_eq(tl_labels_layout(l, 3, 130, 1248, 8), 2);
  ck_assert_int_ne(l[2].row, l[0].row);
  ck_assert_int_eq(tl_labels_layout(l, 0, 130, 1248, 8), 0);
}
END_TEST

START_TEST(a_time_falls_on_the_step_axis_where_its_step_ran) {
  struct tl_step s[3] = {{.step = 1, .t0 = 1000, .t1 = 2000},
                         {.step = 2, .t0 = 2100, .t1 = 3100},
                         {.step = 3, .t0 = 3100, .t1 = 4100}};
  struct tl_run r = {.steps = s, .nsteps = 3};
  ck_assert_double_eq_tol(tl_step_at(&r, 500), 0, 1e-9);    /* before the first step */
  ck_assert_double_eq_tol(tl_step_at(&r, 1500), 0.5, 1e-9); /* half through step 1 */
  ck_assert_double_eq_tol(tl_step_at(&r, 2050), 1, 1e-9);   /* between steps 1 and 2 */
  ck_assert_double_eq_tol(tl_step_at(&r, 2350), 1.25, 1e-9);
  ck_assert_double_eq_tol(tl_step_at(&r, 4100), 3, 1e-9);
  ck_assert_double_eq_tol(tl_step_at(&r, 9999), 3, 1e-9); /* after the last */
}
END_TEST

START_TEST(a_lanes_running_median_drops_a_one_step_spike_and_keeps_a_level_change) {
  struct tl_step s[12];
  for (int i = 0; i < 12; i++)
    s[i] = (struct tl_step){.step = i + 1, .tps = i < 6 ? 100 : 50, .rank_tps = {i < 6 ? 10 : 5}};
  s[2].tps = 900; /* one step's burst */
  struct tl_run r = {.steps = s, .nsteps = 12, .ranks = 1};
  double m[12];
  ck_assert_int_eq(tl_lane_median(&r, -1, 3, m), 0);
  ck_assert_double_eq(m[2], 100); /* the spike is gone */
  ck_assert_double_eq(m[0], 100); /* at the ends the window is shorter */
  ck_assert_double_eq(m[4], 100);
  ck_assert_double_eq(m[7], 50); /* the level change stays where it was */
  ck_assert_int_eq(tl_lane_median(&r, 0, 3, m), 0);
  ck_assert_double_eq(m[5], 10); /* steps 5-7: 10, 10, 5 */
  ck_assert_double_eq(m[6], 5);  /* steps 6-8: 10, 5, 5 */
  ck_assert_int_eq(tl_smooth_steps(12), 1);
  ck_assert_int_eq(tl_smooth_steps(220), 9);
  ck_assert_int_eq(tl_smooth_steps(100000), 51);
}
END_TEST

static void write_file(const char *path, const char *text) {
  FILE *f = fopen(path, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

START_TEST(a_runs_json_is_read_into_lanes_and_spans_and_bad_lines_are_named) {
  char steps[] = "/tmp/c4-tl-steps-XXXXXX", events[] = "/tmp/c4-tl-events-XXXXXX", err[300];
  close(mkstemp(steps));
  close(mkstemp(events));
  write_file(steps, "{\"event\":\"start\",\"ranks\":2}\n"
                    "{\"event\":\"step\",\"step\":1,\"tokens_per_s\":10,\"t_start_ns\":100,"
                    "\"t_ns\":200,\"rank_tokens_per_s\":[5,6]}\n\n"
                    "{\"event\":\"step\",\"step\":2,\"tokens_per_s\":20,\"t_start_ns\":200,"
                    "\"t_ns\":300,\"rank_tokens_per_s\":[7,8]}\n"
                    "{\"event\":\"step\",\"step\":2,\"tokens_per_s\":99,\"t_start_ns\":400,"
                    "\"t_ns\":500}\n");
  write_file(events, "{\"v\":1,\"id\":1,\"kind\":\"straggler\",\"t\":150,\"job\":\"j\","
                     "\"where\":\"gpu\",\"ranks\":[1],\"factor\":1.5}\n"
                     "{\"v\":1,\"id\":2,\"kind\":\"recovered\",\"t\":250,\"clears\":1}\n"
                     "{\"v\":1,\"id\":3,\"kind\":\"job_end\",\"t\":300}\n");
  struct tl_run r = {0};
  ck_assert_int_eq(tl_read_steps(&r, steps, err, sizeof err), 0);
  ck_assert_int_eq(tl_read_events(&r, events, err, sizeof err), 0);
  ck_assert_uint_eq(r.nsteps, 2); /* the repeated step 2 (a restart's) is left out */
  ck_assert_int_eq(r.ranks, 2);
  ck_assert_int_eq(r.world, 2);
  ck_assert_double_eq(r.steps[1].rank_tps[1], 8);
  ck_assert_uint_eq(r.nspans, 1); /* the straggler; job_end is not a verdict */
  ck_assert_uint_eq(r.spans[0].on, 150);
  ck_assert_uint_eq(r.spans[0].off, 250);
  ck_assert_uint_eq(r.spans[0].ranks, 2);
  ck_assert_str_eq(r.job, "j");
  ck_assert_ptr_nonnull(strstr(r.spans[0].label, "straggler"));
  tl_run_free(&r);

  write_file(events, "{\"v\":1,\"id\":1,\"kind\":\"straggler\",\"t\":150}\n{\"kind\":\n");
  ck_assert_int_eq(tl_read_events(&r, events, err, sizeof err), 1);
  char where[300];
  snprintf(where, sizeof where, "%s:2: ", events);
  ck_assert_msg(strncmp(err, where, strlen(where)) == 0, "error: %s", err);
  tl_run_free(&r);
  write_file(steps, "{\"event\":\"step\",\"step\":1}\n");
  ck_assert_int_eq(tl_read_steps(&r, steps, err, sizeof err), 1);
  ck_assert_ptr_nonnull(strstr(err, ":1: a step line without"));
  tl_run_free(&r);
  unlink(steps);
  unlink(events);
  ck_assert_int_eq(tl_read_steps(&r, steps, err, sizeof err), 1);
  ck_assert_ptr_nonnull(strstr(err, "No such file"));
  tl_run_free(&r);
}
END_TEST

/* One c4mon, two jobs: a step log whose start line names its job draws that job's verdicts only
 * (every job's were drawn, under the first event's job name as the title). */
START_TEST(a_step_log_that_names_its_job_draws_that_jobs_verdicts_only) {
  char steps[] = "/tmp/c4-tl-steps-XXXXXX", events[] = "/tmp/c4-tl-events-XXXXXX", err[300];
  close(mkstemp(steps));
  close(mkstemp(events));
  write_file(steps, "{\"event\":\"start\",\"job\":\"mine\",\"ranks\":2}\n"
                    "{\"event\":\"step\",\"step\":1,\"tokens_per_s\":10,\"t_start_ns\":100,"
                    "\"t_ns\":200}\n");
  write_file(events, "{\"v\":1,\"id\":1,\"kind\":\"straggler\",\"t\":150,\"job\":\"other\","
                     "\"where\":\"gpu\",\"ranks\":[0],\"factor\":1.5}\n"
                     "{\"v\":1,\"id\":2,\"kind\":\"straggler\",\"t\":160,\"job\":\"mine\","
                     "\"where\":\"gpu\",\"ranks\":[1],\"factor\":2}\n"
                     "{\"v\":1,\"id\":3,\"kind\":\"recovered\",\"t\":170,\"job\":\"other\","
                     "\"clears\":1}\n");
  struct tl_run r = {0};
  ck_assert_int_eq(tl_read_steps(&r, steps, err, sizeof err), 0);
  ck_assert_int_eq(tl_read_events(&r, events, err, sizeof err), 0);
  ck_assert_str_eq(r.job, "mine");
  ck_assert_uint_eq(r.nspans, 1);
  ck_assert_int_eq(r.spans[0].id, 2);
  ck_assert_uint_eq(r.spans[0].off, 0); /* the other job's recovered closes nothing of this one */
  tl_run_free(&r);
  unlink(steps);
  unlink(events);
}
END_TEST

int main(void) {
  Suite *s = suite_create("timeline");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, labels_on_one_row_never_overlap_and_rows_are_as_few_as_can_be);
  tcase_add_test(tc, the_demos_labels_share_a_row_only_when_apart);
  tcase_add_test(tc, a_time_falls_on_the_step_axis_where_its_step_ran);
  tcase_add_test(tc, a_lanes_running_median_drops_a_one_step_spike_and_keeps_a_level_change);
  tcase_add_test(tc, a_runs_json_is_read_into_lanes_and_spans_and_bad_lines_are_named);
  tcase_add_test(tc, a_step_log_that_names_its_job_draws_that_jobs_verdicts_only);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
