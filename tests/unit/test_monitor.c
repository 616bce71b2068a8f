/* test_monitor.c -- a job's telemetry streamed to a real c4mon (build/bin/c4mon, run as its own
 * process): records arrive and are recorded, a wrong token is refused while the job goes on,
 * garbage on one connection closes only that one, and a c4mon killed mid-run is survived: the
 * reporter reconnects to its successor and delivers what it held. */
#include <arpa/inet.h>
#include <check.h>
#include <fcntl.h>
#include <jansson.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_clock.h"
#include "c4_frame.h"
#include "c4_reporter.h"
#include "c4_telemetry.h"
#include "mon_gate.h"

static char build[512], addr[64], mon_token[64];
static int port;

static int free_port(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  bind(fd, (struct sockaddr *)&a, sizeof a);
  getsockname(fd, (struct sockaddr *)&a, &len);
  close(fd);
  return ntohs(a.sin_port);
}

static void setup(void) {
  const char *b = getenv("C4_BUILD_DIR");
  snprintf(build, sizeof build, "%s", b ? b : "build");
  port = free_port();
  snprintf(addr, sizeof addr, "127.0.0.1:%d", port);
  setenv("C4_MONITOR", addr, 1);
  setenv("C4_JOB", "job-a", 1);
  setenv("C4_HEARTBEAT_MS", "50", 1);
  setenv("C4_DEBUG", "NONE", 1);
  unsetenv("C4_TRACE");
}

static pid_t start_c4mon(const char *token, const char *record) {
  snprintf(mon_token, sizeof mon_token, "%s", token);
  pid_t pid = fork();
  if (pid == 0) {
    char bin[600];
    snprintf(bin, sizeof bin, "%s/bin/c4mon", build);
    execl(bin, "c4mon", "serve", "--listen", addr, "--token", token, "--record", record, NULL);
    _exit(127);
  }
  return pid;
}

/* c4mon's status document (asked with c4mon's token, whatever the job's is), or NULL when it
 * does not answer. */
static json_t *status(void) {
  char cmd[900];
  snprintf(cmd, sizeof cmd, "C4_TOKEN='%s' %s/bin/c4mon status --connect %s --json 2>/dev/null",
           mon_token, build, addr);
  FILE *p = popen(cmd, "r");
  char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, p);
  buf[n] = 0;
  pclose(p);
  return json_loads(buf, 0, NULL);
}

static long long stat_of(const char *field) {
  json_t *s = status();
  long long v = s ? (long long)json_integer_value(json_object_get(s, field)) : -1;
  json_decref(s);
  return v;
}

/* Waits up to ms for a status field to reach at least want (asking 5 times a second: c4mon
 * answers at most MON_GATE_STATUS_PER_S STATUS requests a second). */
static long long wait_for(const char *field, long long want, int ms) {
  long long v = -1;
  for (int i = 0; i < ms / 200; i++) {
    if ((v = stat_of(field)) >= want) break;
    usleep(200000);
  }
  return v;
}

static void emit(int n, uint64_t first_seq) {
  for (int i = 0; i < n; i++) {
    struct c4_xfer_record r = {.version = C4_RECORD_VERSION,
                               .seq = first_seq + (uint64_t)i,
                               .bytes = 4096,
                               .t_posted = c4_now_ns(),
                               .t_done = c4_now_ns()};
    strcpy(r.self.host, "h");
    strcpy(r.peer.host, "p");
    c4_telemetry_emit_xfer(&r);
  }
}

static int lines_in(const char *path, const char *needle) {
  FILE *f = fopen(path, "r");
  char line[4096];
  int n = 0;
  while (f && fgets(line, sizeof line, f))
    n += strstr(line, needle) != NULL;
  if (f) fclose(f);
  return n;
}

/* What the reporter hands over when c4mon pushes a plan (telemetry thread). */
static char pushed[4096];
static atomic_int npushed;

static void on_plan(const char *json, size_t len) {
  if (len >= sizeof pushed) len = sizeof pushed - 1;
  memcpy(pushed, json, len);
  pushed[len] = 0;
  atomic_fetch_add(&npushed, 1);
}

