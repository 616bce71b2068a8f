/* mon_image.c -- draws the delay matrix as PNG (libpng) or SVG. */
#include "mon_image.h"

#include <errno.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4_err.h"
#include "c4_log.h"
#include "mon_heat.h"

#define MAX_BLOCKS 400
#define MARGIN 2 /* blocks of margin for the row and column effects */

static int fail(const char *path, const char *what) {
  C4_WARN("c4mon matrix: cannot write %s: %s", path, what);
  return C4_ESYS;
}

/* Renames tmp over path, or removes it. */
static int place(const char *tmp, const char *path, int ok) {
  if (ok && rename(tmp, path) == 0) return 0;
  int e = errno;
  unlink(tmp);
  return fail(path, ok ? strerror(e) : "writing failed");
}

int c4_mon_image_png(const json_t *state, const char *path) {
  struct heat h;
  if (c4_heat_fold(state, MAX_BLOCKS, &h) != 0) return fail(path, "out of memory");
  int px = h.side ? 1600 / (h.side + MARGIN) : 8;
  if (px < 4) px = 4;
  if (px > 40) px = 40;
  int side = (h.side + MARGIN) * px;
  unsigned char *img = malloc((size_t)side * (size_t)side * 3);
  if (!img) {
    c4_heat_free(&h);
    return fail(path, "out of memory");
  }
  memset(img, 255, (size_t)side * (size_t)side * 3);
  for (int y = 0; y < side; y++)
    for (int x = 0; x < side; x++) {
      int by = y / px, bx = x / px;
      unsigned char rgb[3];
      if (by < h.side && bx < h.side)
        c4_heat_rgb(h.cell[by * h.side + bx], rgb);
      else if (by < h.side && bx == h.side + 1)
        c4_heat_rgb(h.row[by], rgb);
      else if (bx < h.side && by == h.side + 1)
        c4_heat_rgb(h.col[bx], rgb);
      else
        continue;
      if (px >= 6 && (x % px == 0 || y % px == 0)) continue; /* a white grid between cells */
      memcpy(img + ((size_t)y * (size_t)side + (size_t)x) * 3, rgb, 3);
    }
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  png_image pi;
  memset(&pi, 0, sizeof pi);
  pi.version = PNG_IMAGE_VERSION;
  pi.width = (png_uint_32)side;
  pi.height = (png_uint_32)side;
  pi.format = PNG_FORMAT_RGB;
  int ok = png_image_write_to_file(&pi, tmp, 0, img, 0, NULL);
  png_image_free(&pi);
  free(img);
  c4_heat_free(&h);
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

int c4_mon_image_svg(const json_t *state, const char *path) {
  struct heat h;
  if (c4_heat_fold(state, MAX_BLOCKS, &h) != 0) return fail(path, "out of memory");
  int px = h.side ? 1200 / (h.side + MARGIN) : 12;
  if (px < 3) px = 3;
  if (px > 32) px = 32;
  int label = 110, top = 90, side = (h.side + MARGIN) * px;
  char tmp[4096];
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  FILE *f = fopen(tmp, "w");
  if (!f) {
    c4_heat_free(&h);
    return fail(path, strerror(errno));
  }
  const json_t *verdicts = json_object_get(state, "verdicts");
  int vh = 16 * (int)json_array_size(verdicts);
  fprintf(f,
          "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" "
          "font-family=\"sans-serif\" font-size=\"11\">\n",
          label + side + 20, top + side + label + vh + 20);
  fprintf(f,
          "<text x=\"10\" y=\"20\" font-size=\"15\">c4mon delay matrix: %d NICs, sources down, "
          "destinations across%s</text>\n",
          h.n, h.per > 1 ? " (blocks of nodes, worst cell shown)" : "");
  fprintf(f,
          "<text x=\"10\" y=\"38\">t = %.3f s (telemetry clock); cell = time per byte over its "
          "size class's median; margin: row and column effects</text>\n",
          (double)json_integer_value(json_object_get(state, "t")) / 1e9);
  for (int k = 0; k <= 4; k++) { /* the legend: 1x .. 2x */
    float fct = 1.0f + 0.25f * (float)k;
    rect(f, 10 + k * 70, 50, 14, fct, 0);
    fprintf(f, "<text x=\"%d\" y=\"61\">%.2fx%s</text>\n", 28 + k * 70, fct,
            k == 4 ? " and more" : "");
  }
  int step = h.side > 40 ? (h.side + 39) / 40 : 1; /* labels thinned to about 40 a side */
  for (int b = 0; b < h.side; b += step) {
    const char *name = json_string_value(json_array_get(h.nodes, (size_t)b * (size_t)h.per));
    fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", label - 4, top + b * px + px - 2);
    xml_text(f, name);
    fprintf(f, "</text>\n<text transform=\"translate(%d,%d) rotate(90)\">", label + b * px + px - 3,
            top + side + 4);
    xml_text(f, name);
    fputs("</text>\n", f);
  }
  for (int y = 0; y < h.side; y++)
    for (int x = 0; x < h.side; x++) {
      float v = h.cell[y * h.side + x];
      if (v > 0) rect(f, label + x * px, top + y * px, px - (px > 4), v, v >= 1.5f);
    }
  for (int b = 0; b < h.side; b++) {
    rect(f, label + (h.side + 1) * px, top + b * px, px - (px > 4), h.row[b], h.row[b] >= 1.25f);
    rect(f, label + b * px, top + (h.side + 1) * px, px - (px > 4), h.col[b], h.col[b] >= 1.25f);
  }
  int y = top + side + label;
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
  fputs("</svg>\n", f);
  int ok = !ferror(f);
  ok &= fclose(f) == 0;
  c4_heat_free(&h);
  return place(tmp, path, ok);
}
