/* mon_pathplan.h -- the closed loop's c4mon half: while a `path` verdict stands, its path is on
 * the `avoid` list of the plan c4mon pushes (docs/plan-format.md), so the plugin moves every
 * connected comm's data sockets on that path off it at once; the verdict's recovery takes it off
 * the list again. Each change is pushed to every rank and told in a `plan` event: which path, which
 * flows of which host pairs moved, to how many ranks, when (docs/events.md). Single-threaded:
 * c4mon's main loop. */
#ifndef C4_MON_PATHPLAN_H
#define C4_MON_PATHPLAN_H

#include <jansson.h>
#include <stdint.h>

/* An event sink (mon_events.h): a `comm_slow` verdict at a `path` puts the path on the list, a
 * `recovered` event clearing one takes it off; either is a change to push. */
void mon_pathplan_event(const json_t *event, const char *line, void *arg);

/* The paths to avoid now, as a JSON array of their ids (a new reference). */
json_t *mon_pathplan_avoid(void);

/* 1 when the list changed since the last mon_pathplan_announce: the plan is to be pushed again. */
int mon_pathplan_pending(void);

/* After the plan was pushed to `ranks` ranks at now: one `plan` event per change, with the flows
 * the plan puts on the path (mon_planpush_flows_on) as what moved off it (or back onto it). */
void mon_pathplan_announce(int ranks, uint64_t now);

void mon_pathplan_reset(void);

#endif
