/* det_book.h -- the verdict book: the verdicts detection has raised and not yet cleared. A
 * detector hands it a finding under a key naming the fault (kind and place); the book makes it an
 * event once (docs/events.md), keeps it while it holds, and emits `recovered` when the detector
 * clears it. The detectors call it; it calls only mon_events. */
#ifndef C4_DET_BOOK_H
#define C4_DET_BOOK_H

#include <jansson.h>
#include <stdint.h>

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
  double cost;   /* the share of the job's step or collective time it costs, 0 to 1 */
  uint64_t comm; /* 0: none */
  uint64_t first_seen;
  char detail[320]; /* a comm_hang names two hosts and may say why its link is uncertain */
};

/* Raises the verdict named key (unique per fault: kind, place) at now unless it is already
 * active; returns its id (0 when the event could not be built). f's arrays are stolen either way.
 */
int det_book_raise(const char *key, struct det_finding *f, uint64_t now);

/* Emits f at now as an event that is not a verdict (nothing to clear later: job_end). f's arrays
 * are stolen. */
void det_book_note(struct det_finding *f, uint64_t now);

/* A new event id, for an event c4mon emits beside detection's (its actions: `plan`), so that ids
 * stay one sequence. */
int det_book_take_id(void);

/* Clears every active verdict of job (a name) but those of kind keep_kind (NULL: none kept), at
 * now, saying why. */
void det_book_clear_job(const char *job, const char *keep_kind, const char *why, uint64_t now);

/* Clears every active verdict, saying why. */
void det_book_clear_all(const char *why, uint64_t now);

/* A verdict that persists: key's factor, confidence and cost as they are now, in the book's copy
 * (the state document shows it); no event. Nothing when key is not active. */
void det_book_update(const char *key, double factor, double confidence, double cost);

/* Clears key at now (emits recovered, saying why) if it is active. */
void det_book_clear(const char *key, const char *why, uint64_t now);

/* Calls fn with the event of each active verdict of kind (the book keeps it; fn must not keep
 * or change it), for a detector that defers to another's verdict. */
void det_book_each(const char *kind, void (*fn)(const json_t *event, void *arg), void *arg);

/* The active verdicts' events, oldest first (the caller owns the array). */
json_t *det_book_verdicts(void);

/* Events emitted per kind since the last reset: {"straggler":N, ..., "recovered":N}. */
json_t *det_book_counts(void);

/* Forgets every verdict (emits nothing) and restarts ids at 1. */
void det_book_reset(void);

#endif
