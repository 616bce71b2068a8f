/* test_telemetry.c -- the C4_TRACE writer: header, one JSON line per record with every field,
 * a summary that accounts for drops, no crash when the trace cannot be opened, C4_TIMING, and
 * forked children. Each test runs in its own process (Check's fork mode), so the per-process
 * singleton starts fresh. */
#include <arpa/inet.h>
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_clock.h"
#include "c4_record.h"
#include "c4_reporter.h"
#include "c4_telemetry.h"

static char path[64];

static void use_trace_file(void) {
  strcpy(path, "/tmp/c4-test-trace-XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  setenv("C4_TRACE", path, 1);
  setenv("C4_DEBUG", "NONE", 1);
}

static struct c4_xfer_record record(uint64_t seq) {
  struct c4_xfer_record r = {.version = C4_RECORD_VERSION,
                             .dir = C4_DIR_RECV,
                             .tag = 3,
                             .conn_id = 0xabcdef0123456789ull,
                             .nccl_comm = 0x42,
                             .seq = seq,
                             .bytes = 1000 + seq,
                             .t_posted = 10,
                             .t_first_byte = 20,
                             .t_done = 30 + seq};
  strcpy(r.self.host, "me");
  r.self.pid = 1;
  r.self.rank = 0;
  strcpy(r.peer.host, "node-9");
  r.peer.pid = 99;
  r.peer.rank = 9;
  r.peer.dev = 2;
  return r;
}

/* Reads the trace at file back: returns the number of lines, fills the header, the xfer count,
 * the first xfer and the summary (NULL when absent; the caller owns them). */
static int read_file_back(const char *file, json_t **header, int *xfers, json_t **summary,
                          json_t **first_xfer) {
  FILE *f = fopen(file, "r");
  ck_assert_ptr_nonnull(f);
  char line[4096];
  int n = 0;
  *xfers = 0;
  *header = *summary = *first_xfer = NULL;
  while (fgets(line, sizeof line, f)) {
    json_error_t e;
    json_t *j = json_loads(line, 0, &e);
    ck_assert_msg(j != NULL, "line %d is not JSON: %s", n + 1, e.text);
    ck_assert_int_eq(json_integer_value(json_object_get(j, "v")), 1);
    const char *type = json_string_value(json_object_get(j, "type"));
    ck_assert_ptr_nonnull(type);
    if (!strcmp(type, "header"))
      *header = j;
    else if (!strcmp(type, "summary"))
      *summary = j;
    else if (!strcmp(type, "xfer") && (*xfers)++ == 0)
      *first_xfer = j;
    else
      json_decref(j);
    n++;
  }
  fclose(f);
  return n;
}

static int read_back(json_t **header, int *xfers, json_t **summary, json_t **first_xfer) {
  return read_file_back(path, header, xfers, summary, first_xfer);
}

/* The child's exit status, waiting up to 40 s: under `make test` its exit runs LeakSanitizer's
 * check, and a CI run once saw a child not exit within 10 s (the suite allows 60 s a test). A
 * child still running after 40 s is killed (-1), and where it waited is printed (its kernel wait
 * channel and state). */
static int wait_child(pid_t child) {
  for (int i = 0; i < 4000; i++) {
    int st;
    if (waitpid(child, &st, WNOHANG) == child) return WIFEXITED(st) ? WEXITSTATUS(st) : -2;
    nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
  }
  char cmd[128];
  snprintf(cmd, sizeof cmd, "cat /proc/%d/wchan; echo; grep -E '^(State|Threads)' /proc/%d/status",
           (int)child, (int)child);
  fprintf(stderr, "the child %d did not exit within 40 s:\n", (int)child);
  if (system(cmd) != 0) fprintf(stderr, "(its /proc entries could not be read)\n");
  kill(child, SIGKILL);
  waitpid(child, NULL, 0);
  return -1;
}

static void free_all(json_t *a, json_t *b, json_t *c) {
  json_decref(a);
  json_decref(b);
  json_decref(c);
}

START_TEST(every_record_becomes_one_json_line_with_all_its_fields) {
  use_trace_file();
  ck_assert_int_eq(c4_telemetry_start(), 0);
  for (uint64_t i = 0; i < 100; i++) {
    struct c4_xfer_record r = record(i);
    c4_telemetry_emit_xfer(&r);
  }
  c4_telemetry_flush_and_stop();
  json_t *h, *s, *x;
  int xfers;
  int lines = read_back(&h, &xfers, &s, &x);
  ck_assert_int_eq(lines, 102);
  ck_assert_int_eq(xfers, 100);
  ck_assert_ptr_nonnull(h);
  ck_assert_int_eq(json_integer_value(json_object_get(h, "pid")), getpid());
  ck_assert_str_eq(json_string_value(json_object_get(x, "conn")), "abcdef0123456789");
  ck_assert_str_eq(json_string_value(json_object_get(x, "comm")), "0000000000000042");
  ck_assert_str_eq(json_string_value(json_object_get(x, "dir")), "recv");
  ck_assert_str_eq(json_string_value(json_object_get(x, "status")), "ok");
  ck_assert_int_eq(json_integer_value(json_object_get(x, "seq")), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(x, "bytes")), 1000);
  ck_assert_int_eq(json_integer_value(json_object_get(x, "t_post")), 10);
  ck_assert_int_eq(json_integer_value(json_object_get(x, "t_first")), 20);
  ck_assert_int_eq(json_integer_value(json_object_get(x, "t_done")), 30);
  ck_assert_int_eq(json_integer_value(json_object_get(x, "rank")), 0);
  ck_assert_str_eq(json_string_value(json_object_get(x, "host")), "me");
  ck_assert_int_eq(json_integer_value(json_object_get(x, "peer")), 9);
  ck_assert_str_eq(json_string_value(json_object_get(x, "peer_host")), "node-9");
  ck_assert_int_eq(json_integer_value(json_object_get(x, "peer_pid")), 99);
  ck_assert_int_eq(json_integer_value(json_object_get(x, "peer_dev")), 2);
  ck_assert_int_eq(json_integer_value(json_object_get(s, "written")), 100);
  ck_assert_int_eq(json_integer_value(json_object_get(s, "dropped")), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(s, "unwritten")), 0);
  ck_assert_int_gt(json_integer_value(json_object_get(s, "wall_ns")), 0);
  json_decref(h);
  json_decref(s);
  json_decref(x);
  unlink(path);
}
END_TEST

