/* data_tests.c -- conformance: what crosses a connection (sizes, ordering, tags, errors, close)
 * for every exported ncclNet version, between two processes. */
#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "conformance.h"
#include "harness.h"

static const int versions[] = {11, 10, 9, 8};
#define NVERSIONS 4

/* ---- random sizes 0 .. 64 MiB, in order, checked byte for byte --------------------------- */

#define NSIZES 14
static size_t sizes[NSIZES];

static void pick_sizes(void) {
  static const size_t fixed[] = {0, 1, 65535, 65536, 65537, 512 << 10, 64 << 20};
  memcpy(sizes, fixed, sizeof fixed);
  uint64_t x = 0x2545F4914F6CDD1Dull;
  for (int i = 7; i < NSIZES; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    sizes[i] = (size_t)(x % (64u << 20));
  }
}

static int recv_sizes(struct c4_netapi *api, void *comm, void *arg) {
  (void)arg;
  unsigned char *buf = malloc((64 << 20) + 1);
  for (int i = 0; i < NSIZES; i++) {
    int got = -1;
    void *r = h_irecv(api, comm, buf, sizes[i] + 1, 7);
    if (!r || h_wait(api, r, &got) || (size_t)got != sizes[i] ||
        h_check(buf, sizes[i], (unsigned)i))
      return 20 + i;
  }
  free(buf);
  return c4_netapi_close_recv(api, comm) == ncclSuccess ? 0 : 1;
}

static int send_sizes(struct c4_netapi *api, void *comm, void *arg) {
  (void)arg;
  unsigned char *buf = malloc(64 << 20);
  for (int i = 0; i < NSIZES; i++) {
    h_fill(buf, sizes[i], (unsigned)i);
    void *r = h_isend(api, comm, buf, sizes[i], 7);
    if (!r || h_wait(api, r, NULL)) return 20 + i;
  }
  free(buf);
  return c4_netapi_close_send(api, comm) == ncclSuccess ? 0 : 1;
}

START_TEST(random_sizes_up_to_64MiB_arrive_intact_for_every_version) {
  pick_sizes();
  for (int v = 0; v < NVERSIONS; v++) {
    struct pair_opts o = {.version = versions[v]};
    ck_assert_msg(h_run_pair(&o, recv_sizes, send_sizes, NULL) == 0, "ncclNet v%d", versions[v]);
  }
}
END_TEST

/* ---- 32 outstanding, tested in posting order ----------------------------------------------- */

#define NOUT 32
static size_t out_size(int i) { return i % 4 == 0 ? (size_t)(300000 + i) : (size_t)(997 * i); }

static int recv_32(struct c4_netapi *api, void *comm, void *arg) {
  (void)arg;
  unsigned char *buf[NOUT];
  void *req[NOUT];
  for (int i = 0; i < NOUT; i++) {
    buf[i] = malloc(out_size(i) + 1);
    if (!(req[i] = h_irecv(api, comm, buf[i], out_size(i), i))) return 20;
  }
  for (int i = 0; i < NOUT; i++) {
    int got;
    if (h_wait(api, req[i], &got) || (size_t)got != out_size(i) ||
        h_check(buf[i], out_size(i), (unsigned)i))
      return 30;
    free(buf[i]);
  }
  c4_netapi_close_recv(api, comm);
  return 0;
}

static int send_32(struct c4_netapi *api, void *comm, void *arg) {
  (void)arg;
  unsigned char *buf[NOUT];
  void *req[NOUT];
  for (int i = 0; i < NOUT; i++) {
    buf[i] = malloc(out_size(i) + 1);
    h_fill(buf[i], out_size(i), (unsigned)i);
    if (!(req[i] = h_isend(api, comm, buf[i], out_size(i), i))) return 20;
  }
  for (int i = 0; i < NOUT; i++) {
    if (h_wait(api, req[i], NULL)) return 30;
    free(buf[i]);
  }
  c4_netapi_close_send(api, comm);
  return 0;
}