static void write_file(const char *path, const char *text) {
  char tmp[300];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  ck_assert_int_eq(rename(tmp, path), 0);
}

static int wait_pushes(int want, int ms) {
  for (int i = 0; i < ms / 20 && atomic_load(&npushed) < want; i++)
    usleep(20000);
  return atomic_load(&npushed);
}

static void stop_c4mon(pid_t pid) {
  kill(pid, SIGTERM);
  waitpid(pid, NULL, 0);
}

START_TEST(records_reach_c4mon_and_are_recorded_in_its_clock) {
  setup();
  char rec[] = "/tmp/c4-mon-rec-XXXXXX";
  close(mkstemp(rec));
  pid_t mon = start_c4mon("s3cret", rec);
  setenv("C4_TOKEN", "s3cret", 1);
  ck_assert_int_ge(wait_for("accepted", 0, 3000), 0); /* c4mon is up */
  c4_telemetry_start();
  emit(1000, 0);
  ck_assert_int_ge(wait_for("records", 1000, 5000), 1000);
  ck_assert_int_eq(stat_of("ranks_connected"), 1);
  json_t *s = status();
  json_t *r0 = json_array_get(json_object_get(s, "ranks"), 0);
  ck_assert_str_eq(json_string_value(json_object_get(r0, "job")), "job-a");
  json_int_t off = json_integer_value(json_object_get(r0, "clock_offset_ns"));
  ck_assert_int_lt(off < 0 ? -off : off, 5000000); /* one host, one clock: offset near 0 */
  json_decref(s);
  c4_telemetry_flush_and_stop();
  ck_assert_int_ge(wait_for("clean_exits", 1, 3000), 1);
  stop_c4mon(mon);
  ck_assert_int_eq(lines_in(rec, "\"type\":\"xfer\""), 1000);
  ck_assert_int_ge(lines_in(rec, "\"type\":\"hb\""), 1); /* heartbeats are recorded too */
  struct c4_reporter_stats st;
  c4_reporter_stats(&st);
  ck_assert_uint_eq(st.sent, 1000);
  ck_assert_uint_eq(st.dropped, 0);
  unlink(rec);
}
END_TEST

/* c4mon serve --plan: a rank gets its own host's flows when it connects, and again, within a
 * couple of seconds, when the plan file changes; other hosts' flows stay at c4mon. */
START_TEST(c4mon_pushes_each_rank_its_hosts_flows_of_the_plan_and_its_changes) {
  setup();
  setenv("C4_HOSTNAME", "push-host", 1);
  char plan[] = "/tmp/c4-mon-plan-XXXXXX";
  close(mkstemp(plan));
  write_file(
      plan,
      "{\"v\":1,\"paths\":[],\"flows\":[{\"src\":\"push-host\",\"dst\":\"b\",\"src_port\":50001},"
      "{\"src\":\"other\",\"dst\":\"push-host\",\"src_port\":50002}]}");
  snprintf(mon_token, sizeof mon_token, "t");
  pid_t mon = fork();
  if (mon == 0) {
    char bin[600];
    snprintf(bin, sizeof bin, "%s/bin/c4mon", build);
    execl(bin, "c4mon", "serve", "--listen", addr, "--token", "t", "--plan", plan, "--events",
          "/dev/null", NULL);
    _exit(127);
  }
  setenv("C4_TOKEN", "t", 1);
  ck_assert_int_ge(wait_for("accepted", 0, 3000), 0);
  c4_reporter_on_plan(on_plan);
  c4_telemetry_start();
  ck_assert_int_eq(wait_pushes(1, 5000), 1);
  ck_assert_ptr_nonnull(strstr(pushed, "\"src_port\":50001"));
  ck_assert_ptr_null(strstr(pushed, "50002"));
  write_file(plan, "{\"v\":1,\"paths\":[],\"flows\":[{\"src\":\"push-host\",\"dst\":\"b\",\"src_"
                   "port\":50003}]}");
  ck_assert_int_eq(wait_pushes(2, 5000), 2);
  ck_assert_ptr_nonnull(strstr(pushed, "50003"));
  write_file(plan, "{\"v\": not json");
  usleep(1500 * 1000); /* a broken rewrite is not pushed: the ranks keep the last good plan */
  ck_assert_int_eq(atomic_load(&npushed), 2);
  ck_assert_int_eq(stat_of("ranks_connected"), 1);
  c4_telemetry_flush_and_stop();
  stop_c4mon(mon);
  unlink(plan);
}
END_TEST

