/* mon_image.c -- draws the delay matrix as PNG (libpng) or SVG. */
#include "mon_image.h"

#include <cairo.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4_err.h"
#include "mon_heat.h"

#define MAX_BLOCKS 400
#define MARGIN 2 /* blocks of margin for the row and column effects */

/* Says why path was not written, as c4's command lines say a failure ("PROG: PATH: reason" on
 * stderr, whatever C4_DEBUG says): `c4mon matrix` is the one caller. */
static int fail(const char *path, const char *what) {
  fprintf(stderr, "c4mon matrix: %s: %s\n", path, what);
  return C4_ESYS;
}

/* Renames tmp over path, or removes it. */
static int place(const char *tmp, const char *path, int ok) {
  if (ok && rename(tmp, path) == 0) return 0;
  int e = errno;
  unlink(tmp);
  return fail(path, ok ? strerror(e) : "writing failed");
}

/* Where things go in a picture: the same for PNG and SVG. */
struct layout {
  int px;    /* pixels per block */
  int label; /* the left band (row labels) and the bottom band (column labels) */
  int top;   /* the title, the legend */
  int side;  /* the matrix with its margin */
  int width, height;
  int step; /* a label every step blocks: about 40 a side */
};

static struct layout layout_of(const struct heat *h, int budget, int px_min, int px_max,
                               size_t nverdicts) {
  struct layout l = {.label = 130, .top = 90};
  l.px = h->side ? budget / (h->side + MARGIN) : px_max;
  if (l.px < px_min) l.px = px_min;
  if (l.px > px_max) l.px = px_max;
  l.side = (h->side + MARGIN) * l.px;
  l.width = l.label + l.side + 20;
  if (l.width < 780) l.width = 780; /* the title and the scale fit */
  l.height = l.top + l.side + l.label + 16 * (int)nverdicts + 20;
  l.step = h->side > 40 ? (h->side + 39) / 40 : 1;
  return l;
}

static const char *const title_fmt = "c4mon delay matrix: %d NICs, sources down, destinations "
                                     "across%s";
static const char *const scale_fmt = "t = %.3f s (telemetry clock); cell = time per byte over its "
                                     "size class's median; margin: row and column effects";

/* The PNG, drawn with cairo: cells as in the SVG, with the title, the color scale, the NICs
 * (HOST/DEV) along both sides and the active verdicts, so that the picture reads on its own. */
static void png_cell(cairo_t *cr, int x, int y, int w, float factor, int outline) {
  unsigned char c[3];
  c4_heat_rgb(factor, c);
  cairo_rectangle(cr, x, y, w, w);
  cairo_set_source_rgb(cr, c[0] / 255.0, c[1] / 255.0, c[2] / 255.0);
  cairo_fill_preserve(cr);
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_line_width(cr, outline ? 2 : 0);
  if (outline)
    cairo_stroke(cr);
  else
    cairo_new_path(cr);
}

static void png_text(cairo_t *cr, double x, double y, double size, int right, const char *s) {
  cairo_set_source_rgb(cr, 0, 0, 0);
  cairo_set_font_size(cr, size);
  if (right) {
    cairo_text_extents_t e;
    cairo_text_extents(cr, s, &e);
    x -= e.x_advance;
  }
  cairo_move_to(cr, x, y);
  cairo_show_text(cr, s);
}

