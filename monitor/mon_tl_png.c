/* mon_tl_png.c -- draws a run as a timeline with cairo: x is the training step (seconds since the
 * first step beneath), the injected faults shaded under their names, c4mon's verdicts as bars
 * from raised to cleared, and a lane of tokens/s for the job and for each rank. */
#include "mon_tl_png.h"

#include <cairo.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4_err.h"
#include "mon_tl_labels.h"

#define WIDTH 1280
#define LEFT 132      /* lane names and their scales */
#define RIGHT 32      /* room for the last tick's label */
#define ROW 28        /* a label row: its text, then its bar */
#define JOB_LANE 120  /* the whole job's tokens/s */
#define RANK_LANE 64  /* each rank's */
#define GAP 10        /* between lanes */
#define FONT 12.0     /* labels */
#define LABEL_GAP 8.0 /* between two labels on a row */

/* Where everything goes, in pixels. */
struct geo {
  double x0, x1, s0, s1; /* the plot's left and right; the steps there */
  double y_faults, y_verdicts, y_lanes, y_axis, height;
  int fault_rows, verdict_rows, lanes;
};

static double xof(const struct geo *g, double s) {
  return g->x0 + (s - g->s0) / (g->s1 - g->s0) * (g->x1 - g->x0);
}

/* One lane's values by step: as logged, their running median (drawn bold), and its scale's top. */
struct lane {
  double *raw, *median, top;
};

static int is_fault(const struct tl_span *s) { return !strcmp(s->kind, "fault"); }

static void kind_rgb(const char *kind, double c[3]) {
  static const struct {
    const char *kind;
    double rgb[3];
  } colors[] = {{"fault", {0.25, 0.40, 0.75}},        {"straggler", {0.90, 0.45, 0.00}},
                {"comm_slow", {0.80, 0.10, 0.10}},    {"comm_hang", {0.55, 0.15, 0.65}},
                {"noncomm_hang", {0.55, 0.15, 0.65}}, {"rank_lost", {0.20, 0.20, 0.20}}};
  for (size_t i = 0; i < sizeof colors / sizeof colors[0]; i++)
    if (!strcmp(kind, colors[i].kind)) {
      memcpy(c, colors[i].rgb, sizeof colors[i].rgb);
      return;
    }
  c[0] = c[1] = c[2] = 0.4;
}

static void set_rgb(cairo_t *cr, const double c[3], double alpha) {
  cairo_set_source_rgba(cr, c[0], c[1], c[2], alpha);
}

static double text_width(cairo_t *cr, const char *s) {
  cairo_text_extents_t e;
  cairo_text_extents(cr, s, &e);
  return e.x_advance;
}

/* x is left, right or centered on x (align -1, 1, 0). */
static void text(cairo_t *cr, double x, double y, int align, const char *s) {
  double w = text_width(cr, s);
  cairo_move_to(cr, align < 0 ? x : align > 0 ? x - w : x - w / 2, y);
  cairo_show_text(cr, s);
}

/* The spans of one band (faults, or verdicts) laid out in rows; rows into *rows. labels[i] is the
 * i-th span of the band, in the order of r->spans. */
static struct tl_label *band_layout(cairo_t *cr, const struct tl_run *r, const struct geo *g,
                                    int faults, size_t *n, int *rows) {
  struct tl_label *l = calloc(r->nspans + 1, sizeof *l);
  *n = 0;
  if (!l) return NULL;
  for (size_t i = 0; i < r->nspans; i++) {
    const struct tl_span *s = &r->spans[i];
    if (is_fault(s) != faults) continue;
    double on = xof(g, tl_step_at(r, s->on));
    l[(*n)++] = (struct tl_label){.x = on,
                                  .w = text_width(cr, s->label) + 10,
                                  .end = s->off ? xof(g, tl_step_at(r, s->off)) : g->x1};
  }
  *rows = tl_labels_layout(l, *n, g->x0, g->x1, LABEL_GAP);
  if (*rows < 0) {
    free(l);
    return NULL;
  }
  return l;
}

