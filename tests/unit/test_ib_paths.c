/* test_ib_paths.c -- which path each verbs QP takes (RoCEv2 flow labels, so UDP source ports;
 * InfiniBand LID path bits), with and without a plan, and the per-QP weights of a message's
 * split: the socket transport's rate rule, plus the re-measure of a QP that carried nothing. */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "../check_run.h"
#include "c4_random.h"
#include "ib_paths.h"
#include "ib_props.h"
#include "ib_proto.h"

static const struct c4_netplan_bind none = {.flow_label = -1, .sl = -1, .path_bits = -1};

/* Asserts that QPs 0 .. n-1 of out send from n different UDP ports, none from flow label 0. */
static void assert_distinct_ports(const struct c4_netplan_bind *out, int n) {
  for (int q = 0; q < n; q++) {
    ck_assert_int_gt(out[q].flow_label, 0);
    ck_assert_int_lt(out[q].flow_label, 0x100000);
    for (int j = 0; j < q; j++)
      ck_assert_msg(c4_ib_flow_label_to_sport((uint32_t)out[q].flow_label) !=
                        c4_ib_flow_label_to_sport((uint32_t)out[j].flow_label),
                    "QPs %d and %d share a UDP port", j, q);
  }
}

START_TEST(roce_qps_without_a_plan_get_distinct_stable_ports) {
  for (int k = 0; k < 2000; k++) {
    uint64_t id = c4_random_u64();
    int n = 1 + k % C4_IB_MAX_QPS;
    struct c4_netplan_bind a[C4_IB_MAX_QPS], b[C4_IB_MAX_QPS];
    c4_ib_qp_paths(id, n, C4_IB_LINK_ETH, 0, NULL, 0, a);
    assert_distinct_ports(a, n);
    c4_ib_qp_paths(id, n, C4_IB_LINK_ETH, 0, NULL, 0, b); /* the other end computes the same */
    ck_assert_mem_eq(a, b, sizeof a[0] * (size_t)n);
    for (int q = 0; q < n; q++)
      ck_assert_int_eq(a[q].sl, -1);
  }
}
END_TEST

START_TEST(comms_between_the_same_hosts_start_from_different_ports) {
  /* 200 comms' QP 0: drawn from 16383 ports, at least 190 distinct (expected ~198.8) */
  static uint8_t seen[0x4000];
  memset(seen, 0, sizeof seen);
  int distinct = 0;
  for (int k = 0; k < 200; k++) {
    struct c4_netplan_bind out[1];
    c4_ib_qp_paths(c4_random_u64(), 1, C4_IB_LINK_ETH, 0, NULL, 0, out);
    uint16_t p = c4_ib_flow_label_to_sport((uint32_t)out[0].flow_label) & 0x3fff;
    distinct += !seen[p];
    seen[p] = 1;
  }
  ck_assert_int_ge(distinct, 190);
}
END_TEST

START_TEST(planned_labels_are_kept_and_the_others_go_around_them) {
  for (int k = 0; k < 500; k++) {
    uint64_t id = c4_random_u64();
    struct c4_netplan_bind free_choice[4], out[4];
    c4_ib_qp_paths(id, 4, C4_IB_LINK_ETH, 0, NULL, 0, free_choice);
    /* plan QP 1 onto the port QP 0 would have taken, QP 2 onto a label above 14 bits */
    struct c4_netplan_bind plan[3] = {none, none, none};
    plan[1].flow_label = free_choice[0].flow_label;
    plan[1].sl = 4;
    int low =
        c4_ib_flow_label_to_sport((uint32_t)plan[1].flow_label) == (0xc000 | (77 ^ 16)) ? 78 : 77;
    plan[2].flow_label = 0x40000 | low; /* UDP port 0xc000 | (low ^ 16), not QP 1's */
    c4_ib_qp_paths(id, 4, C4_IB_LINK_ETH, 0, plan, 3, out);
    ck_assert_int_eq(out[1].flow_label, free_choice[0].flow_label);
    ck_assert_int_eq(out[1].sl, 4);
    ck_assert_int_eq(out[2].flow_label, 0x40000 | low);
    assert_distinct_ports(out, 4);
  }
}
END_TEST

