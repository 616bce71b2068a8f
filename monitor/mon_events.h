/* mon_events.h -- where c4mon's verdicts go (docs/events.md): every event is handed, as a JSON
 * object and as its line, to each sink registered (the events file, --on-event, the subscription
 * port, the metrics counters). Single-threaded: emit and add_sink are called from c4mon's main
 * loop; a sink that hands the event to another thread copies what it needs. */
#ifndef C4_MON_EVENTS_H
#define C4_MON_EVENTS_H

#include <jansson.h>

/* line: the compact JSON text without a newline. */
typedef void (*c4_mon_event_sink)(const json_t *event, const char *line, void *arg);

/* Registers a sink; at most 8. Returns 0 or C4_EINVAL when full. */
int c4_mon_events_add_sink(c4_mon_event_sink fn, void *arg);

/* live 1: event times ("t") are this process's monotonic clock (c4mon serve), so each event gets
 * "wall", their UTC time in RFC 3339; 0 (the default, replay): "wall" is null. */
void c4_mon_events_live(int on);

/* Adds "wall" to ev, hands it to every sink, then releases it (steals the reference). */
void c4_mon_events_emit(json_t *ev);

/* Removes every sink (tests, end of replay). */
void c4_mon_events_reset(void);

#endif
