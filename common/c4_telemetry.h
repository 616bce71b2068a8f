/* c4_telemetry.h -- the per-process telemetry pipeline: one lock-free ring that every comm's
 * completions go into, and (with C4_TRACE=FILE) a background thread writing it as JSON lines. */
#ifndef C4_TELEMETRY_H
#define C4_TELEMETRY_H

#include <stdbool.h>
#include <stdint.h>

#include "c4_record.h"

struct c4_ring;

/* The process's ring of struct c4_record (C4_RING_SLOTS of them, default 16384), made on first
 * use; NULL only if it could not be allocated (then every emit counts as a drop). */
struct c4_ring *c4_telemetry_ring(void);

/* False when C4_TIMING=0: then callers take no timestamps and emit nothing. Read once (a bad value
 * is warned about and taken as 1); afterwards one relaxed atomic load. */
bool c4_telemetry_enabled(void);

/* The function (void (*)(void)) the LD_PRELOAD shim exports for the profiler plugin to find with
 * dlsym(RTLD_DEFAULT, ...) when NCCL loads the profiler into a process the shim is preloaded
 * into: each has a pipeline of its own, and both would report every collective. The shim then
 * stands down (prof_plugin_api.c says why that one). */
#define C4_SHIM_STAND_DOWN "c4_preload_stand_down"

/* Records one record. Never blocks or allocates: a full ring drops the record and counts it. */
void c4_telemetry_emit(const struct c4_record *r);

/* Same, for a transfer. */
void c4_telemetry_emit_xfer(const struct c4_xfer_record *r);

/* Starts the telemetry thread once, when there is somewhere to send records: the C4_TRACE file
 * (opened for appending; a header line first) and/or the c4mon stream (C4_MONITOR). It drains
 * the ring every 10 ms, at once again when a pass found it half full. A file that cannot be
 * opened is a warning naming it and the reason; timing goes on without a trace. Registers an
 * atexit flush. A child after fork starts with nothing running and empty counters, and may call
 * this again for a trace of its own. Returns 0. */
int c4_telemetry_start(void);

/* Drains what is left into the trace, writes the summary line and stops the writer. Safe to
 * call more than once and when the writer never started. */
void c4_telemetry_flush_and_stop(void);

/* Registers fn to run on the writer thread before every drain (at most 4 hooks; more are refused
 * with C4_ENOMEM). The net plugin uses it to report requests that are stuck. */
int c4_telemetry_add_periodic(void (*fn)(void));

/* Records emitted, dropped (ring full), written to the trace (their lines reached the file) and
 * unwritten (their lines did not: a write failed, or there was no memory for them) so far. Any
 * pointer may be NULL. */
void c4_telemetry_counters(uint64_t *emitted, uint64_t *dropped, uint64_t *written,
                           uint64_t *unwritten);

#endif
