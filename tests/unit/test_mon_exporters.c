/* test_mon_exporters.c -- c4mon's three exporters against real sockets and real processes: the
 * Prometheus endpoint over plain-socket HTTP, --on-event commands run by /bin/sh, and the
 * subscription port with subscribers that read, connect late, never read, or are too many. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_clock.h"
#include "c4_err.h"
#include "mon_actions.h"
#include "mon_metrics.h"
#include "mon_subscribe.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static void sleep_ms(int ms) {
  nanosleep(&(struct timespec){.tv_sec = ms / 1000, .tv_nsec = (ms % 1000) * 1000000L}, NULL);
}

/* A connected TCP socket to 127.0.0.1:port, reads time out after 5 s; rcvbuf > 0 shrinks its
 * receive buffer first. -1 when the connection is refused. */
static int connect_to(int port, int rcvbuf) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  ck_assert_int_ge(fd, 0);
  if (rcvbuf > 0) setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  struct timeval tv = {.tv_sec = 5};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
    close(fd);
    return -1;
  }
  return fd;
}

/* Sends one HTTP/1.0 request and returns the whole response (malloc'd; the server closes). */
static char *http(int port, const char *method, const char *path) {
  int fd = connect_to(port, 0);
  ck_assert_msg(fd >= 0, "cannot connect to the metrics port %d", port);
  char req[256];
  int n = snprintf(req, sizeof req, "%s %s HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n", method, path);
  ck_assert_int_eq(write(fd, req, (size_t)n), n);
  size_t cap = 1 << 16, have = 0;
  char *buf = malloc(cap);
  ssize_t k;
  while ((k = read(fd, buf + have, cap - 1 - have)) > 0) {
    have += (size_t)k;
    if (cap - 1 - have < 4096) buf = realloc(buf, cap *= 2);
  }
  buf[have] = 0;
  close(fd);
  return buf;
}

static int count_of(const char *hay, const char *needle) {
  int n = 0;
  for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
    n++;
  return n;
}

/* ---- metrics ---------------------------------------------------------------------------- */

/* A detection state (det.h's schema): rank 0 on host n"0 (a quote to escape), rank 1 slow, rank 2
 * lost and never heard; 4 NICs with n0/0 sending slowly; one active comm_slow verdict. */
static json_t *state(void) {
  json_error_t err;
  json_t *st = json_loads(
      "{\"t\":5000000000,\"ranks\":["
      "{\"job\":\"j\",\"rank\":0,\"host\":\"n\\\"0\",\"slowdown\":1.0,\"last_hb_ns\":4000000000,"
      "\"entered\":123456789,\"done\":123456789,\"lost\":false},"
      "{\"job\":\"j\",\"rank\":1,\"host\":\"n1\",\"slowdown\":2.5,\"last_hb_ns\":4900000000,"
      "\"entered\":7,\"done\":6,\"lost\":false},"
      "{\"job\":\"j\",\"rank\":2,\"host\":\"a\\\\b\\nc\",\"slowdown\":1.0,\"last_hb_ns\":0,"
      "\"entered\":0,\"done\":0,\"lost\":true}],"
      "\"matrix\":{\"job\":\"j\",\"nodes\":[\"n0/0\",\"n1/0\",\"n2/0\",\"n3/0\"],"
      "\"cells\":[[0,1,2.6,9],[0,2,2.4,11],[1,2,1.0,9],[2,3,1.0,9],[3,0,1.05,9],[7,0,1,1]],"
      "\"rows\":[2.5,1,1,1],\"cols\":[1,1,1.5,1],\"t\":5000000000},"
      "\"verdicts\":[{\"v\":1,\"id\":1,\"kind\":\"comm_slow\",\"job\":\"j\",\"where\":\"nic_tx\"}],"
      "\"counts\":{}}",
      0, &err);
  ck_assert_msg(st != NULL, "test state: %s", err.text);
  return st;
}

