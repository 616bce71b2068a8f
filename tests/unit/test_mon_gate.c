/* test_mon_gate.c -- what c4mon takes from a peer it cannot trust: the first frame allowed before
 * the HELLO, STATUS's MAC and rate, peer text escaped for the log, heartbeats and records with
 * times, offsets and counts at the extremes of their types (no overflow, no time at or below 0). */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "../check_run.h"
#include "c4_frame.h"
#include "det.h"
#include "mon_gate.h"
#include "mon_pipeline.h"

START_TEST(before_the_hello_only_a_hello_or_status_of_exact_size_is_read) {
  ck_assert_int_eq(mon_gate_first_frame_ok(C4_FRAME_HELLO, (uint32_t)c4_frame_hello_size()), 1);
  ck_assert_int_eq(mon_gate_first_frame_ok(C4_FRAME_STATUS, C4_FRAME_MAC), 1);
  ck_assert_int_eq(mon_gate_first_frame_ok(C4_FRAME_HELLO, 65536), 0);
  ck_assert_int_eq(mon_gate_first_frame_ok(C4_FRAME_HELLO, (uint32_t)c4_frame_hello_size() - 1), 0);
  ck_assert_int_eq(mon_gate_first_frame_ok(C4_FRAME_STATUS, 0), 0);
  ck_assert_int_eq(mon_gate_first_frame_ok(C4_FRAME_RECORDS, 100), 0);
  ck_assert_int_eq(mon_gate_first_frame_ok(C4_FRAME_HEARTBEAT, C4_FRAME_HEARTBEAT_SIZE), 0);
  ck_assert_uint_eq(MON_GATE_PREAUTH_BYTES, C4_FRAME_HDR + c4_frame_hello_size());
}
END_TEST

START_TEST(a_status_request_proves_the_token_over_the_nonce) {
  uint8_t nonce[C4_FRAME_NONCE] = {1, 2, 3}, other[C4_FRAME_NONCE] = {1, 2, 4}, mac[C4_FRAME_MAC];
  c4_frame_put_status(mac, nonce, "tok");
  ck_assert_int_eq(c4_frame_status_verify(mac, sizeof mac, nonce, "tok"), 1);
  ck_assert_int_eq(c4_frame_status_verify(mac, sizeof mac, nonce, "tok2"), 0);
  ck_assert_int_eq(c4_frame_status_verify(mac, sizeof mac, other, "tok"), 0);
  ck_assert_int_eq(c4_frame_status_verify(mac, sizeof mac - 1, nonce, "tok"), 0);
}
END_TEST

START_TEST(status_replies_are_rate_limited) {
  uint64_t t = 1000000000000ull;
  int given = 0;
  for (int i = 0; i < 100; i++)
    given += mon_gate_status_take(t);
  ck_assert_int_eq(given, MON_GATE_STATUS_PER_S); /* the burst, then nothing at the same instant */
  given = 0;
  for (int i = 0; i < 1000; i++) /* 10 s at 100 requests a second */
    given += mon_gate_status_take(t + (uint64_t)(i + 1) * 10000000ull);
  ck_assert_int_ge(given, 10 * MON_GATE_STATUS_PER_S - 1);
  ck_assert_int_le(given, 10 * MON_GATE_STATUS_PER_S + 1);
}
END_TEST

START_TEST(peer_text_is_escaped_before_it_reaches_a_log_line) {
  char out[64];
  ck_assert_str_eq(mon_gate_escape("job\nc4 WARN forged", out, sizeof out),
                   "job\\x0ac4 WARN forged");
  ck_assert_str_eq(mon_gate_escape("a\"b\\c\x1b[31m", out, sizeof out), "a\\x22b\\x5cc\\x1b[31m");
  ck_assert_str_eq(mon_gate_escape("", out, sizeof out), "");
  char small[8];
  ck_assert_str_eq(mon_gate_escape("abcdefghij", small, sizeof small), "abcd...");
  ck_assert_str_eq(mon_gate_escape("\n\n\n", small, sizeof small), "\\x0a...");
  char big[4 * C4_FRAME_NAME + 8], s[C4_FRAME_NAME];
  memset(s, 0x01, sizeof s - 1);
  s[sizeof s - 1] = 0;
  ck_assert_uint_eq(strlen(mon_gate_escape(s, big, sizeof big)), 4 * (C4_FRAME_NAME - 1));
}
END_TEST

