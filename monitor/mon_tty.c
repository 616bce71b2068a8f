/* mon_tty.c -- `c4mon top`. */
#include "mon_tty.h"

#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

#include "c4_err.h"
#include "mon_evq.h"
#include "mon_heat.h"
#include "mon_server.h"

static const char *glyphs = " .:-=+*#%@";

static const char *str(const json_t *o, const char *k) {
  const char *s = json_string_value(json_object_get(o, k));
  return s ? s : "";
}

static double num(const json_t *o, const char *k) {
  return json_number_value(json_object_get(o, k));
}

/* A heat cell: a colored blank, or a character whose weight grows with the factor. */
static void put_cell(FILE *out, float f, int color) {
  if (color) {
    unsigned char c[3];
    c4_heat_rgb(f, c);
    int idx = 16 + 36 * (c[0] * 5 / 255) + 6 * (c[1] * 5 / 255) + c[2] * 5 / 255;
    fprintf(out, "\033[48;5;%dm \033[0m", idx);
    return;
  }
  int g = f <= 0 ? 0 : f < 1.1f ? 1 : 2 + (int)((f - 1.1f) / 0.9f * 7);
  fputc(glyphs[g > 9 ? 9 : g], out);
}

struct rank_row {
  const json_t *r;
  double score;
};

static int worst_first(const void *a, const void *b) {
  double x = ((const struct rank_row *)a)->score, y = ((const struct rank_row *)b)->score;
  return (x < y) - (x > y);
}

/* The first line (totals) and one line per verdict, up to a third of the height. Returns how many
 * lines it wrote. */
static int put_verdicts(FILE *out, const json_t *st, const json_t *det, int width, int height) {
  const json_t *verdicts = json_object_get(det, "verdicts");
  double now = num(det, "t");
  fprintf(
      out, "c4mon %s  ranks %lld  records %.0f (%.0f/s)  lost %lld  rejected %lld  verdicts %zu\n",
      str(st, "c4mon"), (long long)json_integer_value(json_object_get(st, "ranks_connected")),
      num(st, "records"), num(st, "records_per_s"),
      (long long)json_integer_value(json_object_get(st, "lost")),
      (long long)json_integer_value(json_object_get(st, "rejected")), json_array_size(verdicts));
  int lines = 1;
  size_t i;
  json_t *v;
  json_array_foreach(verdicts, i, v) {
    if (lines >= height / 3) break;
    char place[400];
    c4_mon_evq_place(v, place, sizeof place);
    int room = width - 46 - (int)strlen(place) - (int)strlen(str(v, "job"));
    fprintf(out, "  #%lld %-12s %s, job %s  factor %5.2f  %.1f s ago  %.*s\n",
            (long long)json_integer_value(json_object_get(v, "id")), str(v, "kind"), place,
            str(v, "job"), num(v, "factor"), (now - num(v, "t")) / 1e9, room > 10 ? room : 10,
            str(v, "detail"));
    lines++;
  }
  return lines;
}

/* The ranks, worst first (lost, then slowest, then longest without a heartbeat), the ranks of
 * jobs that ended last (their heartbeats stopped with the job: kept for the forget period, they
 * led the list with stale values); NULL when out of memory. The caller frees it. */
static struct rank_row *worst_ranks(const json_t *ranks, double now) {
  struct rank_row *rows = calloc(json_array_size(ranks) + 1, sizeof *rows);
  if (!rows) return NULL;
  size_t i;
  json_t *v;
  json_array_foreach(ranks, i, v) {
    rows[i].r = v;
    rows[i].score = json_is_true(json_object_get(v, "ended"))
                        ? -1e9
                        : (json_is_true(json_object_get(v, "lost")) ? 1e9 : 0) +
                              num(v, "slowdown") + (now - num(v, "last_hb_ns")) / 1e10;
  }
  qsort(rows, json_array_size(ranks), sizeof *rows, worst_first);
  return rows;
}