START_TEST(unknown_times_and_comms_are_null_and_pending_requests_say_so) {
  use_trace_file();
  ck_assert_int_eq(c4_telemetry_start(), 0);
  struct c4_xfer_record r = record(0);
  r.nccl_comm = 0;
  r.t_first_byte = 0;
  r.t_done = 0;
  r.status = C4_XFER_PENDING;
  c4_telemetry_emit_xfer(&r);
  c4_telemetry_flush_and_stop();
  json_t *h, *s, *x;
  int xfers;
  read_back(&h, &xfers, &s, &x);
  ck_assert_int_eq(xfers, 1);
  ck_assert(json_is_null(json_object_get(x, "comm")));
  ck_assert(json_is_null(json_object_get(x, "t_first")));
  ck_assert(json_is_null(json_object_get(x, "t_done")));
  ck_assert_str_eq(json_string_value(json_object_get(x, "status")), "pending");
  json_decref(h);
  json_decref(s);
  json_decref(x);
  unlink(path);
}
END_TEST

START_TEST(a_full_ring_drops_records_and_the_summary_says_how_many) {
  use_trace_file();
  setenv("C4_RING_SLOTS", "16", 1);
  for (uint64_t i = 0; i < 100; i++) { /* before the writer runs: nothing drains */
    struct c4_xfer_record r = record(i);
    c4_telemetry_emit_xfer(&r);
  }
  uint64_t emitted, dropped, written;
  c4_telemetry_counters(&emitted, &dropped, &written, NULL);
  ck_assert_uint_eq(emitted, 100);
  ck_assert_uint_eq(dropped, 84);
  c4_telemetry_start();
  c4_telemetry_flush_and_stop();
  json_t *h, *s, *x;
  int xfers;
  read_back(&h, &xfers, &s, &x);
  ck_assert_int_eq(xfers, 16);
  ck_assert_int_eq(json_integer_value(json_object_get(x, "seq")), 0); /* the oldest are kept */
  ck_assert_int_eq(json_integer_value(json_object_get(s, "dropped")), 84);
  ck_assert_int_eq(json_integer_value(json_object_get(s, "emitted")), 100);
  json_decref(h);
  json_decref(s);
  json_decref(x);
  unlink(path);
}
END_TEST