static void triangle(cairo_t *cr, double x, double y, int down, int filled) {
  double h = down ? 7 : -7;
  cairo_move_to(cr, x - 5, y - h);
  cairo_line_to(cr, x + 5, y - h);
  cairo_line_to(cr, x, y);
  cairo_close_path(cr);
  if (filled) {
    cairo_fill(cr);
  } else {
    cairo_set_line_width(cr, 1.5);
    cairo_stroke(cr);
  }
}

/* One band: each span's name on its row, its bar beneath (a fault: shaded down through the lanes;
 * a verdict: marked where it was raised and, filled the other way, where it was cleared, with
 * lines down through the lanes). */
static void draw_band(cairo_t *cr, const struct tl_run *r, const struct geo *g, int faults,
                      const struct tl_label *l, double y) {
  size_t k = 0;
  for (size_t i = 0; i < r->nspans; i++) {
    const struct tl_span *s = &r->spans[i];
    if (is_fault(s) != faults) continue;
    const struct tl_label *it = &l[k++];
    double c[3], top = y + it->row * ROW, on = it->x, off = it->end, bar = top + 20;
    kind_rgb(s->kind, c);
    set_rgb(cr, c, 1);
    text(cr, it->at + (faults ? 2 : 8), top + 13, -1, s->label); /* a verdict's clears its mark */
    if (faults) {
      set_rgb(cr, c, 0.14);
      cairo_rectangle(cr, on, bar - 4, off - on < 1 ? 1 : off - on, g->y_axis - bar + 4);
      cairo_fill(cr);
      set_rgb(cr, c, 0.55);
      cairo_rectangle(cr, on, bar - 4, off - on < 1 ? 1 : off - on, 6);
      cairo_fill(cr);
      continue;
    }
    set_rgb(cr, c, 0.8);
    cairo_set_line_width(cr, 3);
    cairo_move_to(cr, on, bar);
    cairo_line_to(cr, off, bar);
    cairo_stroke(cr);
    set_rgb(cr, c, 1);
    triangle(cr, on, bar, 1, 1);
    cairo_set_line_width(cr, 1);
    cairo_move_to(cr, on, bar);
    cairo_line_to(cr, on, g->y_axis);
    cairo_stroke(cr);
    if (!s->off) continue; /* still standing at the end: no clearing mark */
    triangle(cr, off, bar, 0, 0);
    double dash[] = {4, 3};
    cairo_set_dash(cr, dash, 2, 0);
    cairo_move_to(cr, off, bar);
    cairo_line_to(cr, off, g->y_axis);
    cairo_stroke(cr);
    cairo_set_dash(cr, NULL, 0, 0);
  }
}

static void scale_label(double v, char *buf, size_t n) {
  if (v >= 1e6)
    snprintf(buf, n, "%.1fM", v / 1e6);
  else if (v >= 1e3)
    snprintf(buf, n, "%.0fk", v / 1e3);
  else
    snprintf(buf, n, "%.0f", v);
}

/* One lane: tokens/s by step (rank < 0: the job's), the verdicts naming the rank shaded in it. */
static void polyline(cairo_t *cr, const struct tl_run *r, const struct geo *g, const double *v,
                     double y, double h, double top_value) {
  for (size_t i = 0; i < r->nsteps; i++) {
    double px = xof(g, r->steps[i].step - 0.5), py = y + h - h * fmin(v[i] / top_value, 1.0);
    if (i)
      cairo_line_to(cr, px, py);
    else
      cairo_move_to(cr, px, py);
  }
  cairo_stroke(cr);
}

