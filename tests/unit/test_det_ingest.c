/* test_det_ingest.c -- the NIC matrix takes transfers from either end and from traces that lack
 * fields: sends alone, receives alone, wrap mode's receives that know no peer (placed through
 * their connection), no first-byte time (timed from the communicator's last post), no device
 * (the rank stands for the NIC). Each finds a slow NIC or link at its place. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../check_run.h"
#include "det.h"
#include "det_internal.h"
#include "det_test_util.h"
#include "mon_events.h"

#define MS 1000000ull

/* What the tracer records of each transfer. */
struct form {
  int sends, recvs; /* which ends write records */
  int no_first;     /* t_first absent: the trace's t_post is the poster's arrival */
  int recv_no_peer; /* receives do not know their peer (wrap mode) */
  int no_dev;       /* no device indexes */
  int no_rank;      /* no rank of the writing end (the peer's still given), nor a connection id */
  double (*rate)(int src, int dst);
};

static double node2_sends_at_half(int s, int d) { return s == 2 && d >= 0 ? 0.5 : 1; }
static double node4_receives_at_third(int s, int d) { return d == 4 && s >= 0 ? 1.0 / 3 : 1; }
static double link_1_to_2_at_30(int s, int d) { return s == 1 && d == 2 ? 0.3 : 1; }

static uint64_t rnd(uint64_t *x) {
  *x ^= *x << 13;
  *x ^= *x >> 7;
  *x ^= *x << 17;
  return *x;
}

static void record(const struct form *f, int dir, int s, int d, uint64_t post, uint64_t first,
                   uint64_t done) {
  struct c4_record r = {.kind = C4_REC_XFER};
  int send = dir == C4_DIR_SEND;
  r.xfer = (struct c4_xfer_record){.dir = (uint8_t)dir,
                                   .status = C4_XFER_OK,
                                   .conn_id = 0x1000 + (uint64_t)(s * 8 + d),
                                   .bytes = 1048576,
                                   .t_posted = post,
                                   .t_first_byte = f->no_first ? 0 : first,
                                   .t_done = done,
                                   .nccl_comm = 0xc4};
  struct c4_identity src = {.rank = s, .pid = 100 + (uint32_t)s, .dev = f->no_dev ? -1 : 0},
                     dst = {.rank = d, .pid = 100 + (uint32_t)d, .dev = f->no_dev ? -1 : 0};
  snprintf(src.host, C4_HOST_MAX, "node%d", s);
  snprintf(dst.host, C4_HOST_MAX, "node%d", d);
  r.xfer.self = send ? src : dst;
  r.xfer.peer = send ? dst : src;
  if (f->no_rank) { /* what the reader makes of such a line: rank -1, pid 0, conn from the ends */
    r.xfer.self.rank = -1;
    r.xfer.self.pid = 0;
    r.xfer.conn_id = 0x2000 + (uint64_t)(send ? s * 64 + 8 + d : (s + 8) * 64 + d);
  }
  if (!send && f->recv_no_peer) r.xfer.peer = (struct c4_identity){.rank = -1, .dev = -1};
  c4_det_take(c4_det_job("job"), &r);
}

/* 6 hosts x 1 NIC; every 20 ms a collective: each rank arrives up to 3 ms apart and posts its
 * transfers then; they start when the last has arrived, each host sending 1 MiB to the next two
 * and the previous one at 10 GB/s times rate (from 12 s on, past the noise model's warm-up), 3%
 * jitter. */
static void run(const struct form *f, uint64_t t1) {
  uint64_t x = 88172645463325252ull;
  for (uint64_t t = 1000 * MS; t < t1; t += 20 * MS) {
    uint64_t arrive[6], start = 0;
    for (int k = 0; k < 6; k++) {
      arrive[k] = t + rnd(&x) % (3 * MS);
      if (arrive[k] > start) start = arrive[k];
    }
    for (int s = 0; s < 6; s++)
      for (int k = 0; k < 3; k++) {
        int d = (s + (k == 2 ? 5 : k + 1)) % 6;
        double rate = t >= 12000 * MS ? f->rate(s, d) : 1;
        double jitter = 1 + 0.03 * ((double)(rnd(&x) % 2001) / 1000.0 - 1);
        uint64_t first = start + 5000, done = first + (uint64_t)(1048576 / (10.0 * rate) * jitter);
        if (f->sends) record(f, C4_DIR_SEND, s, d, arrive[s], first, done);
        if (f->recvs) record(f, C4_DIR_RECV, s, d, arrive[d], first, done);
      }
  }
}

static json_t *only_comm_slow(void) {
  json_t *hit = NULL, *e;
  size_t i, n = 0;
  json_array_foreach(events, i,
                     e) if (!strcmp(json_string_value(json_object_get(e, "kind")), "comm_slow")) {
    hit = e;
    n++;
  }
  if (n != 1) json_dumpf(events, stderr, JSON_INDENT(0));
  ck_assert_msg(n == 1, "%zu comm_slow verdicts", n);
  return hit;
}