START_TEST(a_trace_path_that_cannot_be_opened_costs_the_trace_not_the_job) {
  setenv("C4_TRACE", "/proc/c4-no-such-dir/trace.jsonl", 1);
  setenv("C4_DEBUG", "NONE", 1);
  ck_assert_int_eq(c4_telemetry_start(), 0);
  struct c4_xfer_record r = record(1);
  c4_telemetry_emit_xfer(&r);
  c4_telemetry_flush_and_stop();
  c4_telemetry_flush_and_stop(); /* twice is fine */
  uint64_t emitted, written;
  c4_telemetry_counters(&emitted, NULL, &written, NULL);
  ck_assert_uint_eq(emitted, 1);
  ck_assert_uint_eq(written, 0);
}
END_TEST

START_TEST(a_bad_ring_size_falls_back_to_the_default) {
  setenv("C4_RING_SLOTS", "1000", 1); /* not a power of two */
  setenv("C4_DEBUG", "NONE", 1);
  ck_assert_ptr_nonnull(c4_telemetry_ring());
  for (int i = 0; i < 1000; i++) {
    struct c4_xfer_record r = record((uint64_t)i);
    c4_telemetry_emit_xfer(&r);
  }
  uint64_t dropped;
  c4_telemetry_counters(NULL, &dropped, NULL, NULL);
  ck_assert_uint_eq(dropped, 0); /* 16384 slots, not 1000 */
}
END_TEST

START_TEST(a_directory_as_trace_path_costs_the_trace_not_the_job) {
  char dir[] = "/tmp/c4-test-dir-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  setenv("C4_TRACE", dir, 1);
  setenv("C4_DEBUG", "NONE", 1);
  ck_assert_int_eq(c4_telemetry_start(), 0);
  for (uint64_t i = 0; i < 3; i++) {
    struct c4_xfer_record r = record(i);
    c4_telemetry_emit_xfer(&r);
  }
  c4_telemetry_flush_and_stop();
  c4_telemetry_flush_and_stop();
  uint64_t emitted, dropped, written;
  c4_telemetry_counters(&emitted, &dropped, &written, NULL);
  ck_assert_uint_eq(emitted, 3);
  ck_assert_uint_eq(dropped, 0);
  ck_assert_uint_eq(written, 0);
  DIR *d = opendir(dir); /* nothing was created inside it either */
  ck_assert_ptr_nonnull(d);
  int entries = 0;
  for (struct dirent *e; (e = readdir(d));)
    entries += strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
  closedir(d);
  ck_assert_int_eq(entries, 0);
  rmdir(dir);
}
END_TEST

/* Writes that fail (/dev/full: ENOSPC) write no record line: each is counted unwritten, none
 * written (every one was counted written, as the lines were gathered, not as they reached the
 * file), and the stop says how many on stderr, where the summary line cannot go. */
START_TEST(record_lines_a_full_disk_refused_are_counted_unwritten) {
  setenv("C4_TRACE", "/dev/full", 1);
  setenv("C4_DEBUG", "WARN", 1);
  char err_path[] = "/tmp/c4-test-stderr-XXXXXX";
  int err_fd = mkstemp(err_path);
  ck_assert_int_ge(err_fd, 0);
  int saved = dup(2);
  dup2(err_fd, 2);
  ck_assert_int_eq(c4_telemetry_start(), 0);
  for (uint64_t i = 0; i < 10; i++) {
    struct c4_xfer_record r = record(i);
    c4_telemetry_emit_xfer(&r);
  }
  c4_telemetry_flush_and_stop();
  dup2(saved, 2);
  close(saved);
  uint64_t emitted, dropped, written, unwritten;
  c4_telemetry_counters(&emitted, &dropped, &written, &unwritten);
  ck_assert_uint_eq(emitted, 10);
  ck_assert_uint_eq(dropped, 0);
  ck_assert_uint_eq(written, 0);
  ck_assert_uint_eq(unwritten, 10);
  char text[1024] = "";
  ck_assert_int_ge(pread(err_fd, text, sizeof text - 1, 0), 0);
  close(err_fd);
  unlink(err_path);
  ck_assert_msg(strstr(text, "10 of 10 record lines did not reach the file"), "stderr: %s", text);
}
END_TEST