START_TEST(metrics_serve_rank_link_nic_and_event_series_over_http) {
  ck_assert_int_eq(c4_mon_metrics_start("127.0.0.1:0"), 0);
  int port = c4_mon_metrics_port();
  ck_assert_int_gt(port, 0);
  char *before = http(port, "GET", "/metrics");
  ck_assert_msg(strstr(before, "200 OK") &&
                    strstr(before, "c4_build_info{version=\"" C4_VERSION "\"} 1\n"),
                "before any publish:\n%s", before);
  ck_assert_msg(!strstr(before, "c4_events_total{"), "event series before any job:\n%s", before);
  free(before);
  json_t *st = state(),
         *ev = json_pack("{s:s, s:s, s:i}", "kind", "comm_slow", "job", "j", "id", 1);
  json_t *odd = json_pack("{s:s, s:s}", "kind", "new\"kind", "job", "other job");
  json_t *status = json_pack("{s:i, s:i, s:i, s:i, s:i}", "records", 1234, "ranks_connected", 2,
                             "rejected", 3, "bad_frames", 4, "lost", 5);
  c4_mon_metrics_event(ev, "", NULL);
  c4_mon_metrics_event(ev, "", NULL);
  c4_mon_metrics_event(odd, "", NULL);
  c4_mon_metrics_publish(st, status);
  char *body = http(port, "GET", "/metrics");
  ck_assert_msg(strstr(body, "HTTP/1.0 200 OK") || strstr(body, "HTTP/1.1 200 OK"), "%s", body);
  ck_assert_ptr_nonnull(strstr(body, "Content-Type: text/plain; version=0.0.4"));
  const char *want[] = {
      "c4_records_total 1234\n",
      "c4_ranks_connected 2\n",
      "c4_rejected_total 3\n",
      "c4_bad_frames_total 4\n",
      "c4_ranks_lost_total 5\n",
      "c4_rank_slowdown{job=\"j\",rank=\"1\",host=\"n1\"} 2.5\n",
      "c4_rank_heartbeat_age_seconds{job=\"j\",rank=\"0\",host=\"n\\\"0\"} 1\n",
      "c4_rank_heartbeat_age_seconds{job=\"j\",rank=\"1\",host=\"n1\"} 0.1\n",
      "c4_rank_collectives_entered_total{job=\"j\",rank=\"0\",host=\"n\\\"0\"} 123456789\n",
      "c4_rank_collectives_done_total{job=\"j\",rank=\"1\",host=\"n1\"} 6\n",
      "c4_rank_lost{job=\"j\",rank=\"1\",host=\"n1\"} 0\n",
      "c4_rank_lost{job=\"j\",rank=\"2\",host=\"a\\\\b\\nc\"} 1\n",
      "c4_link_slowdown{job=\"j\",src=\"n0/0\",dst=\"n1/0\"} 2.6\n",
      "c4_link_samples{job=\"j\",src=\"n0/0\",dst=\"n2/0\"} 11\n",
      "c4_nic_tx_slowdown{job=\"j\",nic=\"n0/0\"} 2.5\n",
      "c4_nic_rx_slowdown{job=\"j\",nic=\"n2/0\"} 1.5\n",
      "c4_events_total{job=\"j\",kind=\"comm_slow\"} 2\n",
      "c4_events_total{job=\"j\",kind=\"straggler\"} 0\n",
      "c4_events_total{job=\"other job\",kind=\"new\\\"kind\"} 1\n",
      "c4_verdicts_active{job=\"j\",kind=\"comm_slow\"} 1\n",
      "c4_verdicts_active{job=\"j\",kind=\"rank_lost\"} 0\n",
      "# TYPE c4_rank_collectives_done_total counter\n",
      "c4_build_info{version=\"" C4_VERSION "\"} 1\n",
  };
  for (size_t i = 0; i < sizeof want / sizeof *want; i++)
    ck_assert_msg(strstr(body, want[i]), "missing %s in:\n%s", want[i], body);
  /* a rank never heard has no heartbeat age; a cell naming no node is left out */
  ck_assert_ptr_null(strstr(body, "c4_rank_heartbeat_age_seconds{job=\"j\",rank=\"2\""));
  ck_assert_int_eq(count_of(body, "c4_link_slowdown{"), 5);
  const char *families[] = {"c4_rank_slowdown",    "c4_link_slowdown",   "c4_nic_tx_slowdown",
                            "c4_events_total",     "c4_verdicts_active", "c4_records_total",
                            "c4_rank_lost",        "c4_link_samples",    "c4_nic_rx_slowdown",
                            "c4_ranks_lost_total", "c4_build_info"};
  for (size_t i = 0; i < sizeof families / sizeof *families; i++) {
    char t[128];
    snprintf(t, sizeof t, "# TYPE %s ", families[i]);
    ck_assert_msg(count_of(body, t) == 1, "%s: %d TYPE lines", families[i], count_of(body, t));
    snprintf(t, sizeof t, "# HELP %s ", families[i]);
    ck_assert_msg(count_of(body, t) == 1, "%s: %d HELP lines", families[i], count_of(body, t));
  }
  free(body);
  /* replay: no status, so no server series */
  c4_mon_metrics_publish(st, NULL);
  body = http(port, "GET", "/metrics");
  ck_assert_ptr_null(strstr(body, "c4_records_total"));
  ck_assert_ptr_nonnull(strstr(body, "c4_rank_slowdown{"));
  free(body);
  json_decref(st);
  json_decref(ev);
  json_decref(odd);
  json_decref(status);
  c4_mon_metrics_stop();
}
END_TEST

