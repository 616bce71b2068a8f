/* test_dp.c -- c4train's data-parallel group summing memory that is not the host's (a GPU's
 * under --pp): every bucket is copied out, summed on the plugin's host ring and copied back,
 * and host buffers are summed in place. The "device" here is the CPU kernels with their copies
 * counted; ranks in forked processes over the real plugin (C4_PLUGIN_PATH). */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_bootstrap.h"
#include "c4k.h"
#include "dp.h"

#define BUCKET_FLOATS 1024
#define N 2500 /* three buckets, the last one short */

static size_t downloaded, uploaded;

static void counted_download(void *host_dst, const void *src, size_t bytes) {
  downloaded += bytes;
  c4k_cpu_ops.download(host_dst, src, bytes);
}

static void counted_upload(void *dst, const void *host_src, size_t bytes) {
  uploaded += bytes;
  c4k_cpu_ops.upload(dst, host_src, bytes);
}

static float value(int rank, int i) { return (float)(rank + 1) * 0.25f + (float)i * 0.5f; }

/* One rank: exit 0, or the step that went wrong (2 join, 3 stage, 4 device sum, 5 its values,
 * 6 its copies, 7 host sum, 8 host values or copies). */
static int rank_main(int rank, int port) {
  struct c4_ranks r = {.rank = rank, .world = 2, .port = port, .source = "test"};
  strcpy(r.master, "127.0.0.1");
  const char *plugin = getenv("C4_PLUGIN_PATH");
  struct dp d;
  char err[256];
  if (dp_init(&d, &r, plugin && *plugin ? plugin : "build/lib/libnccl-net-c4.so", 0,
              BUCKET_FLOATS * sizeof(float), err, sizeof err))
    return 2;
  struct c4k_ops dev = c4k_cpu_ops;
  dev.download = counted_download;
  dev.upload = counted_upload;
  if (dp_stage_through_host(&d, &dev)) return 3;
  float host[N], *grads = dev.alloc(N * sizeof(float));
  for (int i = 0; i < N; i++)
    host[i] = value(rank, i);
  dev.upload(grads, host, sizeof host);
  downloaded = uploaded = 0;
  if (dp_allreduce(&d, grads, N)) return 4;
  if (downloaded != sizeof host || uploaded != sizeof host) return 6; /* each bucket out and back */
  dev.download(host, grads, sizeof host);
  for (int i = 0; i < N; i++)
    if (host[i] != value(0, i) + value(1, i)) return 5;
  for (int i = 0; i < N; i++)
    host[i] = value(rank, i);
  downloaded = uploaded = 0;
  if (dp_allreduce_host(&d, host, N)) return 7;
  for (int i = 0; i < N; i++)
    if (host[i] != value(0, i) + value(1, i)) return 8;
  if (downloaded || uploaded) return 8;
  dev.free(grads);
  dp_close(&d);
  return 0;
}

START_TEST(memory_off_the_host_is_summed_bucket_by_bucket_through_a_host_copy) {
  setenv("C4_SOCKET_IFNAME", "lo", 1);
  if (!getenv("C4_DEBUG")) setenv("C4_DEBUG", "NONE", 1);
  /* a rank that fails early leaves its peer waiting: within the test's time, so that its exit
   * code, not a timeout, is what the test says */
  setenv("C4_BOOTSTRAP_TIMEOUT_MS", "10000", 1);
  setenv("C4_COLL_TIMEOUT_MS", "10000", 1);
  int port = c4_bootstrap_free_port();
  pid_t pid[2];
  for (int r = 0; r < 2; r++)
    if ((pid[r] = fork()) == 0) _exit(rank_main(r, port));
  for (int r = 0; r < 2; r++) {
    int st;
    waitpid(pid[r], &st, 0);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0,
                  "rank %d: %s %d (2 join, 3 stage, 4 device sum, 5 its values, 6 its copies, 7 "
                  "host sum, 8 host values or copies)",
                  r, WIFEXITED(st) ? "exit" : "signal",
                  WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st));
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("dp");
  TCase *tc = tcase_create("dp");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, memory_off_the_host_is_summed_bucket_by_bucket_through_a_host_copy);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
