/* det.c -- detection's front: names jobs, keeps the clock and the rank index in the context it
 * hands every detector, and routes records to the detectors. Verdicts are the book's
 * (det_book.c). */
#include "det.h"

#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "c4_log.h"
#include "det_internal.h"
#include "det_waits.h"
#include "det_xstart.h"
#include "mon_windows.h"

static struct det_idents idents;
static struct det_ctx ctx = {.idents = &idents};
static uint64_t periodic_at; /* next time the periodic checks run */

/* Named jobs: never forgotten, so a handle stays valid for the process's life. Looked up by name
 * only when a connection or replay starts. */
static struct c4_det_job *jobs[C4_DET_MAX_JOBS];
static int njobs;

const struct c4_det_job *c4_det_job(const char *name) {
  char want[C4_DET_JOB_NAME];
  snprintf(want, sizeof want, "%s", name);
  for (int i = 0; i < njobs; i++)
    if (!strcmp(jobs[i]->name, want)) return jobs[i];
  if (njobs == C4_DET_MAX_JOBS) return NULL;
  struct c4_det_job *j = calloc(1, sizeof *j);
  if (!j) return NULL;
  j->id = njobs;
  memcpy(j->name, want, sizeof want);
  jobs[njobs++] = j;
  return j;
}

int c4_det_init(const struct c4_det_config *cfg) {
  c4_det_reset();
  ctx.cfg = *cfg;
  if (!ctx.cfg.hang_ns) ctx.cfg.hang_ns = 3000000000ull;
  if (!ctx.cfg.lost_ns) ctx.cfg.lost_ns = 10000000000ull;
  if (!ctx.cfg.forget_ns) ctx.cfg.forget_ns = 120000000000ull;
  if (!ctx.cfg.false_alarm) ctx.cfg.false_alarm = 1e-6;
  if (!ctx.cfg.min_effect) ctx.cfg.min_effect = 1.1;
  if (!(ctx.cfg.false_alarm > 0 && ctx.cfg.false_alarm < 0.5) || !(ctx.cfg.min_effect >= 1)) {
    C4_WARN("detection: --false-alarm wants 0 < P < 0.5 and --min-effect a factor >= 1");
    return C4_EINVAL;
  }
  ctx.noise = det_noise_knobs(ctx.cfg.false_alarm, ctx.cfg.min_effect);
  det_coll_init(&ctx);
  det_matrix_init(&ctx);
  ctx.progress = det_hang_take_progress;
  det_paths_init(&ctx);
  det_ranks_init(&ctx);
  det_hang_init(&ctx);
  if (cfg->plan && det_plan_load(cfg->plan) != 0) return C4_EINVAL;
  return 0;
}

void c4_det_prefetch(const struct c4_record *r, int stage) {
  if (r->kind != C4_REC_XFER) return;
  if (stage == 0) det_ident_prefetch(&idents, r->xfer.self.host, r->xfer.self.pid);
  det_matrix_prefetch(&r->xfer, stage);
  det_waits_prefetch(&r->xfer, stage);
}

/* The clock moves to the record's time first, so a verdict it triggers carries that time. */
void c4_det_take(const struct c4_det_job *job, const struct c4_record *r) {
  if (!job) return;
  switch (r->kind) {
  case C4_REC_XFER:
    c4_det_advance(r->xfer.t_done ? r->xfer.t_done : r->xfer.t_posted);
    det_ident_learn(&idents, r->xfer.self.host, r->xfer.self.pid, r->xfer.self.rank);
    det_matrix_take(job, &r->xfer);
    det_hang_take_xfer(job, &r->xfer);
    det_waits_take(job, &r->xfer);
    break;
  case C4_REC_COLL:
    c4_det_advance(r->coll.t_done ? r->coll.t_done : r->coll.t_arrive);
    if (r->coll.t_done) /* a pipeline's p2p waits for its peer stage: not a collective's time */
      det_hang_take_progress(job, r->coll.t_done,
                             !r->coll.is_p2p && r->coll.t_done > r->coll.t_arrive
                                 ? r->coll.t_done - r->coll.t_arrive
                                 : 0);
    det_coll_take_p2p(job, &r->coll);
    c4_mon_windows_take(job, r);
    break;
  case C4_REC_COMM:
    c4_det_advance(r->comm.t);
    det_coll_take_comm(job, &r->comm);
    c4_mon_windows_take(job, r);
    break;
  case C4_REC_PATH:
    c4_det_advance(r->path.t);
    det_paths_take(job, &r->path);
    break;
  case C4_REC_RANK:
    det_ident_learn(&idents, r->rank.host, r->rank.pid, r->rank.rank);
    if (r->rank.event == C4_RANK_HELLO) break; /* who it is; its time is its start */
    c4_det_advance(r->rank.t);
    det_ranks_take(job, &r->rank);
    break;
  default: break;
  }
}

