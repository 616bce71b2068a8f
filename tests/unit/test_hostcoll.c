/* test_hostcoll.c -- the plugin loader, the bootstrap rendezvous and the ring allreduce over the
 * real plugin (C4_PLUGIN_PATH, default build/lib/libnccl-net-c4.so), ranks in forked processes. */
#include <arpa/inet.h>
#include <check.h>
#include <math.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_bootstrap.h"
#include "c4_clock.h"
#include "c4_err.h"
#include "c4_hostcoll.h"

#define BS_MAGIC 0x53423443u /* the bootstrap's frame magic, as defined in c4_bootstrap.c */

static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
  close(fd);
  return ntohs(a.sin_port);
}

static const char *plugin(void) {
  const char *p = getenv("C4_PLUGIN_PATH");
  return p && *p ? p : "build/lib/libnccl-net-c4.so";
}

static void quiet_env(void) {
  setenv("C4_SOCKET_IFNAME", "lo", 1);
  if (!getenv("C4_DEBUG")) setenv("C4_DEBUG", "NONE", 1);
}

/* ------------------------------------------------------------------ allreduce across ranks */

static const size_t counts[] = {0, 1, 2, 7, 1000, 1 << 20, (1 << 20) + 3};
#define MAX_COUNT ((1 << 20) + 3)

/* The value rank r contributes at index i for count case k: a reproducible pseudo-random float
 * in [-1, 1), so every rank can compute the reference sum itself. */
static float input(int r, unsigned k, size_t i) {
  uint64_t x = ((uint64_t)(r + 1) * 0x9E3779B97F4A7C15ull) ^ ((uint64_t)k << 40) ^ (uint64_t)i;
  x ^= x >> 33;
  x *= 0xff51afd7ed558ccdull;
  x ^= x >> 33;
  x *= 0xc4ceb9fe1a85ec53ull;
  x ^= x >> 33;
  return (float)((double)(x >> 11) / (double)(1ull << 53) * 2.0 - 1.0);
}

static uint64_t fnv(const void *p, size_t n) {
  const unsigned char *b = p;
  uint64_t h = 1469598103934665603ull;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * 1099511628211ull;
  return h;
}

/* One rank: allreduce every count, compare with the sum computed in double, and check through
 * the bootstrap that every rank holds the same bits. Returns an exit code naming the step. */
static int rank_main(int rank, int world, int port, int version) {
  alarm(90);
  quiet_env();
  setenv("C4_COLL_SLICE_BYTES", "65536", 1); /* many slices, several in flight */
  struct c4_bootstrap bs;
  if (c4_bootstrap_init(&bs, rank, world, "127.0.0.1", port)) return 2;
  struct c4_netapi api;
  if (c4_netapi_open(&api, plugin(), version)) return 3;
  if (version && api.version != version) return 3;
  struct c4_hostcoll ring;
  if (c4_hostcoll_ring_init(&ring, &api, 0, &bs)) return 4;
  float *buf = malloc(sizeof(float) * MAX_COUNT);
  uint64_t *hashes = malloc(sizeof(uint64_t) * (size_t)world);
  if (!buf || !hashes) return 9;
  int rc = 0;
  for (unsigned k = 0; k < sizeof counts / sizeof *counts && !rc; k++) {
    size_t n = counts[k];
    for (size_t i = 0; i < n; i++)
      buf[i] = input(rank, k, i);
    if (c4_hostcoll_allreduce_f32(&ring, buf, n)) rc = 5;
    for (size_t i = 0; i < n && !rc; i++) {
      double want = 0, mag = 0;
      for (int r = 0; r < world; r++) {
        want += input(r, k, i);
        mag += fabs(input(r, k, i));
      }
      if (fabs(buf[i] - want) > 1e-6 * mag + 1e-9) rc = 6;
    }
    uint64_t mine = fnv(buf, n * sizeof(float));
    if (!rc && c4_bootstrap_allgather(&bs, &mine, hashes, sizeof mine)) rc = 7;
    for (int r = 0; r < world && !rc; r++)
      if (hashes[r] != mine) rc = 8;
  }
  free(buf);
  free(hashes);
  c4_hostcoll_ring_close(&ring);
  c4_bootstrap_close(&bs);
  c4_netapi_close(&api);
  return rc;
}

