/* mon_outputs.h -- where c4mon's verdicts and state go, set up once for serve and replay: the
 * events file (or standard output), --on-event, the subscription port and the metrics endpoint. */
#ifndef C4_MON_OUTPUTS_H
#define C4_MON_OUTPUTS_H

#include <stdint.h>

struct mon_outputs_opts {
  const char *events;    /* a file to append events to, "-" for standard output, or NULL */
  const char *on_event;  /* a shell command run per event, or NULL */
  const char *subscribe; /* ADDR:PORT of the subscription port, or NULL */
  const char *metrics;   /* ADDR:PORT of the Prometheus endpoint, or NULL */
};

/* Opens and starts what o asks for. Returns 0, or a negative C4_E* code with the reason on
 * stderr (what could not be opened or bound); nothing is left running then. */
int c4_mon_outputs_start(const struct mon_outputs_opts *o);

/* Periodic work (about every 100 ms): reaps --on-event commands, and once a second publishes
 * detection's state (and, with live set, the server's status) to the metrics endpoint. */
void c4_mon_outputs_tick(int live);

/* Stops everything, waiting up to wait_ms for running --on-event commands. */
void c4_mon_outputs_stop(int wait_ms);

/* Events emitted since start. */
uint64_t c4_mon_outputs_events(void);

#endif
