/* mon_run_cmd.h -- `--on-event CMD`: each verdict runs /bin/sh -c CMD with the event's line on its
 * standard input and C4_EVENT_KIND, C4_EVENT_ID in its environment (to cordon a node, page
 * someone). At most 4 run at once; up to 256 more wait; beyond that they are dropped and counted.
 * c4mon never waits for a command: poll() reaps and starts them from the main loop. */
#ifndef C4_MON_RUN_CMD_H
#define C4_MON_RUN_CMD_H

#include <jansson.h>
#include <stdint.h>

int c4_mon_run_cmd_start(const char *cmd);

/* An event sink (mon_events.h). */
void c4_mon_run_cmd_event(const json_t *event, const char *line, void *arg);

/* Reaps finished commands and starts waiting ones. */
void c4_mon_run_cmd_poll(void);

/* Waits up to wait_ms for queued and running commands, then forgets the rest. */
void c4_mon_run_cmd_stop(int wait_ms);

struct c4_mon_run_stats {
  uint64_t started, failed, dropped;
};
struct c4_mon_run_stats c4_mon_run_cmd_stats(void);

#endif