START_TEST(metrics_answer_404_elsewhere_405_to_other_methods_and_stop_closes_the_port) {
  ck_assert_int_eq(c4_mon_metrics_start("127.0.0.1:0"), 0);
  int port = c4_mon_metrics_port();
  char *r = http(port, "GET", "/");
  ck_assert_msg(strstr(r, " 404 "), "%s", r);
  free(r);
  r = http(port, "GET", "/metricsx");
  ck_assert_msg(strstr(r, " 404 "), "%s", r);
  free(r);
  r = http(port, "POST", "/metrics");
  ck_assert_msg(strstr(r, " 405 ") && strstr(r, "Allow: GET"), "%s", r);
  free(r);
  r = http(port, "DELETE", "/metrics");
  ck_assert_msg(strstr(r, " 405 "), "%s", r);
  free(r);
  r = http(port, "GET", "/metrics?x=1");
  ck_assert_msg(strstr(r, " 200 "), "%s", r);
  free(r);
  ck_assert_int_eq(c4_mon_metrics_start("127.0.0.1:0"), C4_EINVAL); /* one per process */
  c4_mon_metrics_stop();
  ck_assert_int_eq(c4_mon_metrics_port(), 0);
  ck_assert_int_eq(connect_to(port, 0), -1);
  ck_assert_ptr_null(c4_mon_metrics_text());
}
END_TEST

START_TEST(metrics_refuse_a_bad_address_and_a_port_in_use) {
  ck_assert_int_eq(c4_mon_metrics_start("nonsense"), C4_EINVAL);
  ck_assert_int_eq(c4_mon_metrics_start("127.0.0.1:notaport"), C4_EINVAL);
  ck_assert_int_eq(c4_mon_metrics_start("127.0.0.1:0"), 0);
  char addr[64];
  snprintf(addr, sizeof addr, "127.0.0.1:%d", c4_mon_metrics_port());
  int port = c4_mon_metrics_port();
  c4_mon_metrics_stop();
  int fd = socket(AF_INET, SOCK_STREAM, 0); /* someone else holds the port now */
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  ck_assert_int_eq(listen(fd, 1), 0);
  ck_assert_int_eq(c4_mon_metrics_start(addr), C4_ESYS);
  close(fd);
  ck_assert_int_eq(c4_mon_subscribe_start(addr), 0); /* free again: both bind it */
  c4_mon_subscribe_stop();
}
END_TEST

