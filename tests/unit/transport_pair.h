/* transport_pair.h -- for the socket transport's unit tests: a sending and a receiving comm
 * joined over loopback in one process, connect and accept polled together (neither blocks). */
#ifndef C4_TEST_TRANSPORT_PAIR_H
#define C4_TEST_TRANSPORT_PAIR_H

#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdint.h>

#include "c4_clock.h"
#include "net_transport.h"

/* Listens on loopback with cfg, then connects and accepts until both ends exist (10 s at most). */
static inline void c4_test_transport_pair(const struct c4_transport_config *cfg,
                                          struct c4_comm **tx, struct c4_comm **rx) {
  struct sockaddr_storage lo = {0};
  struct sockaddr_in *s = (struct sockaddr_in *)&lo;
  s->sin_family = AF_INET;
  s->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  uint8_t handle[128] = {0};
  struct c4_listen_comm *l = NULL;
  ck_assert_int_eq(c4_transport_listen(cfg, 0, 0xfeed, &lo, handle, &l), 0);
  *tx = *rx = NULL;
  uint64_t deadline = c4_now_ns() + 10000000000ull;
  while ((!*tx || !*rx) && c4_now_ns() < deadline) {
    if (!*tx) ck_assert_int_eq(c4_transport_connect(cfg, 0, 0xbeef, handle, tx), 0);
    if (!*rx) ck_assert_int_eq(c4_transport_accept(l, rx), 0);
  }
  ck_assert_ptr_nonnull(*tx);
  ck_assert_ptr_nonnull(*rx);
  c4_transport_close_listen(l);
}

#endif
