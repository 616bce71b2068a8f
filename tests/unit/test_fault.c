/* test_fault.c -- C4_FAULT parsing: every clause kind with its options, and malformed clauses
 * reported with their number, text and reason while the good ones around them are kept. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../check_run.h"
#include "c4_clock.h"
#include "net_fault.h"

START_TEST(the_issue_example_gives_three_clauses) {
  struct c4_fault_spec s;
  c4_fault_parse("delay:peer=2,us=500;rate:peer=3,mbps=200;stall:after_s=10,for_s=5", &s);
  ck_assert_int_eq(s.nerr, 0);
  ck_assert_int_eq(s.n, 3);
  ck_assert_int_eq(s.clause[0].kind, C4_FAULT_DELAY);
  ck_assert_int_eq(s.clause[0].peer, 2);
  ck_assert_uint_eq(s.clause[0].us, 500);
  ck_assert_int_eq(s.clause[0].rank, -1);
  ck_assert_uint_eq(s.clause[0].after_ns, 0);
  ck_assert_uint_eq(s.clause[0].for_ns, 0); /* default: always */
  ck_assert_int_eq(s.clause[1].kind, C4_FAULT_RATE);
  ck_assert_int_eq(s.clause[1].peer, 3);
  ck_assert_double_eq(s.clause[1].mbps, 200);
  ck_assert_int_eq(s.clause[2].kind, C4_FAULT_STALL);
  ck_assert_int_eq(s.clause[2].peer, -1);
  ck_assert_uint_eq(s.clause[2].after_ns, 10000000000ull);
  ck_assert_uint_eq(s.clause[2].for_ns, 5000000000ull);
}
END_TEST

START_TEST(rank_windows_fractions_and_spaces_are_accepted) {
  struct c4_fault_spec s;
  c4_fault_parse(" rate : peer=1 , mbps=0.5, rank=0, after_s=1.25 ;; delay:us=0,peer=0,for_s=2; ",
                 &s);
  ck_assert_int_eq(s.nerr, 0);
  ck_assert_int_eq(s.n, 2);
  ck_assert_int_eq(s.clause[0].rank, 0);
  ck_assert_double_eq(s.clause[0].mbps, 0.5);
  ck_assert_uint_eq(s.clause[0].after_ns, 1250000000ull);
  ck_assert_uint_eq(s.clause[1].us, 0);
  ck_assert_uint_eq(s.clause[1].for_ns, 2000000000ull);
}
END_TEST

START_TEST(a_rate_can_name_one_data_socket) {
  struct c4_fault_spec s;
  c4_fault_parse("rate:peer=1,mbps=40,sock=3;rate:peer=1,mbps=40", &s);
  ck_assert_int_eq(s.nerr, 0);
  ck_assert_int_eq(s.clause[0].sock, 3);
  ck_assert_int_eq(s.clause[1].sock, -1); /* default: the whole connection */
  c4_fault_parse("delay:peer=1,us=5,sock=0;rate:peer=1,mbps=1,sock=64;rate:peer=1,mbps=1,sock=-1",
                 &s);
  ck_assert_int_eq(s.n, 0);
  ck_assert_int_eq(s.nerr, 3);
  ck_assert_str_eq(s.err[0], "C4_FAULT clause 1 \"delay:peer=1,us=5,sock=0\": sock applies to rate "
                             "only");
  ck_assert_str_eq(s.err[1], "C4_FAULT clause 2 \"rate:peer=1,mbps=1,sock=64\": sock is not an "
                             "integer in [0, 63]");
  ck_assert_ptr_nonnull(strstr(s.err[2], "sock is not an integer"));
}
END_TEST

START_TEST(a_window_can_be_steps_that_the_program_reports) {
  struct c4_fault_spec s;
  c4_fault_parse("rate:peer=2,mbps=80,rank=1,from_step=131,to_step=180;delay:peer=0,us=9,"
                 "to_step=5;rate:peer=3,mbps=1,from_step=7",
                 &s);
  ck_assert_int_eq(s.nerr, 0);
  ck_assert_int_eq(s.n, 3);
  ck_assert_uint_eq(s.clause[0].from_step, 131);
  ck_assert_uint_eq(s.clause[0].to_step, 180);
  ck_assert_uint_eq(s.clause[0].after_ns, 0);
  ck_assert_uint_eq(s.clause[1].from_step, 1); /* to_step alone: from the first step */
  ck_assert_uint_eq(s.clause[1].to_step, 5);
  ck_assert_uint_eq(s.clause[2].to_step, 0); /* to the end */
}
END_TEST