START_TEST(metrics_text_stops_at_100000_series_and_says_how_many_were_left_out) {
  ck_assert_int_eq(c4_mon_metrics_start("127.0.0.1:0"), 0);
  json_t *ranks = json_array();
  for (int i = 0; i < 20100; i++) /* 5 series each: 100,500 */
    json_array_append_new(ranks, json_pack("{s:s, s:i, s:s, s:f, s:I, s:i, s:i, s:b}", "job", "j",
                                           "rank", i, "host", "h", "slowdown", 1.0, "last_hb_ns",
                                           (json_int_t)1, "entered", 1, "done", 1, "lost", 0));
  json_t *st = json_pack("{s:I, s:o}", "t", (json_int_t)2000000000, "ranks", ranks);
  c4_mon_metrics_publish(st, NULL);
  char *text = c4_mon_metrics_text();
  ck_assert_ptr_nonnull(text);
  int series = 0;
  for (char *line = text; *line;) {
    char *end = strchr(line, '\n');
    ck_assert_ptr_nonnull(end);
    series += *line != '#';
    line = end + 1;
  }
  ck_assert_int_eq(series, 100000);
  /* c4_build_info and job j's 7 event and 5 verdict counters come first: 100,513 - 100,000 */
  ck_assert_msg(strstr(text, "# c4mon: 513 series left out (at most 100000 per scrape)\n"), "%s",
                strrchr(text, '#'));
  free(text);
  json_decref(st);
  c4_mon_metrics_stop();
}
END_TEST

/* ---- --on-event ---------------------------------------------------------------------------- */

static int lines_matching(const char *path, const char *what) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[8192];
  int n = 0;
  while (fgets(line, sizeof line, f))
    n += strstr(line, what) != NULL;
  fclose(f);
  return n;
}

static void act_emit(const char *kind, int id, size_t pad) {
  json_t *ev = json_pack("{s:i, s:i, s:s}", "v", 1, "id", id, "kind", kind);
  if (pad) {
    char *p = malloc(pad + 1);
    memset(p, 'x', pad);
    p[pad] = 0;
    json_object_set_new(ev, "detail", json_string(p));
    free(p);
  }
  char *line = json_dumps(ev, JSON_COMPACT);
  c4_mon_actions_event(ev, line, NULL);
  free(line);
  json_decref(ev);
}

START_TEST(on_event_feeds_each_command_its_line_and_env_and_runs_at_most_four_at_once) {
  char dir[] = "/tmp/c4-on-event-XXXXXX";
  ck_assert_ptr_nonnull(mkdtemp(dir));
  int inherited = open("/dev/null", O_RDONLY); /* not CLOEXEC: commands must not get it */
  ck_assert_int_ge(inherited, 3);
  char cmd[1024];
  /* each command notes how many commands run beside it, and its env and stdin */
  snprintf(cmd, sizeof cmd,
           "touch %s/run.$C4_EVENT_ID; ls %s | grep -c '^run' >> %s/concurrency; "
           "IFS= read -r l; printf '%%s|%%s|%%s\\n' \"$C4_EVENT_KIND\" \"$C4_EVENT_ID\" \"$l\" "
           ">> %s/out; sleep 0.2; rm %s/run.$C4_EVENT_ID; "
           "[ -e /proc/$$/fd/%d ] && echo leaked >> %s/out; "
           "[ $C4_EVENT_ID = 3 ] && exit 3; [ $C4_EVENT_ID = 5 ] && kill -TERM $$; exit 0",
           dir, dir, dir, dir, dir, inherited, dir);
  setenv("C4_EVENT_KIND", "stale", 1); /* c4mon's own must not leak into the command */
  ck_assert_int_eq(c4_mon_actions_start(cmd), 0);
  ck_assert_int_eq(c4_mon_actions_start(cmd), C4_EINVAL);
  uint64_t t0 = c4_now_ns();
  for (int i = 1; i <= 10; i++)
    act_emit("straggler", i, 0);
  ck_assert_msg(c4_now_ns() - t0 < 150000000ull, "emitting waited for the commands");
  c4_mon_actions_stop(15000);
  char out[256], conc[256];
  snprintf(out, sizeof out, "%s/out", dir);
  snprintf(conc, sizeof conc, "%s/concurrency", dir);
  ck_assert_int_eq(lines_matching(out, "straggler|"), 10);
  ck_assert_int_eq(lines_matching(out, "straggler|7|{\"v\":1,\"id\":7,\"kind\":\"straggler\"}"), 1);
  ck_assert_int_eq(lines_matching(out, "stale"), 0);
  ck_assert_int_eq(lines_matching(out, "leaked"), 0);
  close(inherited);
  int most = 0;
  FILE *f = fopen(conc, "r");
  ck_assert_ptr_nonnull(f);
  for (int n; fscanf(f, "%d", &n) == 1;)
    most = n > most ? n : most;
  fclose(f);
  ck_assert_msg(most >= 2 && most <= 4, "%d commands ran at once", most);
  ck_assert_uint_eq(c4_mon_actions_started(), 10);
  ck_assert_uint_eq(c4_mon_actions_failed(), 2); /* id 3 exits 3, id 5 is killed */
  ck_assert_uint_eq(c4_mon_actions_dropped(), 0);
  char rm[300];
  snprintf(rm, sizeof rm, "rm -rf %s", dir);
  ck_assert_int_eq(system(rm), 0);
  unsetenv("C4_EVENT_KIND");
}
END_TEST

