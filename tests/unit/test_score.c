/* test_score.c -- scoring c4mon's events against a table of expected verdicts: windows given as
 * training steps or marks, a verdict counted only at the right kind, place and time, false alarms
 * and repeats listed, bad tables refused with the file and field named; and the place names
 * `c4mon events --text` prints. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_score.h"
#include "mon_evq.h"

static char dir[64];

static const char *path(const char *name) {
  static char buf[4][128];
  static int k;
  char *p = buf[k++ % 4];
  snprintf(p, 128, "%s/%s", dir, name);
  return p;
}

static void put(const char *name, const char *text) {
  FILE *f = fopen(path(name), "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

static void setup(void) {
  snprintf(dir, sizeof dir, "/tmp/c4-test-score-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  /* steps 1..4, each a second long from t = 10 s */
  put("steps.jsonl",
      "{\"event\":\"start\",\"ranks\":4}\n"
      "{\"event\":\"step\",\"step\":1,\"t_start_ns\":10000000000,\"t_ns\":11000000000}\n"
      "{\"event\":\"step\",\"step\":2,\"t_start_ns\":11000000000,\"t_ns\":12000000000}\n"
      "{\"event\":\"step\",\"step\":3,\"t_start_ns\":12000000000,\"t_ns\":13000000000}\n"
      "{\"event\":\"step\",\"step\":4,\"t_start_ns\":13000000000,\"t_ns\":14000000000}\n");
  put("marks", "# fault marks\non 30000000000\noff 40000000000\n");
  put("expect.json",
      "{\"v\":1,\"expect\":["
      "{\"name\":\"slow rank 3\",\"kind\":\"straggler\",\"where\":\"gpu\",\"ranks\":[3],"
      "\"from\":\"step:2\",\"to\":\"step:3\"},"
      "{\"kind\":\"comm_slow\",\"where\":[\"nic_tx\",\"nic_rx\"],\"nic\":{\"host\":\"h2\",\"dev\":"
      "0},"
      "\"from\":\"mark:on\",\"to\":\"mark:off\"}]}\n");
}

static void teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* Scores the events text against expect.json; returns the document. */
static json_t *score(const char *events) {
  put("events.jsonl", events);
  struct c4_score_truth t;
  struct c4_score_events e;
  char err[600];
  ck_assert_msg(!c4_score_expect_load(path("expect.json"), path("steps.jsonl"), path("marks"), &t,
                                      err, sizeof err),
                "%s", err);
  ck_assert_msg(!c4_score_events_load(path("events.jsonl"), &e, err, sizeof err), "%s", err);
  json_t *doc = c4_score_run(&t, &e);
  ck_assert_ptr_nonnull(doc);
  c4_score_events_free(&e);
  c4_score_truth_free(&t);
  return doc;
}

#define STRAGGLER(id, t, rank)                                                                     \
  "{\"v\":1,\"id\":" #id ",\"kind\":\"straggler\",\"t\":" #t                                       \
  ",\"where\":\"gpu\",\"ranks\":[" #rank "],\"hosts\":[\"node-" #rank "\"],\"factor\":1.5}\n"
#define NIC(id, t, where, host)                                                                    \
  "{\"v\":1,\"id\":" #id ",\"kind\":\"comm_slow\",\"t\":" #t ",\"where\":\"" where                 \
  "\",\"ranks\":[2],\"hosts\":[\"" host "\"],\"nic\":{\"host\":\"" host "\",\"dev\":0},"           \
  "\"factor\":3.0}\n"

START_TEST(each_fault_found_at_its_place_and_time_scores_ok) {
  json_t *doc = score(STRAGGLER(1, 11500000000, 3) NIC(2, 31000000000, "nic_rx", "h2"));
  ck_assert(json_is_true(json_object_get(doc, "ok")));
  ck_assert_int_eq(json_integer_value(json_object_get(doc, "faults_detected")), 2);
  ck_assert_int_eq(json_integer_value(json_object_get(doc, "false_alarms")), 0);
  json_t *f0 = json_array_get(json_object_get(doc, "faults"), 0);
  ck_assert_str_eq(json_string_value(json_object_get(f0, "name")), "slow rank 3");
  /* step 2 began at 11 s: flagged 0.5 s after */
  ck_assert_double_eq_tol(json_real_value(json_object_get(f0, "flag_s")), 0.5, 1e-9);
  json_decref(doc);
}
END_TEST

