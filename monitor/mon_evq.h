/* mon_evq.h -- events and scores in words, for `c4mon events --text` (mon_cmd_events.c): which
 * rank, host, NIC, link or path, and which job. */
#ifndef C4_MON_EVQ_H
#define C4_MON_EVQ_H

#include <jansson.h>
#include <stddef.h>
#include <stdio.h>

/* The place an event names, for a person: "rank 3 (node-3)", "NIC node-3/2 (sending side)",
 * "link node-1 -> node-2 (dev 0 -> 0)", "path s1", "host node-3"; into buf. For a recovered
 * event, the cleared verdict's place. */
void c4_mon_evq_place(const json_t *ev, char *buf, size_t n);

/* One line for a person about event ev: when (at is a label such as "step 91" or "12.3 s"), its
 * id, kind, place, factor and confidence, job; a recovered event names what it cleared. */
void c4_mon_evq_print(FILE *f, const json_t *ev, const char *at);

/* The score document of c4_score_run (strict) as a table for a person: each expected verdict,
 * found or missed, where and how fast; repeats; every false alarm as an event line. */
void c4_mon_evq_print_score(FILE *f, const json_t *score);

#endif