START_TEST(infiniband_qps_spread_over_the_remote_lids) {
  for (int k = 0; k < 200; k++) {
    uint64_t id = c4_random_u64();
    struct c4_netplan_bind out[C4_IB_MAX_QPS];
    c4_ib_qp_paths(id, 4, C4_IB_LINK_IB, 2, NULL, 0, out);
    int used = 0;
    for (int q = 0; q < 4; q++) {
      ck_assert_int_eq(out[q].flow_label, -1);
      ck_assert_int_ge(out[q].path_bits, 0);
      ck_assert_int_lt(out[q].path_bits, 4);
      used |= 1 << out[q].path_bits;
    }
    ck_assert_int_eq(used, 0xf);                           /* four QPs, four LIDs */
    c4_ib_qp_paths(id, 3, C4_IB_LINK_IB, 0, NULL, 0, out); /* LMC 0: one LID */
    for (int q = 0; q < 3; q++)
      ck_assert_int_eq(out[q].path_bits, -1);
    struct c4_netplan_bind plan[2] = {none, none};
    plan[0].path_bits = 1;
    plan[1].path_bits = 9; /* beyond the LMC: spread instead */
    c4_ib_qp_paths(id, 2, C4_IB_LINK_IB, 2, plan, 2, out);
    ck_assert_int_eq(out[0].path_bits, 1);
    ck_assert_int_ge(out[1].path_bits, 0);
    ck_assert_int_lt(out[1].path_bits, 4);
  }
}
END_TEST

/* Feeds path i `n` chunks of 1 MiB at `rate` bytes per ns. */
static void feed(struct c4_paths *p, int i, int n, double rate) {
  for (int k = 0; k < n; k++)
    c4_paths_sample(p, i, 1 << 20, (uint64_t)((double)(1 << 20) / rate));
}

START_TEST(weights_follow_the_path_rule_and_a_left_out_qp_is_measured_again) {
  struct c4_paths p;
  c4_paths_init(&p, 3);
  for (int r = 0; r < 40; r++)
    feed(&p, 0, 1, 1.0), feed(&p, 1, 1, 1.0), feed(&p, 2, 1, 0.2);
  uint64_t now = 1000000000ull, last[3] = {0, 0, now - 1000}; /* skipped since */
  double w[3];
  uint64_t span[3];
  ck_assert_int_eq(c4_ib_qp_weights(&p, last, now, 1, w, span), 0);
  ck_assert(w[0] == 1 && w[1] == 1);
  ck_assert(w[2] < 0.3 && w[2] == c4_paths_weight(&p, 2));
  ck_assert_int_eq(c4_ib_qp_weights(&p, last, now, 0, w, span), 0); /* C4_PATH_WEIGHTS=0: even */
  ck_assert(w[2] == 1);
  last[2] = now - C4_IB_PROBE_NS - 1; /* every message left QP 2 without bytes for a while */
  ck_assert_int_eq(c4_ib_qp_weights(&p, last, now, 1, w, span), 1);
  ck_assert(w[2] == 1);
  ck_assert_uint_eq(span[2], C4_IB_PROBE_NS + 1);
  ck_assert_uint_eq(span[0], 0);
  last[2] = 1; /* left out for a second: its sample stands for the estimate's memory at most */
  ck_assert_int_eq(c4_ib_qp_weights(&p, last, now, 1, w, span), 1);
  ck_assert_uint_eq(span[2], C4_PATHS_TAU_NS);
  last[2] = now - C4_IB_PROBE_NS + 1000; /* carried bytes within the probe time: no probe */
  ck_assert_int_eq(c4_ib_qp_weights(&p, last, now, 1, w, span), 0);
  ck_assert(w[2] < 0.3);
  last[2] = 0; /* the last message gave it bytes, however long ago (an idle comm): no probe */
  ck_assert_int_eq(c4_ib_qp_weights(&p, last, now, 1, w, span), 0);
  ck_assert(w[2] < 0.3);
  /* paths whose spread is their noise weigh alike: no probe needed, none counted */
  c4_paths_init(&p, 2);
  for (int r = 0; r < 40; r++)
    feed(&p, 0, 1, 1.0 + 0.05 * (r % 3)), feed(&p, 1, 1, 0.95 + 0.05 * (r % 2));
  last[0] = last[1] = 0;
  ck_assert_int_eq(c4_ib_qp_weights(&p, last, now, 1, w, span), 0);
  ck_assert(w[0] == 1 && w[1] == 1);
}
END_TEST

int main(void) {
  Suite *s = suite_create("ib_paths");
  TCase *t = tcase_create("paths");
  tcase_add_test(t, roce_qps_without_a_plan_get_distinct_stable_ports);
  tcase_add_test(t, comms_between_the_same_hosts_start_from_different_ports);
  tcase_add_test(t, planned_labels_are_kept_and_the_others_go_around_them);
  tcase_add_test(t, infiniband_qps_spread_over_the_remote_lids);
  tcase_add_test(t, weights_follow_the_path_rule_and_a_left_out_qp_is_measured_again);
  suite_add_tcase(s, t);
  return c4_check_run(s);
}
