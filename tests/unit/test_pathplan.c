/* test_pathplan.c -- the closed loop's c4mon half (mon_pathplan.c): a `path` verdict puts its path
 * on the pushed plan's avoid list and its recovery takes it off; each change is a `plan` event
 * naming the path, the plan's flows on it by host pair, and the ranks the plan went to. Other
 * verdicts change nothing. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check_run.h"
#include "det_book.h"
#include "mon_events.h"
#include "mon_pathplan.h"
#include "mon_planpush.h"

static json_t *seen; /* the events emitted */
static char plan_path[64];

static void keep(const json_t *ev, const char *line, void *arg) {
  (void)line, (void)arg;
  json_array_append(seen, (json_t *)ev);
}

static void setup(void) {
  snprintf(plan_path, sizeof plan_path, "/tmp/c4-test-pathplan-%d.json", (int)getpid());
  FILE *f = fopen(plan_path, "w");
  ck_assert_ptr_nonnull(f);
  fputs("{\"v\":1,\"flows\":["
        "{\"src\":\"h0\",\"dst\":\"h1\",\"path\":\"s0\",\"src_port\":40001},"
        "{\"src\":\"h0\",\"dst\":\"h1\",\"path\":\"s1\",\"src_port\":40002},"
        "{\"src\":\"h3\",\"dst\":\"h2\",\"path\":\"s1\",\"src_port\":40003},"
        "{\"src\":\"h3\",\"dst\":\"h2\",\"path\":\"s1\",\"src_port\":40004},"
        "{\"src\":\"h1\",\"dst\":\"h3\",\"path\":\"l1\"}]}\n",
        f);
  fclose(f);
  ck_assert_int_eq(mon_planpush_load(plan_path), 0);
  mon_pathplan_reset();
  det_book_reset();
  c4_mon_events_reset();
  seen = json_array();
  c4_mon_events_add_sink(mon_pathplan_event, NULL);
  c4_mon_events_add_sink(keep, NULL);
}

static void teardown(void) {
  c4_mon_events_reset();
  mon_pathplan_reset();
  mon_planpush_reset();
  json_decref(seen);
  unlink(plan_path);
}

/* An event as detection emits it. */
static void emit(const char *json) {
  json_error_t e;
  json_t *ev = json_loads(json, 0, &e);
  ck_assert_msg(ev != NULL, "%s", e.text);
  c4_mon_events_emit(ev);
}

/* The avoid list host h is pushed, as compact JSON. */
static char *pushed_avoid(const char *h) {
  size_t n;
  char *doc = mon_planpush_for_host(h, mon_pathplan_avoid(), &n);
  ck_assert_ptr_nonnull(doc);
  json_t *o = json_loads(doc, 0, NULL);
  free(doc);
  char *a = json_dumps(json_object_get(o, "avoid"), JSON_COMPACT);
  json_decref(o);
  return a;
}

static const json_t *last(void) { return json_array_get(seen, json_array_size(seen) - 1); }

START_TEST(a_path_verdict_is_avoided_in_the_pushed_plan_until_it_recovers) {
  char *a = pushed_avoid("h0");
  ck_assert_str_eq(a, "[]");
  free(a);
  /* a link verdict is not a path's: nothing to push */
  emit("{\"v\":1,\"id\":4,\"kind\":\"comm_slow\",\"t\":5,\"job\":\"j\",\"where\":\"link\","
       "\"path\":null}");
  ck_assert_int_eq(mon_pathplan_pending(), 0);
  emit("{\"v\":1,\"id\":5,\"kind\":\"comm_slow\",\"t\":10,\"job\":\"j\",\"where\":\"path\","
       "\"path\":\"s1\"}");
  ck_assert_int_eq(mon_pathplan_pending(), 1);
  a = pushed_avoid("h3"); /* every host's plan carries it */
  ck_assert_str_eq(a, "[\"s1\"]");
  free(a);
  mon_pathplan_announce(4, 20);
  ck_assert_int_eq(mon_pathplan_pending(), 0);
  const json_t *ev = last();
  ck_assert_str_eq(json_string_value(json_object_get(ev, "kind")), "plan");
  ck_assert_str_eq(json_string_value(json_object_get(ev, "action")), "avoid");
  ck_assert_str_eq(json_string_value(json_object_get(ev, "path")), "s1");
  ck_assert_int_eq(json_integer_value(json_object_get(ev, "t")), 20);
  ck_assert_int_eq(json_integer_value(json_object_get(ev, "verdict")), 5);
  ck_assert_int_eq(json_integer_value(json_object_get(ev, "pushed_to")), 4);
  char *moved = json_dumps(json_object_get(ev, "moved"), JSON_COMPACT);
  ck_assert_str_eq(moved, "[{\"src\":\"h0\",\"dst\":\"h1\",\"flows\":1},"
                          "{\"src\":\"h3\",\"dst\":\"h2\",\"flows\":2}]");
  free(moved);
  ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(ev, "detail")),
                               "3 planned flow(s) of 2 host pair(s) moved off it"));
  /* the same verdict again is no change; a recovery of another place is none either */
  emit("{\"v\":1,\"id\":5,\"kind\":\"comm_slow\",\"t\":11,\"job\":\"j\",\"where\":\"path\","
       "\"path\":\"s1\"}");
  emit("{\"v\":1,\"id\":6,\"kind\":\"recovered\",\"t\":12,\"job\":\"j\",\"clears\":4,"
       "\"cleared\":{\"kind\":\"comm_slow\",\"where\":\"link\",\"path\":null}}");
  ck_assert_int_eq(mon_pathplan_pending(), 0);
  emit("{\"v\":1,\"id\":7,\"kind\":\"recovered\",\"t\":30,\"job\":\"j\",\"clears\":5,"
       "\"cleared\":{\"kind\":\"comm_slow\",\"where\":\"path\",\"path\":\"s1\"}}");
  ck_assert_int_eq(mon_pathplan_pending(), 1);
  a = pushed_avoid("h0");
  ck_assert_str_eq(a, "[]");
  free(a);
  mon_pathplan_announce(3, 31);
  ev = last();
  ck_assert_str_eq(json_string_value(json_object_get(ev, "action")), "restore");
  ck_assert_int_eq(json_integer_value(json_object_get(ev, "verdict")), 7);
  ck_assert_int_gt(json_integer_value(json_object_get(ev, "id")), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("pathplan");
  TCase *tc = tcase_create("loop");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, a_path_verdict_is_avoided_in_the_pushed_plan_until_it_recovers);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