static void heartbeat_bytes(uint8_t b[C4_FRAME_HEARTBEAT_SIZE], uint64_t t, int64_t off,
                            uint64_t count) {
  struct c4_heartbeat h = {
      .t = t, .entered = count, .done = 1, .dropped = 0, .offset = off, .rtt = 10};
  c4_frame_put_heartbeat(b, &h);
}

START_TEST(heartbeats_with_offsets_times_or_counts_beyond_range_are_malformed) {
  uint8_t b[C4_FRAME_HEARTBEAT_SIZE];
  struct c4_heartbeat h;
  heartbeat_bytes(b, 5, -3, 7);
  ck_assert_int_eq(c4_frame_get_heartbeat(b, sizeof b, &h), 0);
  ck_assert_int_eq(h.offset, -3);
  const int64_t offs[] = {INT64_MIN, INT64_MIN + 1, INT64_MAX, -(int64_t)C4_FRAME_TIME_MAX - 1,
                          (int64_t)C4_FRAME_TIME_MAX + 1};
  for (unsigned i = 0; i < sizeof offs / sizeof *offs; i++) {
    heartbeat_bytes(b, 5, offs[i], 7);
    ck_assert_int_ne(c4_frame_get_heartbeat(b, sizeof b, &h), 0);
  }
  heartbeat_bytes(b, UINT64_MAX, 0, 7);
  ck_assert_int_ne(c4_frame_get_heartbeat(b, sizeof b, &h), 0);
  heartbeat_bytes(b, 5, 0, UINT64_MAX);
  ck_assert_int_ne(c4_frame_get_heartbeat(b, sizeof b, &h), 0);
  heartbeat_bytes(b, C4_FRAME_TIME_MAX, -(int64_t)C4_FRAME_TIME_MAX, INT64_MAX);
  ck_assert_int_eq(c4_frame_get_heartbeat(b, sizeof b, &h), 0); /* the edges themselves */
}
END_TEST

/* nnodes -1 is "unknown" (docs/trace-format.md): the host ring of c4train and c4perf says so, and
 * c4mon must take it, or those jobs are never seen. */
START_TEST(a_comm_whose_node_count_is_unknown_is_taken) {
  const char *why = NULL;
  struct c4_record c = {.kind = C4_REC_COMM};
  c.comm.nranks = 4;
  c.comm.rank = 1;
  c.comm.nnodes = -1;
  c.comm.t = 5;
  ck_assert_int_eq(c4_mon_record_check(&c, 0, &why), 0);
  c.comm.nnodes = -2;
  ck_assert_int_ne(c4_mon_record_check(&c, 0, &why), 0);
}
END_TEST