/* The data path: a rate clause keyed to steps paces only while the reported step is inside. */
START_TEST(a_step_window_opens_and_closes_with_the_reported_step) {
  setenv("C4_FAULT", "rate:peer=5,mbps=0.001,from_step=3,to_step=4", 1);
  c4_fault_load();
  struct c4_fault_conn f;
  c4_fault_conn_init(&f, 1, 5);
  ck_assert_int_eq(f.active, 1);
  uint64_t now = 1000000000ull;
  ck_assert_uint_eq(c4_fault_pace_allow(&f, now, -1, 1 << 20), 1 << 20); /* no step yet */
  c4_fault_set_step(2);
  ck_assert_uint_eq(c4_fault_pace_allow(&f, now, -1, 1 << 20), 1 << 20);
  c4_fault_set_step(3);
  size_t first = c4_fault_pace_allow(&f, now, -1, 1 << 20);
  ck_assert_uint_lt(first, 1 << 20); /* one burst */
  c4_fault_pace_charge(&f, now, -1, first);
  ck_assert_uint_eq(c4_fault_pace_allow(&f, now + 1000, -1, 1 << 20), 0); /* in debt */
  c4_fault_set_step(5);
  ck_assert_uint_eq(c4_fault_pace_allow(&f, now + 2000, -1, 1 << 20), 1 << 20);
  unsetenv("C4_FAULT");
}
END_TEST

/* The rate a path's samples are capped at: the stricter of the connection's clause and the
 * socket's own, and nothing for a socket no clause names while the connection is unpaced. */
START_TEST(the_paced_rate_is_the_stricter_of_connection_and_socket) {
  setenv("C4_FAULT", "rate:peer=6,mbps=40,sock=1;rate:peer=6,mbps=400,sock=2;rate:peer=7,mbps=80",
         1);
  c4_fault_load();
  struct c4_fault_conn f, g;
  c4_fault_conn_init(&f, 1, 6);
  c4_fault_conn_init(&g, 1, 7);
  uint64_t now = c4_now_ns(); /* the clauses' windows open when they were loaded */
  ck_assert_double_eq_tol(c4_fault_pace_rate(&f, now, 1), 0.005, 1e-12); /* 40 Mbit/s in B/ns */
  ck_assert_double_eq_tol(c4_fault_pace_rate(&f, now, 2), 0.05, 1e-12);
  ck_assert_double_eq(c4_fault_pace_rate(&f, now, 0), 0);
  ck_assert_double_eq(c4_fault_pace_rate(&f, now, -1), 0);
  ck_assert_double_eq_tol(c4_fault_pace_rate(&g, now, 3), 0.01, 1e-12); /* the connection's */
  c4_fault_conn_init(&f, 1, 8);                                         /* a peer no clause names */
  ck_assert_double_eq(c4_fault_pace_rate(&f, now, 1), 0);
  c4_fault_conn_init(&f, 0, 6); /* receives are not paced */
  ck_assert_double_eq(c4_fault_pace_rate(&f, now, 1), 0);
  unsetenv("C4_FAULT");
}
END_TEST

START_TEST(unset_and_empty_give_nothing) {
  struct c4_fault_spec s;
  c4_fault_parse(NULL, &s);
  ck_assert_int_eq(s.n + s.nerr, 0);
  c4_fault_parse("", &s);
  ck_assert_int_eq(s.n + s.nerr, 0);
  c4_fault_parse(" ; ;", &s);
  ck_assert_int_eq(s.n + s.nerr, 0);
}
END_TEST

/* Each bad clause alone, with the message it must give. */
static const struct {
  const char *spec, *err;
} bad[] = {
    {"rate:peer=x,mbps=1", "C4_FAULT clause 1 \"rate:peer=x,mbps=1\": peer is not an integer"},
    {"delay:peer=-1,us=5", "C4_FAULT clause 1 \"delay:peer=-1,us=5\": peer is not an integer"},
    {"delay:peer=1", "C4_FAULT clause 1 \"delay:peer=1\": delay needs us=N"},
    {"delay:us=3", "C4_FAULT clause 1 \"delay:us=3\": delay needs peer=RANK"},
    {"rate:peer=1", "C4_FAULT clause 1 \"rate:peer=1\": rate needs mbps=M"},
    {"rate:peer=1,mbps=0", "C4_FAULT clause 1 \"rate:peer=1,mbps=0\": mbps is not a number in "
                           "[0.001, 1000000]"},
    {"rate:peer=1,mbps=inf", "C4_FAULT clause 1 \"rate:peer=1,mbps=inf\": mbps is not a number "
                             "in [0.001, 1000000]"},
    {"stall", "C4_FAULT clause 1 \"stall\": stall needs after_s= or for_s="},
    {"stall:peer=1,for_s=1", "C4_FAULT clause 1 \"stall:peer=1,for_s=1\": peer does not apply to "
                             "stall (it stalls every peer)"},
    {"stall:for_s=0", "C4_FAULT clause 1 \"stall:for_s=0\": for_s is not a number of seconds in "
                      "(0, 1000000]"},
    {"stall:after_s=-1,for_s=1", "C4_FAULT clause 1 \"stall:after_s=-1,for_s=1\": after_s is not "
                                 "a number of seconds in [0, 1000000]"},
    {"delay:peer=1,us=5,mbps=3", "C4_FAULT clause 1 \"delay:peer=1,us=5,mbps=3\": mbps applies to "
                                 "rate only"},
    {"rate:peer=1,mbps=3,us=5", "C4_FAULT clause 1 \"rate:peer=1,mbps=3,us=5\": us applies to "
                                "delay only"},
    {"delay:peer=1,us=5,speed=3", "C4_FAULT clause 1 \"delay:peer=1,us=5,speed=3\": unknown key "
                                  "\"speed\""},
    {"delay:peer=1,us", "C4_FAULT clause 1 \"delay:peer=1,us\": \"us\" is not key=value"},
    {"drop:peer=1", "C4_FAULT clause 1 \"drop:peer=1\": unknown kind \"drop\" (delay, rate or "
                    "stall)"},
    {"delay:peer=1,us=99999999999", "C4_FAULT clause 1 \"delay:peer=1,us=99999999999\": us is not "
                                    "an integer in [0, 60000000]"},
    {"rate:peer=1,mbps=5,rank=two", "C4_FAULT clause 1 \"rate:peer=1,mbps=5,rank=two\": rank is "
                                    "not an integer"},
    {"rate:peer=1,mbps=5,from_step=0", "C4_FAULT clause 1 \"rate:peer=1,mbps=5,from_step=0\": "
                                       "from_step is not a step number in [1, 2147483647]"},
    {"rate:peer=1,mbps=5,from_step=9,to_step=3", "C4_FAULT clause 1 "
                                                 "\"rate:peer=1,mbps=5,from_step=9,to_step=3\": "
                                                 "to_step is before from_step"},
    {"rate:peer=1,mbps=5,from_step=2,for_s=1", "C4_FAULT clause 1 "
                                               "\"rate:peer=1,mbps=5,from_step=2,for_s=1\": give "
                                               "steps (from_step/to_step) or seconds, not both"},
    {"stall:from_step=2", "C4_FAULT clause 1 \"stall:from_step=2\": stall takes after_s/for_s, "
                          "not steps"},
};

