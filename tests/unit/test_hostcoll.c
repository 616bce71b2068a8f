/* test_hostcoll.c -- the bootstrap rendezvous and the ring allreduce over the real plugin
 * (C4_PLUGIN_PATH), with ranks in forked processes. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
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

static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  bind(fd, (struct sockaddr *)&a, sizeof a);
  getsockname(fd, (struct sockaddr *)&a, &len);
  close(fd);
  return ntohs(a.sin_port);
}

static const char *plugin(void) {
  const char *p = getenv("C4_PLUGIN_PATH");
  return p ? p : "build/lib/libnccl-net-c4.so";
}

static const size_t counts[] = {0, 1, 7, 1000, (1 << 20) + 3};

/* One rank: allreduce every count and compare with the exact sum. Returns an exit code. */
static int rank_main(int rank, int world, int port) {
  alarm(60);
  setenv("C4_SOCKET_IFNAME", "lo", 1);
  setenv("C4_DEBUG", "NONE", 1);
  setenv("C4_COLL_SLICE_BYTES", "65536", 1); /* many slices, several in flight */
  struct c4_bootstrap bs;
  if (c4_bootstrap_init(&bs, rank, world, "127.0.0.1", port)) return 2;
  struct c4_netapi api;
  if (c4_netapi_open(&api, plugin(), 0)) return 3;
  struct c4_hostcoll ring;
  if (c4_hostcoll_ring_init(&ring, &api, 0, &bs)) return 4;
  float *buf = malloc(sizeof(float) * ((1 << 20) + 3));
  for (unsigned k = 0; k < sizeof counts / sizeof *counts; k++) {
    size_t n = counts[k];
    for (size_t i = 0; i < n; i++)
      buf[i] = (float)((rank + 1) * (int)(i % 17) - 3);
    if (c4_hostcoll_allreduce_f32(&ring, buf, n)) return 5;
    for (size_t i = 0; i < n; i++) {
      float want = (float)((int)(i % 17) * world * (world + 1) / 2 - 3 * world);
      if (buf[i] != want) return 6;
    }
  }
  free(buf);
  c4_hostcoll_ring_close(&ring);
  c4_bootstrap_close(&bs);
  c4_netapi_close(&api);
  return 0;
}

static void run_world(int world) {
  int port = free_port();
  pid_t pid[8];
  for (int r = 0; r < world; r++)
    if ((pid[r] = fork()) == 0) _exit(rank_main(r, world, port));
  for (int r = 0; r < world; r++) {
    int st;
    waitpid(pid[r], &st, 0);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "rank %d of %d: status %d", r, world,
                  WIFEXITED(st) ? WEXITSTATUS(st) : -WTERMSIG(st));
  }
}

START_TEST(ring_allreduce_sums_exactly_on_two_and_three_ranks) {
  run_world(2);
  run_world(3);
}
END_TEST

START_TEST(allreduce_on_one_rank_leaves_the_data_alone) { ck_assert_int_eq(rank_main(0, 1, 1), 0); }
END_TEST

START_TEST(bootstrap_rejects_a_stranger_and_still_lets_the_real_rank_in) {
  int port = free_port();
  pid_t r1 = fork();
  if (r1 == 0) {
    usleep(300000); /* let the stranger go first */
    struct c4_bootstrap bs;
    if (c4_bootstrap_init(&bs, 1, 2, "127.0.0.1", port)) _exit(2);
    char mine[8] = "rank-1", all[16];
    _exit(c4_bootstrap_allgather(&bs, mine, all, 8) || strcmp(all, "rank-0") ? 3 : 0);
  }
  pid_t stranger = fork();
  if (stranger == 0) {
    usleep(100000);
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    for (int i = 0; i < 100 && connect(fd, (struct sockaddr *)&a, sizeof a); i++)
      usleep(10000);
    if (write(fd, "GET / HTTP/1.0\r\n\r\n", 18) != 18) _exit(1);
    usleep(500000);
    _exit(0);
  }
  setenv("C4_DEBUG", "NONE", 1);
  struct c4_bootstrap bs;
  ck_assert_int_eq(c4_bootstrap_init(&bs, 0, 2, "127.0.0.1", port), 0);
  char mine[8] = "rank-0", all[16];
  ck_assert_int_eq(c4_bootstrap_allgather(&bs, mine, all, 8), 0);
  ck_assert_str_eq(all + 8, "rank-1");
  c4_bootstrap_close(&bs);
  int st;
  waitpid(r1, &st, 0);
  ck_assert(WIFEXITED(st) && WEXITSTATUS(st) == 0);
  waitpid(stranger, &st, 0);
}
END_TEST

START_TEST(bootstrap_gives_up_with_an_error_when_nobody_comes) {
  setenv("C4_BOOTSTRAP_TIMEOUT_MS", "300", 1);
  setenv("C4_DEBUG", "NONE", 1);
  struct c4_bootstrap bs;
  uint64_t t0 = c4_now_ns();
  ck_assert_int_eq(c4_bootstrap_init(&bs, 0, 2, "127.0.0.1", free_port()), C4_EREMOTE);
  ck_assert_uint_lt(c4_now_ns() - t0, 5000000000ull);
  ck_assert_int_eq(c4_bootstrap_init(&bs, 2, 2, "127.0.0.1", 1000), C4_EINVAL);
}
END_TEST

int main(void) {
  Suite *s = suite_create("hostcoll");
  TCase *tc = tcase_create("hostcoll");
  tcase_set_timeout(tc, 120);
  tcase_add_test(tc, ring_allreduce_sums_exactly_on_two_and_three_ranks);
  tcase_add_test(tc, allreduce_on_one_rank_leaves_the_data_alone);
  tcase_add_test(tc, bootstrap_rejects_a_stranger_and_still_lets_the_real_rank_in);
  tcase_add_test(tc, bootstrap_gives_up_with_an_error_when_nobody_comes);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
