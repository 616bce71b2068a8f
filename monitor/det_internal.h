/* det_internal.h -- what the detectors share: the clock, the configuration, who a rank is, and the
 * registry of active verdicts that turns findings into events (and clears them). */
#ifndef C4_DET_INTERNAL_H
#define C4_DET_INTERNAL_H

#include <jansson.h>
#include <stdint.h>

#include "c4_record.h"
#include "det.h"

extern struct c4_det_config c4_det_cfg;
extern uint64_t c4_det_now; /* detection's clock: the newest time seen */

/* A finding, before it is an event. Strings are copied. */
struct det_finding {
  const char *kind;  /* "straggler", "comm_slow", ... */
  const char *where; /* "gpu", "nic_tx", ... */
  const char *job;
  json_t *ranks, *hosts; /* arrays (stolen) */
  const char *nic_host;  /* nic_tx/nic_rx, else NULL */
  int nic_dev;
  const char *link_src, *link_dst; /* link, else NULL */
  int link_src_dev, link_dst_dev;
  const char *path;
  double factor, confidence;
  uint64_t comm; /* 0: none */
  uint64_t first_seen;
  char detail[160];
};

/* Raises the verdict named key (unique per fault: kind, place) unless it is already active;
 * returns its id. f's arrays are stolen either way. */
int det_raise(const char *key, struct det_finding *f);

/* Emits f as an event that is not a verdict (nothing to clear later: job_end). f's arrays are
 * stolen. */
void det_note(struct det_finding *f);

/* Clears every active verdict of job but those of kind keep_kind (NULL: none kept), saying why. */
void det_clear_job(const char *job, const char *keep_kind, const char *why);

/* 1 while key is active. */
int det_active(const char *key);

/* Clears key (emits recovered) if active. */
void det_clear(const char *key, const char *why);

/* Clears every active verdict whose key starts with prefix and that keep(key, arg) rejects. */
void det_clear_unless(const char *prefix, int (*keep)(const char *key, void *arg), void *arg);

/* Launcher rank of the process (host, pid), learned from heartbeats and transfers, or -1. */
int det_rank_of(const char *host, uint32_t pid);
/* host: a record's host field, all C4_HOST_MAX bytes of it readable. A rank below 0 is ignored. */
void det_learn_rank(const char *host, uint32_t pid, int rank);

/* A zeroed table of bytes for a detector's random-access state, on huge pages where the kernel
 * gives them (det_mem.c); NULL on failure. Freed with the same size. */
void *det_table_alloc(size_t bytes);
void det_table_free(void *p, size_t bytes);

/* Items of one size in arrival order (stable pointers, scans in that order) behind an
 * open-addressing index of 4-byte positions: hashing the items themselves would spread a few
 * thousand over every page of a large table, each page backed (and zeroed) on first touch.
 * Bounded: nslots slots (a power of two), at most half of them items. Zero-initialized. */
struct det_index {
  size_t item_size, nslots;
  int probes;     /* the longest probe run looked at */
  int32_t *slots; /* position in items + 1, 0: empty */
  char *items;
  long n;
};

/* The item whose probe run from slot (any 64-bit value; reduced to the table) matches key
 * (match(item, key) != 0); else, with insert and room, a new zeroed item at the run's first free
 * slot, with *added set. NULL otherwise (or when the tables cannot be mapped). */
void *det_index_get(struct det_index *x, uint64_t slot,
                    int (*match)(const void *item, const void *key), const void *key, int insert,
                    int *added);

/* Item i (0 <= i < x->n) in arrival order. */
static inline void *det_index_at(const struct det_index *x, long i) {
  return x->items + (size_t)i * x->item_size;
}

/* Frees the tables and forgets every item. */
void det_index_reset(struct det_index *x);

/* The detectors. Each has take/advance/state/reset as it needs. */
void det_coll_init(void);
void det_coll_take_comm(const char *job, const struct c4_comm_record *c);
void det_coll_reset(void);
/* comm rank -> launcher rank (or the comm rank when unknown) and host ("" when unknown) */
int det_coll_identity(const char *job, uint64_t comm, int comm_rank, const char **host);

void det_matrix_take(const char *job, const struct c4_xfer_record *x);
void det_matrix_prefetch(const struct c4_xfer_record *x, int stage);
void det_matrix_advance(void);
json_t *det_matrix_state(void);
void det_matrix_reset(void);

/* The traffic plan's paths (det_plan.c): which path a host pair's traffic takes. */
int det_plan_load(const char *path);
int det_plan_path_of(const char *src_host, const char *dst_host); /* path index or -1 */
const char *det_plan_path_name(int path);
int det_plan_npaths(void);
void det_plan_reset(void);

void det_ranks_take(const char *job, const struct c4_rank_record *k);
void det_ranks_advance(void);
json_t *det_ranks_state(void);
void det_ranks_reset(void);
/* A job's life (det_ranks.c): job_end when every rank is gone and some said goodbye, then
 * forgotten after the forget period. 1 once job ended longer than that ago (and no rank of it
 * streams again); the names of those jobs, for the state document. */
int det_ranks_job_gone(const char *job);
json_t *det_ranks_gone_json(void);

/* A collective completed at t after inside_ns inside it (0: unknown, from a heartbeat). */
void det_hang_take_progress(const char *job, uint64_t t, uint64_t inside_ns);
void det_hang_take_xfer(const char *job, const struct c4_xfer_record *x);
void det_hang_advance(void);
void det_hang_reset(void);

/* Straggler state for a rank, for the state document (1.0 when normal or unknown). */
double det_coll_slowdown(const char *job, int rank);

#endif
