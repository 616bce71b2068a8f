/* mon_sub.h -- a reader of c4mon's subscription port (docs/events.md) on its own thread: the
 * trainer learns c4mon's straggler factor for its rank, the launcher learns which ranks c4mon
 * reports lost or hung. Never blocks the caller; reconnects with backoff while c4mon is away. */
#ifndef C4_MON_SUB_H
#define C4_MON_SUB_H

struct mon_sub;

/* Called on the reader's thread for each straggler, noncomm_hang and rank_lost event; t_ns is the
 * event's `t` (c4mon's monotonic clock when it serves). Only this job's events count (C4_JOB,
 * "default" when unset, as the plugin names the job to c4mon), for on_event and mon_sub_factor
 * alike. */
typedef void (*mon_sub_event_fn)(void *arg, const char *kind, const int *ranks, int nranks,
                                 long long t_ns);

/* Whether addr_port has the form mon_sub_start takes: ADDR:PORT, PORT 1 to 65535. */
int mon_sub_addr_ok(const char *addr_port);

/* Connects to ADDR:PORT (IPv4 or a name) in the background. my_rank (>= 0) is the launcher rank
 * whose straggler factor mon_sub_factor reports; on_event may be NULL. NULL if addr_port is
 * malformed (printed) or memory is short. */
struct mon_sub *mon_sub_start(const char *addr_port, int my_rank, mon_sub_event_fn on_event,
                              void *arg);

/* c4mon's current straggler factor for my_rank, 0 when it names none (or it was cleared). */
double mon_sub_factor(struct mon_sub *s);

/* How many straggler verdicts on my_rank a `recovered` event has cleared so far. */
long mon_sub_recoveries(struct mon_sub *s);

/* Events read so far (for tests and status lines). */
long mon_sub_events(struct mon_sub *s);

void mon_sub_stop(struct mon_sub *s);

#endif