START_TEST(thirty_two_outstanding_requests_complete_in_posting_order_with_their_tags) {
  for (int v = 0; v < NVERSIONS; v++) {
    struct pair_opts o = {.version = versions[v]};
    ck_assert_msg(h_run_pair(&o, recv_32, send_32, NULL) == 0, "ncclNet v%d", versions[v]);
  }
}
END_TEST

START_TEST(helper_threads_and_many_sockets_carry_the_same_data_intact) {
  pick_sizes();
  setenv("C4_NSOCKS", "4", 1); /* inherited by both forked sides */
  setenv("C4_NTHREADS", "2", 1);
  struct pair_opts o = {.version = 11};
  ck_assert(h_run_pair(&o, recv_sizes, send_sizes, NULL) == 0);
  ck_assert(h_run_pair(&o, recv_32, send_32, NULL) == 0);
}
END_TEST

/* ---- mismatches fail on both sides ---------------------------------------------------------- */

struct mismatch {
  size_t send_size, recv_size;
  int send_tag, recv_tag;
};

static int recv_expect_error(struct c4_netapi *api, void *comm, void *arg) {
  struct mismatch *m = arg;
  char *buf = malloc(m->recv_size + 1);
  void *r = h_irecv(api, comm, buf, m->recv_size, m->recv_tag);
  int rc = r ? h_wait(api, r, NULL) : 1;
  return rc == 1 ? 0 : 40; /* must be an error, not success and not a hang */
}

static int send_expect_error(struct c4_netapi *api, void *comm, void *arg) {
  struct mismatch *m = arg;
  char *buf = calloc(1, m->send_size + 1);
  void *r = h_isend(api, comm, buf, m->send_size, m->send_tag);
  if (!r) return 0; /* refused at isend: an error on this side */
  if (h_wait(api, r, NULL) == 1) return 0;
  /* an eager send may complete; the receiver's rejection must then fail the next call */
  for (int i = 0; i < 2000; i++) {
    void *again = NULL;
    if (c4_netapi_isend(api, comm, buf, 1, m->send_tag, NULL, &again) != ncclSuccess) return 0;
    if (again && h_wait(api, again, NULL) == 1) return 0;
    usleep(1000);
  }
  return 41;
}

START_TEST(a_message_larger_than_the_posted_buffer_fails_on_both_sides) {
  struct mismatch small = {100, 50, 1, 1}, large = {3 << 20, 1 << 20, 1, 1};
  for (int v = 0; v < NVERSIONS; v++) {
    struct pair_opts o = {.version = versions[v]};
    ck_assert_msg(h_run_pair(&o, recv_expect_error, send_expect_error, &small) == 0, "v%d small",
                  versions[v]);
    ck_assert_msg(h_run_pair(&o, recv_expect_error, send_expect_error, &large) == 0, "v%d large",
                  versions[v]);
  }
}
END_TEST

START_TEST(mismatched_tags_fail_on_both_sides) {
  struct mismatch small = {64, 64, 1, 2}, large = {1 << 20, 1 << 20, 3, 4};
  struct pair_opts o = {.version = 11};
  ck_assert(h_run_pair(&o, recv_expect_error, send_expect_error, &small) == 0);
  ck_assert(h_run_pair(&o, recv_expect_error, send_expect_error, &large) == 0);
}
END_TEST

/* ---- zero bytes and a receive larger than the message ---------------------------------------- */

static int recv_zero_and_short(struct c4_netapi *api, void *comm, void *arg) {
  (void)arg;
  static unsigned char buf[1 << 20];
  int got = -1;
  void *r = h_irecv(api, comm, buf, sizeof buf, 0);
  if (!r || h_wait(api, r, &got) || got != 0) return 20;
  r = h_irecv(api, comm, buf, sizeof buf, 0);
  if (!r || h_wait(api, r, &got) || got != 1000 || h_check(buf, 1000, 5)) return 21;
  r = h_irecv(api, comm, buf, sizeof buf, 0);
  if (!r || h_wait(api, r, &got) || got != 200000 || h_check(buf, 200000, 6)) return 22;
  return 0;
}

