/* mon_tl_png.h -- the timeline picture of a run (`c4mon timeline`): a PNG drawn with cairo. */
#ifndef C4_MON_TL_PNG_H
#define C4_MON_TL_PNG_H

#include <stddef.h>

#include "mon_tl_run.h"

/* Draws r into the PNG at path (written whole or not at all). Returns 0, or 1 with
 * "PATH: reason" in err. */
int tl_png(const struct tl_run *r, const char *path, char *err, size_t errlen);

#endif
