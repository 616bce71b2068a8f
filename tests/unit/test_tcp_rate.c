/* test_tcp_rate.c -- the kernel's count of a data socket's busy time, as the multipath weights and
 * c4mon's path records read it: a receiver that stops reading adds none of it. A SIGSTOPped rank
 * otherwise made its peer's path read 12x slow (make drill), and c4mon named the path. */
#include <check.h>
#include <fcntl.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_err.h"
#include "net_tcp_rate.h"
#include "tcp_pair.h"

/* Writes into fds[1] until its buffers are full (fds[0] does not read); returns the bytes written.
 */
static long fill(int fds[2]) {
  static char buf[1 << 20];
  long total = 0;
  ck_assert_int_eq(fcntl(fds[1], F_SETFL, O_NONBLOCK), 0);
  for (;;) {
    ssize_t n = write(fds[1], buf, sizeof buf);
    if (n <= 0) return total;
    total += n;
  }
}

START_TEST(a_receiver_that_stops_reading_adds_no_busy_time) {
  int fds[2];
  tcp_pair(fds);
  long wrote = fill(fds);
  uint64_t acked0, busy0, acked1, busy1;
  ck_assert_int_eq(c4_tcp_progress(fds[1], &acked0, &busy0), 0);
  usleep(500000); /* the receiver's window is shut: the kernel counts this as busy, held back */
  ck_assert_int_eq(c4_tcp_progress(fds[1], &acked1, &busy1), 0);
  ck_assert_msg(busy1 - busy0 <= 40000, "%llu us of busy time while the receiver did not read",
                (unsigned long long)(busy1 - busy0));
  /* and the count still moves: the receiver reads it all, the bytes are acknowledged */
  static char buf[1 << 20];
  long got = 0;
  ck_assert_int_eq(fcntl(fds[0], F_SETFL, O_NONBLOCK), 0);
  for (int i = 0; i < 5000 && got < wrote; i++) {
    ssize_t n = read(fds[0], buf, sizeof buf);
    if (n > 0)
      got += n;
    else
      usleep(1000);
  }
  ck_assert_int_eq(got, wrote);
  usleep(20000);
  ck_assert_int_eq(c4_tcp_progress(fds[1], &acked1, &busy1), 0);
  ck_assert_uint_ge(acked1 - acked0, (uint64_t)wrote / 2);
  close(fds[0]);
  close(fds[1]);
}
END_TEST

/* A descriptor that is not a TCP socket has no count: the caller measures by itself. */
START_TEST(a_descriptor_that_is_not_tcp_has_no_count) {
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  uint64_t acked, busy;
  ck_assert_int_eq(c4_tcp_progress(p[0], &acked, &busy), C4_ENOTFOUND);
  close(p[0]);
  close(p[1]);
}
END_TEST

int main(void) {
  Suite *s = suite_create("tcp_rate");
  TCase *tc = tcase_create("tcp_rate");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, a_receiver_that_stops_reading_adds_no_busy_time);
  tcase_add_test(tc, a_descriptor_that_is_not_tcp_has_no_count);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
