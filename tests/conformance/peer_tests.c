/* peer_tests.c -- conformance: properties, and peers that are not c4 (bad hellos, silent
 * connections, fake listeners) against the real plugin in its own process. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "c4_clock.h"
#include "conformance.h"
#include "harness.h"

START_TEST(every_version_reports_truthful_properties) {
  static const int versions[] = {11, 10, 9, 8};
  setenv("C4_SOCKET_IFNAME", "lo", 1);
  for (int v = 0; v < 4; v++) {
    struct c4_netapi api;
    ck_assert_int_eq(c4_netapi_open(&api, h_plugin_path(), versions[v]), 0);
    ck_assert_int_eq(api.version, versions[v]);
    ck_assert_str_eq(api.name, "c4");
    int ndev = 0;
    ck_assert_int_eq(c4_netapi_devices(&api, &ndev), ncclSuccess);
    ck_assert_int_eq(ndev, 1);
    ncclNetProperties_v11_t p;
    ck_assert_int_eq(c4_netapi_properties(&api, 0, &p), ncclSuccess);
    ck_assert_str_eq(p.name, "lo");
    ck_assert_int_gt(p.speed, 0);
    ck_assert_int_eq(p.ptrSupport, NCCL_PTR_HOST); /* HOST, and not CUDA: nothing we cannot do */
    ck_assert_int_eq(p.maxRecvs, 1);
    ck_assert_uint_ne(p.guid, 0);
    ck_assert_ptr_null(p.pciPath); /* loopback is no PCI device */
    if (versions[v] >= 9) {
      ck_assert_uint_gt(p.maxP2pBytes, 0);
      ck_assert_uint_le(p.maxP2pBytes, 1ull << 40);
    }
    ck_assert_int_ne(c4_netapi_properties(&api, 1, &p), ncclSuccess); /* no device 1 */
    c4_netapi_close(&api);
  }
}
END_TEST

/* ---- bad peers against a real listener ------------------------------------------------------- */

static int handle_addr(const unsigned char *h, struct sockaddr_in *a) {
  memset(a, 0, sizeof *a);
  if (h[6] != 2) return -1; /* docs/wire.md: family at 6, port at 8, address at 12 */
  a->sin_family = AF_INET;
  a->sin_port = htons((uint16_t)(h[8] | h[9] << 8));
  memcpy(&a->sin_addr, h + 12, 4);
  return 0;
}

