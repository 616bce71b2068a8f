/* det_waits.h -- the time each process spent blocked in receives, from its receive records, and
 * inside collectives (det_coll.c hands over their spans): a pipeline stage waiting for its
 * neighbour's activations or gradients is not computing, nor is a rank waiting in another
 * communicator's collective. The straggler detector (det_coll.c) takes that time out of the
 * rank's compute between collectives, so that only the slow stage is named, not its whole
 * replica, and a straggler's factor is its compute's. Bounded: DET_WAITS_MAX processes (the
 * table grows with the job up to that; receives of a process past it are not kept and are
 * counted, det_waits_untracked), the last WAITS_KEPT merged intervals each. */
#ifndef C4_DET_WAITS_H
#define C4_DET_WAITS_H

#include <stdint.h>

#include "c4_record.h"
#include "det_job.h"

#define DET_WAITS_MAX (1 << 18) /* processes kept: as many as the rank index (det_ident.h) */

/* Takes a completed receive (other records are ignored): its [t_posted, t_done] joins the
 * process's intervals, merged with the newest one when they overlap (a ring's pipelined slices
 * become one interval, a pipeline's receives in turn stay apart). */
void det_waits_take(const struct c4_det_job *job, const struct c4_xfer_record *x);

/* A hint, in the two stages of c4_det_prefetch: starts loading the index slot (0), then the
 * process's first cache line (1), that det_waits_take(x) will read. */
void det_waits_prefetch(const struct c4_xfer_record *x, int stage);

/* Where process (host, pid) of job is kept, for a caller that looks the same processes up again
 * and again (the straggler detector: each rank at each collective): a handle that stays valid
 * until det_waits_epoch changes, or C4_NONE (-1) while the process has reported no receive. host:
 * a string in a buffer of C4_HOST_MAX bytes (all readable). */
int det_waits_find(const struct c4_det_job *job, const char *host, uint32_t pid);

/* The handle of (host, pid) of job, kept from now on if it was not (for a process known so far
 * only by its communicator records); C4_NONE when host is "" or the table is full (counted in
 * det_waits_untracked). */
int det_waits_add(const struct c4_det_job *job, const char *host, uint32_t pid);

/* The handle of launcher rank rank of job: the process that reported receives as it, else one
 * kept from now on for it (a trace that names no host: its collectives' spans are all there is);
 * C4_NONE when the table is full. */
int det_waits_add_rank(const struct c4_det_job *job, int rank);

/* [t0, t1] joins the process's intervals as a receive's would: time it spent inside a
 * collective, which is no more its compute than a receive is. at: a handle or -1 (nothing). */
void det_waits_take_span(int at, uint64_t t0, uint64_t t1);

/* The process that reported receives as launcher rank rank of job (the newest one so), a handle
 * as det_waits_find's, or C4_NONE. */
int det_waits_find_rank(const struct c4_det_job *job, int rank);

/* 1 when job has reported receive records (a net plugin's): they hold its p2p receives' waits. */
int det_waits_job_has_receives(const struct c4_det_job *job);

/* The highest launcher rank of job that reported a receive, plus one (0: none yet). */
int det_waits_job_ranks(const struct c4_det_job *job);

/* Changes when one of the job's launcher ranks is bound to another process: a handle found by
 * det_waits_find_rank may be stale then. */
unsigned det_waits_rank_gen(const struct c4_det_job *job);

/* The host the process of handle at reported from ("" for none, or for a handle that is not). */
const char *det_waits_host(int at);

/* How many processes are kept: a process det_waits_find did not find is not found again until
 * this grows. */
int det_waits_count(void);

/* Changes when the table is forgotten (det_waits_reset): every handle is stale then. */
unsigned det_waits_epoch(void);

/* A hint, in two stages some looks apart: starts loading what det_waits_blocked(at, ...) will
 * read, the process's first lines (0), then its newest intervals (1). at: a handle or -1. */
void det_waits_prefetch_at(int at, int stage);

/* Nanoseconds of [t0, t1) that the process of handle at (-1: none) spent inside receives it has
 * reported (0 when none). */
uint64_t det_waits_blocked(int at, uint64_t t0, uint64_t t1);

/* Receives not kept because DET_WAITS_MAX processes were kept already (or the table could not
 * grow): their processes' waits count as compute. */
uint64_t det_waits_untracked(void);

/* Forgets everything. */
void det_waits_reset(void);

#endif
