/* det_internal.h -- what det.c hands the detectors (one context: the configuration, the clock and
 * the rank index) and what each detector offers det.c. Detectors raise and clear verdicts through
 * the verdict book (det_book.h) and never call back into det.c. */
#ifndef C4_DET_INTERNAL_H
#define C4_DET_INTERNAL_H

#include <jansson.h>
#include <stdint.h>

#include "c4_record.h"
#include "det.h"
#include "det_book.h"
#include "det_ident.h"
#include "det_index.h"
#include "det_job.h"
#include "det_noise.h"

/* Detection's shared state, owned by det.c and given to every detector at its init. */
struct det_ctx {
  struct c4_det_config cfg; /* defaults filled in */
  uint64_t now;             /* detection's clock: the newest time seen */
  struct det_noise_knobs noise;
  struct det_idents *idents;
  /* Collectives of job completed by time t: det_hang's, for det_ranks (a heartbeat's count of
   * completed collectives grew), so that det_ranks does not call into det_hang. */
  void (*progress)(const struct c4_det_job *job, uint64_t t, uint64_t inside_ns);
};

/* The detectors. Each has init/take/advance/state/reset as it needs; init keeps ctx (which
 * outlives it) for the calls that follow. */
void det_coll_init(const struct det_ctx *ctx);
void det_coll_take_comm(const struct c4_det_job *job, const struct c4_comm_record *c);
/* A p2p call's span: the rank was waiting for its peer, not computing (det_waits) */
void det_coll_take_p2p(const struct c4_det_job *job, const struct c4_coll_record *r);
void det_coll_reset(void);
/* comm rank -> launcher rank (or the comm rank when unknown) and host ("" when unknown) */
int det_coll_identity(const struct c4_det_job *job, uint64_t comm, int comm_rank,
                      const char **host);
/* The host an event names for a comm rank: its comm record's, else (a trace that names none
 * there) that of the launcher rank's process it is tied to by number, else "". */
const char *det_coll_host(const struct c4_det_job *job, uint64_t comm, int comm_rank);
/* Straggler state for a rank, for the state document (1.0 when normal or unknown). */
double det_coll_slowdown(const struct c4_det_job *job, int rank);

void det_matrix_init(const struct det_ctx *ctx);
void det_matrix_take(const struct c4_det_job *job, const struct c4_xfer_record *x);
void det_matrix_prefetch(const struct c4_xfer_record *x, int stage);
void det_matrix_advance(void);
json_t *det_matrix_state(void);
/* Calls fn with the host of each NIC that the last evaluation found slow (a NIC verdict on its way
 * or standing), for det_paths (det.c hands them over: the matrix already calls det_paths). */
void det_matrix_each_slow_nic(void (*fn)(const char *host, void *arg), void *arg);
void det_matrix_reset(void);

/* The traffic plan's paths (det_plan.c): which path a host pair's traffic takes. */
int det_plan_load(const char *path);
int det_plan_path_of(const char *src_host, const char *dst_host); /* path index or -1 */
/* 1 when the plan spreads the pair's flows over more than one path: its cell cannot name one. */
int det_plan_split(const char *src_host, const char *dst_host);
/* The paths of the pair's flows, in the plan's order (up to max); returns how many. */
int det_plan_flow_paths(const char *src_host, const char *dst_host, int *paths, int max);
/* The path data socket sock of the pair takes: the plan's flow with its source port src_port,
 * else (src_port 0, or no port planned) the pair's flow sock; -1 when the plan does not say (a
 * socket whose planned bind failed went wherever ECMP hashed it). */
int det_plan_sock_path(const char *src_host, const char *dst_host, int sock, int src_port);
const char *det_plan_path_name(int path);
int det_plan_npaths(void);
void det_plan_reset(void);

/* Congested paths from the plugin's path records (det_paths.c). */
void det_paths_init(const struct det_ctx *ctx);
void det_paths_take(const struct c4_det_job *job, const struct c4_path_record *a);
/* host's NIC was found slow by the matrix's last evaluation: the next det_paths_advance does not
 * judge the sockets of connections that cross it (each advance forgets these). */
void det_paths_take_slow_nic(const char *host, void *arg);
void det_paths_advance(void);
/* 1 when a path the pair's data sockets take is under a path verdict or on its way to one: the
 * matrix takes the pair's cell as explained. */
int det_paths_explains(const char *src_host, const char *dst_host);
void det_paths_reset(void);

void det_ranks_init(const struct det_ctx *ctx);
void det_ranks_take(const struct c4_det_job *job, const struct c4_rank_record *k);
void det_ranks_advance(void);
/* c4_det_stalled's part: no rank is judged silent before now + grace_ns. */
void det_ranks_stalled(uint64_t now, uint64_t grace_ns);
json_t *det_ranks_state(void);
/* Ranks that two live processes streamed as, at once, since the last reset: two jobs under one
 * C4_JOB name (each also said once in c4mon's log). */
uint64_t det_ranks_twins(void);
void det_ranks_reset(void);
/* A job's life (det_ranks.c): job_end when every rank is gone and some said goodbye, then
 * forgotten after the forget period. 1 once job ended longer than that ago (and no rank of it
 * streams again); the names of those jobs, for the state document. */
int det_ranks_job_gone(const char *job);
json_t *det_ranks_gone_json(void);

void det_hang_init(const struct det_ctx *ctx);
/* A collective completed at t after inside_ns inside it (0: unknown, from a heartbeat). */
void det_hang_take_progress(const struct c4_det_job *job, uint64_t t, uint64_t inside_ns);
void det_hang_take_xfer(const struct c4_det_job *job, const struct c4_xfer_record *x);
void det_hang_advance(void);
/* c4_det_stalled's part: no job is judged hung before now + grace_ns. */
void det_hang_stalled(uint64_t now, uint64_t grace_ns);
/* 1 when [from, to] overlaps the job's last hang (from its last progress to the collectives
 * completing again, or now while it holds): a transfer that waited out a hang measures the hang,
 * not its link. */
int det_hang_spans_stall(const struct c4_det_job *job, uint64_t from, uint64_t to);
void det_hang_reset(void);

/* A job's life (det_ranks.c): job_end when every rank is gone and some said goodbye, then
 * forgotten after the forget period. 1 once job (a name; NULL: no) ended longer than that ago;
 * and the names of those jobs, for the state document (not the per-record path). */
int det_ranks_job_gone(const char *job);
json_t *det_ranks_gone_json(void);

#endif