START_TEST(a_wrong_token_is_refused_and_the_job_goes_on) {
  setup();
  char rec[] = "/tmp/c4-mon-rec-XXXXXX";
  close(mkstemp(rec));
  pid_t mon = start_c4mon("s3cret", rec);
  setenv("C4_TOKEN", "guess", 1);
  ck_assert_int_ge(wait_for("accepted", 0, 3000), 0);
  c4_telemetry_start();
  emit(100, 0);
  ck_assert_int_ge(wait_for("rejected", 1, 3000), 1);
  uint64_t t0 = c4_now_ns();
  c4_telemetry_flush_and_stop(); /* gives up after its 1 s grace: never hangs the job */
  ck_assert_uint_lt(c4_now_ns() - t0, 3000000000ull);
  ck_assert_int_eq(stat_of("records"), 0);
  struct c4_reporter_stats st;
  c4_reporter_stats(&st);
  ck_assert_uint_eq(st.sent, 0);
  ck_assert_uint_eq(st.dropped, 100); /* counted, not lost silently */
  stop_c4mon(mon);
  ck_assert_int_eq(lines_in(rec, "xfer"), 0);
  unlink(rec);
}
END_TEST

START_TEST(garbage_on_one_connection_closes_only_that_one) {
  setup();
  char rec[] = "/tmp/c4-mon-rec-XXXXXX";
  close(mkstemp(rec));
  pid_t mon = start_c4mon("s3cret", rec);
  setenv("C4_TOKEN", "s3cret", 1);
  ck_assert_int_ge(wait_for("accepted", 0, 3000), 0);
  c4_telemetry_start();
  emit(200, 0);
  ck_assert_int_ge(wait_for("records", 200, 5000), 200);
  for (int k = 0; k < 3; k++) { /* garbage header; a forged hello; a frame that lies about size */
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    ck_assert_int_eq(connect(fd, (struct sockaddr *)&a, sizeof a), 0);
    uint8_t junk[200];
    memset(junk, k == 0 ? 0x5a : 0, sizeof junk);
    if (k == 1) memcpy(junk, "\x43\x34\x02\x02\x90\x00\x00\x00", 8); /* HELLO, 144 zero bytes */
    if (k == 2) memcpy(junk, "\x43\x34\x02\x04\xff\xff\xff\x7f", 8); /* RECORDS of 2 GiB */
    ck_assert_int_eq(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
    char b[256];
    ssize_t got;
    while ((got = read(fd, b, sizeof b)) > 0) {
    } /* c4mon closes it */
    close(fd);
  }
  emit(200, 200);
  ck_assert_int_ge(wait_for("records", 400, 5000), 400); /* the real rank was not disturbed */
  ck_assert_int_ge(stat_of("rejected") + stat_of("bad_frames"), 3);
  ck_assert_int_eq(stat_of("ranks_connected"), 1);
  c4_telemetry_flush_and_stop();
  stop_c4mon(mon);
  unlink(rec);
}
END_TEST

START_TEST(a_c4mon_killed_mid_run_is_survived_and_its_successor_gets_the_backlog) {
  setup();
  char rec1[] = "/tmp/c4-mon-rec-XXXXXX", rec2[] = "/tmp/c4-mon-rec-XXXXXX";
  close(mkstemp(rec1));
  close(mkstemp(rec2));
  setenv("C4_TOKEN", "s3cret", 1);
  pid_t mon = start_c4mon("s3cret", rec1);
  ck_assert_int_ge(wait_for("accepted", 0, 3000), 0);
  c4_telemetry_start();
  emit(100, 0);
  ck_assert_int_ge(wait_for("records", 100, 5000), 100);
  kill(mon, SIGKILL);
  waitpid(mon, NULL, 0);
  uint64_t t0 = c4_now_ns();
  emit(100, 100); /* while c4mon is gone: the job does not wait */
  ck_assert_uint_lt(c4_now_ns() - t0, 50000000ull);
  usleep(300000);
  mon = start_c4mon("s3cret", rec2);
  emit(100, 200);
  ck_assert_int_ge(wait_for("records", 200, 10000), 200); /* the backlog and the new ones */
  c4_telemetry_flush_and_stop();
  stop_c4mon(mon);
  struct c4_reporter_stats st;
  c4_reporter_stats(&st);
  ck_assert_uint_ge(st.connects, 2);
  ck_assert_uint_ge(st.failures, 1);
  ck_assert_uint_eq(st.dropped, 0);
  ck_assert_int_eq(lines_in(rec1, "xfer") + lines_in(rec2, "xfer"), 300);
  unlink(rec1);
  unlink(rec2);
}
END_TEST

START_TEST(a_restarted_c4mon_is_told_the_jobs_communicators_again) {
  setup();
  char rec1[] = "/tmp/c4-mon-rec-XXXXXX", rec2[] = "/tmp/c4-mon-rec-XXXXXX";
  close(mkstemp(rec1));
  close(mkstemp(rec2));
  setenv("C4_TOKEN", "s3cret", 1);
  pid_t mon = start_c4mon("s3cret", rec1);
  ck_assert_int_ge(wait_for("accepted", 0, 3000), 0);
  c4_telemetry_start();
  struct c4_record r = {.kind = C4_REC_COMM};
  r.comm = (struct c4_comm_record){
      .comm = 0xc0ffee, .rank = 0, .nranks = 2, .nnodes = 2, .pid = 7, .t = c4_now_ns()};
  strcpy(r.comm.name, "world");
  strcpy(r.comm.host, "comm-host");
  c4_telemetry_emit(&r);
  emit(10, 0);
  ck_assert_int_ge(wait_for("records", 11, 5000), 11);
  kill(mon, SIGKILL);
  waitpid(mon, NULL, 0);
  mon = start_c4mon("s3cret", rec2);
  emit(10, 10);
  ck_assert_int_ge(wait_for("records", 11, 10000), 11);
  c4_telemetry_flush_and_stop();
  stop_c4mon(mon);
  ck_assert_int_eq(lines_in(rec1, "comm-host"), 1);
  ck_assert_int_eq(lines_in(rec2, "comm-host"), 1); /* re-announced to the successor */
  unlink(rec1);
  unlink(rec2);
}
END_TEST

/* Opens a connection to c4mon and answers its challenge with a HELLO for job under token; returns
 * the fd with the WELCOME's status in *refused, or -1. */
static int raw_rank(const char *token, const char *job, int *refused) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)port),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  struct timeval tv = {.tv_sec = 5};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  if (connect(fd, (struct sockaddr *)&a, sizeof a) != 0) return -1;
  uint8_t hdr[C4_FRAME_HDR], ch[C4_FRAME_CHALLENGE_SIZE], nonce[C4_FRAME_NONCE], w[2];
  int type;
  uint32_t len;
  uint64_t t;
  if (recv(fd, hdr, sizeof hdr, MSG_WAITALL) != sizeof hdr ||
      c4_frame_get_header(hdr, &type, &len) || recv(fd, ch, len, MSG_WAITALL) != (ssize_t)len ||
      c4_frame_get_challenge(ch, len, nonce, &t))
    return -1;
  struct c4_hello h = {.pid = 42, .rank = 3};
  snprintf(h.job, sizeof h.job, "%s", job);
  strcpy(h.host, "raw-host");
  uint8_t msg[C4_FRAME_HDR + 256];
  c4_frame_put_header(msg, C4_FRAME_HELLO, (uint32_t)c4_frame_hello_size());
  c4_frame_put_hello(msg + C4_FRAME_HDR, &h, nonce, token);
  if (send(fd, msg, C4_FRAME_HDR + c4_frame_hello_size(), MSG_NOSIGNAL) < 0 ||
      recv(fd, hdr, sizeof hdr, MSG_WAITALL) != sizeof hdr || recv(fd, w, 2, MSG_WAITALL) != 2)
    return -1;
  *refused = w[0];
  return fd;
}

