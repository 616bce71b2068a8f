/* det_waits.h -- the time each process spent blocked in receives, from its receive records: a
 * pipeline stage waiting for its neighbour's activations or gradients is not computing, and the
 * straggler detector (det_coll.c) takes that time out of the rank's compute between collectives,
 * so that only the slow stage is named, not its whole replica. Bounded: WAITS_PROCS processes (a
 * full table learns no new one), the last WAITS_KEPT merged receive intervals each. */
#ifndef C4_DET_WAITS_H
#define C4_DET_WAITS_H

#include <stdint.h>

#include "c4_record.h"
#include "det_job.h"

/* Takes a completed receive (other records are ignored): its [t_posted, t_done] joins the
 * process's intervals, merged with the newest one when they overlap (a ring's pipelined slices
 * become one interval, a pipeline's receives in turn stay apart). */
void det_waits_take(const struct c4_det_job *job, const struct c4_xfer_record *x);

/* A hint, in the two stages of c4_det_prefetch: starts loading the index slot (0), then the
 * process's first cache line (1), that det_waits_take(x) will read. */
void det_waits_prefetch(const struct c4_xfer_record *x, int stage);

/* A hint, in two stages some looks apart: starts loading what det_waits_blocked(job, host, pid,
 * ...) will read, the process's first lines (0), then its newest intervals (1). */
void det_waits_prefetch_proc(const char *host, uint32_t pid, int stage);

/* Nanoseconds of [t0, t1) that process (host, pid) of job spent inside receives it has reported
 * (0 when none, or unknown). host: a string in a buffer of C4_HOST_MAX bytes (all readable). */
uint64_t det_waits_blocked(const struct c4_det_job *job, const char *host, uint32_t pid,
                           uint64_t t0, uint64_t t1);

/* Forgets everything. */
void det_waits_reset(void);

#endif
