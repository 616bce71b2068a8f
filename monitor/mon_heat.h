/* mon_heat.h -- the delay matrix of detection's state (det.h) folded into a grid small enough to
 * draw: nodes are grouped into blocks and a block shows its worst cell. Shared by `c4mon top`
 * and the pictures, with one color scale. */
#ifndef C4_MON_HEAT_H
#define C4_MON_HEAT_H

#include <jansson.h>

struct heat {
  int n;            /* nodes in the matrix */
  int side;         /* blocks per side */
  int per;          /* nodes per block */
  float *cell;      /* [side * side]: the block's worst factor, 0 where no transfer was seen */
  float *row, *col; /* [side]: the worst row (sending) and column (receiving) effect */
  const json_t *nodes;
};

/* Folds state's matrix into at most max_side blocks per side. Returns 0 or C4_ENOMEM. */
int c4_heat_fold(const json_t *state, int max_side, struct heat *h);
void c4_heat_free(struct heat *h);

/* The color of a factor: green at 1, yellow at 1.5, red at 2 and beyond; gray for 0 (no data). */
void c4_heat_rgb(float factor, unsigned char rgb[3]);

#endif