static void run_world(int world, int version) {
  int port = free_port();
  pid_t pid[8];
  for (int r = 0; r < world; r++)
    if ((pid[r] = fork()) == 0) _exit(rank_main(r, world, port, version));
  for (int r = 0; r < world; r++) {
    int st;
    waitpid(pid[r], &st, 0);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "rank %d of %d (ncclNet v%d): %s %d (2 bootstrap, 3 open, 4 ring, 5 allreduce, "
                  "6 wrong sum, 7 hash exchange, 8 ranks differ)",
                  r, world, version, WIFEXITED(st) ? "exit" : "signal",
                  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
  }
}

START_TEST(ring_allreduce_matches_the_exact_sum_on_two_ranks) { run_world(2, 0); }
END_TEST

START_TEST(ring_allreduce_matches_the_exact_sum_on_three_ranks) { run_world(3, 0); }
END_TEST

START_TEST(ring_allreduce_runs_through_the_v8_table_adapters) { run_world(2, 8); }
END_TEST

START_TEST(allreduce_on_one_rank_leaves_the_data_alone) {
  quiet_env();
  struct c4_bootstrap bs;
  ck_assert_int_eq(c4_bootstrap_init(&bs, 0, 1, "127.0.0.1", 1), 0);
  struct c4_netapi api = {0};
  struct c4_hostcoll ring;
  ck_assert_int_eq(c4_hostcoll_ring_init(&ring, &api, 0, &bs), 0); /* no plugin call at all */
  float v[3] = {1.5f, -2.0f, 3.25f};
  ck_assert_int_eq(c4_hostcoll_allreduce_f32(&ring, v, 3), 0);
  ck_assert(v[0] == 1.5f && v[1] == -2.0f && v[2] == 3.25f);
  c4_hostcoll_ring_close(&ring);
  c4_bootstrap_close(&bs);
}
END_TEST

/* ------------------------------------------------------------------ the plugin loader */

START_TEST(netapi_takes_the_newest_table_and_any_forced_one) {
  quiet_env();
  struct c4_netapi api;
  ck_assert_int_eq(c4_netapi_open(&api, plugin(), 0), 0);
  ck_assert_int_eq(api.version, 11);
  int ndev = 0;
  ck_assert_int_eq(c4_netapi_devices(&api, &ndev), ncclSuccess);
  ck_assert_int_ge(ndev, 1);
  c4_netapi_close(&api);
  for (int v = 8; v <= 11; v++) {
    ck_assert_int_eq(c4_netapi_open_version(&api, plugin(), v), 0);
    ck_assert_int_eq(api.version, v);
    ck_assert_str_eq(api.name, "c4");
    c4_netapi_close(&api);
  }
  ck_assert_int_eq(c4_netapi_open_version(&api, plugin(), 7), C4_EINVAL);
}
END_TEST

START_TEST(netapi_reports_dlerror_for_a_missing_library) {
  quiet_env();
  struct c4_netapi api;
  ck_assert_int_eq(c4_netapi_open(&api, "/nonexistent/libnccl-net-nothing.so", 0), C4_ENOTFOUND);
  ck_assert_ptr_nonnull(strstr(api.err, "/nonexistent/libnccl-net-nothing.so"));
  ck_assert_ptr_nonnull(strstr(api.err, "No such file"));
  c4_netapi_close(&api); /* harmless after a failed open */
}
END_TEST

/* ------------------------------------------------------------------ bootstrap */

static int connect_lo(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  for (int i = 0; i < 200; i++) {
    if (connect(fd, (struct sockaddr *)&a, sizeof a) == 0) return fd;
    usleep(10000);
  }
  close(fd);
  return -1;
}

