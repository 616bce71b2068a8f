/* det_ident.h -- the rank index: which launcher rank a process (host, pid) is, learned from
 * heartbeats and transfers, for events that name launcher ranks. Bounded (2^18 processes), never
 * shrinks until reset. */
#ifndef C4_DET_IDENT_H
#define C4_DET_IDENT_H

#include <stdint.h>

#include "det_index.h"

struct det_ident_seen;

/* Zero-initialized; the tables are mapped on first use. */
struct det_idents {
  struct det_index index;      /* (host, pid) -> rank */
  struct det_ident_seen *seen; /* a cache in front of it, for the per-transfer path */
};

/* Learns that (host, pid) is rank. host: a record's host field, all C4_HOST_MAX bytes of it
 * readable and NUL-padded. A rank below 0 is ignored; a full table learns nothing more. */
void det_ident_learn(struct det_idents *x, const char *host, uint32_t pid, int rank);

/* The launcher rank of (host, pid), or -1 when it was never learned. */
int det_ident_rank(struct det_idents *x, const char *host, uint32_t pid);

/* A hint: starts loading the cache places det_ident_learn(host, pid) will read. */
void det_ident_prefetch(const struct det_idents *x, const char *host, uint32_t pid);

/* Forgets everything and unmaps the tables. */
void det_ident_reset(struct det_idents *x);

#endif
