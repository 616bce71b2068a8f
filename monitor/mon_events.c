/* mon_events.c -- fans each verdict out to the sinks. */
#include "mon_events.h"

#include <stdlib.h>

#include "c4_err.h"

#define MAX_SINKS 8

static struct {
  c4_mon_event_sink fn;
  void *arg;
} sinks[MAX_SINKS];
static int nsinks;

int c4_mon_events_add_sink(c4_mon_event_sink fn, void *arg) {
  if (nsinks == MAX_SINKS) return C4_EINVAL;
  sinks[nsinks].fn = fn;
  sinks[nsinks].arg = arg;
  nsinks++;
  return 0;
}

void c4_mon_events_emit(json_t *ev) {
  if (!ev) return;
  char *line = json_dumps(ev, JSON_COMPACT);
  if (line)
    for (int i = 0; i < nsinks; i++)
      sinks[i].fn(ev, line, sinks[i].arg);
  free(line);
  json_decref(ev);
}

void c4_mon_events_reset(void) { nsinks = 0; }