START_TEST(bootstrap_refuses_a_stranger_at_once_and_still_lets_the_real_rank_in) {
  quiet_env();
  int port = free_port();
  pid_t stranger = fork();
  if (stranger == 0) { /* connects first, sends HTTP, then holds the connection open */
    int fd = connect_lo(port);
    if (fd < 0 || write(fd, "GET / HTTP/1.0\r\n\r\n", 18) != 18) _exit(1);
    sleep(4);
    _exit(0);
  }
  pid_t r1 = fork();
  if (r1 == 0) {
    usleep(200000); /* let the stranger go first */
    struct c4_bootstrap bs;
    if (c4_bootstrap_init(&bs, 1, 2, "127.0.0.1", port)) _exit(2);
    char mine[8] = "rank-1", all[16];
    if (c4_bootstrap_allgather(&bs, mine, all, 8) || strcmp(all, "rank-0")) _exit(3);
    _exit(c4_bootstrap_barrier(&bs) ? 4 : 0);
  }
  uint64_t t0 = c4_now_ns();
  struct c4_bootstrap bs;
  ck_assert_int_eq(c4_bootstrap_init(&bs, 0, 2, "127.0.0.1", port), 0);
  char mine[8] = "rank-0", all[16];
  ck_assert_int_eq(c4_bootstrap_allgather(&bs, mine, all, 8), 0);
  ck_assert_str_eq(all + 8, "rank-1");
  ck_assert_int_eq(c4_bootstrap_barrier(&bs), 0);
  /* the stranger still holds its socket: it must not have held up the rendezvous */
  ck_assert_uint_lt(c4_now_ns() - t0, 2000000000ull);
  c4_bootstrap_close(&bs);
  int st;
  waitpid(r1, &st, 0);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank 1 status %d", st);
  kill(stranger, SIGKILL);
  waitpid(stranger, &st, 0);
}
END_TEST

/* A fake rank 0 reads rank 1's hello and data frame and answers the allgather with a header
 * carrying magic, rank and len (every other field right), then len bytes. Returns rank 1's
 * allgather result. */
