/* c4_reporter.h -- streams the process's records to c4mon (C4_MONITOR=host:port) over the stream
 * protocol (docs/stream.md). Runs on the telemetry thread, never on the job's: every call here
 * is non-blocking; records wait in a bounded queue that drops its oldest when c4mon is away. */
#ifndef C4_REPORTER_H
#define C4_REPORTER_H

#include <stddef.h>
#include <stdint.h>

#include "c4_record.h"

/* Reads C4_MONITOR, C4_TOKEN, C4_JOB, C4_HEARTBEAT_MS, C4_REPORT_QUEUE. Returns 1 when
 * streaming is configured, 0 when C4_MONITOR is unset, C4_EINVAL (logged) when it is malformed. */
int c4_reporter_init(void);

/* Queues one record (drops the oldest queued one, counted, when the queue is full). */
void c4_reporter_push(const struct c4_record *r);

/* Makes progress without blocking: connects, authenticates, sends queued records, heartbeats and
 * clock probes, reads c4mon's answers; on any failure closes and retries later with backoff. */
void c4_reporter_tick(uint64_t now);

/* Tries, for at most timeout_ms, to deliver what is queued and say BYE; then closes. A c4mon the
 * process tried and never reached is not waited for. */
void c4_reporter_finish(int timeout_ms);

/* In a forked child (from a fork handler): the connection, the queued records and the
 * communicators are the parent's. The child closes its copy of the socket (the parent's
 * connection stays up) and forgets the rest, so that c4_reporter_init starts it afresh under its
 * own pid; a child that went on with the parent's connection mixed its frames into the parent's
 * stream, and c4mon dropped both as bad frames. */
void c4_reporter_forget_parent(void);

/* Where the heartbeat's "entered" and "done" collective counts come from (profiler or shim). */
void c4_reporter_set_progress(void (*fn)(uint64_t *entered, uint64_t *done));

/* Where a traffic plan pushed by c4mon goes (JSON bytes, not NUL-terminated), called on the
 * telemetry thread; NULL: pushed plans are ignored. */
void c4_reporter_on_plan(void (*fn)(const char *json, size_t len));

/* Waits, at most timeout_ms, until the stream to c4mon is up and the plan its WELCOME announced
 * (if any) has been handed to the callback, so that a job's first connections follow a pushed
 * plan. Returns 1 then; 0 when not streaming, when a connect to c4mon fails, or at the timeout.
 * Not from the telemetry thread (it does the work waited for). */
int c4_reporter_await_plan(int timeout_ms);

struct c4_reporter_stats {
  uint64_t sent, dropped, connects, failures;
  int connected;
  int64_t offset; /* c4mon's clock minus ours, ns */
  uint64_t rtt;
};
void c4_reporter_stats(struct c4_reporter_stats *s);

#endif