/* Line y of the left part: a rank, or how many more there are on the last line that has room. */
static void put_rank_line(FILE *out, const struct rank_row *rows, size_t nr, int y, int body,
                          double now) {
  int cut = nr > (size_t)body && y == body - 1;
  if ((size_t)y < nr && !cut) {
    const json_t *r = rows[y].r;
    fprintf(out, "%-10.10s %-6lld %-14.14s %8.2f %9.0f %7.1fs %5s", str(r, "job"),
            (long long)json_integer_value(json_object_get(r, "rank")), str(r, "host"),
            num(r, "slowdown"), num(r, "entered"), (now - num(r, "last_hb_ns")) / 1e9,
            json_is_true(json_object_get(r, "lost"))    ? "LOST"
            : json_is_true(json_object_get(r, "ended")) ? "ended"
                                                        : "");
  } else if (cut) {
    char more[64];
    snprintf(more, sizeof more, "(%zu more ranks)", nr - (size_t)body + 1);
    fprintf(out, "%-67s", more);
  } else {
    fprintf(out, "%-67s", "");
  }
}

/* Line y of the right part: a row of the heat map and its row effect, or the column effects. */
static void put_heat_line(FILE *out, const struct heat *h, int y, int color) {
  if (y < h->side) {
    for (int x = 0; x < h->side; x++)
      put_cell(out, h->cell[y * h->side + x], color);
    fputc(' ', out);
    put_cell(out, h->row[y], color);
  } else if (y == h->side + 1) {
    for (int x = 0; x < h->side; x++)
      put_cell(out, h->col[x], color);
    fputs("  column effect", out);
  }
}

void c4_mon_tty_render(FILE *out, const json_t *st, int width, int height, int color) {
  const json_t *det = json_object_get(st, "detect"), *ranks = json_object_get(det, "ranks");
  double now = num(det, "t");
  int lines = put_verdicts(out, st, det, width, height);
  /* the heat map takes the right part, the ranks the left */
  struct heat h;
  int map_w = width / 2 - 4, map_h = height - lines - 4;
  int side = map_w < map_h ? map_w : map_h;
  if (c4_heat_fold(det, side > 1 ? side : 1, &h) != 0) return;
  size_t nr = json_array_size(ranks);
  struct rank_row *rows = worst_ranks(ranks, now);
  if (!rows) {
    c4_heat_free(&h);
    return;
  }
  fprintf(out,
          "%-10s %-6s %-14s %8s %9s %8s %5s   matrix %d NICs%s (src down, dst across, in the "
          "matrix's order: c4mon matrix names them; last col: row effect)\n",
          "job", "rank", "host", "slowdown", "entered", "hb age", "", h.n,
          h.per > 1 ? ", in blocks" : "");
  int body = height - lines - 2;
  for (int y = 0; y < body; y++) {
    put_rank_line(out, rows, nr, y, body, now);
    fputs("   ", out);
    put_heat_line(out, &h, y, color);
    fputc('\n', out);
  }
  free(rows);
  c4_heat_free(&h);
}

static volatile sig_atomic_t stopping;
static void on_stop(int sig) {
  (void)sig;
  stopping = 1;
}

int c4_mon_tty_run(const char *addr, const char *token, double interval_s, int once, int color) {
  if (color < 0) color = isatty(STDOUT_FILENO);
  signal(SIGINT, on_stop);
  signal(SIGTERM, on_stop);
  while (!stopping) {
    int w = 120, hgt = 40;
    struct winsize ws;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 20 && ws.ws_row > 5) {
      w = ws.ws_col;
      hgt = ws.ws_row;
    }
    char *doc = NULL;
    int rc = c4_mon_query_status(addr, token, &doc);
    json_t *st = rc == 0 ? json_loads(doc, 0, NULL) : NULL;
    free(doc);
    if (!once) fputs("\033[H\033[2J", stdout);
    if (st)
      c4_mon_tty_render(stdout, st, w, hgt - 1, color);
    else if (!once)
      printf("c4mon top: %s: %s (retrying)\n", addr, c4_mon_query_why(rc));
    json_decref(st);
    fflush(stdout);
    if (once) return st ? 0 : rc ? rc : C4_EPROTO;
    struct timespec ts = {(time_t)interval_s,
                          (long)((interval_s - (double)(time_t)interval_s) * 1e9)};
    nanosleep(&ts, NULL);
  }
  return 0;
}
