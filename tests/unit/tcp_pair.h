/* tcp_pair.h -- a connected TCP pair on loopback for tests that need a real kernel socket. */
#ifndef C4_TEST_TCP_PAIR_H
#define C4_TEST_TCP_PAIR_H

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

/* fds[0] the accepted end, fds[1] the connecting one. */
static inline void tcp_pair(int fds[2]) {
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

#endif
