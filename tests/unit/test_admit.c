/* test_admit.c -- the listeners against strangers (net_admit.h): the first hello bytes judged as
 * they arrive, and a listener flooded with silent and truncated connections still taking a real
 * connector, whose connection no stranger can evict. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_clock.h"
#include "net_admit.h"
#include "net_transport.h"
#include "net_wire.h"

static void hello_bytes(uint8_t out[C4_HELLO_SIZE], uint16_t version, uint64_t nonce) {
  struct c4_wire_hello h = {
      .version = version, .kind = C4_HELLO_DATA, .nonce = nonce, .nsocks = 2, .index = 1};
  c4_wire_put_hello(out, &h);
}

START_TEST(first_hello_bytes_are_judged_as_they_arrive) {
  const uint64_t nonce = 0x1122334455667788ull;
  uint8_t b[C4_HELLO_SIZE];
  hello_bytes(b, C4_WIRE_VERSION, nonce);
  ck_assert_int_eq(c4_admit_judge(b, 0, nonce), C4_ADMIT_WAIT);
  for (size_t n = 1; n < C4_ADMIT_PROOF_BYTES; n++)
    ck_assert_int_eq(c4_admit_judge(b, n, nonce), C4_ADMIT_WAIT);
  ck_assert_int_eq(c4_admit_judge(b, C4_ADMIT_PROOF_BYTES, nonce), C4_ADMIT_PROVEN);
  ck_assert_int_eq(c4_admit_judge(b, C4_HELLO_SIZE, nonce), C4_ADMIT_PROVEN);
  /* a wrong first byte is bad at once; a wrong nonce byte as soon as it arrives */
  ck_assert_int_eq(c4_admit_judge((const uint8_t *)"G", 1, nonce), C4_ADMIT_BAD);
  ck_assert_int_eq(c4_admit_judge(b, 12, nonce ^ (0xffull << 24)), C4_ADMIT_BAD);
  ck_assert_int_eq(c4_admit_judge(b, 11, nonce ^ (0xffull << 24)), C4_ADMIT_WAIT);
  ck_assert_int_eq(c4_admit_judge(b, C4_ADMIT_PROOF_BYTES, nonce + 1), C4_ADMIT_BAD);
  /* an unknown kind is bad; another wire version waits for its full hello (and a version ack) */
  uint8_t k[C4_HELLO_SIZE];
  memcpy(k, b, sizeof k);
  k[6] = 9;
  ck_assert_int_eq(c4_admit_judge(k, 7, nonce), C4_ADMIT_BAD);
  hello_bytes(k, C4_WIRE_VERSION + 1, nonce);
  ck_assert_int_eq(c4_admit_judge(k, C4_HELLO_SIZE, nonce), C4_ADMIT_WAIT);
}
END_TEST

START_TEST(the_process_wide_unproven_slots_are_bounded_and_given_back) {
  int taken = 0;
  while (taken < C4_ADMIT_UNPROVEN_TOTAL + 10 && c4_admit_take())
    taken++;
  ck_assert_int_eq(taken, C4_ADMIT_UNPROVEN_TOTAL);
  ck_assert_int_eq(c4_admit_take(), 0);
  for (int i = 0; i < taken; i++)
    c4_admit_release();
  ck_assert_int_eq(c4_admit_take(), 1);
  c4_admit_release();
}
END_TEST

static int dial(const struct sockaddr_in *a) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(connect(fd, (const struct sockaddr *)a, sizeof *a), 0);
  return fd;
}

/* True once the listener has closed the stranger's socket fd. */
static int closed_by_listener(int fd) {
  struct pollfd p = {.fd = fd, .events = POLLIN};
  char c;
  return poll(&p, 1, 0) == 1 && recv(fd, &c, 1, MSG_DONTWAIT) <= 0;
}

START_TEST(a_listener_full_of_strangers_still_takes_a_real_connector) {
  setenv("C4_DEBUG", "NONE", 1);
  struct c4_transport_config cfg;
  c4_transport_config_load(&cfg);
  cfg.nsocks = 2;
  struct sockaddr_storage lo = {0};
  ((struct sockaddr_in *)&lo)->sin_family = AF_INET;
  ((struct sockaddr_in *)&lo)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  uint8_t handle[C4_HANDLE_SIZE];
  struct c4_listen_comm *l = NULL;
  ck_assert_int_eq(c4_transport_listen(&cfg, 0, 0xfeed, &lo, handle, &l), 0);
  struct c4_wire_handle h;
  char err[160];
  ck_assert_int_eq(c4_wire_get_handle(handle, &h, err, sizeof err), 0);
  struct sockaddr_in at;
  memcpy(&at, &h.addr, sizeof at);
  unsigned long closed0 = atomic_load(&c4_transport_stats.unproven_closed);

  /* 600 strangers (more than the listener's 256 slots), one in three with 10 right hello bytes,
   * and the real connector's control and data sockets in the middle of them; the connector is
   * polled as NCCL polls it, the listener only every 50 strangers */
  enum { N = 600 };
  int *s = malloc(N * sizeof *s);
  uint8_t b[C4_HELLO_SIZE];
  hello_bytes(b, C4_WIRE_VERSION, h.nonce);
  struct c4_comm *tx = NULL, *rx = NULL;
  uint8_t mine[C4_HANDLE_SIZE];
  memcpy(mine, handle, sizeof mine);
  for (int i = 0; i < N; i++) {
    s[i] = dial(&at);
    if (i % 3 == 0) ck_assert_int_eq(send(s[i], b, 10, MSG_NOSIGNAL), 10);
    if (i >= N / 2 && !tx) ck_assert_int_eq(c4_transport_connect(&cfg, 0, 0xbeef, mine, &tx), 0);
    if (i % 50 == 49 && !rx) ck_assert_int_eq(c4_transport_accept(l, &rx), 0);
  }
  uint64_t deadline = c4_now_ns() + 10000000000ull;
  while ((!tx || !rx) && c4_now_ns() < deadline) {
    if (!tx) ck_assert_int_eq(c4_transport_connect(&cfg, 0, 0xbeef, mine, &tx), 0);
    if (!rx) ck_assert_int_eq(c4_transport_accept(l, &rx), 0);
  }
  ck_assert_msg(tx && rx, "the real connector did not get through the strangers");
  /* once it has taken every waiting stranger, the listener holds at most its share of them */
  for (int k = 0; k < N / C4_ADMIT_ACCEPTS_PER_CALL + 2; k++) {
    struct c4_comm *none = NULL;
    ck_assert_int_eq(c4_transport_accept(l, &none), 0);
    ck_assert_ptr_null(none);
  }
  int closed = 0;
  for (int i = 0; i < N; i++)
    closed += closed_by_listener(s[i]);
  ck_assert_int_ge(closed, N - C4_ADMIT_UNPROVEN_MAX);
  ck_assert_uint_ge(atomic_load(&c4_transport_stats.unproven_closed) - closed0,
                    (unsigned long)(N - C4_ADMIT_UNPROVEN_MAX));
  for (int i = 0; i < N; i++)
    close(s[i]);
  free(s);
  c4_transport_close(tx);
  c4_transport_close(rx);
  c4_transport_close_listen(l);
}
END_TEST

int main(void) {
  Suite *s = suite_create("admit");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, first_hello_bytes_are_judged_as_they_arrive);
  tcase_add_test(tc, the_process_wide_unproven_slots_are_bounded_and_given_back);
  tcase_add_test(tc, a_listener_full_of_strangers_still_takes_a_real_connector);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