/* Lines a write refused (past RLIMIT_FSIZE: EFBIG, as a full disk's ENOSPC) are the summary's
 * unwritten, not its written, when the file takes lines again by the end. */
START_TEST(the_summary_counts_refused_record_lines_unwritten) {
  use_trace_file();
  signal(SIGXFSZ, SIG_IGN);                  /* the write fails with EFBIG instead */
  ck_assert_int_eq(c4_telemetry_start(), 0); /* the header is written */
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  ck_assert_int_gt(st.st_size, 0);
  struct rlimit was, full;
  ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &was), 0);
  full = (struct rlimit){(rlim_t)st.st_size, was.rlim_max};
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &full), 0);
  for (uint64_t i = 0; i < 10; i++) {
    struct c4_xfer_record r = record(i);
    c4_telemetry_emit_xfer(&r);
  }
  uint64_t written = 0, unwritten = 0;
  for (int i = 0; i < 500 && written + unwritten < 10; i++) { /* the writer drains every 10 ms */
    nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
    c4_telemetry_counters(NULL, NULL, &written, &unwritten);
  }
  ck_assert_int_eq(setrlimit(RLIMIT_FSIZE, &was), 0);
  c4_telemetry_flush_and_stop();
  json_t *h, *s, *x;
  int xfers;
  ck_assert_int_eq(read_back(&h, &xfers, &s, &x), 2); /* the header and the summary */
  ck_assert_int_eq(xfers, 0);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(json_integer_value(json_object_get(s, "emitted")), 10);
  ck_assert_int_eq(json_integer_value(json_object_get(s, "written")), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(s, "unwritten")), 10);
  free_all(h, s, x);
  unlink(path);
}
END_TEST

/* A write that stopped inside a line (the file's limit 100 bytes past the header) leaves that
 * line cut off; the next lines must not be glued to it: before, the first of them was, could not
 * be read back, and was counted written. The cut-off part is one bad line, every line counted
 * written reads back, and the summary counts the rest unwritten. */
START_TEST(a_line_cut_off_by_a_failed_write_glues_no_later_line_to_it) {
  use_trace_file();
  signal(SIGXFSZ, SIG_IGN);
  ck_assert_int_eq(c4_telemetry_start(), 0);
  struct stat st;
  ck_assert_int_eq(stat(path, &st), 0);
  struct rlimit was, full;
  ck_assert_int_eq(getrlimit(RLIMIT_FSIZE, &was), 0);
  full = (struct rlimit){(rlim_t)st.st_size + 100, was.rlim_max};
  /* no assertion while the limit holds: check's own messages go through a file too */
  int limited = setrlimit(RLIMIT_FSIZE, &full), lifted = 0;
  uint64_t written = 0, unwritten = 0;
  for (uint64_t i = 0; i < 15; i++) {
    if (i == 10) { /* the first ten drained into the limit, then the file takes lines again */
      for (int k = 0; k < 500 && written + unwritten < 10; k++) {
        nanosleep(&(struct timespec){.tv_nsec = 10000000}, NULL);
        c4_telemetry_counters(NULL, NULL, &written, &unwritten);
      }
      lifted = setrlimit(RLIMIT_FSIZE, &was);
    }
    struct c4_xfer_record r = record(i);
    c4_telemetry_emit_xfer(&r);
  }
  ck_assert_int_eq(limited, 0);
  ck_assert_int_eq(lifted, 0);
  c4_telemetry_flush_and_stop();
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  char line[4096];
  int xfers = 0, bad = 0;
  json_t *summary = NULL;
  while (fgets(line, sizeof line, f)) {
    json_t *j = json_loads(line, 0, NULL);
    const char *type = json_string_value(json_object_get(j, "type"));
    bad += !j;
    xfers += type && !strcmp(type, "xfer");
    if (type && !strcmp(type, "summary")) summary = json_incref(j);
    json_decref(j);
  }
  fclose(f);
  ck_assert_int_eq(bad, 1);
  ck_assert_int_eq(xfers, 5);
  ck_assert_ptr_nonnull(summary);
  ck_assert_int_eq(json_integer_value(json_object_get(summary, "written")), 5);
  ck_assert_int_eq(json_integer_value(json_object_get(summary, "unwritten")), 10);
  json_decref(summary);
  unlink(path);
}
END_TEST

