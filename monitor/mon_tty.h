/* mon_tty.h -- `c4mon top`: a live terminal view of a running c4mon: its counters, the verdicts
 * still active, the ranks worst first, and the delay matrix as a heat map (ANSI 256 colors, or
 * characters from ' .:-=+*#%@' without color). */
#ifndef C4_MON_TTY_H
#define C4_MON_TTY_H

#include <jansson.h>
#include <stdio.h>

/* One frame of status (c4mon's status document, with detection's state under "detect") into out,
 * fitted to width x height characters. */
void c4_mon_tty_render(FILE *out, const json_t *status, int width, int height, int color);

/* Polls the c4mon at addr every interval_s and redraws until SIGINT/SIGTERM; with once, one frame
 * without clearing the screen (c4_mon_query_status's code when c4mon did not answer, for
 * c4_mon_query_why). color: 1, 0, or -1 (when stdout is a terminal). */
int c4_mon_tty_run(const char *addr, const char *token, double interval_s, int once, int color);

#endif
