/* ib_fake_pair.h -- for the tests that run the verbs transport on the fake RDMA device
 * (tests/doubles/fake_ibverbs.c): loading it, connecting a send and a receive comm over loopback
 * in one process, waiting for a request, and reaching the fake's own test functions. */
#ifndef C4_IB_FAKE_PAIR_H
#define C4_IB_FAKE_PAIR_H

#include <arpa/inet.h>
#include <check.h>
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "c4_clock.h"
#include "ib_transport.h"
#include "net_transport.h"

static struct c4_transport_config cfg;

/* Writes "<this test's directory>/<rel>" into out. */
static inline void beside_test(const char *rel, char *out, size_t len) {
  char exe[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  ck_assert_int_gt(n, 0);
  exe[n] = '\0';
  snprintf(out, len, "%s/%s", dirname(exe), rel);
  ck_assert_msg(access(out, R_OK) == 0, "%s is missing (make all unit-bins builds it)", out);
}

/* Points C4_IBVERBS at the fake next to this test binary. */
static inline void use_fake(void) {
  char lib[PATH_MAX + 64];
  beside_test("libc4-test-double-ibverbs.so", lib, sizeof lib);
  setenv("C4_IBVERBS", lib, 1);
}

/* The fake, and the verbs transport set up on it. */
static inline void setup_fake(void) {
  use_fake();
  c4_transport_config_load(&cfg);
  ck_assert_int_eq(c4_ib_setup(), 1);
}

static inline struct sockaddr_storage loopback(void) {
  struct sockaddr_storage a = {0};
  struct sockaddr_in *in = (struct sockaddr_in *)&a;
  in->sin_family = AF_INET;
  in->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

/* Polls connect and accept in turn, as NCCL does, until both comms exist. */
static inline void connect_pair(struct c4_ib_comm **s, struct c4_ib_comm **r) {
  uint8_t handle[C4_HANDLE_SIZE] = {0};
  struct c4_ib_listen *l;
  struct sockaddr_storage addr = loopback();
  ck_assert_int_eq(c4_ib_listen(&cfg, 0, 7, &addr, handle, &l), 0);
  *s = *r = NULL;
  uint64_t t0 = c4_now_ns();
  while (!*s || !*r) {
    if (!*s) ck_assert_int_eq(c4_ib_connect(&cfg, 0, 7, handle, s), 0);
    if (!*r) ck_assert_int_eq(c4_ib_accept(l, r), 0);
    ck_assert_msg(c4_now_ns() - t0 < 5000000000ull, "no connection within 5 s");
  }
  c4_ib_close_listen(l);
}

/* Tests req until done (or an error); returns test's result and the size in *size. */
static inline int wait_done(struct c4_ib_request *req, size_t *size) {
  int done = 0, rc;
  uint64_t t0 = c4_now_ns();
  while ((rc = c4_ib_test(req, &done, size)) == 0 && !done)
    ck_assert_msg(c4_now_ns() - t0 < 5000000000ull, "request not done within 5 s");
  return rc;
}

/* The fake's function `name` (c4_fake_ib_*), from the copy the transport loaded. */
static inline void *fake_fn(const char *name) {
  void *lib = dlopen(getenv("C4_IBVERBS"), RTLD_NOW | RTLD_NOLOAD);
  ck_assert_msg(lib != NULL, "the fake verbs library is not loaded");
  void *fn = dlsym(lib, name);
  ck_assert_msg(fn != NULL, "the fake has no %s", name);
  dlclose(lib);
  return fn;
}

#endif
