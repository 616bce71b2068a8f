/* det.h -- c4mon's detection: takes every record (and c4mon's own rank records: heartbeats, ends
 * of streams) on the telemetry's clock and emits verdicts (docs/events.md) through mon_events.
 * The detectors: collectives (det_coll.c: straggler), hangs (det_hang.c: comm_hang,
 * noncomm_hang), the delay matrix (det_matrix.c: comm_slow) and liveness (det_ranks.c:
 * rank_lost); they keep their verdicts in the verdict book (det_book.c). Single-threaded; bounded
 * memory. */
#ifndef C4_DET_H
#define C4_DET_H

#include <jansson.h>
#include <stdint.h>

#include "c4_record.h"
#include "det_job.h"

struct c4_det_config {
  uint64_t hang_ns;   /* a collective stalled this long is a hang (default 3 s) */
  uint64_t lost_ns;   /* heartbeats silent this long: rank lost (default 10 s) */
  const char *plan;   /* a traffic plan (docs/plan-format.md) naming paths, or NULL */
  uint64_t forget_ns; /* an ended job's ranks and series stay this long (default 120 s) */
  /* The noise model's knobs (docs/events.md), 0 for the defaults: the chance that healthy noise
   * alone puts one signal past its threshold at one look (1e-6), and the smallest slowdown worth
   * a verdict, as a factor (1.1). */
  double false_alarm, min_effect;
};

/* Starts (or restarts) detection. Returns 0, or C4_EINVAL with a message logged when the plan
 * cannot be read or a knob is out of range (false_alarm in (0, 0.5), min_effect >= 1). */
int c4_det_init(const struct c4_det_config *cfg);

/* The handle of the job named name (at most C4_DET_JOB_NAME - 1 bytes are kept), the same one
 * each time: resolve it once per connection or replay, not per record. Handles outlive
 * c4_det_reset. NULL when C4_DET_MAX_JOBS jobs are known already. */
const struct c4_det_job *c4_det_job(const char *name);

/* Takes one record of job (NULL: ignored), its times already on the telemetry's clock. */
void c4_det_take(const struct c4_det_job *job, const struct c4_record *r);

/* A hint, before c4_det_take(r) of a batch: stage 0 then stage 1 over the whole batch start the
 * memory loads take will need (the matrix's connection slot, then its cell). No effect on
 * results. */
void c4_det_prefetch(const struct c4_record *r, int stage);

/* Moves detection's clock to now (ns) and runs what is due: hang and liveness checks, matrix
 * evaluations. Replay calls it with each record's time, serve every 100 ms with its own clock.
 * Time never goes back: an earlier now is ignored. */
void c4_det_advance(uint64_t now);

/* c4mon itself did not run for a while (stopped, swapped out) and its clock is now: the ranks'
 * heartbeats of that time wait unread in its sockets, so neither their silence nor their jobs'
 * lack of progress says anything for C4_DET_STALL_NS more; a c4mon stopped 25 s paged every rank
 * of a healthy job lost, and the job hung. Serve calls
 * it when its loop, which wakes every 100 ms, went C4_DET_STALL_NS without waking. */
#define C4_DET_STALL_NS 2000000000ull
void c4_det_stalled(uint64_t now);

/* When a job whose transfers were reported stuck since its last completed collective would have
 * waited out the hang threshold, 0 when none has: a replayed trace that ends inside a hang (the
 * job was killed during it, or its trace was taken then) is judged up to that time. */
uint64_t c4_det_hang_due(void);

/* The same at a trace's end, and also for a job without heartbeats whose collective records
 * left one open (a profiler writes one that never completed with t_done null): a trace of
 * collective records alone that ends inside a hang is judged too. Not per record: it surveys
 * every rank of such jobs. */
uint64_t c4_det_hang_due_at_end(void);

/* Detection's view for status, metrics, `c4mon top` and pictures (the caller owns it):
 *   {"t":NOW, "ranks":[{"job","rank","host","slowdown","last_hb_ns","entered","done","lost"}],
 *    "gone":[JOB...],
 *    "matrix":{"nodes":["HOST/DEV",...],"cells":[[SRC,DST,FACTOR,SAMPLES],...],
 *              "rows":[FACTOR...],"cols":[FACTOR...],"t":T},
 *    "verdicts":[EVENT...], "counts":{"straggler":N,"comm_slow":N,...,"recovered":N},
 *    "waits_untracked":N}
 * where a cell's FACTOR is its time per byte over its size class's median, and rows/cols the
 * row and column effects (1 = normal). A job that ended (job_end) more than the forget period ago
 * is in "gone", its ranks (lost ones excepted) and its matrix no longer shown. waits_untracked:
 * receives not kept for the straggler's receive waits (det_waits.h: more processes than it keeps).
 */
json_t *c4_det_state_json(void);

/* c4mon serve is stopping: every active verdict is closed with that reason, so that an events
 * file never holds a verdict open that nothing watches (a restarted c4mon raises it afresh if
 * the fault is still there). */
void c4_det_close_all(void);

/* Forgets everything (end of replay, tests). */
void c4_det_reset(void);

#endif
