/* mon_place.h -- where a verdict is, in words for people: the job, then the rank, host, NIC,
 * link or path it names (docs/events.md), for `c4mon status`, `c4mon top` and any other text. */
#ifndef C4_MON_PLACE_H
#define C4_MON_PLACE_H

#include <jansson.h>
#include <stddef.h>

/* Writes the place of event ev (a verdict, or a recovered event's "cleared" part with the job
 * from ev) into buf, NUL-terminated and cut to len: for example
 *   "job run17, link node-3/2 -> node-5/0 (ranks 24, 40)"
 *   "job run17, nic_tx node-3/2 (ranks 24-31)"
 *   "job run17, rank 5 on node-2"
 * Returns buf. */
char *c4_mon_place(const json_t *ev, char *buf, size_t len);

#endif