/* Sends one frame of type with payload p (n bytes); 0 or -1. */
static int send_frame(int fd, int type, const void *p, size_t n) {
  uint8_t hdr[C4_FRAME_HDR];
  c4_frame_put_header(hdr, type, (uint32_t)n);
  return send(fd, hdr, sizeof hdr, MSG_NOSIGNAL) == sizeof hdr &&
                 send(fd, p, n, MSG_NOSIGNAL) == (ssize_t)n
             ? 0
             : -1;
}

/* 1 once c4mon has closed fd (within 3 s). */
static int closed_by_c4mon(int fd) {
  char b[256];
  ssize_t k;
  while ((k = recv(fd, b, sizeof b, 0)) > 0) {
  }
  return k == 0;
}

START_TEST(offsets_times_and_counts_at_their_extremes_close_the_rank_not_c4mon) {
  setup();
  char rec[] = "/tmp/c4-mon-rec-XXXXXX";
  close(mkstemp(rec));
  pid_t mon = start_c4mon("s3cret", rec);
  ck_assert_int_ge(wait_for("accepted", 0, 3000), 0);
  int refused = 1;
  /* a heartbeat claiming a clock offset of INT64_MIN */
  int fd = raw_rank("s3cret", "job-x", &refused);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(refused, 0);
  struct c4_heartbeat hb = {.t = c4_now_ns(), .offset = INT64_MIN};
  uint8_t b[C4_FRAME_HEARTBEAT_SIZE];
  c4_frame_put_heartbeat(b, &hb);
  ck_assert_int_eq(send_frame(fd, C4_FRAME_HEARTBEAT, b, sizeof b), 0);
  ck_assert_int_eq(closed_by_c4mon(fd), 1);
  close(fd);
  /* a RECORDS frame with a good record, then one whose time is UINT64_MAX: dropped whole */
  fd = raw_rank("s3cret", "job-x", &refused);
  ck_assert_int_ge(fd, 0);
  uint8_t frame[1024];
  struct c4_record r = {.kind = C4_REC_LINK};
  r.link.conn_id = 0x600d;
  r.link.t = c4_now_ns();
  size_t used = 2;
  used += c4_frame_put_record(frame + used, sizeof frame - used, &r);
  r.link.conn_id = 0xbad;
  r.link.t = UINT64_MAX;
  used += c4_frame_put_record(frame + used, sizeof frame - used, &r);
  frame[0] = 2;
  frame[1] = 0;
  ck_assert_int_eq(send_frame(fd, C4_FRAME_RECORDS, frame, used), 0);
  ck_assert_int_eq(closed_by_c4mon(fd), 1);
  close(fd);
  ck_assert_int_ge(wait_for("bad_frames", 2, 3000), 2);
  ck_assert_int_eq(stat_of("records"), 0); /* the good record went with its frame */
  stop_c4mon(mon);
  ck_assert_int_eq(lines_in(rec, "600d"), 0);
  ck_assert_int_eq(lines_in(rec, "\"t\":-"), 0);
  unlink(rec);
}
END_TEST

