/* mon_prom.h -- Prometheus text exposition of c4mon's state on http://ADDR:PORT/metrics, served
 * by libmicrohttpd's own thread from a text the main loop rebuilds about once a second (the
 * handler only copies it under a mutex, so a scrape never waits on detection). */
#ifndef C4_MON_PROM_H
#define C4_MON_PROM_H

#include <jansson.h>

/* Starts the endpoint on ADDR:PORT (port 0: any free port). Returns 0 or a negative C4_E*. */
int c4_mon_prom_start(const char *addr_port);

/* The port it listens on (after start). */
int c4_mon_prom_port(void);

/* Rebuilds the text from detection's state (det.h) and the server's status (NULL in replay). */
void c4_mon_prom_publish(const json_t *state, const json_t *status);

/* An event sink (mon_events.h): counts events by kind. */
void c4_mon_prom_event(const json_t *event, const char *line, void *arg);

/* The text as it is now (malloc'd), for tests and `c4mon status`. */
char *c4_mon_prom_text(void);

void c4_mon_prom_stop(void);

#endif