static int dial(const struct sockaddr_in *a) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (connect(fd, (const struct sockaddr *)a, sizeof *a) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

static void put32(unsigned char *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (unsigned char)(v >> (8 * i));
}

/* A hello as docs/wire.md lays it out, with the fields a test wants to spoil. */
static void make_hello(unsigned char *b, uint32_t magic, uint16_t version,
                       const unsigned char *handle) {
  memset(b, 0, 112);
  put32(b, magic);
  b[4] = (unsigned char)version;
  b[5] = (unsigned char)(version >> 8);
  memcpy(b + 8, handle + 28, 8); /* the listener's nonce */
  b[16] = 0x5a;                  /* connection id */
  b[24] = 1;                     /* nsocks */
  strcpy((char *)b + 28, "impostor");
}

static int listener_side(int wfd) {
  alarm(60);
  setenv("C4_SOCKET_IFNAME", "lo", 1);
  setenv("C4_HANDSHAKE_TIMEOUT_MS", "300", 1);
  struct c4_netapi api;
  if (c4_netapi_open(&api, h_plugin_path(), 11)) return 2;
  unsigned char handle[NCCL_NET_HANDLE_MAXSIZE];
  void *lc, *comm = NULL;
  if (c4_netapi_listen(&api, 0, handle, &lc) != ncclSuccess) return 3;
  if (write(wfd, handle, sizeof handle) != sizeof handle) return 4;
  uint64_t deadline = c4_now_ns() + 15000000000ull;
  while (!comm) {
    uint64_t t0 = c4_now_ns();
    if (c4_netapi_accept(&api, lc, &comm) != ncclSuccess) return 5;
    if (c4_now_ns() - t0 > 100000000ull) return 6; /* accept must never block */
    if (c4_now_ns() > deadline) return 7;
    usleep(1000);
  }
  unsigned char buf[1000];
  int got;
  void *r = h_irecv(&api, comm, buf, sizeof buf, 0);
  if (!r || h_wait(&api, r, &got) || got != 1000 || h_check(buf, 1000, 77)) return 8;
  for (uint64_t end = c4_now_ns() + 1000000000ull; c4_now_ns() < end;) { /* no bogus second comm */
    void *extra = NULL;
    if (c4_netapi_accept(&api, lc, &extra) != ncclSuccess) return 9;
    if (extra) return 10;
    usleep(2000);
  }
  return 0;
}

static int real_connector(const unsigned char *handle) {
  alarm(60);
  setenv("C4_SOCKET_IFNAME", "lo", 1);
  struct c4_netapi api;
  if (c4_netapi_open(&api, h_plugin_path(), 11)) return 2;
  unsigned char h[NCCL_NET_HANDLE_MAXSIZE];
  memcpy(h, handle, sizeof h);
  void *comm = NULL;
  uint64_t deadline = c4_now_ns() + 15000000000ull;
  while (!comm) {
    if (c4_netapi_connect(&api, 0, h, &comm) != ncclSuccess) return 3;
    if (c4_now_ns() > deadline) return 4;
    usleep(1000);
  }
  unsigned char buf[1000];
  h_fill(buf, sizeof buf, 77);
  void *r = h_isend(&api, comm, buf, sizeof buf, 0);
  return !r || h_wait(&api, r, NULL) ? 5 : 0;
}

static int exit_code(pid_t pid) {
  int st;
  waitpid(pid, &st, 0);
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* The listener closed the connection: a read sees EOF (or a reset) within timeout_ms. */
static int closed_by_peer(int fd, int timeout_ms) {
  uint64_t deadline = c4_now_ns() + (uint64_t)timeout_ms * 1000000ull;
  while (c4_now_ns() < deadline) { /* whatever it said first (a version ack), then EOF */
    struct pollfd p = {.fd = fd, .events = POLLIN};
    if (poll(&p, 1, 50) <= 0) continue;
    char b[64];
    if (recv(fd, b, sizeof b, MSG_DONTWAIT) <= 0) return 1;
  }
  return 0;
}

START_TEST(peers_that_are_not_c4_are_rejected_without_stalling_a_real_connector) {
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  pid_t lpid = fork();
  if (lpid == 0) _exit(listener_side(p[1]));
  unsigned char handle[NCCL_NET_HANDLE_MAXSIZE];
  ck_assert_int_eq(read(p[0], handle, sizeof handle), (ssize_t)sizeof handle);
  struct sockaddr_in a;
  ck_assert_int_eq(handle_addr(handle, &a), 0);

  enum { WRONG_MAGIC, WRONG_VERSION, TRUNCATED, RANDOM, WRONG_NONCE, SILENT, NBAD };
  int bad[NBAD];
  unsigned char b[112];
  for (int k = 0; k < NBAD; k++)
    ck_assert_int_ge(bad[k] = dial(&a), 0);
  make_hello(b, 0xdeadbeef, 1, handle);
  ck_assert_int_eq(write(bad[WRONG_MAGIC], b, 112), 112);
  make_hello(b, 0x53483443, 99, handle);
  ck_assert_int_eq(write(bad[WRONG_VERSION], b, 112), 112);
  make_hello(b, 0x53483443, 1, handle);
  ck_assert_int_eq(write(bad[TRUNCATED], b, 50), 50);
  shutdown(bad[TRUNCATED], SHUT_WR);
  h_fill(b, 112, 3);
  ck_assert_int_eq(write(bad[RANDOM], b, 112), 112);
  make_hello(b, 0x53483443, 1, handle);
  b[8] ^= 0xff; /* someone else's nonce */
  ck_assert_int_eq(write(bad[WRONG_NONCE], b, 112), 112);

  pid_t cpid = fork();
  if (cpid == 0) _exit(real_connector(handle));
  ck_assert_int_eq(exit_code(cpid), 0);
  for (int k = 0; k < NBAD; k++)
    ck_assert_msg(closed_by_peer(bad[k], 3000), "bad peer %d was not closed by the listener", k);
  ck_assert_int_eq(exit_code(lpid), 0);
  for (int k = 0; k < NBAD; k++)
    close(bad[k]);
}
END_TEST

/* ---- a fake listener against the plugin's connect ---------------------------------------- */

enum fake { FAKE_GARBAGE_ACK, FAKE_CLOSES, FAKE_SILENT };

static int connect_expect_failure(const unsigned char *handle) {
  alarm(30);
  setenv("C4_SOCKET_IFNAME", "lo", 1);
  setenv("C4_CONNECT_TIMEOUT_MS", "300", 1);
  setenv("C4_HANDSHAKE_TIMEOUT_MS", "300", 1);
  struct c4_netapi api;
  if (c4_netapi_open(&api, h_plugin_path(), 11)) return 2;
  unsigned char h[NCCL_NET_HANDLE_MAXSIZE];
  memcpy(h, handle, sizeof h);
  void *comm = NULL;
  uint64_t deadline = c4_now_ns() + 10000000000ull;
  while (c4_now_ns() < deadline) {
    uint64_t t0 = c4_now_ns();
    ncclResult_t rc = c4_netapi_connect(&api, 0, h, &comm);
    if (c4_now_ns() - t0 > 100000000ull) return 3; /* connect must never block */
    if (rc != ncclSuccess) return 0;               /* the failure we want */
    if (comm) return 4;                            /* a comm with a fake is wrong */
    usleep(1000);
  }
  return 5;
}

static void run_fake_listener(enum fake mode) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  ck_assert_int_eq(bind(l, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(l, 16), 0);
  getsockname(l, (struct sockaddr *)&a, &len);
  unsigned char handle[NCCL_NET_HANDLE_MAXSIZE] = {0};
  put32(handle, 0x484E3443); /* a c4 handle, per docs/wire.md, pointing at us */
  handle[4] = 1;
  handle[6] = 2;
  uint16_t port = ntohs(a.sin_port);
  handle[8] = (unsigned char)port;
  handle[9] = (unsigned char)(port >> 8);
  memcpy(handle + 12, &a.sin_addr, 4);
  strcpy((char *)handle + 36, "fake");
  pid_t pid = fork();
  if (pid == 0) _exit(connect_expect_failure(handle));
  int fds[16], n = 0, st = 0;
  for (;;) {
    if (waitpid(pid, &st, WNOHANG) == pid) break;
    struct pollfd pf = {.fd = l, .events = POLLIN};
    if (poll(&pf, 1, 10) > 0 && n < 16) {
      int fd = accept(l, NULL, NULL);
      char hello[112];
      if (recv(fd, hello, sizeof hello, MSG_WAITALL) != sizeof hello) {
      }
      if (mode == FAKE_GARBAGE_ACK && n == 0 && write(fd, "this is no ack..", 16) != 16) {
      }
      if (mode == FAKE_CLOSES)
        close(fd);
      else
        fds[n++] = fd;
    }
  }
  for (int i = 0; i < n; i++)
    close(fds[i]);
  close(l);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "fake listener mode %d: connector status %d",
                mode, WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));
}

