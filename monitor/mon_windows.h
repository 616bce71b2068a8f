/* mon_windows.h -- c4mon's memory of recent collectives: per job and communicator, a window of
 * the last C4MON_WINDOW collective sequence numbers with every rank's arrival and completion.
 * Bounded: at most C4MON_MAX_COMMS communicators, C4MON_MAX_RANKS ranks each, and
 * C4MON_RANK_BUDGET ranks summed over all of them (each rank costs 2 x C4MON_WINDOW x 8 bytes,
 * 1 KiB, so 256 MiB in all); the least recently active communicator is forgotten first. This is
 * what detection (issue 4) reads. */
#ifndef C4_MON_WINDOWS_H
#define C4_MON_WINDOWS_H

#include <jansson.h>
#include <stdint.h>

#include "c4_record.h"
#include "det_job.h"

#define C4MON_WINDOW 64
#define C4MON_MAX_COMMS 1024
#define C4MON_MAX_RANKS 65536
#define C4MON_RANK_BUDGET 262144

/* One collective of a window, read-only, for detection. */
struct c4_win_slot {
  uint64_t seq;
  const char *func;
  uint64_t bytes;
  int arrived, done;
  const uint64_t *t_arrive, *t_done; /* [nranks], 0 = not yet */
};

/* What detection hangs off the windows: arrived() runs when every rank has entered collective
 * cur (prev: the one before it, NULL when it is not in the window), with *user a pointer the
 * detector may keep per communicator; forget() frees it when the communicator is evicted. */
struct c4_win_hooks {
  void (*arrived)(const struct c4_det_job *job, uint64_t comm, int nranks, void **user,
                  const struct c4_win_slot *cur, const struct c4_win_slot *prev);
  void (*forget)(void *user);
  /* took() runs for each collective (not p2p) record of a communicator whose *user is set */
  void (*took)(void *user, const struct c4_coll_record *r);
};
void c4_mon_windows_set_hooks(const struct c4_win_hooks *h);

/* Calls fn for the newest collective of each communicator of job when it is not complete (some
 * rank has not entered it, or not finished it). */
void c4_mon_windows_each_open(const struct c4_det_job *job,
                              void (*fn)(uint64_t comm, int nranks, const struct c4_win_slot *s,
                                         void *arg),
                              void *arg);

/* Takes a coll or comm record of job (other kinds are ignored). Never fails: what does not fit
 * the bounds is counted and dropped. */
void c4_mon_windows_take(const struct c4_det_job *job, const struct c4_record *r);

/* A summary for status and replay: per communicator its size, newest collective, the oldest one
 * not every rank has entered and which ranks are missing from it, and the rank that arrived last
 * at the newest collective every rank entered. The caller owns the result. */
json_t *c4_mon_windows_json(void);

/* Forgets everything (tests, replay). */
void c4_mon_windows_reset(void);

#endif
