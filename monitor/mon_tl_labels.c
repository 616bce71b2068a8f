/* mon_tl_labels.c -- the timeline's label rows: first fit in order of left edge, which for
 * intervals on a line needs no more rows than the most that overlap at one point. */
#include "mon_tl_labels.h"
#include "c4_err.h"

#include <stdlib.h>

/* The span a label takes on its row: its text moved inside [left, right], and its bar. */
static void place(struct tl_label *l, double left, double right) {
  l->at = l->x;
  if (l->at + l->w > right) l->at = right - l->w;
  if (l->at < left) l->at = left;
}

static double right_end(const struct tl_label *l) {
  double text = l->at + l->w;
  return l->end > text ? l->end : text;
}

static int by_left(const void *a, const void *b, void *labels) {
  const struct tl_label *l = labels, *x = &l[*(const size_t *)a], *y = &l[*(const size_t *)b];
  if (x->at != y->at) return x->at < y->at ? -1 : 1;
  return *(const size_t *)a < *(const size_t *)b ? -1 : 1; /* stable: input order */
}

int tl_labels_layout(struct tl_label *l, size_t n, double left, double right, double gap) {
  if (!n) return 0;
  size_t *order = malloc(n * sizeof *order);
  double *row_end = malloc(n * sizeof *row_end); /* the right end of each row's last label */
  if (!order || !row_end) {
    free(order);
    free(row_end);
    return C4_ENOMEM;
  }
  for (size_t i = 0; i < n; i++) {
    place(&l[i], left, right);
    order[i] = i;
  }
  qsort_r(order, n, sizeof *order, by_left, l);
  int rows = 0;
  for (size_t k = 0; k < n; k++) {
    struct tl_label *it = &l[order[k]];
    int r = 0;
    while (r < rows && row_end[r] + gap > it->at)
      r++;
    if (r == rows) rows++;
    it->row = r;
    row_end[r] = right_end(it);
  }
  free(order);
  free(row_end);
  return rows;
}
