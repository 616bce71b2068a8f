/* test_rate_sample.c -- a sending data socket's rate samples (net_rate_sample.c) from synthetic
 * kernel counts: the kernel's bytes over busy time, the write time of a chunk that waited, the
 * pacer's cap, and the samples a stopped or slow reader held back, which are dropped. */
#include <check.h>

#include "../check_run.h"
#include "net_rate_sample.h"

#define MB (1u << 20)
#define MS 1000ull /* in the kernel's us */

static struct c4_rate_sampler r;
static double span;
static int held;

/* The socket takes a chunk with the kernel's counts at (acked, busy_us, held_us). */
static void claim(uint64_t acked, uint64_t busy_us, uint64_t held_us) {
  struct c4_tcp_counts k = {acked, busy_us, held_us};
  c4_rate_sample_claimed(&r, &k);
}

/* The chunk finished (len bytes, ns, waited or not); the kernel's counts now. Returns the rate. */
static double finish(uint32_t len, uint64_t ns, int waited, uint64_t acked, uint64_t busy_us,
                     uint64_t held_us) {
  struct c4_tcp_counts k = {acked, busy_us, held_us};
  struct c4_chunk_done d = {len, ns, waited};
  return c4_rate_sample(&r, &k, &d, 0, &span, &held);
}

static void setup(void) { r = (struct c4_rate_sampler){0}; }

/* 4 MB acknowledged over 40 ms of busy time: 0.1 bytes/ns over a 40 ms span. A sample waits for
 * 20 ms of busy time (the kernel counts in ticks): less, and nothing new is known. */
START_TEST(a_kernel_sample_is_bytes_acknowledged_over_busy_time) {
  claim(0, 0, 0);
  ck_assert_double_eq(finish(MB, 1000, 0, MB, 8 * MS, 0), 0);
  claim(MB, 8 * MS, 0);
  ck_assert_double_eq_tol(finish(MB, 1000, 0, 4000000, 40 * MS, 0), 0.1, 1e-12);
  ck_assert_double_eq_tol(span, 40e6, 1);
  ck_assert_int_eq(held, 0);
}
END_TEST

/* make drill's shape: the chunk went into the send buffer at once (no wait), the reader was
 * SIGSTOPped, and the socket sat 564 ms busy, 556 of them with the window shut. That sample is the
 * reader's: no rate, no span (no path record for c4mon), held. The next sample, after the reader
 * is back, measures the path from where the dropped one ended. Without the rule it read 4.3 MB
 * over 564 ms: 12x under the path's 0.1 bytes/ns. */
START_TEST(a_sample_a_stopped_reader_held_back_is_dropped) {
  claim(0, 0, 0);
  ck_assert_double_eq(finish(MB, 1000, 0, 4300000, 564 * MS, 556 * MS), 0);
  ck_assert_int_eq(held, 1);
  ck_assert_double_eq(span, 0);
  claim(4300000, 564 * MS, 556 * MS);
  ck_assert_double_eq_tol(finish(MB, 1000, 0, 6300000, 584 * MS, 556 * MS), 0.1, 1e-12);
  ck_assert_int_eq(held, 0);
}
END_TEST

/* A chunk whose writes waited 600 ms for a full send buffer because the reader stopped: the
 * kernel has acknowledged nothing new yet (no kernel sample is due), and the write time, 1 MB in
 * 600 ms, is the reader's pace. Since the chunk's claim the window held 550 of 560 ms busy: the
 * sample is dropped. Without the rule it read 0.0017 bytes/ns, and the path weighed a fifth. */
START_TEST(a_chunk_that_waited_on_a_shut_window_is_no_sample) {
  claim(0, 0, 0);
  ck_assert_double_gt(finish(MB, 1000, 0, 4 * MB, 100 * MS, 0), 0); /* the last kernel sample */
  claim(4 * MB, 100 * MS, 0);
  ck_assert_double_eq(finish(MB, 600000000, 1, 4 * MB, 660 * MS, 550 * MS), 0);
  ck_assert_int_eq(held, 1);
}
END_TEST

/* The reader stopped between messages, before this chunk was taken: the chunk's own time is
 * clean, but the kernel's sample since the last one spans the stop (520 ms busy, 480 held). It is
 * the reader's: dropped. The claim's counts, not the last sample's, are the chunk's: one taken
 * 200 ms of busy time after the last sample, whose writes then waited 60 ms with 40 of them held,
 * is dropped although the last sample's span is held only 15% (260 ms, 40 held). */
