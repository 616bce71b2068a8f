/* test_mon_outputs.c -- where c4mon's verdicts and state go: the Prometheus endpoint over real
 * HTTP, --on-event commands, the subscription port with a subscriber that does not read, the
 * matrix as PNG and SVG, and `c4mon top`'s frame. */
#include <arpa/inet.h>
#include <check.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_clock.h"
#include "mon_image.h"
#include "mon_prom.h"
#include "mon_run_cmd.h"
#include "mon_sub.h"
#include "mon_tty.h"

/* A detection state (det.h's schema) with 4 NICs, n0/0 sending slowly, and one verdict. */
static json_t *state(void) {
  return json_loads(
      "{\"t\":5000000000,\"ranks\":[{\"job\":\"j\",\"rank\":0,\"host\":\"n\\\"0\",\"slowdown\":1.0,"
      "\"last_hb_ns\":4000000000,\"entered\":7,\"done\":7,\"lost\":false},"
      "{\"job\":\"j\",\"rank\":1,\"host\":\"n1\",\"slowdown\":2.5,\"last_hb_ns\":4900000000,"
      "\"entered\":7,\"done\":6,\"lost\":false}],"
      "\"matrix\":{\"nodes\":[\"n0/0\",\"n1/0\",\"n2/0\",\"n<3>&/0\"],"
      "\"cells\":[[0,1,2.6,9],[0,2,2.4,9],[1,2,1.0,9],[2,3,1.0,9],[3,0,1.05,9]],"
      "\"rows\":[2.5,1,1,1],\"cols\":[1,1,1,1],\"t\":5000000000},"
      "\"verdicts\":[{\"v\":1,\"id\":1,\"kind\":\"comm_slow\",\"where\":\"nic_tx\",\"t\":"
      "4500000000,"
      "\"factor\":2.5,\"detail\":\"row effect 2.50x\"}],\"counts\":{}}",
      0, NULL);
}

static char *http_get(int port, const char *path) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  char req[256];
  int n = snprintf(req, sizeof req, "GET %s HTTP/1.0\r\nHost: x\r\n\r\n", path);
  ck_assert_int_eq(write(fd, req, (size_t)n), n);
  static char buf[1 << 16];
  size_t have = 0;
  ssize_t k;
  while ((k = read(fd, buf + have, sizeof buf - 1 - have)) > 0)
    have += (size_t)k;
  buf[have] = 0;
  close(fd);
  return buf;
}

START_TEST(metrics_serve_rank_link_and_event_series_over_http) {
  ck_assert_int_eq(c4_mon_prom_start("127.0.0.1:0"), 0);
  int port = c4_mon_prom_port();
  ck_assert_int_gt(port, 0);
  json_t *st = state(), *ev = json_pack("{s:s}", "kind", "comm_slow");
  json_t *status = json_pack("{s:i, s:i}", "records", 1234, "ranks_connected", 2);
  c4_mon_prom_event(ev, "", NULL);
  c4_mon_prom_publish(st, status);
  char *body = http_get(port, "/metrics");
  ck_assert_msg(strstr(body, "200 OK"), "%s", body);
  ck_assert_ptr_nonnull(strstr(body, "c4_records_total 1234"));
  ck_assert_ptr_nonnull(strstr(body, "c4_rank_slowdown{job=\"j\",rank=\"1\",host=\"n1\"} 2.5"));
  ck_assert_ptr_nonnull(strstr(body, "host=\"n\\\"0\"")); /* the quote escaped */
  ck_assert_ptr_nonnull(
      strstr(body, "c4_rank_heartbeat_age_seconds{job=\"j\",rank=\"0\",host=\"n\\\"0\"} 1"));
  ck_assert_ptr_nonnull(strstr(body, "c4_link_slowdown{src=\"n0/0\",dst=\"n1/0\"} 2.6"));
  ck_assert_ptr_nonnull(strstr(body, "c4_nic_tx_slowdown{nic=\"n0/0\"} 2.5"));
  ck_assert_ptr_nonnull(strstr(body, "c4_events_total{kind=\"comm_slow\"} 1"));
  ck_assert_ptr_nonnull(strstr(body, "c4_verdicts_active{kind=\"comm_slow\"} 1"));
  ck_assert_ptr_nonnull(strstr(http_get(port, "/other"), "404"));
  json_decref(st);
  json_decref(ev);
  json_decref(status);
  c4_mon_prom_stop();
}
END_TEST