START_TEST(a_bad_clause_is_reported_and_left_out) {
  struct c4_fault_spec s;
  c4_fault_parse(bad[_i].spec, &s);
  ck_assert_int_eq(s.n, 0);
  ck_assert_int_eq(s.nerr, 1);
  ck_assert_str_eq(s.err[0], bad[_i].err);
}
END_TEST

START_TEST(good_clauses_around_bad_ones_are_kept_and_errors_name_their_clause) {
  struct c4_fault_spec s;
  c4_fault_parse("delay:peer=2,us=500;rate:peer=x;stall:after_s=1,for_s=1;bogus", &s);
  ck_assert_int_eq(s.n, 2);
  ck_assert_int_eq(s.clause[0].kind, C4_FAULT_DELAY);
  ck_assert_int_eq(s.clause[1].kind, C4_FAULT_STALL);
  ck_assert_int_eq(s.nerr, 2);
  ck_assert_str_eq(s.err[0], "C4_FAULT clause 2 \"rate:peer=x\": peer is not an integer");
  ck_assert_str_eq(s.err[1],
                   "C4_FAULT clause 4 \"bogus\": unknown kind \"bogus\" (delay, rate or stall)");
}
END_TEST

START_TEST(too_many_clauses_and_long_text_are_bounded) {
  char spec[4096] = "";
  for (int i = 0; i < C4_FAULT_MAX + 2; i++)
    strcat(spec, "delay:peer=1,us=1;");
  struct c4_fault_spec s;
  c4_fault_parse(spec, &s);
  ck_assert_int_eq(s.n, C4_FAULT_MAX);
  ck_assert_int_eq(s.nerr, 2);
  ck_assert_str_eq(s.err[0], "C4_FAULT clause 17 \"delay:peer=1,us=1\": more than 16 clauses");
  char longer[600] = "delay:peer=1,us=1,";
  memset(longer + strlen(longer), 'k', 500);
  c4_fault_parse(longer, &s);
  ck_assert_int_eq(s.nerr, 1);
  ck_assert_ptr_nonnull(strstr(s.err[0], "...\": \"kkkk"));
  ck_assert_uint_lt(strlen(s.err[0]), C4_FAULT_ERR_MAX);
}
END_TEST

int main(void) {
  Suite *s = suite_create("fault");
  TCase *tc = tcase_create("parse");
  tcase_add_test(tc, the_issue_example_gives_three_clauses);
  tcase_add_test(tc, rank_windows_fractions_and_spaces_are_accepted);
  tcase_add_test(tc, a_rate_can_name_one_data_socket);
  tcase_add_test(tc, a_window_can_be_steps_that_the_program_reports);
  tcase_add_test(tc, a_step_window_opens_and_closes_with_the_reported_step);
  tcase_add_test(tc, the_paced_rate_is_the_stricter_of_connection_and_socket);
  tcase_add_test(tc, unset_and_empty_give_nothing);
  tcase_add_loop_test(tc, a_bad_clause_is_reported_and_left_out, 0,
                      (int)(sizeof bad / sizeof bad[0]));
  tcase_add_test(tc, good_clauses_around_bad_ones_are_kept_and_errors_name_their_clause);
  tcase_add_test(tc, too_many_clauses_and_long_text_are_bounded);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