START_TEST(records_at_the_extremes_are_refused_without_overflow_and_never_go_below_zero) {
  const char *why = NULL;
  struct c4_record r = {.kind = C4_REC_XFER};
  r.xfer.t_posted = 100;
  r.xfer.t_done = 200;
  r.xfer.bytes = 8;
  ck_assert_int_eq(c4_mon_record_check(&r, 0, &why), 0);
  ck_assert_int_eq(c4_mon_record_check(&r, -99, &why), 0);
  ck_assert_int_ne(c4_mon_record_check(&r, -100, &why), 0); /* t_posted would be 0 */
  ck_assert_ptr_nonnull(why);
  ck_assert_int_ne(c4_mon_record_check(&r, INT64_MIN, &why), 0);
  ck_assert_int_ne(c4_mon_record_check(&r, INT64_MAX, &why), 0);
  ck_assert_int_eq(c4_mon_record_check(&r, (int64_t)C4_FRAME_TIME_MAX, &why), 0);
  r.xfer.t_done = UINT64_MAX;
  ck_assert_int_ne(c4_mon_record_check(&r, 0, &why), 0);
  r.xfer.t_done = C4_FRAME_TIME_MAX; /* + 2^62 - 1 is INT64_MAX; + 2^62 would overflow */
  ck_assert_int_eq(c4_mon_record_check(&r, (int64_t)C4_FRAME_TIME_MAX - 1, &why), 0);
  ck_assert_int_ne(c4_mon_record_check(&r, (int64_t)C4_FRAME_TIME_MAX, &why), 0);
  r.xfer.bytes = (uint64_t)INT64_MAX + 1;
  ck_assert_int_ne(c4_mon_record_check(&r, 0, &why), 0);

  struct c4_record c = {.kind = C4_REC_COLL};
  c.coll.nranks = 4;
  c.coll.rank = 3;
  c.coll.root = -1;
  c.coll.t_arrive = 1;
  ck_assert_int_eq(c4_mon_record_check(&c, 0, &why), 0);
  c.coll.rank = 4;
  ck_assert_int_ne(c4_mon_record_check(&c, 0, &why), 0);
  c.coll.rank = INT32_MIN;
  ck_assert_int_ne(c4_mon_record_check(&c, 0, &why), 0);
  c.coll.rank = 0;
  c.coll.nranks = INT32_MIN;
  ck_assert_int_ne(c4_mon_record_check(&c, 0, &why), 0);
  c.coll.nranks = 4;
  c.coll.count = UINT64_MAX;
  ck_assert_int_ne(c4_mon_record_check(&c, 0, &why), 0);

  struct c4_record l = {.kind = C4_REC_LINK};
  l.link.t = 1;
  l.link.rank = INT32_MIN;
  ck_assert_int_ne(c4_mon_record_check(&l, 0, &why), 0);

  /* the plugin's own comm records say nnodes -1 (unknown): they pass */
  struct c4_record k = {.kind = C4_REC_COMM};
  k.comm = (struct c4_comm_record){.t = 1, .nranks = 4, .rank = 2, .nnodes = -1};
  ck_assert_int_eq(c4_mon_record_check(&k, 0, &why), 0);
  k.comm.nnodes = -2;
  ck_assert_int_ne(c4_mon_record_check(&k, 0, &why), 0);

  /* a record that passed is moved without a time at or below 0 */
  struct mon_sink sink = {0};
  struct c4_record m = {.kind = C4_REC_LINK};
  m.link.t = C4_FRAME_TIME_MAX;
  ck_assert_int_eq(c4_mon_record_check(&m, -(int64_t)C4_FRAME_TIME_MAX + 1, &why), 0);
  c4_mon_take_record(&sink, c4_det_job("j"), -(int64_t)C4_FRAME_TIME_MAX + 1, &m);
  ck_assert_uint_eq(m.link.t, 1);
}
END_TEST

int main(void) {
  Suite *s = suite_create("mon_gate");
  TCase *tc = tcase_create("core");
  tcase_add_test(tc, before_the_hello_only_a_hello_or_status_of_exact_size_is_read);
  tcase_add_test(tc, a_status_request_proves_the_token_over_the_nonce);
  tcase_add_test(tc, status_replies_are_rate_limited);
  tcase_add_test(tc, peer_text_is_escaped_before_it_reaches_a_log_line);
  tcase_add_test(tc, heartbeats_with_offsets_times_or_counts_beyond_range_are_malformed);
  tcase_add_test(tc, records_at_the_extremes_are_refused_without_overflow_and_never_go_below_zero);
  tcase_add_test(tc, a_comm_whose_node_count_is_unknown_is_taken);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