static int lines_in(const char *path, const char *what) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char line[4096];
  int n = 0;
  while (fgets(line, sizeof line, f))
    n += strstr(line, what) != NULL;
  fclose(f);
  return n;
}

START_TEST(on_event_runs_each_event_through_the_command_never_more_than_four_at_once) {
  char out[] = "/tmp/c4-on-event-XXXXXX";
  close(mkstemp(out));
  char cmd[256];
  snprintf(
      cmd, sizeof cmd,
      "sleep 0.2; read l; echo \"$C4_EVENT_KIND $C4_EVENT_ID $l\" >> %s; [ $C4_EVENT_ID != 3 ]",
      out);
  ck_assert_int_eq(c4_mon_run_cmd_start(cmd), 0);
  uint64_t t0 = c4_now_ns();
  for (int i = 1; i <= 10; i++) {
    json_t *ev = json_pack("{s:s, s:i}", "kind", "straggler", "id", i);
    char line[64];
    snprintf(line, sizeof line, "{\"kind\":\"straggler\",\"id\":%d}", i);
    c4_mon_run_cmd_event(ev, line, NULL);
    json_decref(ev);
  }
  ck_assert_msg(c4_now_ns() - t0 < 150000000ull, "emitting waited for the commands");
  c4_mon_run_cmd_stop(10000);
  ck_assert_int_eq(lines_in(out, "straggler"), 10);
  ck_assert_int_eq(lines_in(out, "straggler 7 {\"kind\":\"straggler\",\"id\":7}"), 1);
  struct c4_mon_run_stats st = c4_mon_run_cmd_stats();
  ck_assert_uint_eq(st.started, 10);
  ck_assert_uint_eq(st.failed, 1); /* the one with id 3 exits 1 */
  ck_assert_uint_eq(st.dropped, 0);
  ck_assert_msg(c4_now_ns() - t0 > 500000000ull, "10 commands of 0.2 s ran more than 4 at once");
  unlink(out);
}
END_TEST

static int connect_to(int port) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
  inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&sa, sizeof sa), 0);
  struct timeval tv = {.tv_sec = 5};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

/* Reads until the text read so far holds want (or 5 s pass). */
static char *read_until(int fd, const char *want) {
  static char buf[1 << 16];
  size_t have = 0;
  buf[0] = 0;
  while (!strstr(buf, want) && have < sizeof buf - 1) {
    ssize_t k = read(fd, buf + have, sizeof buf - 1 - have);
    if (k <= 0) break;
    have += (size_t)k;
    buf[have] = 0;
  }
  return buf;
}

static void emit(const char *kind, int id, int clears, size_t pad) {
  json_t *ev = json_pack("{s:i, s:s, s:i}", "v", 1, "kind", kind, "id", id);
  if (clears) json_object_set_new(ev, "clears", json_integer(clears));
  if (pad) {
    char *p = malloc(pad + 1);
    memset(p, 'x', pad);
    p[pad] = 0;
    json_object_set_new(ev, "detail", json_string(p));
    free(p);
  }
  char *line = json_dumps(ev, JSON_COMPACT);
  c4_mon_sub_event(ev, line, NULL);
  free(line);
  json_decref(ev);
}

START_TEST(subscribers_get_active_verdicts_then_live_ones_and_a_slow_one_never_blocks) {
  ck_assert_int_eq(c4_mon_sub_start("127.0.0.1:0"), 0);
  int early = connect_to(c4_mon_sub_port()), idle = connect_to(c4_mon_sub_port());
  usleep(300000); /* let the thread accept them */
  emit("straggler", 1, 0, 0);
  emit("rank_lost", 2, 0, 0);
  emit("recovered", 3, 1, 0);
  char *got = read_until(early, "\"id\":3");
  ck_assert_msg(strstr(got, "\"id\":1") && strstr(got, "\"id\":2") && strstr(got, "\"id\":3"), "%s",
                got);
  int late = connect_to(c4_mon_sub_port());
  got = read_until(late, "\"replay\":true");
  ck_assert_msg(strstr(got, "\"id\":2") && !strstr(got, "\"id\":1,"), "%s", got);
  ck_assert_ptr_nonnull(strstr(got, "\"replay\":true"));
  /* idle never reads: 20 MiB of events must not block the emitter */
  uint64_t t0 = c4_now_ns();
  for (int i = 0; i < 5000; i++)
    emit("straggler", 100 + i, 0, 4096);
  ck_assert_msg(c4_now_ns() - t0 < 5000000000ull, "emitting to a stuck subscriber took %.1f s",
                (double)(c4_now_ns() - t0) / 1e9);
  /* once it reads, it hears how many it lost */
  static char buf[1 << 16];
  int seen_dropped = 0;
  for (int rounds = 0; rounds < 2000 && !seen_dropped; rounds++) {
    ssize_t k = read(idle, buf, sizeof buf - 1);
    if (k <= 0) break;
    buf[k] = 0;
    seen_dropped = strstr(buf, "\"kind\":\"dropped\"") != NULL;
  }
  ck_assert_msg(seen_dropped, "no dropped notice");
  close(early);
  close(idle);
  close(late);
  c4_mon_sub_stop();
}
END_TEST

