/* test_preload.c -- the LD_PRELOAD shim: every call reaches the real NCCL and its return code comes
 * back unchanged (against the real libnccl.so, in the error paths that need no GPU), and, against
 * the NCCL and CUDA test doubles (tests/doubles: this machine has no GPU), communicators and
 * collectives are recorded with arrival and CUDA-event completion, group calls included. */
#include <check.h>
#include <dlfcn.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check_run.h"
#include "preload_abi.h"

static char build[512];

static void setup_paths(void) {
  const char *b = getenv("C4_BUILD_DIR");
  snprintf(build, sizeof build, "%s", b ? b : "build");
  setenv("ASAN_OPTIONS", "verify_asan_link_order=0:detect_leaks=0", 1); /* preloading into ASan */
}

/* Runs cmd, returns its stdout (static buffer). */
static const char *run(const char *cmd) {
  static char out[8192];
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  size_t n = fread(out, 1, sizeof out - 1, p);
  out[n] = 0;
  ck_assert_int_eq(pclose(p), 0);
  return out;
}

/* How many lines of the file at path say what. */
static int lines_saying(const char *path, const char *what) {
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  char line[512];
  int n = 0;
  while (fgets(line, sizeof line, f))
    n += strstr(line, what) != NULL;
  fclose(f);
  return n;
}

START_TEST(every_call_and_return_code_reaches_the_real_nccl_unchanged) {
  setup_paths();
  char driver[600], cmd[2048];
  snprintf(driver, sizeof driver, "%s/tests/real_nccl_driver", build);
  if (access(driver, X_OK) != 0) {
    printf("skipped: no libnccl.so at build time (REAL_NCCL_DIR)\n");
    return;
  }
  char without[8192];
  snprintf(cmd, sizeof cmd, "%s", driver);
  snprintf(without, sizeof without, "%s", run(cmd));
  snprintf(cmd, sizeof cmd, "LD_PRELOAD=%s/lib/libc4-preload.so %s", build, driver);
  const char *with = run(cmd);
  ck_assert_str_eq(with, without);
  ck_assert_ptr_nonnull(strstr(without, "allreduce-null 4")); /* the real NCCL's own answer */
  ck_assert_ptr_nonnull(strstr(without, "version 0 2"));      /* NCCL 2.x answered */
}
END_TEST

static json_t *lines_of(const char *path, const char *type) {
  json_t *out = json_array();
  FILE *f = fopen(path, "r");
  char line[4096];
  while (f && fgets(line, sizeof line, f)) {
    json_t *j = json_loads(line, 0, NULL);
    ck_assert_ptr_nonnull(j);
    if (!strcmp(json_string_value(json_object_get(j, "type")), type)) json_array_append(out, j);
    json_decref(j);
  }
  if (f) fclose(f);
  return out;
}

static json_t *call(json_t *colls, const char *func, long seq, int rank) {
  size_t i;
  json_t *c;
  json_array_foreach(colls, i, c) {
    if (!strcmp(json_string_value(json_object_get(c, "func")), func) &&
        json_integer_value(json_object_get(c, "seq")) == seq &&
        json_integer_value(json_object_get(c, "rank")) == rank)
      return c;
  }
  return NULL;
}

#define T(c, f) json_integer_value(json_object_get(c, f))