static void draw_lane(cairo_t *cr, const struct tl_run *r, const struct geo *g, int rank, double y,
                      double h, const struct lane *ln) {
  char buf[64];
  cairo_set_source_rgb(cr, 0.97, 0.97, 0.97);
  cairo_rectangle(cr, g->x0, y, g->x1 - g->x0, h);
  cairo_fill(cr);
  for (size_t i = 0; rank >= 0 && i < r->nspans; i++) {
    const struct tl_span *s = &r->spans[i];
    if (is_fault(s) || !(s->ranks >> rank & 1)) continue;
    double c[3], on = xof(g, tl_step_at(r, s->on));
    double off = s->off ? xof(g, tl_step_at(r, s->off)) : g->x1;
    kind_rgb(s->kind, c);
    set_rgb(cr, c, 0.22);
    cairo_rectangle(cr, on, y, off - on < 1 ? 1 : off - on, h);
    cairo_fill(cr);
  }
  cairo_set_source_rgba(cr, 0.1, 0.2, 0.5, 0.25);
  cairo_set_line_width(cr, 1);
  polyline(cr, r, g, ln->raw, y, h, ln->top);
  cairo_set_source_rgb(cr, 0.1, 0.2, 0.5);
  cairo_set_line_width(cr, 2);
  polyline(cr, r, g, ln->median, y, h, ln->top);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_font_size(cr, FONT);
  if (rank < 0)
    snprintf(buf, sizeof buf, "whole job");
  else
    snprintf(buf, sizeof buf, "rank %d", rank);
  text(cr, 8, y + 15, -1, buf);
  cairo_set_font_size(cr, FONT - 2);
  cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
  text(cr, 8, y + 29, -1, "tokens/s");
  scale_label(ln->top, buf, sizeof buf);
  text(cr, g->x0 - 4, y + 10, 1, buf);
  text(cr, g->x0 - 4, y + h, 1, "0");
  cairo_set_font_size(cr, FONT);
}

/* The time of step boundary s (the end of step s; s0: the first step's start). */
static double seconds_at(const struct tl_run *r, double s) {
  uint64_t t = r->steps[0].t0;
  for (size_t i = 0; i < r->nsteps && r->steps[i].step <= s; i++)
    t = r->steps[i].t1;
  return (double)(t - r->steps[0].t0) * 1e-9;
}

/* Step ticks every 1, 2 or 5 times a power of ten, about a dozen; the time of each beneath. */
static void draw_axis(cairo_t *cr, const struct tl_run *r, const struct geo *g) {
  double raw = (g->s1 - g->s0) / 12, mag = pow(10, floor(log10(raw > 0 ? raw : 1))), every = mag;
  if (every < raw) every = 2 * mag;
  if (every < raw) every = 5 * mag;
  if (every < raw) every = 10 * mag;
  char buf[32];
  int short_run = seconds_at(r, g->s1) < 5; /* tenths of a second would repeat */
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_line_width(cr, 1);
  cairo_move_to(cr, g->x0, g->y_axis);
  cairo_line_to(cr, g->x1, g->y_axis);
  cairo_stroke(cr);
  text(cr, g->x0 - 20, g->y_axis + 18, 1, "step");
  text(cr, g->x0 - 20, g->y_axis + 34, 1, "seconds");
  for (double s = ceil(g->s0 / every) * every; s <= g->s1 + 1e-9; s += every) {
    double x = xof(g, s);
    cairo_move_to(cr, x, g->y_axis);
    cairo_line_to(cr, x, g->y_axis + 5);
    cairo_stroke(cr);
    snprintf(buf, sizeof buf, "%.0f", s);
    text(cr, x, g->y_axis + 18, 0, buf);
    snprintf(buf, sizeof buf, "%.*f", short_run ? 2 : 1, seconds_at(r, s));
    text(cr, x, g->y_axis + 34, 0, buf);
  }
}

