/* mon_actions.h -- `--on-event CMD` (docs/events.md): each event runs /bin/sh -c CMD with the
 * event's line and a newline on its standard input, C4_EVENT_KIND and C4_EVENT_ID in its
 * environment (to cordon a node, page someone, open a ticket). At most 4 commands run at once,
 * up to 256 more events wait; past that they are dropped and counted. c4mon never waits on a
 * command: the line goes into the pipe before the command starts and the pipe holds it whole,
 * and the main loop reaps finished commands with c4_mon_actions_poll. The commands' standard
 * output goes to c4mon's standard error (c4mon's standard output may carry the events); their
 * standard error is c4mon's. Single-threaded: call everything from c4mon's main loop. */
#ifndef C4_MON_ACTIONS_H
#define C4_MON_ACTIONS_H

#include <jansson.h>
#include <stdint.h>

/* Arms the actions with cmd (copied). Returns 0, or C4_EINVAL (cmd empty, or already started) or
 * C4_ENOMEM, with a message logged. Resets the counters. */
int c4_mon_actions_start(const char *cmd);

/* An event sink (c4_mon_event_sink, mon_events.h): queues the event and starts it at once when
 * fewer than 4 commands run. A full queue drops it (counted, logged). Does nothing when not
 * started. */
void c4_mon_actions_event(const json_t *event, const char *line, void *arg);

/* Reaps finished commands (waitpid WNOHANG; a command that exits non-zero or is killed is counted
 * as failed and logged with its status), then starts queued events in the free slots. Call about
 * every 100 ms: it sets how soon a queued event gets its turn. */
void c4_mon_actions_poll(void);

/* Runs poll until every queued and running command is done or wait_ms have passed (0: do not
 * wait), then drops what is still queued (counted) and forgets the commands still running (they
 * go on; logged). Safe when not started. */
void c4_mon_actions_stop(int wait_ms);

/* Since start: events dropped (queue full, or still queued at stop), commands started, and those
 * that failed to start, exited non-zero or were killed. */
uint64_t c4_mon_actions_dropped(void);
uint64_t c4_mon_actions_started(void);
uint64_t c4_mon_actions_failed(void);

#endif