static int send_zero_and_short(struct c4_netapi *api, void *comm, void *arg) {
  (void)arg;
  static unsigned char buf[200000];
  void *r = h_isend(api, comm, buf, 0, 0);
  if (!r || h_wait(api, r, NULL)) return 20;
  h_fill(buf, 1000, 5);
  r = h_isend(api, comm, buf, 1000, 0);
  if (!r || h_wait(api, r, NULL)) return 21;
  h_fill(buf, 200000, 6);
  r = h_isend(api, comm, buf, 200000, 0);
  if (!r || h_wait(api, r, NULL)) return 22;
  return 0;
}

START_TEST(zero_byte_messages_and_receives_larger_than_the_message_report_the_sent_size) {
  for (int v = 0; v < NVERSIONS; v++) {
    struct pair_opts o = {.version = versions[v]};
    ck_assert_msg(h_run_pair(&o, recv_zero_and_short, send_zero_and_short, NULL) == 0, "v%d",
                  versions[v]);
  }
}
END_TEST

/* ---- closing with requests in flight ------------------------------------------------------- */

static int recv_while_peer_closes(struct c4_netapi *api, void *comm, void *arg) {
  (void)arg;
  static unsigned char buf[4][4 << 20];
  void *r[4];
  for (int i = 0; i < 4; i++)
    if (!(r[i] = h_irecv(api, comm, buf[i], sizeof buf[i], 0))) return 20;
  int errors = 0;
  for (int i = 0; i < 4; i++) {
    int rc = h_wait(api, r[i], NULL);
    if (rc == 2) return 21; /* a hang is the failure */
    errors += rc == 1;
  }
  if (errors < 3) return 22;
  return c4_netapi_close_recv(api, comm) == ncclSuccess ? 0 : 23;
}

static int send_then_close(struct c4_netapi *api, void *comm, void *arg) {
  (void)arg;
  static unsigned char buf[4 << 20];
  void *r = h_isend(api, comm, buf, sizeof buf, 0);
  if (!r) return 20;
  return c4_netapi_close_send(api, comm) == ncclSuccess ? 0 : 21; /* with the send in flight */
}

static int recv_then_close(struct c4_netapi *api, void *comm, void *arg) {
  (void)arg;
  static unsigned char buf[4 << 20];
  if (!h_irecv(api, comm, buf, sizeof buf, 0)) return 20;
  usleep(20000);
  return c4_netapi_close_recv(api, comm) == ncclSuccess ? 0 : 21;
}

static int send_while_peer_closes(struct c4_netapi *api, void *comm, void *arg) {
  (void)arg;
  static unsigned char buf[16 << 20];
  for (int i = 0; i < 4; i++) {
    void *r = h_isend(api, comm, buf, sizeof buf, 0);
    if (!r) return 0;
    int rc = h_wait(api, r, NULL);
    if (rc == 2) return 21;
    if (rc == 1) return 0;
  }
  return 22; /* four 16 MiB sends to a closed receiver cannot all succeed */
}

START_TEST(closing_with_requests_in_flight_fails_the_peer_without_a_hang_or_crash) {
  struct pair_opts o = {.version = 11};
  ck_assert(h_run_pair(&o, recv_while_peer_closes, send_then_close, NULL) == 0);
  ck_assert(h_run_pair(&o, recv_then_close, send_while_peer_closes, NULL) == 0);
}
END_TEST

/* ---- many comms at once -------------------------------------------------------------------- */

#define NCOMMS 16

static int recv_many(struct c4_netapi *api, void *comms, void *arg) {
  (void)arg;
  void **c = comms;
  static unsigned char buf[NCOMMS][300000];
  void *r[NCOMMS];
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < NCOMMS; i++)
      if (!(r[i] = h_irecv(api, c[i], buf[i], sizeof buf[i], i))) return 20;
    for (int i = 0; i < NCOMMS; i++) {
      int got;
      size_t want = (size_t)(1000 * (i + 1) * (round + 1) * 3);
      if (h_wait(api, r[i], &got) || (size_t)got != want ||
          h_check(buf[i], want, (unsigned)(i + 100 * round)))
        return 21;
    }
  }
  for (int i = 0; i < NCOMMS; i++)
    c4_netapi_close_recv(api, c[i]);
  return 0;
}