START_TEST(refusals_are_logged_escaped_and_rate_limited_and_status_needs_the_token) {
  setup();
  char log[] = "/tmp/c4-mon-log-XXXXXX";
  int lfd = mkstemp(log);
  pid_t mon = fork();
  if (mon == 0) {
    dup2(lfd, 2);
    char bin[600];
    snprintf(bin, sizeof bin, "%s/bin/c4mon", build);
    setenv("C4_DEBUG", "WARN", 1);
    execl(bin, "c4mon", "serve", "--listen", addr, "--token", "s3cret", "--events", "/dev/null",
          NULL);
    _exit(127);
  }
  close(lfd);
  snprintf(mon_token, sizeof mon_token, "s3cret");
  ck_assert_int_ge(wait_for("accepted", 0, 3000), 0);
  for (int i = 0; i < 200; i++) { /* 200 forged HELLOs whose job name carries a log line */
    int refused = 0, fd = raw_rank("guess", "j\nc4 WARN forged line", &refused);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(refused, 1);
    close(fd);
  }
  /* STATUS: refused without the token, answered with it */
  snprintf(mon_token, sizeof mon_token, "guess");
  ck_assert_ptr_null(status());
  snprintf(mon_token, sizeof mon_token, "s3cret");
  ck_assert_int_ge(wait_for("rejected", 201, 3000), 201);
  usleep(1200000); /* the second of the refusals ends: its left-out lines are counted */
  stop_c4mon(mon);
  FILE *f = fopen(log, "r");
  char line[4096];
  int forged = 0;
  while (f && fgets(line, sizeof line, f))
    forged += strncmp(line, "c4 WARN forged", 14) == 0; /* a line of its own */
  if (f) fclose(f);
  ck_assert_int_eq(forged, 0);
  int escaped = lines_in(log, "j\\x0ac4 WARN forged line");
  ck_assert_int_ge(escaped, 1);
  ck_assert_int_le(escaped, 3 * MON_GATE_LOG_PER_S); /* 200 refusals in well under 3 s */
  ck_assert_int_ge(lines_in(log, "more refusals were not logged"), 1);
  unlink(log);
}
END_TEST