/* A program that blocks a signal to collect it with sigtimedwait gets it, also when c4's writer
 * thread started before the program blocked it: a signal sent to the process goes to a thread that
 * does not block it, and c4's thread did not block it, so the signal's default action killed the
 * job. */
START_TEST(c4s_thread_takes_none_of_the_programs_signals) {
  use_trace_file();
  sigset_t usr1;
  sigemptyset(&usr1);
  sigaddset(&usr1, SIGUSR1);
  ck_assert_int_eq(c4_telemetry_start(), 0); /* the writer thread starts, then the program blocks */
  ck_assert_int_eq(pthread_sigmask(SIG_BLOCK, &usr1, NULL), 0);
  for (int i = 0; i < 20; i++) {
    ck_assert_int_eq(kill(getpid(), SIGUSR1), 0);
    struct timespec two_s = {2, 0};
    ck_assert_int_eq(sigtimedwait(&usr1, NULL, &two_s), SIGUSR1);
  }
  c4_telemetry_flush_and_stop();
  unlink(path);
}
END_TEST

START_TEST(stopping_a_writer_that_never_started_is_harmless) {
  unsetenv("C4_TRACE");
  unsetenv("C4_MONITOR");
  c4_telemetry_flush_and_stop();
  ck_assert_int_eq(c4_telemetry_start(), 0); /* nowhere to write: no thread */
  c4_telemetry_flush_and_stop();
  c4_telemetry_flush_and_stop();
  uint64_t written;
  c4_telemetry_counters(NULL, NULL, &written, NULL);
  ck_assert_uint_eq(written, 0);
}
END_TEST

START_TEST(timing_is_on_unless_c4_timing_is_0) {
  unsetenv("C4_TIMING");
  ck_assert(c4_telemetry_enabled());
}
END_TEST

START_TEST(c4_timing_0_turns_timing_off_and_is_read_once) {
  setenv("C4_TIMING", "0", 1);
  ck_assert(!c4_telemetry_enabled());
  setenv("C4_TIMING", "1", 1); /* cached: later changes are not seen */
  ck_assert(!c4_telemetry_enabled());
}
END_TEST

START_TEST(a_forked_child_that_exits_writes_nothing_into_the_parents_trace) {
  use_trace_file();
  ck_assert_int_eq(c4_telemetry_start(), 0);
  for (uint64_t i = 0; i < 5; i++) {
    struct c4_xfer_record r = record(i);
    c4_telemetry_emit_xfer(&r);
  }
  pid_t child = fork();
  ck_assert_int_ge(child, 0);
  if (child == 0) exit(0); /* runs the inherited atexit flush and stdio's flush */
  ck_assert_int_eq(wait_child(child), 0);
  c4_telemetry_flush_and_stop();
  json_t *h, *s, *x;
  int xfers;
  ck_assert_int_eq(read_back(&h, &xfers, &s, &x), 7); /* header, 5 xfers, one summary */
  ck_assert_int_eq(xfers, 5);
  ck_assert_ptr_nonnull(s);
  ck_assert_int_eq(json_integer_value(json_object_get(s, "pid")), getpid());
  ck_assert_int_eq(json_integer_value(json_object_get(s, "written")), 5);
  free_all(h, s, x);
  unlink(path);
}
END_TEST

