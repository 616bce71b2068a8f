/* mon_subscribe.h -- the subscription port (`--subscribe ADDR:PORT`, docs/events.md): any process
 * connects over TCP and reads events as JSON lines: first one line per verdict still active,
 * marked "replay":true, then every event as it is emitted. A thread of its own writes to the
 * subscribers; the sink only appends to their queues, so c4mon never waits on one. A subscriber
 * that does not read keeps at most 1 MiB queued: its oldest unsent lines are dropped, and where
 * they are missing it reads {"v":1,"kind":"dropped","count":N} instead. Lines are never cut.
 * What subscribers send is read and ignored; at most 256 at once (more are closed at once). At
 * most one subscription port per process. */
#ifndef C4_MON_SUBSCRIBE_H
#define C4_MON_SUBSCRIBE_H

#include <jansson.h>

/* Listens on addr_port ("127.0.0.1:7401", "0.0.0.0:7401", "[::]:7401"; port 0 picks a free port,
 * see c4_mon_subscribe_port) and starts the thread. Returns 0, or C4_EINVAL (not ADDR:PORT, or
 * already started) or C4_ESYS (cannot bind, no thread), with a message naming the address. */
int c4_mon_subscribe_start(const char *addr_port);

/* The TCP port bound by start; 0 when not started. */
int c4_mon_subscribe_port(void);

/* Subscribers connected now (accepted by the thread), for status and tests. */
int c4_mon_subscribe_clients(void);

/* An event sink (c4_mon_event_sink, mon_events.h): queues line to every subscriber and keeps
 * track of the active verdicts (an event with an integer id and a kind other than "recovered" and
 * "dropped" is active under its id, replacing one of the same id; a "recovered" event removes the
 * one its "clears" names). Never blocks: takes a mutex that the thread holds only to move queue
 * entries. Does nothing when not started. */
void c4_mon_subscribe_event(const json_t *event, const char *line, void *arg);

/* Stops the thread, gives each subscriber what its socket takes without waiting, closes them all
 * and the port, and forgets the active verdicts. Safe when not started. */
void c4_mon_subscribe_stop(void);

#endif