/* Writes a trace of n xfer records whose completions span span_ms, plus one bad line. */
static void make_trace(const char *path, int n, int span_ms) {
  FILE *f = fopen(path, "w");
  uint64_t t0 = 1000000000ull;
  for (int i = 0; i < n; i++) {
    uint64_t t = t0 + (uint64_t)i * (uint64_t)span_ms * 1000000ull / (uint64_t)(n - 1);
    fprintf(f,
            "{\"v\":1,\"type\":\"xfer\",\"comm\":null,\"rank\":0,\"peer\":1,\"host\":\"a\","
            "\"peer_host\":\"b\",\"dir\":\"send\",\"bytes\":8,\"t_post\":%llu,\"t_first\":null,"
            "\"t_done\":%llu,\"conn\":\"0000000000000001\",\"seq\":%d,\"tag\":0,\"status\":\"ok\","
            "\"pid\":1,\"peer_pid\":2,\"dev\":0,\"peer_dev\":0}\n",
            (unsigned long long)t, (unsigned long long)t, i);
    if (i == n / 2) fprintf(f, "{\"v\":1,\"type\":\"xfer\"}\n"); /* missing fields */
  }
  fclose(f);
}

static json_t *run_replay(const char *trace, const char *out, const char *speed, double *secs) {
  char cmd[1400];
  snprintf(cmd, sizeof cmd, "%s/bin/c4mon replay %s --out %s --speed %s --json 2>/dev/null", build,
           trace, out, speed);
  uint64_t t0 = c4_now_ns();
  FILE *p = popen(cmd, "r");
  static char buf[65536];
  size_t n = fread(buf, 1, sizeof buf - 1, p);
  buf[n] = 0;
  ck_assert_int_eq(pclose(p), 0);
  *secs = (double)(c4_now_ns() - t0) / 1e9;
  return json_loads(buf, 0, NULL);
}

START_TEST(replay_feeds_a_trace_through_the_pipeline_fast_or_at_its_recorded_pace) {
  setup();
  char trace[] = "/tmp/c4-replay-in-XXXXXX", out[] = "/tmp/c4-replay-out-XXXXXX";
  close(mkstemp(trace));
  close(mkstemp(out));
  make_trace(trace, 200, 400);
  double fast, paced;
  json_t *r = run_replay(trace, out, "0", &fast);
  ck_assert_ptr_nonnull(r);
  ck_assert_int_eq(json_integer_value(json_object_get(r, "records")), 200);
  ck_assert_int_eq(json_integer_value(json_object_get(r, "bad_lines")), 1);
  json_decref(r);
  ck_assert_int_eq(lines_in(out, "\"job\":\"replay\""), 200);
  r = run_replay(trace, out, "1", &paced); /* 400 ms of recorded time at recorded pace */
  json_decref(r);
  ck_assert_msg(paced >= 0.38, "paced replay took %.3f s", paced);
  ck_assert_msg(fast < paced, "fast %.3f s, paced %.3f s", fast, paced);
  unlink(trace);
  unlink(out);
}
END_TEST