START_TEST(on_event_queues_256_drops_past_that_and_survives_commands_that_never_read) {
  /* "exit 0" closes its stdin unread at once: a write after that would raise SIGPIPE */
  ck_assert_int_eq(c4_mon_actions_start("exit 0"), 0);
  uint64_t t0 = c4_now_ns();
  for (int i = 1; i <= 300; i++)
    act_emit("comm_slow", i, 3000);
  ck_assert_msg(c4_now_ns() - t0 < 2000000000ull, "300 events took %.2f s to hand over",
                (double)(c4_now_ns() - t0) / 1e9);
  ck_assert_uint_eq(c4_mon_actions_dropped(), 300 - 4 - 256);
  c4_mon_actions_stop(20000);
  ck_assert_uint_eq(c4_mon_actions_started(), 260);
  ck_assert_uint_eq(c4_mon_actions_failed(), 0);
  /* a stop that cannot wait: what is queued is dropped and counted, c4mon returns at once */
  ck_assert_int_eq(c4_mon_actions_start("sleep 2"), 0);
  for (int i = 1; i <= 6; i++)
    act_emit("comm_slow", i, 0);
  t0 = c4_now_ns();
  c4_mon_actions_stop(0);
  ck_assert_msg(c4_now_ns() - t0 < 500000000ull, "stop(0) waited");
  ck_assert_uint_eq(c4_mon_actions_dropped(), 2);
  ck_assert_int_eq(c4_mon_actions_start(""), C4_EINVAL);
}
END_TEST

/* ---- subscription port -------------------------------------------------------------------- */

static void sub_emit(const char *kind, int id, int clears, size_t pad) {
  json_t *ev = json_pack("{s:i, s:i, s:s}", "v", 1, "id", id, "kind", kind);
  if (clears) json_object_set_new(ev, "clears", json_integer(clears));
  if (pad) {
    char *p = malloc(pad + 1);
    memset(p, 'x', pad);
    p[pad] = 0;
    json_object_set_new(ev, "detail", json_string(p));
    free(p);
  }
  char *line = json_dumps(ev, JSON_COMPACT);
  c4_mon_subscribe_event(ev, line, NULL);
  free(line);
  json_decref(ev);
}

static void wait_clients(int n) {
  for (int i = 0; i < 500 && c4_mon_subscribe_clients() != n; i++)
    sleep_ms(10);
  ck_assert_int_eq(c4_mon_subscribe_clients(), n);
}

