/* test_rxtime.c -- reads say when their bytes arrived, not when they were read: the clock
 * exchange between a job and c4mon depends on it. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_clock.h"
#include "c4_rxtime.h"

/* A connected TCP pair on loopback: fds[0] the accepted end, fds[1] the connecting one. */
static void tcp_pair(int fds[2]) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  ck_assert_int_eq(bind(l, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(l, 1), 0);
  ck_assert_int_eq(getsockname(l, (struct sockaddr *)&a, &len), 0);
  fds[1] = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_eq(connect(fds[1], (struct sockaddr *)&a, sizeof a), 0);
  fds[0] = accept(l, NULL, NULL);
  ck_assert_int_ge(fds[0], 0);
  close(l);
}

/* Sends a few bytes on fds[1], reads them on fds[0] wait_us later; returns how long before the
 * read they arrived. */
static uint64_t age_of_bytes_read_late(int fds[2], useconds_t wait_us) {
  ck_assert_int_eq(write(fds[1], "probe", 5), 5);
  usleep(wait_us);
  char buf[16];
  uint64_t arrived = 0;
  ck_assert_int_eq(c4_rxtime_recv(fds[0], buf, sizeof buf, 0, &arrived), 5);
  uint64_t now = c4_now_ns();
  ck_assert_uint_gt(arrived, 0);
  ck_assert_uint_le(arrived, now);
  return now - arrived;
}

START_TEST(bytes_read_late_are_dated_by_their_arrival) {
  int fds[2];
  tcp_pair(fds);
  c4_rxtime_enable(fds[0]);
  /* the kernel turns stamping on in the background after a process first asks: the first
   * packets may come unstamped (dated by the read), so wait for a stamped one first */
  int stamped = 0;
  for (int i = 0; i < 50 && !stamped; i++)
    stamped = age_of_bytes_read_late(fds, 20000) >= 15000000ull;
  ck_assert_msg(stamped, "no stamped read within a second");
  uint64_t age = age_of_bytes_read_late(fds, 50000);
  ck_assert_msg(age >= 45000000ull && age < 1000000000ull, "age %llu ns", (unsigned long long)age);
  close(fds[0]);
  close(fds[1]);
}
END_TEST

START_TEST(without_stamps_a_read_is_dated_by_the_read) {
  int fds[2];
  tcp_pair(fds);
  uint64_t age = age_of_bytes_read_late(fds, 50000);
  ck_assert_msg(age < 5000000ull, "age %llu ns", (unsigned long long)age);
  close(fds[0]);
  close(fds[1]);
}
END_TEST

START_TEST(an_empty_or_failed_read_returns_as_recv_does) {
  int fds[2];
  tcp_pair(fds);
  c4_rxtime_enable(fds[0]);
  char buf[4];
  uint64_t arrived = 7;
  ck_assert_int_eq(c4_rxtime_recv(fds[0], buf, sizeof buf, MSG_DONTWAIT, &arrived), -1);
  ck_assert_uint_eq(arrived, 7); /* untouched */
  close(fds[1]);
  ck_assert_int_eq(c4_rxtime_recv(fds[0], buf, sizeof buf, 0, &arrived), 0);
  close(fds[0]);
}
END_TEST

int main(void) {
  Suite *s = suite_create("rxtime");
  TCase *tc = tcase_create("rxtime");
  tcase_add_test(tc, bytes_read_late_are_dated_by_their_arrival);
  tcase_add_test(tc, without_stamps_a_read_is_dated_by_the_read);
  tcase_add_test(tc, an_empty_or_failed_read_returns_as_recv_does);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