/* A legend of the marks, in shapes rather than glyphs (a machine may lack the fonts). */
static void draw_legend(cairo_t *cr, const struct geo *g, int window) {
  double y = g->y_axis + 58, x = g->x0, c[3];
  kind_rgb("fault", c);
  set_rgb(cr, c, 0.3);
  cairo_rectangle(cr, x, y - 9, 18, 10);
  cairo_fill(cr);
  cairo_set_source_rgb(cr, 0, 0, 0);
  text(cr, x + 24, y, -1, "a fault injected (the expected table)");
  x += 290;
  triangle(cr, x, y - 2, 1, 1);
  text(cr, x + 12, y, -1, "c4mon raised a verdict");
  x += 190;
  triangle(cr, x, y - 2, 0, 0);
  text(cr, x + 12, y, -1, "cleared it (none: standing at the end)");
  x += 290;
  text(cr, x, y, -1, "lane shaded: the verdict names the rank");
  char buf[160];
  if (window > 1)
    snprintf(buf, sizeof buf,
             "lanes: tokens/s, the bold line the median of %d steps around each "
             "step, the faint one each step's (ranks: their own tokens over their compute time)",
             window);
  else
    snprintf(buf, sizeof buf,
             "lanes: tokens/s of each step (ranks: their own tokens over their "
             "compute time)");
  text(cr, g->x0, y + 20, -1, buf);
}

static void lanes_free(struct lane *l, int n) {
  for (int k = 0; l && k < n; k++) {
    free(l[k].raw);
    free(l[k].median);
  }
  free(l);
}

/* Every lane (0: the whole job, 1 + k: rank k) with its running median; the ranks share one
 * scale, so that a slow rank's lane reads lower than the others'. NULL without memory. */
static struct lane *lanes_of(const struct tl_run *r, int window) {
  int n = r->ranks + 1;
  struct lane *l = calloc((size_t)n, sizeof *l);
  for (int k = 0; l && k < n; k++) {
    l[k].raw = malloc(r->nsteps * sizeof *l[k].raw);
    l[k].median = malloc(r->nsteps * sizeof *l[k].median);
    if (!l[k].raw || !l[k].median || tl_lane_median(r, k - 1, window, l[k].median)) {
      lanes_free(l, n);
      return NULL;
    }
    for (size_t i = 0; i < r->nsteps; i++)
      l[k].raw[i] = k ? r->steps[i].rank_tps[k - 1] : r->steps[i].tps;
  }
  double rank_top = 0;
  for (int k = 0; l && k < n; k++) {
    for (size_t i = 0; i < r->nsteps; i++)
      l[k].top = fmax(l[k].top, l[k].median[i] * 1.25); /* raw spikes past it are clipped */
    if (k) rank_top = fmax(rank_top, l[k].top);
  }
  for (int k = 1; l && k < n; k++)
    l[k].top = rank_top;
  for (int k = 0; l && k < n; k++)
    if (l[k].top <= 0) l[k].top = 1;
  return l;
}

static void draw(cairo_t *cr, const struct tl_run *r, const struct geo *g,
                 const struct tl_label *fl, const struct tl_label *vl, const struct lane *lanes,
                 int window) {
  char title[256];
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_BOLD);
  cairo_set_font_size(cr, 18);
  snprintf(title, sizeof title, "c4 timeline%s%s: %d ranks, steps %d-%d, %.1f s",
           r->job[0] ? ": job " : "", r->job, r->world ? r->world : r->ranks, r->steps[0].step,
           r->steps[r->nsteps - 1].step,
           (double)(r->steps[r->nsteps - 1].t1 - r->steps[0].t0) * 1e-9);
  text(cr, 8, 28, -1, title);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(cr, FONT);
  cairo_set_source_rgb(cr, 0.35, 0.35, 0.35);
  text(cr, 8, g->y_faults + 13, -1, "faults injected");
  text(cr, 8, g->y_verdicts + 13, -1, "c4mon's verdicts");
  draw_lane(cr, r, g, -1, g->y_lanes, JOB_LANE, &lanes[0]);
  for (int k = 0; k < r->ranks; k++)
    draw_lane(cr, r, g, k, g->y_lanes + JOB_LANE + GAP + k * (RANK_LANE + GAP), RANK_LANE,
              &lanes[k + 1]);
  draw_band(cr, r, g, 1, fl, g->y_faults);
  draw_band(cr, r, g, 0, vl, g->y_verdicts);
  draw_axis(cr, r, g);
  draw_legend(cr, g, window);
}