START_TEST(connect_to_a_listener_that_is_not_c4_fails_cleanly) {
  run_fake_listener(FAKE_GARBAGE_ACK);
  run_fake_listener(FAKE_CLOSES);
  run_fake_listener(FAKE_SILENT);
}
END_TEST

START_TEST(a_handle_that_is_not_c4s_is_refused_by_connect) {
  setenv("C4_SOCKET_IFNAME", "lo", 1);
  struct c4_netapi api;
  ck_assert_int_eq(c4_netapi_open(&api, h_plugin_path(), 11), 0);
  unsigned char h[NCCL_NET_HANDLE_MAXSIZE];
  h_fill(h, sizeof h, 9);
  memset(h + 112, 0, 16);
  void *comm = NULL;
  ck_assert_int_ne(c4_netapi_connect(&api, 0, h, &comm), ncclSuccess);
  ck_assert_ptr_null(comm);
  c4_netapi_close(&api);
}
END_TEST

void conformance_add_peer_tests(Suite *s) {
  TCase *tc = tcase_create("peers");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, every_version_reports_truthful_properties);
  tcase_add_test(tc, peers_that_are_not_c4_are_rejected_without_stalling_a_real_connector);
  tcase_add_test(tc, connect_to_a_listener_that_is_not_c4_fails_cleanly);
  tcase_add_test(tc, a_handle_that_is_not_c4s_is_refused_by_connect);
  suite_add_tcase(s, tc);
}