START_TEST(collectives_are_recorded_with_arrival_and_cuda_event_completion) {
  setup_paths();
  char trace[] = "/tmp/c4-shim-XXXXXX", cmd[2048];
  close(mkstemp(trace));
  snprintf(cmd, sizeof cmd,
           "C4_TRACE=%s C4_CUDART=%s/tests/libc4-test-double-cudart.so C4_FAKE_CUDA_DELAY_MS=20 "
           "LD_PRELOAD=%s/lib/libc4-preload.so %s/tests/fake_nccl_driver",
           trace, build, build, build);
  const char *out = run(cmd);
  ck_assert_ptr_nonnull(strstr(out, "init-bad 4\n")); /* the double's codes come back as is */
  ck_assert_ptr_nonnull(strstr(out, "allreduce-13 5\n"));
  ck_assert_ptr_nonnull(strstr(out, "groupend 0\n"));

  json_t *comms = lines_of(trace, "comm"), *colls = lines_of(trace, "coll");
  /* the communicator, its split and two ranks of a scalable one; not the failed init */
  ck_assert_int_eq(json_array_size(comms), 4);
  json_t *c0 = json_array_get(comms, 0);
  ck_assert_int_eq(T(c0, "nranks"), 4);
  ck_assert_int_eq(T(c0, "rank"), 2);
  for (long s = 0; s < 3; s++) {
    json_t *a = call(colls, "AllReduce", s, 2);
    ck_assert_ptr_nonnull(a);
    ck_assert_int_eq(T(a, "bytes"), 4096);
    ck_assert_int_ge(T(a, "t_done") - T(a, "t_enqueued"), 15000000); /* the event took 20 ms */
    ck_assert_int_le(T(a, "t_arrive"), T(a, "t_enqueued"));
  }
  json_t *refused = call(colls, "AllReduce", 3, 2);
  ck_assert_ptr_nonnull(refused);
  ck_assert(json_is_null(json_object_get(refused, "t_done"))); /* NCCL refused it: it never ran */
  json_t *send = call(colls, "Send", 0, 2), *recv = call(colls, "Recv", 1, 2);
  ck_assert_ptr_nonnull(send);
  ck_assert_ptr_nonnull(recv);
  ck_assert(json_is_true(json_object_get(send, "p2p")));
  ck_assert_int_eq(T(send, "root"), 1); /* the peer */
  /* inside a group the event is recorded after the outermost ncclGroupEnd */
  ck_assert_int_ge(T(recv, "t_enqueued"), T(send, "t_enqueued"));
  ck_assert_int_ge(T(send, "t_done") - T(send, "t_enqueued"), 15000000);
  json_t *sub = call(colls, "AllReduce", 0, 0);
  ck_assert_ptr_nonnull(sub);
  ck_assert_str_ne(json_string_value(json_object_get(sub, "comm")),
                   json_string_value(json_object_get(c0, "comm")));
  json_decref(comms);
  json_decref(colls);
  unlink(trace);
}
END_TEST

/* ncclCommInitRankScalable (NCCL >= 2.23) is seen like ncclCommInitRank: its communicator and
 * collectives are recorded, under one id on every rank (from the unique ids they all pass). */
START_TEST(init_rank_scalable_communicators_are_recorded) {
  setup_paths();
  char trace[] = "/tmp/c4-shim-XXXXXX", cmd[2048];
  close(mkstemp(trace));
  snprintf(cmd, sizeof cmd,
           "C4_TRACE=%s C4_CUDART=%s/tests/libc4-test-double-cudart.so C4_FAKE_CUDA_DELAY_MS=20 "
           "LD_PRELOAD=%s/lib/libc4-preload.so %s/tests/fake_nccl_driver",
           trace, build, build, build);
  ck_assert_ptr_nonnull(strstr(run(cmd), "init-scalable 0\nallreduce-scalable 0\n"));
  json_t *comms = lines_of(trace, "comm"), *colls = lines_of(trace, "coll"), *c;
  const char *id[2] = {NULL, NULL};
  size_t i;
  json_array_foreach(comms, i, c) {
    long r = T(c, "rank");
    if (T(c, "nranks") == 8 && (r == 5 || r == 6))
      id[r - 5] = json_string_value(json_object_get(c, "comm"));
  }
  ck_assert_ptr_nonnull(id[0]);
  ck_assert_ptr_nonnull(id[1]);
  ck_assert_str_eq(id[0], id[1]);
  for (int r = 5; r <= 6; r++) {
    json_t *a = call(colls, "AllReduce", 0, r);
    ck_assert_ptr_nonnull(a);
    ck_assert_str_eq(json_string_value(json_object_get(a, "comm")), id[0]);
    ck_assert_int_eq(T(a, "bytes"), 64);
    ck_assert_int_ge(T(a, "t_done") - T(a, "t_enqueued"), 15000000);
  }
  json_decref(comms);
  json_decref(colls);
  unlink(trace);
}
END_TEST

/* An NCCL older than 2.23 (here: none at all) has no ncclCommInitRankScalable: the shim's
 * answers with an error, as for any function NCCL lacks, and touches nothing. */
START_TEST(init_rank_scalable_without_it_in_nccl_is_an_error_not_a_crash) {
  setup_paths();
  char lib[600];
  snprintf(lib, sizeof lib, "%s/lib/libc4-preload.so", build);
  void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(dl != NULL, "%s", dlerror());
  ncclResult_t (*init)(ncclComm_t *, int, int, int, ncclUniqueId *, ncclConfig_t *) =
      (ncclResult_t(*)(ncclComm_t *, int, int, int, ncclUniqueId *, ncclConfig_t *))dlsym(
          dl, "ncclCommInitRankScalable");
  ck_assert_ptr_nonnull(init);
  ncclComm_t comm = NULL;
  ncclUniqueId id = {{0}};
  for (int i = 0; i < 2; i++) /* the second call looks again, and fails alike */
    ck_assert_int_eq(init(&comm, 1, 0, 1, &id, NULL), ncclInternalError);
  ck_assert_ptr_null(comm);
}
END_TEST

