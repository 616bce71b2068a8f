/* mon_heat.c -- folds the delay matrix into blocks and colors it. */
#include "mon_heat.h"

#include <stdlib.h>
#include <string.h>

#include "c4_err.h"

int c4_heat_fold(const json_t *state, int max_side, struct heat *h) {
  memset(h, 0, sizeof *h);
  const json_t *m = json_object_get(state, "matrix");
  h->nodes = json_object_get(m, "nodes");
  h->n = (int)json_array_size(h->nodes);
  if (max_side < 1) max_side = 1;
  h->side = h->n < max_side ? h->n : max_side;
  h->per = h->side ? (h->n + h->side - 1) / h->side : 1;
  if (h->side) h->side = (h->n + h->per - 1) / h->per;
  size_t s = (size_t)h->side;
  h->cell = calloc(s * s + 1, sizeof *h->cell);
  h->row = calloc(s + 1, sizeof *h->row);
  h->col = calloc(s + 1, sizeof *h->col);
  if (!h->cell || !h->row || !h->col) {
    c4_heat_free(h);
    return C4_ENOMEM;
  }
  size_t i;
  json_t *c;
  json_array_foreach(json_object_get(m, "cells"), i, c) {
    json_int_t a = json_integer_value(json_array_get(c, 0)),
               b = json_integer_value(json_array_get(c, 1));
    if (a < 0 || b < 0 || a >= h->n || b >= h->n) continue;
    float f = (float)json_number_value(json_array_get(c, 2));
    float *v = &h->cell[(size_t)(a / h->per) * s + (size_t)(b / h->per)];
    if (f > *v) *v = f;
  }
  json_t *v;
  json_array_foreach(json_object_get(m, "rows"), i, v) {
    if ((int)i >= h->n) break;
    float f = (float)json_number_value(v);
    if (f > h->row[i / (size_t)h->per]) h->row[i / (size_t)h->per] = f;
  }
  json_array_foreach(json_object_get(m, "cols"), i, v) {
    if ((int)i >= h->n) break;
    float f = (float)json_number_value(v);
    if (f > h->col[i / (size_t)h->per]) h->col[i / (size_t)h->per] = f;
  }
  return 0;
}

void c4_heat_free(struct heat *h) {
  free(h->cell);
  free(h->row);
  free(h->col);
  memset(h, 0, sizeof *h);
}

void c4_heat_rgb(float f, unsigned char rgb[3]) {
  if (f <= 0) {
    rgb[0] = rgb[1] = rgb[2] = 96;
    return;
  }
  float t = f <= 1 ? 0 : f >= 2 ? 1 : f - 1;
  if (t < 0.5f) { /* green to yellow */
    rgb[0] = (unsigned char)(40 + 420 * t);
    rgb[1] = 170 + (unsigned char)(60 * t);
    rgb[2] = 40;
  } else { /* yellow to red */
    rgb[0] = 250;
    rgb[1] = (unsigned char)(200 * (1 - t) * 2);
    rgb[2] = 40;
  }
}