START_TEST(a_forked_child_traces_on_its_own_without_the_parents_records) {
  use_trace_file();
  for (uint64_t i = 0; i < 5; i++) { /* still in the ring when the child is forked */
    struct c4_xfer_record r = record(i);
    c4_telemetry_emit_xfer(&r);
  }
  char child_path[sizeof path + 8];
  snprintf(child_path, sizeof child_path, "%s.child", path);
  pid_t child = fork();
  ck_assert_int_ge(child, 0);
  if (child == 0) {
    setenv("C4_TRACE", child_path, 1);
    c4_telemetry_start();
    for (uint64_t i = 100; i < 102; i++) {
      struct c4_xfer_record r = record(i);
      c4_telemetry_emit_xfer(&r);
    }
    exit(0); /* the atexit flush writes the child's summary */
  }
  ck_assert_int_eq(wait_child(child), 0);
  json_t *h, *s, *x;
  int xfers;
  ck_assert_int_eq(read_file_back(child_path, &h, &xfers, &s, &x), 4);
  ck_assert_int_eq(xfers, 2);
  ck_assert_int_eq(json_integer_value(json_object_get(h, "pid")), child);
  ck_assert_int_eq(json_integer_value(json_object_get(x, "seq")), 100);
  ck_assert_int_eq(json_integer_value(json_object_get(s, "pid")), child);
  ck_assert_int_eq(json_integer_value(json_object_get(s, "emitted")), 2);
  ck_assert_int_eq(json_integer_value(json_object_get(s, "written")), 2);
  free_all(h, s, x);
  unlink(child_path);

  c4_telemetry_start(); /* the parent's records are still its own */
  c4_telemetry_flush_and_stop();
  ck_assert_int_eq(read_back(&h, &xfers, &s, &x), 7);
  ck_assert_int_eq(xfers, 5);
  ck_assert_int_eq(json_integer_value(json_object_get(x, "seq")), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(s, "emitted")), 5);
  ck_assert_int_eq(json_integer_value(json_object_get(s, "written")), 5);
  free_all(h, s, x);
  unlink(path);
}
END_TEST

/* C4_MONITOR naming an address nothing listens on: once a connect has failed and none ever
 * succeeded, the exit does not wait out its timeout (every process of a job paid it, 1 s). */
START_TEST(a_c4mon_never_reached_is_not_waited_for_at_exit) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&a, &len), 0);
  close(fd); /* the port is free again: connects are refused */
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", ntohs(a.sin_port));
  setenv("C4_MONITOR", addr, 1);
  setenv("C4_TOKEN", "t", 1);
  ck_assert_int_eq(c4_reporter_init(), 1);
  struct c4_reporter_stats st = {0};
  for (int i = 0; i < 2000 && !st.failures; i++) { /* the first connect, refused */
    c4_reporter_tick(c4_now_ns());
    c4_reporter_stats(&st);
    usleep(1000);
  }
  ck_assert_uint_gt(st.failures, 0);
  uint64_t t0 = c4_now_ns();
  c4_reporter_finish(5000);
  double waited = (double)(c4_now_ns() - t0) * 1e-9;
  ck_assert_msg(waited < 1.0, "waited %.2f s of 5 for a c4mon never reached", waited);
  unsetenv("C4_MONITOR");
}
END_TEST

/* The descriptor of this process whose /proc link reads target, or -1. */
static int fd_of(const char *target) {
  int found = -1;
  DIR *d = opendir("/proc/self/fd");
  struct dirent *e;
  while (d && (e = readdir(d))) {
    char link[300], to[256];
    snprintf(link, sizeof link, "/proc/self/fd/%s", e->d_name);
    ssize_t n = readlink(link, to, sizeof to - 1);
    if (n <= 0) continue;
    to[n] = 0;
    if (!strcmp(to, target)) found = atoi(e->d_name);
  }
  if (d) closedir(d);
  return found;
}

/* The program closes every descriptor it did not open while c4 traces, and opens its own file,
 * which takes the trace's number: c4's lines do not go into it, nor does c4 close it. */