static void png_draw(cairo_t *cr, const json_t *state, const struct heat *h,
                     const struct layout *l) {
  char line[512];
  cairo_set_source_rgb(cr, 1, 1, 1);
  cairo_paint(cr);
  cairo_select_font_face(cr, "sans-serif", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL);
  snprintf(line, sizeof line, title_fmt, h->n, h->per > 1 ? " (blocks of nodes, worst shown)" : "");
  png_text(cr, 10, 20, 15, 0, line);
  snprintf(line, sizeof line, scale_fmt,
           (double)json_integer_value(json_object_get(state, "t")) / 1e9);
  png_text(cr, 10, 38, 11, 0, line);
  for (int k = 0; k <= 4; k++) { /* the scale: 1x .. 2x */
    float fct = 1.0f + 0.25f * (float)k;
    png_cell(cr, 10 + k * 70, 50, 14, fct, 0);
    snprintf(line, sizeof line, "%.2fx%s", fct, k == 4 ? " and more" : "");
    png_text(cr, 28 + k * 70, 61, 11, 0, line);
  }
  int px = l->px, cw = px - (px > 4), hs = h->side;
  for (int b = 0; b < hs; b += l->step) {
    const char *name = json_string_value(json_array_get(h->nodes, (size_t)b * (size_t)h->per));
    if (!name) continue;
    png_text(cr, l->label - 4, l->top + b * px + px / 2 + 4, 11, 1, name);
    cairo_save(cr);
    cairo_translate(cr, l->label + b * px + px / 2 - 4, l->top + l->side + 4);
    cairo_rotate(cr, 1.5707963267948966);
    png_text(cr, 0, 0, 11, 0, name);
    cairo_restore(cr);
  }
  for (int y = 0; y < hs; y++)
    for (int x = 0; x < hs; x++) {
      float v = h->cell[y * hs + x];
      if (v > 0) png_cell(cr, l->label + x * px, l->top + y * px, cw, v, v >= 1.5f && px >= 6);
    }
  png_text(cr, l->label + (hs + 1) * px, l->top - 6, 11, 0, "sending");
  png_text(cr, l->label - 4, l->top + (hs + 1) * px + px / 2 + 4, 11, 1, "receiving");
  for (int b = 0; b < hs; b++) {
    png_cell(cr, l->label + (hs + 1) * px, l->top + b * px, cw, h->row[b], 0);
    png_cell(cr, l->label + b * px, l->top + (hs + 1) * px, cw, h->col[b], 0);
  }
  int y = l->top + l->side + l->label;
  size_t i;
  json_t *v;
  json_array_foreach(json_object_get(state, "verdicts"), i, v) {
    snprintf(line, sizeof line, "#%lld %s %s: %s",
             (long long)json_integer_value(json_object_get(v, "id")),
             json_string_value(json_object_get(v, "kind")),
             json_string_value(json_object_get(v, "where")),
             json_string_value(json_object_get(v, "detail")));
    png_text(cr, 10, y, 11, 0, line);
    y += 16;
  }
}

/* cairo's PNG writer into a FILE, so that a file that cannot be written is said with its reason
 * (cairo's own file writer says only "write error"). */
static cairo_status_t png_write(void *f, const unsigned char *data, unsigned int len) {
  return fwrite(data, 1, len, f) == len ? CAIRO_STATUS_SUCCESS : CAIRO_STATUS_WRITE_ERROR;
}

int c4_mon_image_png(const json_t *state, const char *path) {
  struct heat h;
  if (c4_heat_fold(state, MAX_BLOCKS, &h) != 0) return fail(path, "out of memory");
  struct layout l = layout_of(&h, 1600, 4, 40, json_array_size(json_object_get(state, "verdicts")));
  cairo_surface_t *sf = cairo_image_surface_create(CAIRO_FORMAT_RGB24, l.width, l.height);
  cairo_t *cr = cairo_create(sf);
  png_draw(cr, state, &h, &l);
  int ok = cairo_status(cr) == CAIRO_STATUS_SUCCESS;
  cairo_destroy(cr);
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "wb");
  if (!f) {
    int e = errno;
    cairo_surface_destroy(sf);
    c4_heat_free(&h);
    return fail(path, strerror(e));
  }
  ok = ok && cairo_surface_write_to_png_stream(sf, png_write, f) == CAIRO_STATUS_SUCCESS;
  int e = ferror(f) ? errno : 0;
  ok &= fclose(f) == 0;
  cairo_surface_destroy(sf);
  c4_heat_free(&h);
  if (!ok && e) {
    unlink(tmp);
    return fail(path, strerror(e));
  }
  return place(tmp, path, ok);
}

static void xml_text(FILE *f, const char *s) {
  for (; s && *s; s++) {
    if (*s == '<')
      fputs("&lt;", f);
    else if (*s == '>')
      fputs("&gt;", f);
    else if (*s == '&')
      fputs("&amp;", f);
    else if (*s == '"')
      fputs("&quot;", f);
    else
      fputc(*s, f);
  }
}

