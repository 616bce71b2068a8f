/* mon_events.c -- fans each verdict out to the sinks. */
#include "mon_events.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "c4_clock.h"
#include "c4_err.h"

#define MAX_SINKS 8

static struct {
  c4_mon_event_sink fn;
  void *arg;
} sinks[MAX_SINKS];
static int nsinks;
static int live; /* event times are this process's monotonic clock: they have a wall time */

void c4_mon_events_live(int on) { live = on; }

/* The wall-clock time of monotonic time t, as RFC 3339 UTC with microseconds, or null when the
 * times are not this process's clock (a replayed trace). Taken anew for each event, so that a
 * wall-clock step (NTP) shows in later events as it would in syslog. */
static json_t *wall_of(json_t *t) {
  if (!live || !json_is_integer(t)) return json_null();
  uint64_t mono = c4_now_ns(), wall = c4_wall_ns(), at = (uint64_t)json_integer_value(t);
  uint64_t ns = at <= mono ? wall - (mono - at) : wall + (at - mono);
  time_t sec = (time_t)(ns / 1000000000ull);
  struct tm tm;
  char buf[40];
  gmtime_r(&sec, &tm);
  size_t n = strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, sizeof buf - n, ".%06lluZ", (unsigned long long)(ns % 1000000000ull / 1000));
  return json_string(buf);
}

int c4_mon_events_add_sink(c4_mon_event_sink fn, void *arg) {
  if (nsinks == MAX_SINKS) return C4_EINVAL;
  sinks[nsinks].fn = fn;
  sinks[nsinks].arg = arg;
  nsinks++;
  return 0;
}

void c4_mon_events_emit(json_t *ev) {
  if (!ev) return;
  json_object_set_new(ev, "wall", wall_of(json_object_get(ev, "t")));
  char *line = json_dumps(ev, JSON_COMPACT);
  if (line)
    for (int i = 0; i < nsinks; i++)
      sinks[i].fn(ev, line, sinks[i].arg);
  free(line);
  json_decref(ev);
}

void c4_mon_events_reset(void) { nsinks = 0; }