static int allgather_against_fake_root(uint32_t magic, uint32_t rank, uint32_t len) {
  int port = free_port();
  int lfd = socket(AF_INET, SOCK_STREAM, 0);
  int one = 1;
  setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  ck_assert_int_eq(bind(lfd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(lfd, 1), 0);
  pid_t root = fork();
  if (root == 0) {
    int fd = accept(lfd, NULL, NULL);
    char hello[24], data[24 + 8];
    if (fd < 0 || recv(fd, hello, sizeof hello, MSG_WAITALL) != (ssize_t)sizeof hello) _exit(1);
    if (recv(fd, data, sizeof data, MSG_WAITALL) != (ssize_t)sizeof data) _exit(1);
    uint32_t h[6] = {magic, 1u | (1u << 16) /* version 1, kind data */, rank, 2, 0, len};
    char out[24 + 64] = {0};
    memcpy(out, h, sizeof h);
    if (write(fd, out, 24 + (len < 64 ? len : 64)) < 0) _exit(1);
    sleep(2);
    _exit(0);
  }
  close(lfd);
  struct c4_bootstrap bs;
  ck_assert_int_eq(c4_bootstrap_init(&bs, 1, 2, "127.0.0.1", port), 0);
  char mine[8] = "rank-1", all[16];
  uint64_t t0 = c4_now_ns();
  int rc = c4_bootstrap_allgather(&bs, mine, all, 8);
  ck_assert_uint_lt(c4_now_ns() - t0, 1000000000ull); /* refused on sight, not on a timeout */
  c4_bootstrap_close(&bs);
  kill(root, SIGKILL);
  waitpid(root, NULL, 0);
  return rc;
}

START_TEST(bootstrap_rejects_bad_frames_from_rank_0_with_eproto) {
  quiet_env();
  ck_assert_int_eq(allgather_against_fake_root(BS_MAGIC, 0, 16), 0); /* the fake is well formed */
  ck_assert_int_eq(allgather_against_fake_root(0x50545448u, 0, 16), C4_EPROTO); /* wrong magic */
  ck_assert_int_eq(allgather_against_fake_root(BS_MAGIC, 0, 17), C4_EPROTO);    /* wrong length */
  ck_assert_int_eq(allgather_against_fake_root(BS_MAGIC, 1, 16), C4_EPROTO);    /* wrong rank */
}
END_TEST

START_TEST(bootstrap_gives_up_with_an_error_when_nobody_comes) {
  quiet_env();
  setenv("C4_BOOTSTRAP_TIMEOUT_MS", "300", 1);
  struct c4_bootstrap bs;
  uint64_t t0 = c4_now_ns();
  ck_assert_int_eq(c4_bootstrap_init(&bs, 0, 2, "127.0.0.1", free_port()), C4_EREMOTE);
  ck_assert_uint_lt(c4_now_ns() - t0, 3000000000ull);
  t0 = c4_now_ns();
  ck_assert_int_eq(c4_bootstrap_init(&bs, 1, 2, "127.0.0.1", free_port()), C4_EREMOTE);
  ck_assert_uint_lt(c4_now_ns() - t0, 3000000000ull);
  ck_assert_int_eq(c4_bootstrap_init(&bs, 2, 2, "127.0.0.1", 1000), C4_EINVAL);
  unsetenv("C4_BOOTSTRAP_TIMEOUT_MS");
}
END_TEST

/* A gather within a short wait gives up on a silent peer after that wait, not the rendezvous's
 * (60 s here): rank 1 joins, then stays silent until rank 0, the root, has given up waiting
 * 300 ms for its frame. */
START_TEST(a_gather_within_a_short_wait_gives_up_on_a_silent_peer_after_that_wait) {
  quiet_env();
  setenv("C4_BOOTSTRAP_TIMEOUT_MS", "60000", 1);
  int port = free_port(), done[2];
  ck_assert_int_eq(pipe(done), 0);
  pid_t late = fork();
  if (late == 0) {
    close(done[1]);
    struct c4_bootstrap bs;
    if (c4_bootstrap_init(&bs, 1, 2, "127.0.0.1", port)) _exit(2);
    char c;
    if (read(done[0], &c, 1) < 0) _exit(3); /* silent until the parent closes its end */
    c4_bootstrap_close(&bs);
    _exit(0);
  }
  close(done[0]);
  struct c4_bootstrap bs;
  ck_assert_int_eq(c4_bootstrap_init(&bs, 0, 2, "127.0.0.1", port), 0);
  int mine = 7, all[2];
  uint64_t t0 = c4_now_ns();
  ck_assert_int_eq(c4_bootstrap_allgather_within(&bs, &mine, all, sizeof mine, 300), C4_EREMOTE);
  uint64_t took = c4_now_ns() - t0;
  ck_assert_uint_ge(took, 250000000ull);
  ck_assert_uint_lt(took, 2000000000ull);
  close(done[1]);
  c4_bootstrap_close(&bs);
  int st;
  waitpid(late, &st, 0);
  ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  unsetenv("C4_BOOTSTRAP_TIMEOUT_MS");
}
END_TEST

START_TEST(bootstrap_reads_the_torchrun_variables) {
  quiet_env();
  setenv("RANK", "0", 1);
  setenv("WORLD_SIZE", "1", 1);
  setenv("MASTER_ADDR", "127.0.0.1", 1);
  setenv("MASTER_PORT", "1", 1);
  struct c4_bootstrap bs;
  ck_assert_int_eq(c4_bootstrap_from_env(&bs), 0);
  ck_assert_int_eq(bs.rank, 0);
  ck_assert_int_eq(bs.world, 1);
  c4_bootstrap_close(&bs);
  setenv("RANK", "3", 1);
  setenv("WORLD_SIZE", "2", 1);
  ck_assert_int_eq(c4_bootstrap_from_env(&bs), C4_EINVAL);
}
END_TEST

int main(void) {
  Suite *s = suite_create("hostcoll");
  TCase *tc = tcase_create("hostcoll");
  tcase_set_timeout(tc, 180);
  tcase_add_test(tc, ring_allreduce_matches_the_exact_sum_on_two_ranks);
  tcase_add_test(tc, ring_allreduce_matches_the_exact_sum_on_three_ranks);
  tcase_add_test(tc, ring_allreduce_runs_through_the_v8_table_adapters);
  tcase_add_test(tc, allreduce_on_one_rank_leaves_the_data_alone);
  tcase_add_test(tc, netapi_takes_the_newest_table_and_any_forced_one);
  tcase_add_test(tc, netapi_reports_dlerror_for_a_missing_library);
  tcase_add_test(tc, bootstrap_refuses_a_stranger_at_once_and_still_lets_the_real_rank_in);
  tcase_add_test(tc, bootstrap_rejects_bad_frames_from_rank_0_with_eproto);
  tcase_add_test(tc, bootstrap_gives_up_with_an_error_when_nobody_comes);
  tcase_add_test(tc, a_gather_within_a_short_wait_gives_up_on_a_silent_peer_after_that_wait);
  tcase_add_test(tc, bootstrap_reads_the_torchrun_variables);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