/* Reads until the text so far holds want (5 s at most per read). The text is kept in buf. */
static const char *read_until(int fd, const char *want, char *buf, size_t cap) {
  size_t have = 0;
  buf[0] = 0;
  while (!strstr(buf, want) && have < cap - 1) {
    ssize_t k = read(fd, buf + have, cap - 1 - have);
    if (k <= 0) break;
    have += (size_t)k;
    buf[have] = 0;
  }
  return buf;
}

START_TEST(subscribers_hear_events_live_and_late_ones_first_get_the_active_verdicts) {
  static char buf[1 << 16];
  ck_assert_int_eq(c4_mon_subscribe_start("127.0.0.1:0"), 0);
  int port = c4_mon_subscribe_port();
  ck_assert_int_gt(port, 0);
  int early = connect_to(port, 0);
  ck_assert_int_ge(early, 0);
  wait_clients(1);
  ck_assert_int_eq(write(early, "ignored\n", 8), 8); /* what subscribers send is ignored */
  sub_emit("straggler", 1, 0, 0);
  sub_emit("rank_lost", 2, 0, 0);
  sub_emit("recovered", 3, 1, 0);
  read_until(early, "\"id\":3", buf, sizeof buf);
  ck_assert_msg(!strcmp(buf, "{\"v\":1,\"id\":1,\"kind\":\"straggler\"}\n"
                             "{\"v\":1,\"id\":2,\"kind\":\"rank_lost\"}\n"
                             "{\"v\":1,\"id\":3,\"kind\":\"recovered\",\"clears\":1}\n"),
                "early subscriber read:\n%s", buf);
  int late = connect_to(port, 0);
  wait_clients(2);
  sub_emit("comm_slow", 4, 0, 0);
  read_until(late, "\"id\":4", buf, sizeof buf);
  ck_assert_msg(!strcmp(buf, "{\"v\":1,\"id\":2,\"kind\":\"rank_lost\",\"replay\":true}\n"
                             "{\"v\":1,\"id\":4,\"kind\":\"comm_slow\"}\n"),
                "late subscriber read:\n%s", buf);
  read_until(early, "\"id\":4", buf, sizeof buf);
  ck_assert_str_eq(buf, "{\"v\":1,\"id\":4,\"kind\":\"comm_slow\"}\n");
  /* the end of a subscriber's stream closes it */
  shutdown(late, SHUT_WR);
  wait_clients(1);
  ck_assert_int_eq(read(late, buf, sizeof buf), 0);
  close(late);
  close(early);
  wait_clients(0);
  c4_mon_subscribe_stop();
  ck_assert_int_eq(c4_mon_subscribe_port(), 0);
  ck_assert_int_eq(connect_to(port, 0), -1);
}
END_TEST

/* What a subscriber read: whole lines only, ids rising, and before each event notices that add up
 * to exactly the events missing since the one before. */
struct stream {
  int fd, max_read, pause_us; /* reads of at most max_read bytes, pause_us apart */
  long want_last;             /* read until this id */
  long events, dropped, notices, last;
  char err[256]; /* the first thing wrong, or "" */
};

