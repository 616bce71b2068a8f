/* test_paths.c -- multipath weights (net_paths.c): each data socket's rate measured from its
 * chunks, weights relative to the fastest, the floor that keeps a slow path measured, how fast the
 * estimate follows a path that slows down and recovers, and the log's hysteresis. */
#include <check.h>

#include "../check_run.h"
#include "net_paths.h"

#define MB (1u << 20)

/* n chunks of len bytes on socket i, each taking len / rate ns. */
static void send_at(struct c4_paths *p, int i, double bytes_per_ns, int n, uint64_t len) {
  for (int k = 0; k < n; k++)
    c4_paths_sample(p, i, len, (uint64_t)((double)len / bytes_per_ns));
}

START_TEST(unmeasured_sockets_weigh_one_and_measured_ones_their_rate_over_the_fastest) {
  struct c4_paths p;
  c4_paths_init(&p, 3);
  ck_assert_double_eq(c4_paths_weight(&p, 0), 1);
  send_at(&p, 0, 1.0, 4, MB);
  send_at(&p, 1, 0.25, 4, MB);
  ck_assert_double_eq_tol(c4_paths_weight(&p, 0), 1, 1e-9);
  ck_assert_double_eq_tol(c4_paths_weight(&p, 1), 0.25, 1e-9);
  ck_assert_double_eq(c4_paths_weight(&p, 2), 1); /* no chunk yet */
  ck_assert_uint_eq(p.bytes[1], 4ull * MB);
  ck_assert_uint_eq(p.chunks[0], 4);
  ck_assert_double_eq(c4_paths_weight(&p, 7), 1); /* out of range: no weighting */
}
END_TEST

START_TEST(a_nearly_dead_path_keeps_the_floor_weight_so_it_is_still_measured) {
  struct c4_paths p;
  c4_paths_init(&p, 2);
  send_at(&p, 0, 1.0, 2, MB);
  send_at(&p, 1, 0.0001, 2, 16384);
  ck_assert_double_eq(c4_paths_weight(&p, 1), C4_PATHS_FLOOR);
}
END_TEST

/* A path that drops to a quarter is followed within half a second of its own sending, and its
 * recovery too: "a congested path gets less within a second or two". */
START_TEST(the_estimate_follows_a_path_that_slows_and_recovers_within_half_a_second) {
  struct c4_paths p;
  c4_paths_init(&p, 2);
  send_at(&p, 0, 1.0, 100, 512 << 10); /* 1 GB/s, 512 KiB chunks: 0.5 ms each */
  send_at(&p, 1, 1.0, 100, 512 << 10);
  /* socket 1 at 0.25 GB/s for 0.5 s of sending (chunks of 128 KiB, its weighted size) */
  int chunks = (int)(0.5e9 / ((128 << 10) / 0.25));
  send_at(&p, 1, 0.25, chunks, 128 << 10);
  send_at(&p, 0, 1.0, 1000, 512 << 10);
  double w = c4_paths_weight(&p, 1);
  ck_assert_msg(w < 0.4, "weight %.3f after 0.5 s at a quarter", w);
  send_at(&p, 1, 1.0, (int)(0.5e9 / ((512 << 10) / 1.0)), 512 << 10);
  w = c4_paths_weight(&p, 1);
  ck_assert_msg(w > 0.85, "weight %.3f after 0.5 s back at full rate", w);
}
END_TEST

START_TEST(one_slow_chunk_among_many_fast_ones_moves_the_weight_little) {
  struct c4_paths p;
  c4_paths_init(&p, 2);
  send_at(&p, 0, 1.0, 100, MB);
  send_at(&p, 1, 1.0, 100, MB);
  c4_paths_sample(&p, 1, 16384, 16384 * 4); /* one 64 us blip at a quarter */
  ck_assert_double_gt(c4_paths_weight(&p, 1), 0.99);
}
END_TEST

START_TEST(the_log_hears_of_a_slow_path_once_and_of_its_recovery_once) {
  struct c4_paths p;
  c4_paths_init(&p, 2);
  send_at(&p, 0, 1.0, 10, MB);
  send_at(&p, 1, 1.0, 10, MB);
  ck_assert_int_eq(c4_paths_changed(&p, 1), 0);
  send_at(&p, 1, 0.2, 400, MB / 4);
  ck_assert_int_eq(c4_paths_changed(&p, 1), 1);
  ck_assert_int_eq(c4_paths_changed(&p, 1), 0);
  send_at(&p, 1, 0.6, 400, MB); /* between half and three quarters: no news */
  ck_assert_int_eq(c4_paths_changed(&p, 1), 0);
  send_at(&p, 1, 1.0, 2000, MB);
  ck_assert_int_eq(c4_paths_changed(&p, 1), -1);
  ck_assert_int_eq(c4_paths_changed(&p, 1), 0);
}
END_TEST

/* A TCP socket whose buffer swallows each chunk writes it in microseconds; the delivery rate
 * the kernel measured from its ACKs is what the estimate takes then. */
START_TEST(a_measured_delivery_rate_outweighs_a_chunk_swallowed_by_the_send_buffer) {
  struct c4_paths p;
  c4_paths_init(&p, 2);
  for (int k = 0; k < 200; k++) {
    c4_paths_sample_rate(&p, 0, MB, 0.2); /* written in 5 ms, say; delivered at 0.2 */
    c4_paths_sample_rate(&p, 1, MB, 0.05);
  }
  ck_assert_double_eq_tol(c4_paths_weight(&p, 1), 0.25, 1e-6);
  c4_paths_sample_rate(&p, 1, MB, 0); /* no measurement: nothing changes... */
  ck_assert_double_eq_tol(c4_paths_weight(&p, 1), 0.25, 1e-6);
  ck_assert_uint_eq(p.chunks[1], 200); /* ...and it is not counted */
  /* a swallowed chunk still weighs the path's time: 40 quarter-rate chunks of 1 MiB (0.8 s of the
   * path's time at 0.05 bytes/ns) bring a full-speed path down most of the way */
  for (int k = 0; k < 40; k++)
    c4_paths_sample_rate(&p, 0, MB, 0.05);
  ck_assert_double_lt(p.rate[0], 0.07);
}
END_TEST

int main(void) {
  Suite *s = suite_create("paths");
  TCase *tc = tcase_create("weights");
  tcase_add_test(tc, unmeasured_sockets_weigh_one_and_measured_ones_their_rate_over_the_fastest);
  tcase_add_test(tc, a_nearly_dead_path_keeps_the_floor_weight_so_it_is_still_measured);
  tcase_add_test(tc, the_estimate_follows_a_path_that_slows_and_recovers_within_half_a_second);
  tcase_add_test(tc, one_slow_chunk_among_many_fast_ones_moves_the_weight_little);
  tcase_add_test(tc, the_log_hears_of_a_slow_path_once_and_of_its_recovery_once);
  tcase_add_test(tc, a_measured_delivery_rate_outweighs_a_chunk_swallowed_by_the_send_buffer);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