static int send_many(struct c4_netapi *api, void *comms, void *arg) {
  (void)arg;
  void **c = comms;
  static unsigned char buf[NCOMMS][300000];
  void *r[NCOMMS];
  for (int round = 0; round < 3; round++) {
    for (int i = 0; i < NCOMMS; i++) {
      size_t n = (size_t)(1000 * (i + 1) * (round + 1) * 3);
      h_fill(buf[i], n, (unsigned)(i + 100 * round));
      if (!(r[i] = h_isend(api, c[i], buf[i], n, i))) return 20;
    }
    for (int i = 0; i < NCOMMS; i++)
      if (h_wait(api, r[i], NULL)) return 21;
  }
  for (int i = 0; i < NCOMMS; i++)
    c4_netapi_close_send(api, c[i]);
  return 0;
}

START_TEST(sixteen_comms_used_at_once_keep_their_data_apart) {
  struct pair_opts o = {.version = 11, .ncomms = NCOMMS};
  ck_assert(h_run_pair(&o, recv_many, send_many, NULL) == 0);
}
END_TEST

/* ---- between two network namespaces --------------------------------------------------------- */

static void netns_down(void) {
  if (system("ip netns del c4t0 2>/dev/null; ip netns del c4t1 2>/dev/null")) {
  }
}

START_TEST(data_crosses_a_veth_pair_between_two_network_namespaces) {
  if (!h_can_netns()) {
    printf("skipped: needs CAP_NET_ADMIN (run as root for the namespace test)\n");
    return;
  }
  netns_down();
  int rc = system(
      "set -e; ip netns add c4t0; ip netns add c4t1;"
      "ip link add c4t0v type veth peer name c4t1v;"
      "ip link set c4t0v netns c4t0; ip link set c4t1v netns c4t1;"
      "ip -n c4t0 addr add 198.18.1.1/30 dev c4t0v; ip -n c4t1 addr add 198.18.1.2/30 dev c4t1v;"
      "ip -n c4t0 link set c4t0v up; ip -n c4t1 link set c4t1v up;"
      "ip -n c4t0 link set lo up; ip -n c4t1 link set lo up");
  if (rc != 0) {
    netns_down();
    ck_abort_msg("could not build the namespaces");
  }
  pick_sizes();
  struct pair_opts o = {.version = 11, .recv_ns = "c4t0", .send_ns = "c4t1", .ifname = "c4t"};
  int bad = h_run_pair(&o, recv_sizes, send_sizes, NULL);
  netns_down();
  ck_assert_msg(bad == 0, "transfer between namespaces failed");
}
END_TEST

void conformance_add_data_tests(Suite *s) {
  TCase *tc = tcase_create("data");
  tcase_set_timeout(tc, 180);
  tcase_add_test(tc, random_sizes_up_to_64MiB_arrive_intact_for_every_version);
  tcase_add_test(tc, thirty_two_outstanding_requests_complete_in_posting_order_with_their_tags);
  tcase_add_test(tc, helper_threads_and_many_sockets_carry_the_same_data_intact);
  tcase_add_test(tc, a_message_larger_than_the_posted_buffer_fails_on_both_sides);
  tcase_add_test(tc, mismatched_tags_fail_on_both_sides);
  tcase_add_test(tc, zero_byte_messages_and_receives_larger_than_the_message_report_the_sent_size);
  tcase_add_test(tc, closing_with_requests_in_flight_fails_the_peer_without_a_hang_or_crash);
  tcase_add_test(tc, sixteen_comms_used_at_once_keep_their_data_apart);
  tcase_add_test(tc, data_crosses_a_veth_pair_between_two_network_namespaces);
  suite_add_tcase(s, tc);
}
