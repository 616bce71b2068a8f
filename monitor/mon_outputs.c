/* mon_outputs.c -- wires the event sinks and exporters to detection. */
#include "mon_outputs.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "det.h"
#include "mon_actions.h"
#include "mon_events.h"
#include "mon_metrics.h"
#include "mon_server.h"
#include "mon_subscribe.h"

static struct {
  FILE *events;
  int own_file, actions, subscribe, metrics;
  uint64_t count, next_publish;
} out;

static void write_line(const json_t *ev, const char *line, void *arg) {
  (void)ev;
  (void)arg;
  fputs(line, out.events);
  fputc('\n', out.events);
  fflush(out.events); /* a reader tailing the file sees each verdict as it comes */
}

static void count_event(const json_t *ev, const char *line, void *arg) {
  (void)ev;
  (void)line;
  (void)arg;
  out.count++;
}

int c4_mon_outputs_start(const struct mon_outputs_opts *o) {
  memset(&out, 0, sizeof out);
  c4_mon_events_reset();
  c4_mon_events_add_sink(count_event, NULL);
  if (o->events) {
    out.own_file = strcmp(o->events, "-") != 0;
    out.events = out.own_file ? fopen(o->events, "ae") : stdout; /* not for --on-event */
    if (!out.events) {
      fprintf(stderr, "c4mon: --events %s: %s\n", o->events, strerror(errno));
      return C4_ESYS;
    }
    c4_mon_events_add_sink(write_line, NULL);
  }
  if (o->on_event) {
    if (c4_mon_actions_start(o->on_event) != 0) goto fail;
    out.actions = 1;
    c4_mon_events_add_sink(c4_mon_actions_event, NULL);
  }
  if (o->subscribe) {
    if (c4_mon_subscribe_start(o->subscribe) != 0) goto fail; /* it says why */
    out.subscribe = 1;
    c4_mon_events_add_sink(c4_mon_subscribe_event, NULL);
  }
  if (o->metrics) {
    if (c4_mon_metrics_start(o->metrics) != 0) goto fail; /* it says why */
    out.metrics = 1;
    c4_mon_events_add_sink(c4_mon_metrics_event, NULL);
  }
  return 0;
fail:
  c4_mon_outputs_stop(0);
  return C4_EINVAL;
}

void c4_mon_outputs_tick(int live) {
  if (out.actions) c4_mon_actions_poll();
  uint64_t now = c4_now_ns();
  if (!out.metrics || now < out.next_publish) return;
  out.next_publish = now + 1000000000ull;
  json_t *state = c4_det_state_json(), *status = live ? c4_mon_server_status() : NULL;
  c4_mon_metrics_publish(state, status);
  json_decref(state);
  json_decref(status);
}

void c4_mon_outputs_stop(int wait_ms) {
  if (out.actions) c4_mon_actions_stop(wait_ms);
  if (out.subscribe) c4_mon_subscribe_stop();
  if (out.metrics) c4_mon_metrics_stop();
  if (out.own_file) fclose(out.events);
  c4_mon_events_reset();
  uint64_t n = out.count;
  memset(&out, 0, sizeof out);
  out.count = n;
}

uint64_t c4_mon_outputs_events(void) { return out.count; }