/* The periodic checks run every 50 ms of detection time, not per record: at 16,384 ranks a scan
 * per record would cost more than the records. */
static void periodic(void) {
  periodic_at = ctx.now + 50000000ull;
  /* paths first: the matrix asks them which cells a slow path explains; they are told which NICs
   * the matrix found slow, whose hosts' sockets they do not judge */
  det_matrix_each_slow_nic(det_paths_take_slow_nic, NULL);
  det_paths_advance();
  det_matrix_advance();
  det_ranks_advance();
  det_hang_advance();
}

void c4_det_close_all(void) {
  det_book_clear_all("c4mon stopped: nothing watches it any more", ctx.now);
}

void c4_det_stalled(uint64_t now) {
  det_ranks_stalled(now, C4_DET_STALL_NS);
  det_hang_stalled(now, C4_DET_STALL_NS);
}

void c4_det_advance(uint64_t now) {
  if (now <= ctx.now) return;
  if (now < periodic_at) {
    ctx.now = now;
    return;
  }
  /* a hang that came due in a gap of the records (a node's own trace has no heartbeats to fill
   * it) is judged at its time, not at the next record's */
  uint64_t due = c4_det_hang_due();
  if (due > ctx.now && due < now) {
    ctx.now = due;
    periodic();
  }
  ctx.now = now;
  periodic();
}

/* Whether every NIC of the matrix belongs to a forgotten job (one c4mon, several jobs: a job
 * still running keeps the matrix it shares; /metrics leaves out the forgotten jobs' NICs). */
static int matrix_all_gone(const json_t *matrix) {
  const json_t *jobs = json_object_get(matrix, "node_jobs"), *j;
  size_t i;
  if (!json_array_size(jobs))
    return det_ranks_job_gone(json_string_value(json_object_get(matrix, "job")));
  json_array_foreach(jobs, i, j) if (!det_ranks_job_gone(json_string_value(j))) return 0;
  return 1;
}

json_t *c4_det_state_json(void) {
  json_t *matrix = det_matrix_state();
  if (matrix_all_gone(matrix)) { /* forgotten */
    json_decref(matrix);
    matrix = json_pack("{s:[], s:[], s:[], s:[], s:I}", "nodes", "cells", "rows", "cols", "t",
                       (json_int_t)0);
  }
  return json_pack("{s:I, s:o, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:I}", "t", (json_int_t)ctx.now,
                   "ranks", det_ranks_state(), "gone", det_ranks_gone_json(), "matrix", matrix,
                   "verdicts", det_book_verdicts(), "counts", det_book_counts(), "waits_untracked",
                   (json_int_t)det_waits_untracked(), "posts_untracked",
                   (json_int_t)det_xstart_untracked(), "xfers_left_out",
                   (json_int_t)det_xstart_left_out(), "twin_ranks", (json_int_t)det_ranks_twins());
}

void c4_det_reset(void) {
  det_book_reset();
  ctx.now = 0;
  periodic_at = 0;
  det_ident_reset(&idents);
  c4_mon_windows_reset();
  det_coll_reset();
  det_waits_reset();
  det_hang_reset();
  det_matrix_reset();
  det_paths_reset();
  det_plan_reset();
  det_ranks_reset();
  memset(&ctx.cfg, 0, sizeof ctx.cfg);
}