static int fail(char *err, size_t n, const char *path, const char *why) {
  snprintf(err, n, "%s: %s", path, why);
  return 1;
}

static cairo_status_t to_file(void *f, const unsigned char *data, unsigned int len) {
  return fwrite(data, 1, len, f) == len ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

/* Both bands' labels laid out (measured on a scratch surface) into *fl and *vl, and g's rows and
 * height set to hold them. Returns 0, or C4_ENOMEM with nothing left allocated. */
static int place_bands(const struct tl_run *r, struct geo *g, struct tl_label **fl,
                       struct tl_label **vl) {
  cairo_surface_t *scratch = cairo_image_surface_create(CAIRO_FORMAT_RGB24, 1, 1);
  cairo_t *m = cairo_create(scratch);
  cairo_select_font_face(m, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  cairo_set_font_size(m, FONT);
  size_t nf, nv;
  *fl = band_layout(m, r, g, 1, &nf, &g->fault_rows);
  *vl = band_layout(m, r, g, 0, &nv, &g->verdict_rows);
  cairo_destroy(m);
  cairo_surface_destroy(scratch);
  if (!*fl || !*vl) {
    free(*fl);
    free(*vl);
    return C4_ENOMEM;
  }
  g->y_faults = 44;
  g->y_verdicts = g->y_faults + (g->fault_rows ? g->fault_rows : 1) * ROW + 6;
  g->y_lanes = g->y_verdicts + (g->verdict_rows ? g->verdict_rows : 1) * ROW + 6;
  g->y_axis = g->y_lanes + JOB_LANE + r->ranks * (RANK_LANE + GAP) + 4;
  g->height = g->y_axis + 88;
  return 0;
}

/* Writes the picture sf (drawn through cr; both destroyed here) to path by way of a temporary
 * file renamed over it, so that a reader never sees half a picture. Returns 0 or fail()'s 1. */
static int write_png(cairo_t *cr, cairo_surface_t *sf, const char *path, char *err, size_t n) {
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp%d", path, (int)getpid());
  FILE *f = fopen(tmp, "wb");
  int e = errno;
  cairo_status_t st = cairo_status(cr);
  if (f && st == CAIRO_STATUS_SUCCESS) st = cairo_surface_write_to_png_stream(sf, to_file, f);
  cairo_destroy(cr);
  cairo_surface_destroy(sf);
  if (!f) return fail(err, n, path, strerror(e));
  if (fclose(f) || st != CAIRO_STATUS_SUCCESS) {
    e = errno;
    unlink(tmp);
    return fail(err, n, path,
                st != CAIRO_STATUS_SUCCESS ? cairo_status_to_string(st) : strerror(e));
  }
  if (rename(tmp, path)) {
    e = errno;
    unlink(tmp);
    return fail(err, n, path, strerror(e));
  }
  return 0;
}

int tl_png(const struct tl_run *r, const char *path, char *err, size_t n) {
  if (!r->nsteps) return fail(err, n, path, "no steps to draw");
  struct geo g = {.x0 = LEFT,
                  .x1 = WIDTH - RIGHT,
                  .s0 = r->steps[0].step - 1,
                  .s1 = r->steps[r->nsteps - 1].step};
  /* the labels are measured first, then the picture is sized to hold them */
  struct tl_label *fl, *vl;
  if (place_bands(r, &g, &fl, &vl)) return fail(err, n, path, "out of memory");
  cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, WIDTH, (int)ceil(g.height));
  cairo_t *cr = cairo_create(sf);
  int window = tl_smooth_steps(r->nsteps);
  struct lane *lanes = lanes_of(r, window);
  if (lanes) draw(cr, r, &g, fl, vl, lanes, window);
  lanes_free(lanes, r->ranks + 1);
  free(fl);
  free(vl);
  if (!lanes) {
    cairo_destroy(cr);
    cairo_surface_destroy(sf);
    return fail(err, n, path, "out of memory");
  }
  return write_png(cr, sf, path, err, n);
}