START_TEST(the_matrix_is_drawn_as_png_and_svg_with_the_hot_row_red) {
  json_t *st = state();
  char png[] = "/tmp/c4-matrix-XXXXXX", svg[] = "/tmp/c4-matrix-svg-XXXXXX";
  close(mkstemp(png));
  close(mkstemp(svg));
  ck_assert_int_eq(c4_mon_image_png(st, png), 0);
  png_image img = {.version = PNG_IMAGE_VERSION};
  ck_assert_int_ne(png_image_begin_read_from_file(&img, png), 0);
  img.format = PNG_FORMAT_RGB;
  unsigned char *px = malloc(PNG_IMAGE_SIZE(img));
  ck_assert_int_ne(png_image_finish_read(&img, NULL, px, 0, NULL), 0);
  int w = (int)img.width, cell = w / 6; /* 4 nodes + 2 margin */
  unsigned char *hot = px + ((size_t)(cell / 2) * (size_t)w + (size_t)(cell + cell / 2)) * 3;
  unsigned char *cool =
      px + ((size_t)(cell + cell / 2) * (size_t)w + (size_t)(2 * cell + cell / 2)) * 3;
  ck_assert_msg(hot[0] > 200 && hot[1] < 80, "hot cell %d,%d,%d", hot[0], hot[1], hot[2]);
  ck_assert_msg(cool[1] > 150 && cool[0] < 100, "normal cell %d,%d,%d", cool[0], cool[1], cool[2]);
  free(px);
  ck_assert_int_eq(c4_mon_image_svg(st, svg), 0);
  FILE *f = fopen(svg, "r");
  static char text[1 << 16];
  size_t n = fread(text, 1, sizeof text - 1, f);
  text[n] = 0;
  fclose(f);
  ck_assert_int_eq(strncmp(text, "<svg", 4), 0);
  ck_assert_ptr_nonnull(strstr(text, "</svg>"));
  ck_assert_ptr_nonnull(strstr(text, "n&lt;3&gt;&amp;/0"));
  ck_assert_ptr_nonnull(strstr(text, "row effect 2.50x"));
  ck_assert_int_lt(c4_mon_image_png(st, "/nonexistent/dir/m.png"), 0);
  json_decref(st);
  unlink(png);
  unlink(svg);
}
END_TEST

START_TEST(top_renders_verdicts_worst_ranks_first_and_the_heat_map_in_characters) {
  json_t *status =
      json_pack("{s:s, s:i, s:o}", "c4mon", "0.1.0", "ranks_connected", 2, "detect", state());
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  c4_mon_tty_render(f, status, 120, 20, 0);
  fclose(f);
  ck_assert_ptr_nonnull(strstr(buf, "comm_slow"));
  char *r1 = strstr(buf, "\n1 "), *r0 = strstr(buf, "\n0 ");
  ck_assert_msg(r1 && r0 && r1 < r0, "the slower rank is not first:\n%s", buf);
  ck_assert_msg(strstr(buf, " @@"), "the hot row is not drawn hot:\n%s", buf);
  int nl = 0;
  for (char *p = buf; *p; p++)
    nl += *p == '\n';
  ck_assert_int_le(nl, 20);
  free(buf);
  json_decref(status);
}
END_TEST

int main(void) {
  Suite *s = suite_create("mon_outputs");
  TCase *tc = tcase_create("outputs");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, metrics_serve_rank_link_and_event_series_over_http);
  tcase_add_test(tc, on_event_runs_each_event_through_the_command_never_more_than_four_at_once);
  tcase_add_test(tc, subscribers_get_active_verdicts_then_live_ones_and_a_slow_one_never_blocks);
  tcase_add_test(tc, the_matrix_is_drawn_as_png_and_svg_with_the_hot_row_red);
  tcase_add_test(tc, top_renders_verdicts_worst_ranks_first_and_the_heat_map_in_characters);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