static void *read_stream(void *arg) {
  struct stream *st = arg;
  size_t cap = 1 << 20, have = 0;
  char *buf = malloc(cap);
  long gap = 0;
  while (!st->err[0] && st->last < st->want_last) {
    size_t room = cap - have < (size_t)st->max_read ? cap - have : (size_t)st->max_read;
    ssize_t k = read(st->fd, buf + have, room);
    if (k <= 0) {
      snprintf(st->err, sizeof st->err, "the stream ended after event %ld: %s", st->last,
               k ? strerror(errno) : "EOF");
      break;
    }
    have += (size_t)k;
    char *p = buf, *nl;
    while (!st->err[0] && (nl = memchr(p, '\n', have - (size_t)(p - buf)))) {
      json_error_t e;
      json_t *j = json_loadb(p, (size_t)(nl - p), 0, &e);
      const char *kind = json_string_value(json_object_get(j, "kind"));
      long id = (long)json_integer_value(json_object_get(j, "id"));
      long count = (long)json_integer_value(json_object_get(j, "count"));
      if (!kind)
        snprintf(st->err, sizeof st->err, "a cut or broken line after event %ld: %s", st->last,
                 e.text);
      else if (!strcmp(kind, "dropped") && count <= 0)
        snprintf(st->err, sizeof st->err, "a dropped notice with count %ld", count);
      else if (!strcmp(kind, "dropped")) {
        st->dropped += count;
        gap += count;
        st->notices++;
      } else if (id - st->last - 1 != gap || json_object_get(j, "replay"))
        snprintf(st->err, sizeof st->err, "event %ld after %ld with %ld announced dropped%s", id,
                 st->last, gap, json_object_get(j, "replay") ? ", marked replay" : "");
      else {
        gap = 0;
        st->last = id;
        st->events++;
      }
      json_decref(j);
      p = nl + 1;
    }
    have -= (size_t)(p - buf);
    memmove(buf, p, have);
    if (st->pause_us) usleep((useconds_t)st->pause_us);
  }
  free(buf);
  return NULL;
}

/* Emits n events of pad bytes each (straggler and recovered in turn, so that the verdicts active
 * stay few); fails if one took longer than worst_ms (an emit that waited for a subscriber that
 * never reads would wait for good; the bound is what a loaded 2-core machine's scheduling may
 * stall one by: 207 ms was seen under `make test` with the sanitizers). Returns the seconds it
 * took. */
static double emit_many(int n, size_t pad, int worst_ms) {
  uint64_t t0 = c4_now_ns(), worst = 0;
  for (int i = 1; i <= n; i++) {
    uint64_t t = c4_now_ns();
    if (i % 2)
      sub_emit("straggler", i, 0, pad);
    else
      sub_emit("recovered", i, i - 1, pad);
    t = c4_now_ns() - t;
    worst = t > worst ? t : worst;
  }
  ck_assert_msg(worst < (uint64_t)worst_ms * 1000000ull, "one event took %.1f ms to emit",
                (double)worst / 1e6);
  return (double)(c4_now_ns() - t0) / 1e9;
}

START_TEST(a_subscriber_that_never_reads_never_slows_emitting_and_learns_what_it_lost) {
  ck_assert_int_eq(c4_mon_subscribe_start("127.0.0.1:0"), 0);
  int idle = connect_to(c4_mon_subscribe_port(), 64 << 10);
  ck_assert_int_ge(idle, 0);
  wait_clients(1);
  /* 5,000 events of 4 KiB: 20 MiB, far past its 1 MiB queue and both sockets' buffers */
  double secs = emit_many(5000, 4096, 1000);
  ck_assert_msg(secs < 5, "emitting 20 MiB to a stuck subscriber took %.2f s", secs);
  struct stream st = {.fd = idle, .max_read = 1 << 20, .want_last = 5000};
  read_stream(&st);
  ck_assert_msg(!st.err[0], "%s", st.err);
  ck_assert_int_ge(st.notices, 1);
  ck_assert_msg(st.events + st.dropped == 5000, "%ld read + %ld dropped", st.events, st.dropped);
  ck_assert_msg(st.dropped > 2500, "only %ld dropped", st.dropped);
  close(idle);
  c4_mon_subscribe_stop();
}
END_TEST

/* Shrinks the send buffer of the listening socket on port (in this very process), which the
 * connections it accepts inherit: writes to them then stop in the middle of lines. */
static void shrink_listener_sndbuf(int port) {
  for (int fd = 3; fd < 1024; fd++) {
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    int listening = 0;
    socklen_t il = sizeof listening;
    if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0 || sa.sin_family != AF_INET ||
        ntohs(sa.sin_port) != port ||
        getsockopt(fd, SOL_SOCKET, SO_ACCEPTCONN, &listening, &il) != 0 || !listening)
      continue;
    int size = 8192;
    ck_assert_int_eq(setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof size), 0);
    return;
  }
  ck_abort_msg("no listening socket on port %d", port);
}

