/* mon_tl_labels.h -- where the timeline's labels go: each label (with the bar it names) on the
 * first row where it overlaps nothing, so that no two labels ever cover each other. */
#ifndef C4_MON_TL_LABELS_H
#define C4_MON_TL_LABELS_H

#include <stddef.h>

/* One label: its wanted left edge x and width w (its text), and the right end of the bar it names
 * (end <= x + w: no bar beyond the text). The layout sets at (the left edge it is drawn at: x,
 * moved left when the text would pass the right edge) and row (0 is the first). */
struct tl_label {
  double x, w, end;
  double at;
  int row;
};

/* Lays out n labels between left and right, at least gap apart on a row. Items that overlap go
 * on different rows; the row count is the fewest that can hold them (the most items that overlap
 * at one point). Returns the number of rows, or C4_ENOMEM. */
int tl_labels_layout(struct tl_label *l, size_t n, double left, double right, double gap);

#endif