static long file_size(const char *path) {
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fclose(f);
  return n;
}

/* C4_TIMING=0: every call reaches NCCL and returns as it does without the shim, and nothing is
 * recorded (no trace written at all); a value that is not 0 or 1 is refused aloud, and the shim
 * then times as by default, as the net plugin does. */
START_TEST(timing_off_passes_every_call_through_and_a_bad_value_is_refused_aloud) {
  setup_paths();
  char trace[] = "/tmp/c4-shim-XXXXXX", err[] = "/tmp/c4-shim-err-XXXXXX", cmd[2048];
  close(mkstemp(trace));
  close(mkstemp(err));
  const char *env = "C4_DEBUG=WARN C4_FAKE_CUDA_DELAY_MS=1";
  snprintf(cmd, sizeof cmd,
           "%s C4_TRACE=%s C4_CUDART=%s/tests/libc4-test-double-cudart.so "
           "%s/tests/fake_nccl_driver",
           env, trace, build, build);
  char bare[8192];
  snprintf(bare, sizeof bare, "%s", run(cmd)); /* no shim */
  snprintf(cmd, sizeof cmd,
           "%s C4_TIMING=0 C4_TRACE=%s C4_CUDART=%s/tests/libc4-test-double-cudart.so "
           "LD_PRELOAD=%s/lib/libc4-preload.so %s/tests/fake_nccl_driver 2>%s",
           env, trace, build, build, build, err);
  ck_assert_str_eq(run(cmd), bare);
  ck_assert_int_eq(file_size(trace), 0);
  ck_assert_int_eq(file_size(err), 0);

  snprintf(cmd, sizeof cmd,
           "%s C4_TIMING=off C4_TRACE=%s C4_CUDART=%s/tests/libc4-test-double-cudart.so "
           "LD_PRELOAD=%s/lib/libc4-preload.so %s/tests/fake_nccl_driver 2>%s",
           env, trace, build, build, build, err);
  ck_assert_str_eq(run(cmd), bare);
  ck_assert_int_eq(lines_saying(err, "C4_TIMING=off refused"), 1);
  json_t *colls = lines_of(trace, "coll");
  ck_assert_ptr_nonnull(call(colls, "AllReduce", 0, 2)); /* timed, as by default */
  json_decref(colls);
  unlink(trace);
  unlink(err);
}
END_TEST

/* The shim and the profiler plugin in one process (NCCL loads the profiler inside the first
 * communicator's init): the profiler reports every collective, the shim none, and one warning
 * line says so. */
START_TEST(with_the_profiler_plugin_active_the_shim_stands_down_with_one_warning) {
  setup_paths();
  char trace[] = "/tmp/c4-shim-XXXXXX", err[] = "/tmp/c4-shim-err-XXXXXX", cmd[4096];
  close(mkstemp(trace));
  close(mkstemp(err));
  snprintf(cmd, sizeof cmd,
           "C4_DEBUG=WARN C4_PROF_SETTLE_MS=5 C4_TRACE=%s "
           "C4_CUDART=%s/tests/libc4-test-double-cudart.so "
           "C4_FAKE_NCCL_PROFILER=%s/lib/libnccl-profiler-c4.so "
           "LD_PRELOAD=%s/lib/libc4-preload.so %s/tests/fake_nccl_driver 2>%s",
           trace, build, build, build, build, err);
  ck_assert_ptr_nonnull(strstr(run(cmd), "destroy 0\n"));
  json_t *comms = lines_of(trace, "comm"), *colls = lines_of(trace, "coll"), *c;
  size_t i;
  ck_assert_int_eq(json_array_size(comms), 4); /* each once, from the profiler */
  json_array_foreach(comms, i, c) {
    ck_assert_str_eq(json_string_value(json_object_get(c, "name")), "fake");
  }
  int allreduce = 0;
  json_array_foreach(colls, i, c) {
    ck_assert_str_eq(json_string_value(json_object_get(c, "func")), "AllReduce"); /* no p2p */
    ck_assert_int_eq(T(c, "nops"), 1); /* NCCL's ProxyOp: the profiler's record */
    allreduce++;
  }
  ck_assert_int_eq(allreduce, 6); /* the 13-element one NCCL refused never reached its profiler */
  ck_assert_int_eq(lines_saying(err, "shim stands down"), 1);
  json_decref(comms);
  json_decref(colls);
  unlink(trace);
  unlink(err);
}
END_TEST

/* While the GPU is busy and nothing completes, the shim's poller backs off from 100 us to 1 ms:
 * each of the driver's 8 calls, done 60 ms after its event is recorded, is looked at about 60
 * times (every 100 us: some 600), and its completion is still seen within a few ms. */
