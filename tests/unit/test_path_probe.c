/* test_path_probe.c -- path discovery without a plan (net_path_probe.c): how the probed source
 * ports are spread over distinct paths, and what is not probed. The probes themselves need routers
 * that answer; tests/live/fabric_defaults.sh runs them on the namespace fabric. */
#include <arpa/inet.h>
#include <check.h>
#include <string.h>

#include "../check_run.h"
#include "c4_err.h"
#include "net_path_probe.h"

#define S0 0x0a000001u
#define S1 0x0a000002u
#define LEAF 0x0a000009u

START_TEST(ports_are_spread_over_distinct_paths_in_turn) {
  /* six ports: 1, 2, 3 via spine S0; 4, 5 via S1; 6 unanswered at the second hop */
  uint16_t ports[6] = {1001, 1002, 1003, 1004, 1005, 1006};
  uint32_t sigs[6][C4_PROBE_HOPS] = {{LEAF, S0, LEAF}, {LEAF, S0, LEAF}, {LEAF, S0, LEAF},
                                     {LEAF, S1, LEAF}, {LEAF, S1, LEAF}, {LEAF, 0, LEAF}};
  uint16_t out[5];
  int npaths = 0;
  int n = c4_path_probe_pick(ports, (const uint32_t(*)[C4_PROBE_HOPS])sigs, 6, 3, out, 5, &npaths);
  ck_assert_int_eq(npaths, 2);
  ck_assert_int_eq(n, 5);
  /* S0, S1, S0, S1, then S0 again: S1 has no third port */
  ck_assert_uint_eq(out[0], 1001);
  ck_assert_uint_eq(out[1], 1004);
  ck_assert_uint_eq(out[2], 1002);
  ck_assert_uint_eq(out[3], 1005);
  ck_assert_uint_eq(out[4], 1003);
  /* two sockets: one on each spine */
  n = c4_path_probe_pick(ports, (const uint32_t(*)[C4_PROBE_HOPS])sigs, 6, 3, out, 2, &npaths);
  ck_assert_int_eq(n, 2);
  ck_assert_uint_ne(out[0] <= 1003, out[1] <= 1003);
}
END_TEST

START_TEST(more_sockets_than_answered_ports_leave_the_rest_to_the_kernel) {
  uint16_t ports[3] = {7, 8, 0}; /* the third port's probe failed */
  uint32_t sigs[3][C4_PROBE_HOPS] = {{S0, LEAF}, {S1, LEAF}, {S0, LEAF}};
  uint16_t out[4];
  int npaths = 0;
  int n = c4_path_probe_pick(ports, (const uint32_t(*)[C4_PROBE_HOPS])sigs, 3, 2, out, 4, &npaths);
  ck_assert_int_eq(npaths, 2);
  ck_assert_int_eq(n, 2);
  ck_assert_uint_eq(out[0], 7);
  ck_assert_uint_eq(out[1], 8);
}
END_TEST

START_TEST(one_path_or_no_answer_gives_one_or_no_path) {
  uint16_t ports[2] = {7, 8};
  uint32_t one[2][C4_PROBE_HOPS] = {{S0, LEAF}, {S0, LEAF}};
  uint32_t none[2][C4_PROBE_HOPS] = {{0}, {0}};
  uint16_t out[2];
  int npaths = -1;
  int n = c4_path_probe_pick(ports, (const uint32_t(*)[C4_PROBE_HOPS])one, 2, 2, out, 2, &npaths);
  ck_assert_int_eq(npaths, 1);
  ck_assert_int_eq(n, 2); /* both on the one path */
  n = c4_path_probe_pick(ports, (const uint32_t(*)[C4_PROBE_HOPS])none, 2, 2, out, 2, &npaths);
  ck_assert_int_eq(npaths, 0);
  ck_assert_int_eq(n, 0);
}
END_TEST

START_TEST(loopback_ipv6_and_a_zero_budget_are_not_probed) {
  struct c4_path_probe pp;
  struct sockaddr_storage ss;
  memset(&ss, 0, sizeof ss);
  struct sockaddr_in *in = (struct sockaddr_in *)&ss;
  in->sin_family = AF_INET;
  in->sin_port = htons(4000);
  inet_pton(AF_INET, "127.0.0.1", &in->sin_addr);
  unsigned long started = atomic_load(&c4_probe_stats.started);
  ck_assert_int_eq(c4_path_probe_start(&pp, &ss, 200, 1), C4_EINVAL);
  inet_pton(AF_INET, "198.18.0.2", &in->sin_addr);
  ck_assert_int_eq(c4_path_probe_start(&pp, &ss, 0, 1), C4_EINVAL);
  ss.ss_family = AF_INET6;
  ck_assert_int_eq(c4_path_probe_start(&pp, &ss, 200, 1), C4_EINVAL);
  ck_assert_uint_eq(atomic_load(&c4_probe_stats.started), started);
  c4_path_probe_abort(&pp); /* nothing open: closes nothing */
}
END_TEST

int main(void) {
  Suite *s = suite_create("path_probe");
  TCase *tc = tcase_create("pick");
  tcase_add_test(tc, ports_are_spread_over_distinct_paths_in_turn);
  tcase_add_test(tc, more_sockets_than_answered_ports_leave_the_rest_to_the_kernel);
  tcase_add_test(tc, one_path_or_no_answer_gives_one_or_no_path);
  tcase_add_test(tc, loopback_ipv6_and_a_zero_budget_are_not_probed);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
