/* test_mon_views.c -- c4mon's pictures of its state: the delay matrix as PNG and SVG, and
 * `c4mon top`'s frame. (The exporters are in test_mon_exporters.c.) */
#include <cairo.h>
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_clock.h"
#include "mon_events.h"
#include "mon_image.h"
#include "mon_tty.h"

/* A detection state (det.h's schema) with 4 NICs, n0/0 sending slowly, and one verdict. */
static json_t *state(void) {
  return json_loads(
      "{\"t\":5000000000,\"ranks\":[{\"job\":\"j\",\"rank\":0,\"host\":\"n\\\"0\",\"slowdown\":1.0,"
      "\"last_hb_ns\":4000000000,\"entered\":7,\"done\":7,\"lost\":false},"
      "{\"job\":\"j\",\"rank\":1,\"host\":\"n1\",\"slowdown\":2.5,\"last_hb_ns\":4900000000,"
      "\"entered\":7,\"done\":6,\"lost\":false},"
      "{\"job\":\"old\",\"rank\":3,\"host\":\"n3\",\"slowdown\":1.8,\"last_hb_ns\":100,"
      "\"entered\":5,\"done\":5,\"lost\":false,\"ended\":true}],"
      "\"matrix\":{\"nodes\":[\"n0/0\",\"n1/0\",\"n2/0\",\"n<3>&/0\"],"
      "\"cells\":[[0,1,2.6,9],[0,2,2.4,9],[1,2,1.0,9],[2,3,1.0,9],[3,0,1.05,9]],"
      "\"rows\":[2.5,1,1,1],\"cols\":[1,1,1,1],\"t\":5000000000},"
      "\"verdicts\":[{\"v\":1,\"id\":1,\"kind\":\"comm_slow\",\"job\":\"j\",\"where\":\"nic_tx\","
      "\"ranks\":[0],\"hosts\":[\"n0\"],\"nic\":{\"host\":\"n0\",\"dev\":0},\"t\":"
      "4500000000,"
      "\"factor\":2.5,\"detail\":\"row effect 2.50x\"}],\"counts\":{}}",
      0, NULL);
}

START_TEST(the_matrix_is_drawn_as_png_and_svg_with_the_hot_row_red) {
  json_t *st = state();
  char png[] = "/tmp/c4-matrix-XXXXXX", svg[] = "/tmp/c4-matrix-svg-XXXXXX";
  close(mkstemp(png));
  close(mkstemp(svg));
  ck_assert_int_eq(c4_mon_image_png(st, png), 0);
  cairo_surface_t *img = cairo_image_surface_create_from_png(png);
  ck_assert_int_eq(cairo_surface_status(img), CAIRO_STATUS_SUCCESS);
  cairo_surface_flush(img);
  int w = cairo_image_surface_get_width(img), h = cairo_image_surface_get_height(img);
  int stride = cairo_image_surface_get_stride(img);
  const unsigned char *data = cairo_image_surface_get_data(img);
  /* Count kinds of pixels by region: the hot row's red cells and the normal cells' green in the
   * matrix, and dark text in the title band above it, the label band left of it and the label
   * band below it. */
  int red = 0, green = 0, title = 0, left = 0, below = 0;
  for (int y = 0; y < h; y++)
    for (int x = 0; x < w; x++) {
      const unsigned char *p = data + (size_t)y * (size_t)stride + (size_t)x * 4; /* B G R x */
      int r = p[2], g = p[1], b = p[0], dark = r < 90 && g < 90 && b < 90;
      red += r > 200 && g < 80 && b < 80;
      green += g > 150 && r < 100;
      title += dark && y < 45;
      left += dark && y > 90 && y < 90 + 4 * (h / 10) && x < 120;
      below += dark && y > h / 2 && x > 130;
    }
  ck_assert_msg(red > 100 && green > 100, "red %d, green %d pixels", red, green);
  ck_assert_msg(title > 200 && left > 50 && below > 50,
                "no text: %d title, %d left, %d below pixels", title, left, below);
  ck_assert_int_ge(w, 780); /* the title and the scale fit */
  cairo_surface_destroy(img);
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
  ck_assert_msg(strstr(buf, "comm_slow    NIC n0/0 (sending side), job j"), "no place:\n%s", buf);
  char *r1 = strstr(buf, "\nj          1 "), *r0 = strstr(buf, "\nj          0 "),
       *ended = strstr(buf, "\nold        3 ");
  ck_assert_msg(r1 && r0 && r1 < r0, "the slower rank is not first:\n%s", buf);
  /* an ended job's rank, its heartbeats long stopped, comes after the running ones, said ended */
  ck_assert_msg(ended && ended > r0 && strstr(ended, "ended"), "the ended rank:\n%s", buf);
  ck_assert_msg(strstr(buf, " @@"), "the hot row is not drawn hot:\n%s", buf);
  int nl = 0;
  for (char *p = buf; *p; p++)
    nl += *p == '\n';
  ck_assert_int_le(nl, 20);
  free(buf);
  json_decref(status);
}
END_TEST

static json_t *seen;
static void keep(const json_t *ev, const char *line, void *arg) {
  (void)line;
  (void)arg;
  json_decref(seen);
  seen = json_deep_copy(ev);
}

/* Served events carry their UTC time beside the monotonic t; replayed ones a null wall. */
START_TEST(live_events_carry_their_wall_clock_time_and_replayed_ones_null) {
  c4_mon_events_reset();
  ck_assert_int_eq(c4_mon_events_add_sink(keep, NULL), 0);
  c4_mon_events_live(1);
  uint64_t t = c4_now_ns() - 2000000000ull; /* two seconds ago */
  time_t expect = (time_t)(c4_wall_ns() / 1000000000ull) - 2;
  c4_mon_events_emit(json_pack("{s:s, s:I}", "kind", "straggler", "t", (json_int_t)t));
  const char *wall = json_string_value(json_object_get(seen, "wall"));
  ck_assert_ptr_nonnull(wall);
  struct tm tm = {0};
  char *rest = strptime(wall, "%Y-%m-%dT%H:%M:%S", &tm);
  ck_assert_msg(rest && rest[0] == '.' && strlen(rest) == 8 && rest[7] == 'Z', "%s", wall);
  time_t got = timegm(&tm);
  ck_assert_msg(got >= expect - 1 && got <= expect + 1, "%s is not two seconds ago", wall);
  c4_mon_events_live(0);
  c4_mon_events_emit(json_pack("{s:s, s:I}", "kind", "straggler", "t", (json_int_t)t));
  ck_assert(json_is_null(json_object_get(seen, "wall")));
  json_decref(seen);
  seen = NULL;
  c4_mon_events_reset();
}
END_TEST

int main(void) {
  Suite *s = suite_create("mon_views");
  TCase *tc = tcase_create("views");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, the_matrix_is_drawn_as_png_and_svg_with_the_hot_row_red);
  tcase_add_test(tc, top_renders_verdicts_worst_ranks_first_and_the_heat_map_in_characters);
  tcase_add_test(tc, live_events_carry_their_wall_clock_time_and_replayed_ones_null);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