START_TEST(a_verdict_at_another_place_is_a_false_alarm_not_a_find) {
  /* rank 1 while rank 3 is slow: in the window, of the kind, at the wrong place */
  json_t *doc = score(STRAGGLER(1, 11500000000, 1) NIC(2, 31000000000, "nic_tx", "h2"));
  ck_assert(json_is_false(json_object_get(doc, "ok")));
  ck_assert_int_eq(json_integer_value(json_object_get(doc, "faults_detected")), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(doc, "false_alarms")), 1);
  json_t *fp = json_array_get(json_object_get(doc, "false_positives"), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(fp, "id")), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(fp, "line")), 1);
  json_decref(doc);
}
END_TEST

START_TEST(a_verdict_outside_every_window_is_a_false_alarm) {
  /* rank 3 again, 20 s after its window closed (the slack is 10 s); the NIC before its onset */
  json_t *doc = score(STRAGGLER(1, 11500000000, 3) STRAGGLER(2, 33000000000, 3)
                          NIC(3, 20000000000, "nic_rx", "h2") NIC(4, 32000000000, "nic_rx", "h2"));
  ck_assert(json_is_false(json_object_get(doc, "ok")));
  ck_assert_int_eq(json_integer_value(json_object_get(doc, "faults_detected")), 2);
  ck_assert_int_eq(json_integer_value(json_object_get(doc, "false_alarms")), 2);
  json_decref(doc);
}
END_TEST

START_TEST(a_fault_raised_twice_is_found_once_with_a_repeat) {
  json_t *doc = score(STRAGGLER(1, 11500000000, 3) STRAGGLER(2, 12500000000, 3)
                          NIC(3, 31000000000, "nic_rx", "h2"));
  ck_assert(json_is_true(json_object_get(doc, "ok")));
  ck_assert_int_eq(json_array_size(json_object_get(doc, "repeats")), 1);
  json_decref(doc);
}
END_TEST

START_TEST(a_missed_fault_fails_the_score) {
  json_t *doc = score(STRAGGLER(1, 11500000000, 3));
  ck_assert(json_is_false(json_object_get(doc, "ok")));
  json_t *f1 = json_array_get(json_object_get(doc, "faults"), 1);
  ck_assert(json_is_false(json_object_get(f1, "detected")));
  json_decref(doc);
}
END_TEST