START_TEST(a_descriptor_the_program_took_over_gets_no_trace_lines_and_stays_open) {
  use_trace_file();
  ck_assert_int_eq(c4_telemetry_start(), 0);
  int fd = fd_of(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  char mine[] = "/tmp/c4-test-program-XXXXXX";
  int own = mkstemp(mine); /* the lowest free number: the trace's */
  ck_assert_int_eq(own, fd);
  for (uint64_t i = 0; i < 50; i++) {
    struct c4_xfer_record r = record(i);
    c4_telemetry_emit_xfer(&r);
  }
  c4_telemetry_flush_and_stop();
  struct stat st;
  ck_assert_int_eq(fstat(own, &st), 0); /* still open: c4 did not close the program's file */
  ck_assert_int_eq(st.st_size, 0);
  close(own);
  unlink(mine);
  unlink(path);
}
END_TEST

/* A listening socket standing for c4mon (it accepts, and says nothing), and C4_MONITOR naming it.
 */
static int fake_c4mon(void) {
  int l = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  ck_assert_int_eq(bind(l, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(l, 8), 0);
  ck_assert_int_eq(getsockname(l, (struct sockaddr *)&a, &len), 0);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", ntohs(a.sin_port));
  setenv("C4_MONITOR", addr, 1);
  setenv("C4_TOKEN", "t", 1);
  setenv("C4_DEBUG", "NONE", 1);
  return l;
}

/* An accepted connection within 3 s, or -1. */
static int accept_within_3s(int l) {
  struct timeval tv = {3, 0};
  setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return accept(l, NULL, NULL);
}

/* The program dup2s its own socket over c4's connection to c4mon: c4 reads none of the
 * program's bytes from it, writes none into it and does not close it; it connects again. */
START_TEST(a_socket_the_program_put_over_c4s_is_left_to_the_program) {
  int l = fake_c4mon();
  ck_assert_int_eq(c4_reporter_init(), 1);
  int c1 = -1;
  for (int i = 0; i < 300 && c1 < 0; i++) { /* the connect, started by a tick */
    c4_reporter_tick(c4_now_ns());
    struct timeval tv = {0, 10000};
    setsockopt(l, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    c1 = accept(l, NULL, NULL);
  }
  ck_assert_int_ge(c1, 0);
  int mine = -1; /* c4's socket: the one whose peer is the listener's port */
  struct sockaddr_in peer, lname;
  socklen_t pl = sizeof peer, ll = sizeof lname;
  getsockname(l, (struct sockaddr *)&lname, &ll);
  for (int fd = 3; fd < 1024; fd++)
    if (getpeername(fd, (struct sockaddr *)&peer, &pl) == 0 && peer.sin_port == lname.sin_port &&
        fd != c1) {
      mine = fd;
      break;
    }
  ck_assert_int_ge(mine, 0);
  int sp[2];
  ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sp), 0);
  ck_assert_int_eq(dup2(sp[0], mine), mine); /* the program's socket, at c4's number */
  ck_assert_int_eq(write(sp[1], "program", 7), 7);
  struct c4_xfer_record x = record(1);
  struct c4_record r = {.kind = C4_REC_XFER, .xfer = x};
  c4_reporter_push(&r);
  for (int i = 0; i < 50; i++) {
    c4_reporter_tick(c4_now_ns());
    usleep(2000);
  }
  char got[16];
  ck_assert_int_eq(recv(mine, got, sizeof got, MSG_DONTWAIT), 7);   /* its bytes still there */
  ck_assert_int_eq(recv(sp[1], got, sizeof got, MSG_DONTWAIT), -1); /* nothing of c4's came */
  ck_assert_int_eq(errno, EAGAIN);
  int c2 = accept_within_3s(l); /* c4 connects again on a socket of its own */
  for (int i = 0; i < 300 && c2 < 0; i++) {
    c4_reporter_tick(c4_now_ns());
    c2 = accept_within_3s(l);
  }
  ck_assert_int_ge(c2, 0);
  c4_reporter_finish(0);
  ck_assert_int_ge(fcntl(mine, F_GETFD), 0); /* and never closed the program's socket */
  close(mine);
  close(sp[0]);
  close(sp[1]);
  close(c1);
  close(c2);
  close(l);
  unsetenv("C4_MONITOR");
}
END_TEST

/* A forked child that streams connects to c4mon on its own; it does not go on with the
 * parent's connection (whose frames and the child's mixed, and c4mon dropped both). */
START_TEST(a_forked_child_streams_on_a_connection_of_its_own) {
  int l = fake_c4mon();
  ck_assert_int_eq(c4_telemetry_start(), 0); /* the writer thread connects */
  int c1 = accept_within_3s(l);
  ck_assert_int_ge(c1, 0);
  pid_t child = fork();
  ck_assert_int_ge(child, 0);
  if (child == 0) {
    c4_telemetry_start();
    struct c4_xfer_record x = record(7);
    c4_telemetry_emit_xfer(&x);
    usleep(300000); /* time to connect: the parent's listener accepts it */
    _exit(0);
  }
  int c2 = accept_within_3s(l);
  ck_assert_int_eq(wait_child(child), 0);
  ck_assert_msg(c2 >= 0, "the child did not connect on its own");
  close(c2);
  close(c1);
  c4_telemetry_flush_and_stop();
  close(l);
  unsetenv("C4_MONITOR");
}
END_TEST

/* Three processes given one C4_TRACE (a launcher that exported it to every rank): lines of the
 * three interleave, but none is torn (through stdio's 4 KiB buffer, 2,053 of 55,961 were). */
START_TEST(processes_sharing_one_trace_file_write_whole_lines) {
  use_trace_file();
  pid_t kids[3];
  for (int k = 0; k < 3; k++) {
    kids[k] = fork();
    ck_assert_int_ge(kids[k], 0);
    if (kids[k] == 0) {
      c4_telemetry_start();
      for (uint64_t i = 0; i < 15000; i++) {
        struct c4_xfer_record r = record(i);
        c4_telemetry_emit_xfer(&r);
        if (i % 4096 == 0) usleep(2000); /* the ring drains: records are written, not dropped */
      }
      exit(0);
    }
  }
  for (int k = 0; k < 3; k++)
    ck_assert_int_eq(wait_child(kids[k]), 0);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  char *line = NULL;
  size_t cap = 0;
  long lines = 0, bad = 0;
  while (getline(&line, &cap, f) > 0) {
    json_t *j = json_loads(line, 0, NULL);
    bad += !j;
    lines++;
    json_decref(j);
  }
  free(line);
  fclose(f);
  ck_assert_int_gt(lines, 3 * 5000);
  ck_assert_msg(bad == 0, "%ld of %ld lines torn", bad, lines);
  unlink(path);
}
END_TEST

int main(void) {
  Suite *s = suite_create("telemetry");
  TCase *tc = tcase_create("trace");
  tcase_set_timeout(tc, 60); /* three processes of 15,000 records each, under ASan on 2 cores */
  tcase_add_test(tc, every_record_becomes_one_json_line_with_all_its_fields);
  tcase_add_test(tc, unknown_times_and_comms_are_null_and_pending_requests_say_so);
  tcase_add_test(tc, a_full_ring_drops_records_and_the_summary_says_how_many);
  tcase_add_test(tc, a_trace_path_that_cannot_be_opened_costs_the_trace_not_the_job);
  tcase_add_test(tc, a_bad_ring_size_falls_back_to_the_default);
  tcase_add_test(tc, a_directory_as_trace_path_costs_the_trace_not_the_job);
  tcase_add_test(tc, record_lines_a_full_disk_refused_are_counted_unwritten);
  tcase_add_test(tc, the_summary_counts_refused_record_lines_unwritten);
  tcase_add_test(tc, a_line_cut_off_by_a_failed_write_glues_no_later_line_to_it);
  tcase_add_test(tc, stopping_a_writer_that_never_started_is_harmless);
  tcase_add_test(tc, timing_is_on_unless_c4_timing_is_0);
  tcase_add_test(tc, c4_timing_0_turns_timing_off_and_is_read_once);
  tcase_add_test(tc, a_forked_child_that_exits_writes_nothing_into_the_parents_trace);
  tcase_add_test(tc, a_forked_child_traces_on_its_own_without_the_parents_records);
  tcase_add_test(tc, a_c4mon_never_reached_is_not_waited_for_at_exit);
  tcase_add_test(tc, c4s_thread_takes_none_of_the_programs_signals);
  tcase_add_test(tc, a_descriptor_the_program_took_over_gets_no_trace_lines_and_stays_open);
  tcase_add_test(tc, a_socket_the_program_put_over_c4s_is_left_to_the_program);
  tcase_add_test(tc, a_forked_child_streams_on_a_connection_of_its_own);
  tcase_add_test(tc, processes_sharing_one_trace_file_write_whole_lines);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
