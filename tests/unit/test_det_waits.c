/* test_det_waits.c -- the receive waits the straggler detector takes out of a rank's compute:
 * every process of a large job is kept (not just the first 8,192), handles stay valid while the
 * table grows, and the blocked time of a span is the union of the receives inside it. */
#include <check.h>
#include <stdio.h>
#include <string.h>

#include "det.h"
#include "det_waits.h"

static const struct c4_det_job *job(void) { return c4_det_job("waits"); }

/* A completed receive of process (host h<n>, pid 1000 + n) over [t0, t1]. */
static void recv_of(int n, uint64_t t0, uint64_t t1) {
  struct c4_xfer_record x = {
      .dir = C4_DIR_RECV, .status = C4_XFER_OK, .t_posted = t0, .t_done = t1, .bytes = 1 << 20};
  snprintf(x.self.host, sizeof x.self.host, "h%05d", n);
  x.self.pid = 1000 + (uint32_t)n;
  det_waits_take(job(), &x);
}

static int find(int n) {
  char host[C4_HOST_MAX] = {0};
  snprintf(host, sizeof host, "h%05d", n);
  return det_waits_find(job(), host, 1000 + (uint32_t)n);
}

START_TEST(every_process_of_a_16384_rank_job_is_kept) {
  det_waits_reset();
  recv_of(0, 100, 200);
  int first = find(0);
  ck_assert_int_ge(first, 0);
  for (int n = 1; n < 20000; n++) /* the table grows past its first sizes and past 8,192 */
    recv_of(n, 1000 + (uint64_t)n, 2000 + (uint64_t)n);
  ck_assert_int_eq(det_waits_count(), 20000);
  ck_assert_int_eq(find(0), first); /* a handle outlives the table's growth */
  for (int n = 0; n < 20000; n += 1999) {
    int at = find(n);
    ck_assert_msg(at >= 0, "process %d not kept", n);
    uint64_t t0 = n ? 1000 + (uint64_t)n : 100, t1 = n ? 2000 + (uint64_t)n : 200;
    ck_assert_uint_eq(det_waits_blocked(at, 0, 1u << 30), t1 - t0);
  }
  ck_assert_uint_eq(det_waits_untracked(), 0);
  char other[C4_HOST_MAX] = "h00001";
  ck_assert_int_eq(det_waits_find(job(), other, 7), -1); /* same host, another pid */
  ck_assert_int_eq(det_waits_find(c4_det_job("another"), other, 1001), -1);
  unsigned epoch = det_waits_epoch();
  det_waits_reset();
  ck_assert_uint_ne(det_waits_epoch(), epoch); /* every handle is stale now */
  ck_assert_int_eq(det_waits_count(), 0);
  ck_assert_uint_eq(det_waits_blocked(first, 0, 1u << 30), 0);
}
END_TEST

START_TEST(blocked_time_is_the_union_of_the_receives_inside_the_span) {
  det_waits_reset();
  recv_of(7, 100, 200);
  recv_of(7, 150, 250); /* overlaps: merged into [100, 250] */
  recv_of(7, 400, 500);
  recv_of(7, 300, 350); /* out of order */
  int at = find(7);
  ck_assert_uint_eq(det_waits_blocked(at, 0, 1000), 150 + 100 + 50);
  ck_assert_uint_eq(det_waits_blocked(at, 200, 450), 50 + 50 + 50); /* clipped at both ends */
  ck_assert_uint_eq(det_waits_blocked(at, 500, 1000), 0);
  ck_assert_uint_eq(det_waits_blocked(-1, 0, 1000), 0);
  det_waits_reset();
}
END_TEST

int main(void) {
  Suite *s = suite_create("det_waits");
  TCase *tc = tcase_create("det_waits");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, every_process_of_a_16384_rank_job_is_kept);
  tcase_add_test(tc, blocked_time_is_the_union_of_the_receives_inside_the_span);
  suite_add_tcase(s, tc);
  SRunner *sr = srunner_create(s);
  srunner_run_all(sr, CK_NORMAL);
  int failed = srunner_ntests_failed(sr);
  srunner_free(sr);
  return failed ? 1 : 0;
}