static void expect_nic(const struct form *f, const char *where, const char *host, int rank,
                       double lo, double hi) {
  setup(NULL);
  run(f, 18000 * MS);
  json_t *e = only_comm_slow();
  ck_assert_str_eq(json_string_value(json_object_get(e, "where")), where);
  json_t *nic = json_object_get(e, "nic");
  ck_assert_str_eq(json_string_value(json_object_get(nic, "host")), host);
  ck_assert_int_eq(json_integer_value(json_object_get(nic, "dev")), f->no_dev ? -1 : 0);
  ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(e, "ranks"), 0)), rank);
  double fac = json_real_value(json_object_get(e, "factor"));
  ck_assert_msg(fac > lo && fac < hi, "factor %.2f", fac);
  uint64_t at = (uint64_t)json_integer_value(json_object_get(e, "t"));
  ck_assert_msg(at > 12000 * MS && at < 14000 * MS, "flagged at %.2f s", (double)at / 1e9);
  c4_det_reset();
}

static void expect_link(const struct form *f) {
  setup(NULL);
  run(f, 18000 * MS);
  json_t *e = only_comm_slow();
  ck_assert_str_eq(json_string_value(json_object_get(e, "where")), "link");
  json_t *link = json_object_get(e, "link");
  ck_assert_str_eq(json_string_value(json_array_get(link, 0)), "node1");
  ck_assert_str_eq(json_string_value(json_array_get(link, 1)), "node2");
  double fac = json_real_value(json_object_get(e, "factor"));
  ck_assert_msg(fac > 2.6 && fac < 4.0, "factor %.2f", fac);
  c4_det_reset();
}

START_TEST(a_slow_nic_and_link_are_found_from_sends_alone) {
  struct form f = {.sends = 1, .rate = node2_sends_at_half};
  expect_nic(&f, "nic_tx", "node2", 2, 1.7, 2.3);
  f.rate = node4_receives_at_third;
  expect_nic(&f, "nic_rx", "node4", 4, 2.5, 3.5);
  f.rate = link_1_to_2_at_30;
  expect_link(&f);
}
END_TEST

START_TEST(a_slow_nic_and_link_are_found_from_receives_alone_and_from_both) {
  struct form f = {.recvs = 1, .rate = node2_sends_at_half};
  expect_nic(&f, "nic_tx", "node2", 2, 1.7, 2.3);
  f.sends = 1; /* both ends: the receives speak, the sends add nothing twice */
  expect_nic(&f, "nic_tx", "node2", 2, 1.7, 2.3);
  f.rate = link_1_to_2_at_30;
  expect_link(&f);
}
END_TEST

START_TEST(wrap_mode_receives_are_placed_through_their_connection) {
  struct form f = {
      .sends = 1, .recvs = 1, .no_first = 1, .recv_no_peer = 1, .rate = node4_receives_at_third};
  expect_nic(&f, "nic_rx", "node4", 4, 2.4, 3.6);
  f.rate = link_1_to_2_at_30;
  expect_link(&f);
  /* receives alone that know no peer cannot be placed: no cell, no verdict */
  setup(NULL);
  f.sends = 0;
  run(&f, 9000 * MS);
  json_t *st = c4_det_state_json();
  json_t *m = json_object_get(st, "matrix");
  ck_assert_int_eq(json_array_size(json_object_get(m, "cells")), 0);
  ck_assert_int_gt(json_integer_value(json_object_get(m, "dropped")), 0);
  json_decref(st);
  ck_assert_int_eq(json_array_size(events), 0);
  c4_det_reset();
}
END_TEST

START_TEST(without_first_byte_times_or_devices_the_fault_is_still_placed) {
  /* the arrivals' spread (up to 3 ms) is larger than a transfer (0.1 ms): timed from t_post,
   * every cell would be noise */
  struct form f = {.recvs = 1, .no_first = 1, .rate = node2_sends_at_half};
  expect_nic(&f, "nic_tx", "node2", 2, 1.6, 2.4);
  f.no_dev = 1; /* the rank stands for the NIC: dev -1, the rank named */
  f.rate = node4_receives_at_third;
  expect_nic(&f, "nic_rx", "node4", 4, 2.4, 3.6);
  f.rate = link_1_to_2_at_30;
  expect_link(&f);
}
END_TEST

/* A minimal trace whose lines leave out the optional `rank` (the peer's is required) and give no
 * device: the host stands for its NIC at both ends of every record, so each host is one NIC and
 * a slow one is one verdict. With the peer's rank standing for its NIC and the writer's unknown,
 * each host was two NICs, one for its own lines and one for its peers', and a NIC sending at half
 * rate was named twice. */
START_TEST(without_ranks_or_devices_a_host_is_one_nic) {
  struct form f = {.sends = 1, .recvs = 1, .no_dev = 1, .no_rank = 1, .rate = node2_sends_at_half};
  expect_nic(&f, "nic_tx", "node2", 2, 1.7, 2.3);
  f.sends = 0;
  f.rate = node4_receives_at_third;
  expect_nic(&f, "nic_rx", "node4", 4, 2.5, 3.5);
}
END_TEST

int main(void) {
  Suite *s = suite_create("det_ingest");
  TCase *tc = tcase_create("ingest");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, a_slow_nic_and_link_are_found_from_sends_alone);
  tcase_add_test(tc, a_slow_nic_and_link_are_found_from_receives_alone_and_from_both);
  tcase_add_test(tc, wrap_mode_receives_are_placed_through_their_connection);
  tcase_add_test(tc, without_first_byte_times_or_devices_the_fault_is_still_placed);
  tcase_add_test(tc, without_ranks_or_devices_a_host_is_one_nic);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
