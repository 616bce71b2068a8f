/* test_connect.c -- the socket transport's connecting side against listeners that misbehave:
 * nobody listening, a hang-up after the hellos, a refusing ack, no ack at all. Each must end the
 * polled connect with its error code, no comm and no hang. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_clock.h"
#include "c4_err.h"
#include "net_transport.h"
#include "net_wire.h"

enum answer { NOBODY, HANG_UP, REFUSE, SILENT };

static struct c4_transport_config cfg;

static void setup(void) {
  setenv("C4_DEBUG", "NONE", 1);
  c4_transport_config_load(&cfg);
  cfg.nsocks = 2;
  cfg.connect_timeout_ms = 150;
  cfg.handshake_timeout_ms = 150;
}

/* A plain loopback listener (not c4's) and a valid handle that points at it. */
static int raw_listener(uint8_t handle[C4_HANDLE_SIZE]) {
  struct sockaddr_storage lo = {0};
  struct sockaddr_in *s = (struct sockaddr_in *)&lo;
  s->sin_family = AF_INET;
  s->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  struct c4_listen_comm *l = NULL;
  ck_assert_int_eq(c4_transport_listen(&cfg, 0, 0xfeed, &lo, handle, &l), 0);
  c4_transport_close_listen(l);
  struct c4_wire_handle h;
  char err[160];
  ck_assert_int_eq(c4_wire_get_handle(handle, &h, err, sizeof err), 0);
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  socklen_t len = sizeof *s;
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(bind(fd, (struct sockaddr *)s, sizeof *s), 0);
  ck_assert_int_eq(listen(fd, 16), 0);
  ck_assert_int_eq(getsockname(fd, (struct sockaddr *)s, &len), 0);
  ((struct sockaddr_in *)&h.addr)->sin_port = s->sin_port;
  c4_wire_put_handle(handle, &h);
  return fd;
}

/* Accepts the connector's sockets and reads their hellos; 1 once all nsocks + 1 hellos are in. */
static int take_hellos(int lfd, int *fd, int *nfd, size_t *got) {
  int k = accept4(lfd, NULL, NULL, SOCK_NONBLOCK);
  if (k >= 0) fd[(*nfd)++] = k;
  int done = *nfd == cfg.nsocks + 1;
  for (int i = 0; i < *nfd; i++) {
    uint8_t hello[C4_HELLO_SIZE];
    ssize_t r = got[i] < C4_HELLO_SIZE ? recv(fd[i], hello, C4_HELLO_SIZE - got[i], 0) : 0;
    if (r > 0) got[i] += (size_t)r;
    done &= got[i] == C4_HELLO_SIZE;
  }
  return done;
}

/* Polls c4_transport_connect against a listener that answers how; returns its final code and
 * the milliseconds it took in *ms. */
static int connect_against(enum answer how, uint64_t *ms) {
  uint8_t handle[C4_HANDLE_SIZE] = {0};
  int lfd = raw_listener(handle), fd[C4_MAX_NSOCKS + 1], nfd = 0, answered = 0, rc = 0;
  size_t got[C4_MAX_NSOCKS + 1] = {0};
  if (how == NOBODY) close(lfd);
  struct c4_comm *tx = NULL;
  uint64_t t0 = c4_now_ns(), deadline = t0 + 10000000000ull;
  while (rc == 0 && !tx && c4_now_ns() < deadline) {
    rc = c4_transport_connect(&cfg, 0, 0xbeef, handle, &tx);
    if (how == NOBODY || answered || !take_hellos(lfd, fd, &nfd, got)) continue;
    answered = 1;
    uint8_t ack[C4_ACK_SIZE];
    c4_wire_put_ack(ack, C4_ACK_BAD_VERSION);
    for (int i = 0; i < nfd; i++) {
      if (how == REFUSE) ck_assert_int_eq(send(fd[i], ack, sizeof ack, MSG_NOSIGNAL), sizeof ack);
      if (how == HANG_UP) close(fd[i]);
    }
    if (how == HANG_UP) nfd = 0;
  }
  *ms = (c4_now_ns() - t0) / 1000000ull;
  ck_assert_ptr_null(tx);
  for (int i = 0; i < nfd; i++)
    close(fd[i]);
  if (how != NOBODY) close(lfd);
  return rc;
}

START_TEST(nobody_listening_fails_once_the_connect_timeout_is_spent) {
  setup();
  uint64_t ms;
  ck_assert_int_eq(connect_against(NOBODY, &ms), C4_EREMOTE);
  ck_assert_uint_ge(ms, (uint64_t)cfg.connect_timeout_ms);
}
END_TEST

START_TEST(a_listener_hanging_up_after_the_hellos_fails_the_connect) {
  setup();
  uint64_t ms;
  ck_assert_int_eq(connect_against(HANG_UP, &ms), C4_EREMOTE);
}
END_TEST

START_TEST(a_refusing_ack_fails_the_connect_as_a_protocol_error) {
  setup();
  uint64_t ms;
  ck_assert_int_eq(connect_against(REFUSE, &ms), C4_EPROTO);
}
END_TEST

START_TEST(no_ack_fails_once_the_connect_and_handshake_timeouts_are_spent) {
  setup();
  uint64_t ms;
  ck_assert_int_eq(connect_against(SILENT, &ms), C4_EREMOTE);
  ck_assert_uint_ge(ms, (uint64_t)(cfg.connect_timeout_ms + cfg.handshake_timeout_ms));
}
END_TEST

int main(void) {
  Suite *s = suite_create("connect");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, nobody_listening_fails_once_the_connect_timeout_is_spent);
  tcase_add_test(tc, a_listener_hanging_up_after_the_hellos_fails_the_connect);
  tcase_add_test(tc, a_refusing_ack_fails_the_connect_as_a_protocol_error);
  tcase_add_test(tc, no_ack_fails_once_the_connect_and_handshake_timeouts_are_spent);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