START_TEST(windows_name_the_ranks_missing_from_a_collective_and_the_last_to_arrive) {
  setup();
  char trace[] = "/tmp/c4-win-in-XXXXXX", out[] = "/tmp/c4-win-out-XXXXXX";
  close(mkstemp(trace));
  close(mkstemp(out));
  FILE *f = fopen(trace, "w");
  for (int seq = 0; seq < 100; seq++)
    for (int rank = 0; rank < 4; rank++) {
      if (seq == 99 && rank == 3) continue; /* rank 3 never enters collective 99 */
      long long arrive = 1000000 + seq * 1000 + (seq == 98 && rank == 2 ? 900 : rank);
      fprintf(f,
              "{\"v\":1,\"type\":\"coll\",\"comm\":\"00000000000000c4\",\"rank\":%d,"
              "\"nranks\":4,\"seq\":%d,\"func\":\"AllReduce\",\"p2p\":false,\"count\":1,"
              "\"bytes\":4,\"root\":-1,\"datatype\":\"ncclFloat32\",\"algo\":\"\",\"proto\":\"\","
              "\"nchannels\":1,\"nops\":1,\"t_arrive\":%lld,\"t_enqueued\":%lld,\"t_done\":%lld}\n",
              rank, seq, arrive, arrive + 1, arrive + 500);
    }
  fprintf(f, "{\"v\":1,\"type\":\"coll\",\"comm\":\"00000000000000c4\",\"rank\":0,\"nranks\":4,"
             "\"seq\":10,\"func\":\"AllReduce\",\"p2p\":false,\"count\":1,\"bytes\":4,\"root\":-1,"
             "\"datatype\":\"x\",\"algo\":\"\",\"proto\":\"\",\"nchannels\":1,\"nops\":1,"
             "\"t_arrive\":1,\"t_enqueued\":1,\"t_done\":null}\n"); /* long gone from the window */
  fclose(f);
  double secs;
  json_t *r = run_replay(trace, out, "0", &secs);
  ck_assert_ptr_nonnull(r);
  json_t *w = json_object_get(r, "windows");
  ck_assert_int_eq(json_integer_value(json_object_get(w, "comms_tracked")), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(w, "late_records")), 1);
  json_t *c = json_array_get(json_object_get(w, "comms"), 0);
  ck_assert_int_eq(json_integer_value(json_object_get(c, "nranks")), 4);
  ck_assert_int_eq(json_integer_value(json_object_get(c, "newest_seq")), 99);
  json_t *inc = json_object_get(c, "oldest_incomplete");
  ck_assert_int_eq(json_integer_value(json_object_get(inc, "seq")), 99);
  json_t *missing = json_object_get(inc, "missing_ranks");
  ck_assert_int_eq(json_array_size(missing), 1);
  ck_assert_int_eq(json_integer_value(json_array_get(missing, 0)), 3);
  json_t *done = json_object_get(c, "newest_complete");
  ck_assert_int_eq(json_integer_value(json_object_get(done, "seq")), 98);
  ck_assert_int_eq(json_integer_value(json_object_get(done, "last_to_arrive")), 2);
  json_decref(r);
  unlink(trace);
  unlink(out);
}
END_TEST

int main(void) {
  signal(SIGPIPE, SIG_IGN);
  Suite *s = suite_create("monitor");
  TCase *tc = tcase_create("stream");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, records_reach_c4mon_and_are_recorded_in_its_clock);
  tcase_add_test(tc, a_wrong_token_is_refused_and_the_job_goes_on);
  tcase_add_test(tc, c4mon_pushes_each_rank_its_hosts_flows_of_the_plan_and_its_changes);
  tcase_add_test(tc, garbage_on_one_connection_closes_only_that_one);
  tcase_add_test(tc, a_c4mon_killed_mid_run_is_survived_and_its_successor_gets_the_backlog);
  tcase_add_test(tc, a_restarted_c4mon_is_told_the_jobs_communicators_again);
  tcase_add_test(tc, offsets_times_and_counts_at_their_extremes_close_the_rank_not_c4mon);
  tcase_add_test(tc, refusals_are_logged_escaped_and_rate_limited_and_status_needs_the_token);
  tcase_add_test(tc, replay_feeds_a_trace_through_the_pipeline_fast_or_at_its_recorded_pace);
  tcase_add_test(tc, windows_name_the_ranks_missing_from_a_collective_and_the_last_to_arrive);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