START_TEST(the_kernel_span_and_the_chunk_span_are_judged_each_on_its_own) {
  claim(0, 0, 0);
  ck_assert_double_gt(finish(MB, 1000, 0, 4 * MB, 20 * MS, 0), 0); /* the last kernel sample */
  claim(4 * MB, 500 * MS, 480 * MS);
  ck_assert_double_eq(finish(MB, 1000, 0, 5 * MB, 520 * MS, 480 * MS), 0);
  ck_assert_int_eq(held, 1);
  claim(5 * MB, 520 * MS, 480 * MS);
  ck_assert_double_gt(finish(MB, 1000, 0, 9 * MB, 560 * MS, 480 * MS), 0); /* the last sample */
  claim(9 * MB, 760 * MS, 480 * MS);
  ck_assert_double_eq(finish(MB, 60000000, 1, 9 * MB, 820 * MS, 520 * MS), 0);
  ck_assert_int_eq(held, 1);
}
END_TEST

/* One 4 ms tick of held time in a chunk that waited 10 ms is a draw of the kernel's ticks, not a
 * measure: the chunk's own span is judged once it is 20 ms of busy time, and its write time is
 * the sample meanwhile. */
START_TEST(a_chunk_span_shorter_than_a_sample_is_not_judged) {
  claim(0, 0, 0);
  ck_assert_double_gt(finish(MB, 1000, 0, 4 * MB, 200 * MS, 0), 0); /* the last kernel sample */
  claim(4 * MB, 200 * MS, 0);
  ck_assert_double_eq_tol(finish(MB, 10000000, 1, 4 * MB, 208 * MS, 4 * MS), MB / 1e7, 1e-12);
  ck_assert_int_eq(held, 0);
}
END_TEST

/* A reader slower than the path shuts the window a third of each sample: every sample is its,
 * none reads the path slow. One that held a tenth is kept: the path reads at most 1.11x slow. */
START_TEST(a_slow_reader_is_no_sample_and_a_brief_hold_is_kept) {
  claim(0, 0, 0);
  ck_assert_double_eq(finish(MB, 1000, 0, 2 * MB, 60 * MS, 20 * MS), 0);
  ck_assert_int_eq(held, 1);
  claim(2 * MB, 60 * MS, 20 * MS);
  ck_assert_double_gt(finish(MB, 1000, 0, 4 * MB, 100 * MS, 24 * MS), 0);
  ck_assert_int_eq(held, 0);
}
END_TEST

/* Writes that waited for a sender-side hold the kernel does not see (C4_FAULT's pacer): the write
 * time is the rate when it is the smaller (span 0: the chunk's own time), and no sample is faster
 * than the pacer's rate now. Without the kernel's counts a chunk that did not wait says nothing. */
START_TEST(a_waited_chunk_gives_the_smaller_rate_and_the_pacer_caps_it) {
  claim(0, 0, 0);
  ck_assert_double_eq_tol(finish(MB, 100000000, 1, 4000000, 40 * MS, 0), MB / 1e8, 1e-12);
  ck_assert_double_eq(span, 0);
  claim(4000000, 40 * MS, 0);
  struct c4_tcp_counts k = {8000000, 80 * MS, 0};
  struct c4_chunk_done d = {MB, 1000, 0};
  ck_assert_double_eq_tol(c4_rate_sample(&r, &k, &d, 0.01, &span, &held), 0.01, 1e-12);
  d.waited = 0;
  ck_assert_double_eq(c4_rate_sample(&r, NULL, &d, 0, &span, &held), 0);
  d.waited = 1;
  d.ns = 2000000;
  ck_assert_double_eq_tol(c4_rate_sample(&r, NULL, &d, 0, &span, &held), MB / 2e6, 1e-12);
}
END_TEST

int main(void) {
  Suite *s = suite_create("rate_sample");
  TCase *tc = tcase_create("rate_sample");
  tcase_add_checked_fixture(tc, setup, NULL);
  tcase_add_test(tc, a_kernel_sample_is_bytes_acknowledged_over_busy_time);
  tcase_add_test(tc, a_sample_a_stopped_reader_held_back_is_dropped);
  tcase_add_test(tc, a_chunk_that_waited_on_a_shut_window_is_no_sample);
  tcase_add_test(tc, a_slow_reader_is_no_sample_and_a_brief_hold_is_kept);
  tcase_add_test(tc, the_kernel_span_and_the_chunk_span_are_judged_each_on_its_own);
  tcase_add_test(tc, a_chunk_span_shorter_than_a_sample_is_not_judged);
  tcase_add_test(tc, a_waited_chunk_gives_the_smaller_rate_and_the_pacer_caps_it);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