/* Tables that cannot be scored, and the message each must give. */
START_TEST(a_bad_table_is_refused_naming_file_and_field) {
  static const struct {
    const char *table, *want;
  } bad[] = {
      {"{\"v\":2,\"expect\":[]}", "\"v\" is missing or not 1"},
      {"{\"v\":1}", "\"expect\" is missing or not an array"},
      {"{\"v\":1,\"expect\":[{\"kind\":\"straggler\",\"where\":\"gpu\",\"ranks\":[1],"
       "\"from\":\"step:9\",\"to\":\"step:9\"}]}",
       "expect[0].from: step 9 is not in"},
      {"{\"v\":1,\"expect\":[{\"kind\":\"straggler\",\"where\":\"gpu\",\"ranks\":[1],"
       "\"from\":\"mark:nope\",\"to\":null}]}",
       "expect[0].from: mark nope is not in"},
      {"{\"v\":1,\"expect\":[{\"kind\":\"straggler\",\"where\":\"gpu\",\"ranks\":[1],"
       "\"from\":\"soon\",\"to\":null}]}",
       "expect[0].from: \"soon\" is not a time"},
      {"{\"v\":1,\"expect\":[{\"kind\":\"slow\",\"where\":\"gpu\",\"from\":1,\"to\":2}]}",
       "expect[0].kind is missing or not straggler"},
      {"{\"v\":1,\"expect\":[{\"kind\":\"straggler\",\"where\":[\"gpu\",\"moon\"],\"from\":1,"
       "\"to\":2}]}",
       "expect[0].where is missing or not gpu"},
      {"{\"v\":1,\"expect\":[{\"kind\":\"straggler\",\"where\":\"gpu\",\"from\":5,\"to\":2}]}",
       "expect[0]: \"to\" (2) is before \"from\" (5)"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
    put("bad.json", bad[i].table);
    struct c4_score_truth t;
    char err[600] = "";
    ck_assert_int_eq(c4_score_expect_load(path("bad.json"), path("steps.jsonl"), path("marks"), &t,
                                          err, sizeof err),
                     1);
    ck_assert_msg(strstr(err, path("bad.json")) && strstr(err, bad[i].want), "table %zu: %s", i,
                  err);
    c4_score_truth_free(&t);
  }
}
END_TEST

START_TEST(time_references_resolve_to_a_steps_start_or_end_and_to_marks) {
  uint64_t t;
  char err[300];
  ck_assert_int_eq(c4_score_time_ref("step:2", path("steps.jsonl"), NULL, 0, &t, err, sizeof err),
                   0);
  ck_assert_uint_eq(t, 11000000000ull);
  ck_assert_int_eq(c4_score_time_ref("step:2", path("steps.jsonl"), NULL, 1, &t, err, sizeof err),
                   0);
  ck_assert_uint_eq(t, 12000000000ull);
  ck_assert_int_eq(c4_score_time_ref("mark:off", NULL, path("marks"), 0, &t, err, sizeof err), 0);
  ck_assert_uint_eq(t, 40000000000ull);
  ck_assert_int_eq(c4_score_time_ref("123", NULL, NULL, 0, &t, err, sizeof err), 0);
  ck_assert_uint_eq(t, 123);
  ck_assert_int_eq(c4_score_time_ref("step:1", NULL, NULL, 0, &t, err, sizeof err), 1);
  ck_assert_ptr_nonnull(strstr(err, "needs the trainer's lines"));
}
END_TEST

START_TEST(places_are_named_for_people) {
  static const struct {
    const char *event, *want;
  } cases[] = {
      {"{\"kind\":\"straggler\",\"where\":\"gpu\",\"ranks\":[3],\"hosts\":[\"node-3\"]}",
       "rank 3 (node-3)"},
      {"{\"kind\":\"comm_slow\",\"where\":\"nic_rx\",\"nic\":{\"host\":\"h2\",\"dev\":1}}",
       "NIC h2/1 (receiving side)"},
      {"{\"kind\":\"comm_slow\",\"where\":\"link\",\"link\":[\"a\",\"b\"],\"link_devs\":[0,1]}",
       "link a -> b (dev 0 -> 1)"},
      {"{\"kind\":\"comm_slow\",\"where\":\"path\",\"path\":\"s1\",\"link\":null}", "path s1"},
      {"{\"kind\":\"recovered\",\"where\":\"gpu\",\"cleared\":{\"kind\":\"noncomm_hang\","
       "\"where\":\"gpu\",\"ranks\":[1,2],\"hosts\":[\"h1\",\"h3\"]}}",
       "ranks 1,2 (h1,h3)"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
    json_t *ev = json_loads(cases[i].event, 0, NULL);
    char buf[200];
    c4_mon_evq_place(ev, buf, sizeof buf);
    ck_assert_str_eq(buf, cases[i].want);
    json_decref(ev);
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("score");
  TCase *tc = tcase_create("score");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, each_fault_found_at_its_place_and_time_scores_ok);
  tcase_add_test(tc, a_verdict_at_another_place_is_a_false_alarm_not_a_find);
  tcase_add_test(tc, a_verdict_outside_every_window_is_a_false_alarm);
  tcase_add_test(tc, a_fault_raised_twice_is_found_once_with_a_repeat);
  tcase_add_test(tc, a_missed_fault_fails_the_score);
  tcase_add_test(tc, a_bad_table_is_refused_naming_file_and_field);
  tcase_add_test(tc, time_references_resolve_to_a_steps_start_or_end_and_to_marks);
  tcase_add_test(tc, places_are_named_for_people);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