static void rect(FILE *f, int x, int y, int w, float factor, int outline) {
  unsigned char c[3];
  c4_heat_rgb(factor, c);
  fprintf(f,
          "<rect x=\"%d\" y=\"%d\" width=\"%d\" height=\"%d\" "
          "fill=\"#%02x%02x%02x\"%s><title>%.2fx</title></rect>\n",
          x, y, w, w, c[0], c[1], c[2], outline ? " stroke=\"black\" stroke-width=\"2\"" : "",
          factor);
}

/* The SVG's title, time scale and legend. */
static void svg_head(FILE *f, const struct heat *h, const struct layout *l, const json_t *state) {
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
          "font-family=\"sans-serif\" font-size=\"11\">\n<text x=\"10\" y=\"20\" "
          "font-size=\"15\">",
          l->width, l->height);
  fprintf(f, title_fmt, h->n, h->per > 1 ? " (blocks of nodes, worst shown)" : "");
  fputs("</text>\n<text x=\"10\" y=\"38\">", f);
  fprintf(f, scale_fmt, (double)json_integer_value(json_object_get(state, "t")) / 1e9);
  fputs("</text>\n", f);
  for (int k = 0; k <= 4; k++) { /* the legend: 1x .. 2x */
    float fct = 1.0f + 0.25f * (float)k;
    rect(f, 10 + k * 70, 50, 14, fct, 0);
    fprintf(f, "<text x=\"%d\" y=\"61\">%.2fx%s</text>\n", 28 + k * 70, fct,
            k == 4 ? " and more" : "");
  }
}

/* The node names down the left and across the bottom, every l->step blocks. */
static void svg_labels(FILE *f, const struct heat *h, const struct layout *l) {
  for (int b = 0; b < h->side; b += l->step) {
    const char *name = json_string_value(json_array_get(h->nodes, (size_t)b * (size_t)h->per));
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", l->label - 4,
            l->top + b * l->px + l->px - 2);
    xml_text(f, name);
    fprintf(f, "</text>\n<text transform=\"translate(%d,%d) rotate(90)\">",
            l->label + b * l->px + l->px - 3, l->top + l->side + 4);
    xml_text(f, name);
    fputs("</text>\n", f);
  }
}

/* The matrix's cells, then the row effects at the right and the column effects below. */
static void svg_cells(FILE *f, const struct heat *h, const struct layout *l) {
  int px = l->px, label = l->label, top = l->top;
  for (int y = 0; y < h->side; y++)
    for (int x = 0; x < h->side; x++) {
      float v = h->cell[y * h->side + x];
      if (v > 0) rect(f, label + x * px, top + y * px, px - (px > 4), v, v >= 1.5f);
    }
  for (int b = 0; b < h->side; b++) {
    rect(f, label + (h->side + 1) * px, top + b * px, px - (px > 4), h->row[b], h->row[b] >= 1.25f);
    rect(f, label + b * px, top + (h->side + 1) * px, px - (px > 4), h->col[b], h->col[b] >= 1.25f);
  }
}

/* One line per verdict under the matrix, from y down. */
static void svg_verdicts(FILE *f, const json_t *verdicts, int y) {
  size_t i;
  json_t *v;
  json_array_foreach(verdicts, i, v) {
    fprintf(f, "<text x=\"10\" y=\"%d\">#%lld %s %s: ", y,
            (long long)json_integer_value(json_object_get(v, "id")),
            json_string_value(json_object_get(v, "kind")),
            json_string_value(json_object_get(v, "where")));
    xml_text(f, json_string_value(json_object_get(v, "detail")));
    fputs("</text>\n", f);
    y += 16;
  }
}

int c4_mon_image_svg(const json_t *state, const char *path) {
  struct heat h;
  if (c4_heat_fold(state, MAX_BLOCKS, &h) != 0) return fail(path, "out of memory");
  const json_t *verdicts = json_object_get(state, "verdicts");
  struct layout l = layout_of(&h, 1200, 3, 32, json_array_size(verdicts));
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    c4_heat_free(&h);
    return fail(path, strerror(errno));
  }
  svg_head(f, &h, &l, state);
  svg_labels(f, &h, &l);
  svg_cells(f, &h, &l);
  svg_verdicts(f, verdicts, l.top + l.side + l.label);
  fputs("</svg>\n", f);
  int ok = !ferror(f);
  ok &= fclose(f) == 0;
  c4_heat_free(&h);
  return place(tmp, path, ok);
}