START_TEST(the_event_poller_backs_off_while_nothing_completes) {
  setup_paths();
  char trace[] = "/tmp/c4-shim-XXXXXX", queries[] = "/tmp/c4-shim-q-XXXXXX", cmd[4096];
  close(mkstemp(trace));
  close(mkstemp(queries));
  snprintf(cmd, sizeof cmd,
           "C4_TRACE=%s C4_CUDART=%s/tests/libc4-test-double-cudart.so C4_FAKE_CUDA_DELAY_MS=60 "
           "C4_FAKE_CUDA_QUERIES=%s LD_PRELOAD=%s/lib/libc4-preload.so %s/tests/fake_nccl_driver",
           trace, build, queries, build, build);
  run(cmd);
  FILE *f = fopen(queries, "r");
  unsigned long n = 0;
  ck_assert_int_eq(fscanf(f, "%lu", &n), 1);
  fclose(f);
  json_t *colls = lines_of(trace, "coll"), *c;
  size_t i, timed = 0;
  json_array_foreach(colls, i, c) {
    if (json_is_null(json_object_get(c, "t_done"))) continue; /* the call NCCL refused */
    timed++;
    ck_assert_int_ge(T(c, "t_done") - T(c, "t_enqueued"), 60000000);
    /* the poller's 1 ms naps, plus a loaded 2-core machine's scheduling: not the 10 ms idle nap */
    ck_assert_int_lt(T(c, "t_done") - T(c, "t_enqueued"), 100000000);
  }
  ck_assert_int_eq(timed, 8);
  ck_assert_msg(n < timed * 120, "%lu queries for %zu events", n, timed);
  json_decref(colls);
  unlink(trace);
  unlink(queries);
}
END_TEST

/* The shim's TLS is carved out of every thread's stack: threads with small stacks must still
 * start, and group calls made by several threads at once must each wait for their own thread's
 * outermost ncclGroupEnd. */
START_TEST(small_stack_threads_start_and_group_calls_from_several_threads_are_recorded) {
  setup_paths();
  char trace[] = "/tmp/c4-shim-XXXXXX", cmd[2048];
  close(mkstemp(trace));
  snprintf(cmd, sizeof cmd,
           "C4_TRACE=%s C4_CUDART=%s/tests/libc4-test-double-cudart.so C4_FAKE_CUDA_DELAY_MS=20 "
           "LD_PRELOAD=%s/lib/libc4-preload.so %s/tests/fake_nccl_threads",
           trace, build, build, build);
  const char *out = run(cmd);
  for (int i = 0; i < 4; i++) {
    char line[32];
    snprintf(line, sizeof line, "thread %d 0\n", i);
    ck_assert_ptr_nonnull(strstr(out, line));
  }
  /* not "create 22" (EINVAL): a 32 KB stack holds the process's static TLS */
  ck_assert_ptr_nonnull(strstr(out, "create 0\ncreate 0\ncreate 0\ncreate 0\n"));
  json_t *colls = lines_of(trace, "coll");
  for (int rank = 0; rank < 4; rank++)
    for (long seq = 0; seq < 20; seq++) { /* per rank: Send, Recv, Send, ... in call order */
      json_t *c = call(colls, seq % 2 ? "Recv" : "Send", seq, rank);
      ck_assert_msg(c != NULL, "rank %d seq %ld missing", rank, seq);
      ck_assert_int_eq(T(c, "root"), seq % 2 ? (rank + 3) % 4 : (rank + 1) % 4);
      ck_assert_int_ge(T(c, "t_done") - T(c, "t_enqueued"), 15000000); /* after the group end */
    }
  json_decref(colls);
  unlink(trace);
}
END_TEST

int main(void) {
  Suite *s = suite_create("preload");
  TCase *tc = tcase_create("shim");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, every_call_and_return_code_reaches_the_real_nccl_unchanged);
  tcase_add_test(tc, collectives_are_recorded_with_arrival_and_cuda_event_completion);
  tcase_add_test(tc, init_rank_scalable_communicators_are_recorded);
  tcase_add_test(tc, init_rank_scalable_without_it_in_nccl_is_an_error_not_a_crash);
  tcase_add_test(tc, timing_off_passes_every_call_through_and_a_bad_value_is_refused_aloud);
  tcase_add_test(tc, with_the_profiler_plugin_active_the_shim_stands_down_with_one_warning);
  tcase_add_test(tc, the_event_poller_backs_off_while_nothing_completes);
  tcase_add_test(tc, small_stack_threads_start_and_group_calls_from_several_threads_are_recorded);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
