/* det_ranks.h -- the ranks liveness knows, for the hang detector. */
#ifndef C4_DET_RANKS_H
#define C4_DET_RANKS_H

#include <stdint.h>

#include "c4_record.h"
#include "det_job.h"

struct det_rank {
  const struct c4_det_job *job;
  char host[C4_HOST_MAX];
  int rank;
  uint32_t pid;
  int used, lost, ended;
  int twin; /* another live process streamed as this rank of this job (said once) */
  uint64_t last_hb, hb_interval, lost_at;
  uint64_t entered, done; /* collectives, from the last heartbeat */
  uint64_t inside_since;  /* heartbeats show it inside a collective since then (0: not) */
};

/* The rank (job, rank), added when insert is set and there is room; NULL otherwise. A process the
 * launcher gave no rank (-1) is told apart by its host and pid. */
struct det_rank *det_rank_get(const struct c4_det_job *job, int rank, const char *host,
                              uint32_t pid, int insert);

/* Calls fn for each rank of job (NULL: of every job). */
void det_ranks_each(const struct c4_det_job *job, void (*fn)(struct det_rank *r, void *arg),
                    void *arg);

/* 1 when the rank's heartbeats stopped for 2.5 of its intervals though its stream did not end:
 * the process is stopped or frozen, not computing. */
int det_rank_quiet(const struct det_rank *r);

#endif
