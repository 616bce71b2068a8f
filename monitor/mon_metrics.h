/* mon_metrics.h -- c4mon's Prometheus endpoint (`--metrics ADDR:PORT`): GET /metrics answers in
 * the text exposition format (0.0.4). libmicrohttpd serves it from its own thread; the text is
 * rebuilt whole by c4mon's main loop about once a second and swapped in, and a scrape only copies
 * it under a mutex, so a slow scraper never holds up detection and detection never holds up a
 * scrape. At most one endpoint per process. */
#ifndef C4_MON_METRICS_H
#define C4_MON_METRICS_H

#include <jansson.h>

/* Starts serving on addr_port ("127.0.0.1:9464", "0.0.0.0:9464", "[::1]:9464"; port 0 picks a
 * free port, see c4_mon_metrics_port). Until the first publish the text holds the event counters
 * only (none before a job is seen) and c4_build_info. Returns 0, or C4_EINVAL (not ADDR:PORT, or
 * already started) or C4_ESYS (cannot bind or start the server thread), with a message naming the
 * address logged. */
int c4_mon_metrics_start(const char *addr_port);

/* The TCP port bound by start (useful with port 0); 0 when not started. */
int c4_mon_metrics_port(void);

/* Renders the whole text from detection's state (c4_det_state_json's document, det.h) and the
 * server's status (c4_mon_server_status's document; NULL in replay, and then the c4_records_total,
 * c4_ranks_connected, c4_rejected_total, c4_bad_frames_total and c4_ranks_lost_total series are
 * left out), then swaps it in. Neither document is kept. At most 100,000 series: past that a
 * comment line says how many were left out. When out of memory the previous text stays (logged).
 * Call from one thread (c4mon's main loop); safe while scrapes run. */
void c4_mon_metrics_publish(const json_t *state, const json_t *status);

/* An event sink (c4_mon_event_sink, mon_events.h): counts events by their "job" and "kind" for
 * c4_events_total{job,kind} (shown at the next publish). Up to 1,023 distinct pairs; others count
 * as job "other", kind "other". */
void c4_mon_metrics_event(const json_t *event, const char *line, void *arg);

/* The text a scrape would get now (malloc'd; the caller frees it), or NULL when not started or
 * out of memory. For tests and for tools that want the text without HTTP. */
char *c4_mon_metrics_text(void);

/* Stops the server (waits for its thread; closes the port), forgets the text and the counters.
 * Safe to call when not started. */
void c4_mon_metrics_stop(void);

#endif
