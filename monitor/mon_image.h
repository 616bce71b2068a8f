/* mon_image.h -- `c4mon matrix`: the delay matrix of detection's state (det.h) as a picture,
 * sources down, destinations across, each cell colored by its factor (mon_heat.h's scale), the
 * row and column effects in a margin. Written to a temporary file and renamed into place. */
#ifndef C4_MON_IMAGE_H
#define C4_MON_IMAGE_H

#include <jansson.h>

/* PNG (cairo), the matrix at most ~1600 pixels a side (above 400 nodes, cells are blocks of
 * nodes), with the same title, color scale, NIC labels and verdicts as the SVG. Returns 0 or a
 * negative C4_E* code with a message naming path. */
int c4_mon_image_png(const json_t *state, const char *path);

/* SVG with node labels, the time, the active verdicts and hot cells outlined. */
int c4_mon_image_svg(const json_t *state, const char *path);

#endif
