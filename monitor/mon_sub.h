/* mon_sub.h -- the subscription port (`--subscribe ADDR:PORT`, docs/events.md): any process
 * connects and reads verdicts as JSON lines, first those still active (marked "replay":true),
 * then each as it comes. Its own thread; the sink only appends to per-subscriber queues (1 MiB
 * each, oldest lines dropped and then announced), so a subscriber that does not read never slows
 * c4mon. */
#ifndef C4_MON_SUB_H
#define C4_MON_SUB_H

#include <jansson.h>

/* Listens on ADDR:PORT (port 0: any free one) and starts the thread. 0 or a negative C4_E*. */
int c4_mon_sub_start(const char *addr_port);

int c4_mon_sub_port(void);

/* An event sink (mon_events.h). */
void c4_mon_sub_event(const json_t *event, const char *line, void *arg);

/* Stops the thread and closes every subscriber. */
void c4_mon_sub_stop(void);

#endif
