/* ext_plugin_api.c -- c4's own extension of the plugin, for programs that drive the net plugin
 * themselves instead of through NCCL (c4perf, c4train on CPUs): they report their collectives
 * into the plugin's telemetry, as the profiler plugin would for NCCL's, so that c4mon sees the
 * same records and heartbeat counts. Found with dlsym; absent from other plugins, so callers
 * treat them as optional. */
#include <stdatomic.h>

#include "c4_reporter.h"
#include "c4_telemetry.h"
#include "net_fault.h"

#define C4_EXPORT __attribute__((visibility("default")))

static atomic_ulong entered, done;

static void progress(uint64_t *e, uint64_t *d) {
  *e = atomic_load(&entered);
  *d = atomic_load(&done);
}

/* A communicator the caller built (its rank, size, host and pid). */
C4_EXPORT void c4ExtComm(const struct c4_comm_record *rec) {
  c4_reporter_set_progress(progress);
  struct c4_record r = {.kind = C4_REC_COMM, .comm = *rec};
  c4_telemetry_emit(&r);
}

/* The caller entered a collective: counted for the heartbeat at once, so a hang inside it shows. */
C4_EXPORT void c4ExtCollEnter(void) { atomic_fetch_add(&entered, 1); }

/* The caller's collective completed: its record, and the count. */
C4_EXPORT void c4ExtCollDone(const struct c4_coll_record *rec) {
  atomic_fetch_add(&done, 1);
  struct c4_record r = {.kind = C4_REC_COLL, .coll = *rec};
  c4_telemetry_emit(&r);
}

/* The caller's training step (from 1), at its start: C4_FAULT clauses keyed to steps
 * (from_step, to_step, docs/fault.md) open and close with it. */
C4_EXPORT void c4ExtStep(uint64_t step) { c4_fault_set_step(step); }