START_TEST(a_slow_subscriber_reads_whole_lines_with_each_notice_where_lines_are_missing) {
  ck_assert_int_eq(c4_mon_subscribe_start("127.0.0.1:0"), 0);
  shrink_listener_sndbuf(c4_mon_subscribe_port());
  int fd = connect_to(c4_mon_subscribe_port(), 32 << 10);
  ck_assert_int_ge(fd, 0);
  wait_clients(1);
  /* it reads 3 KiB at a time while 20,000 lines of about 1 KiB pour in: drops happen while
   * lines are being written to it */
  struct stream st = {.fd = fd, .max_read = 3000, .pause_us = 200, .want_last = 20000};
  pthread_t reader;
  ck_assert_int_eq(pthread_create(&reader, NULL, read_stream, &st), 0);
  emit_many(20000, 1000, 1000);
  pthread_join(reader, NULL);
  ck_assert_msg(!st.err[0], "%s", st.err);
  ck_assert_msg(st.events + st.dropped == 20000, "%ld read + %ld dropped", st.events, st.dropped);
  ck_assert_msg(st.notices >= 2, "%ld notices, %ld dropped", st.notices, st.dropped);
  close(fd);
  c4_mon_subscribe_stop();
}
END_TEST

START_TEST(the_257th_subscriber_is_closed_at_once) {
  ck_assert_int_eq(c4_mon_subscribe_start("127.0.0.1:0"), 0);
  int port = c4_mon_subscribe_port(), fds[257];
  for (int i = 0; i < 256; i++) {
    fds[i] = connect_to(port, 0);
    ck_assert_int_ge(fds[i], 0);
  }
  wait_clients(256);
  fds[256] = connect_to(port, 0);
  char b[16];
  ck_assert_int_eq(read(fds[256], b, sizeof b), 0);
  ck_assert_int_eq(c4_mon_subscribe_clients(), 256);
  sub_emit("straggler", 1, 0, 0);
  static char buf[4096];
  read_until(fds[255], "\"id\":1", buf, sizeof buf);
  ck_assert_ptr_nonnull(strstr(buf, "\"id\":1"));
  for (int i = 0; i < 257; i++)
    close(fds[i]);
  c4_mon_subscribe_stop();
}
END_TEST

int main(void) {
  Suite *s = suite_create("mon_exporters");
  TCase *m = tcase_create("metrics"), *a = tcase_create("actions"),
        *sub = tcase_create("subscribe");
  tcase_set_timeout(m, 30);
  tcase_set_timeout(a, 60);
  tcase_set_timeout(sub, 60);
  tcase_add_test(m, metrics_serve_rank_link_nic_and_event_series_over_http);
  tcase_add_test(m, metrics_answer_404_elsewhere_405_to_other_methods_and_stop_closes_the_port);
  tcase_add_test(m, metrics_refuse_a_bad_address_and_a_port_in_use);
  tcase_add_test(m, metrics_text_stops_at_100000_series_and_says_how_many_were_left_out);
  tcase_add_test(a, on_event_feeds_each_command_its_line_and_env_and_runs_at_most_four_at_once);
  tcase_add_test(a, on_event_queues_256_drops_past_that_and_survives_commands_that_never_read);
  tcase_add_test(sub, subscribers_hear_events_live_and_late_ones_first_get_the_active_verdicts);
  tcase_add_test(sub, a_subscriber_that_never_reads_never_slows_emitting_and_learns_what_it_lost);
  tcase_add_test(sub, a_slow_subscriber_reads_whole_lines_with_each_notice_where_lines_are_missing);
  tcase_add_test(sub, the_257th_subscriber_is_closed_at_once);
  suite_add_tcase(s, m);
  suite_add_tcase(s, a);
  suite_add_tcase(s, sub);
  return c4_check_run(s);
}
