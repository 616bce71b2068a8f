/* det_test_util.h -- for the detectors' unit tests: c4mon's detection fed hand-built records in
 * one process, every event it emits collected in `events` for the test to count and read. */
#ifndef C4_TEST_DET_TEST_UTIL_H
#define C4_TEST_DET_TEST_UTIL_H

#include <check.h>
#include <jansson.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "det.h"
#include "mon_events.h"

static json_t *events; /* every event since the last setup, oldest first */

static inline void collect(const json_t *ev, const char *line, void *arg) {
  (void)line;
  (void)arg;
  json_array_append(events, (json_t *)ev);
}

/* Starts detection afresh with the traffic plan at plan (NULL: none), events emptied. */
static inline void setup(const char *plan) {
  json_decref(events);
  events = json_array();
  c4_mon_events_reset();
  c4_mon_events_add_sink(collect, NULL);
  struct c4_det_config cfg = {.plan = plan};
  ck_assert_int_eq(c4_det_init(&cfg), 0);
}

/* The events of kind so far. */
static inline int count(const char *kind) {
  int n = 0;
  size_t i;
  json_t *e;
  json_array_foreach(events, i, e) n +=
      !strcmp(json_string_value(json_object_get(e, "kind")), kind);
  return n;
}

/* The first event of kind, or NULL. */
static inline json_t *first(const char *kind) {
  size_t i;
  json_t *e;
  json_array_foreach(events, i,
                     e) if (!strcmp(json_string_value(json_object_get(e, "kind")), kind)) return e;
  return NULL;
}

/* Hands r to the detectors as a record of job "job". */
static inline void take(struct c4_record *r) { c4_det_take(c4_det_job("job"), r); }

/* Rank rank of nranks in communicator 0xc4 says hello at t, from host node<rank>. */
static inline void comm_record(int rank, int nranks, uint64_t t) {
  struct c4_record r = {.kind = C4_REC_COMM};
  r.comm = (struct c4_comm_record){
      .comm = 0xc4, .rank = rank, .nranks = nranks, .pid = 100 + rank, .t = t};
  snprintf(r.comm.host, sizeof r.comm.host, "node%d", rank);
  take(&r);
}

/* Rank rank's heartbeat at t: entered collectives gone into, done of them finished. */
static inline void hb(int rank, uint64_t t, uint64_t entered, uint64_t done) {
  struct c4_record r = {.kind = C4_REC_RANK};
  r.rank = (struct c4_rank_record){
      .rank = rank, .pid = 100 + (uint32_t)rank, .t = t, .entered = entered, .done = done};
  snprintf(r.rank.host, sizeof r.rank.host, "node%d", rank);
  take(&r);
}

/* Rank rank's 1 MiB allreduce number seq in communicator comm of nranks: arrived at arrive, done
 * at done. */
static inline void coll_on(uint64_t comm, int rank, int nranks, uint64_t seq, uint64_t arrive,
                           uint64_t done) {
  struct c4_record r = {.kind = C4_REC_COLL};
  r.coll = (struct c4_coll_record){.comm = comm,
                                   .seq = seq,
                                   .rank = rank,
                                   .nranks = nranks,
                                   .root = -1,
                                   .bytes = 1 << 20,
                                   .t_arrive = arrive,
                                   .t_enqueued = arrive + 1000,
                                   .t_done = done};
  strcpy(r.coll.func, "AllReduce");
  take(&r);
}

/* The same in communicator 0xc4. */
static inline void coll(int rank, int nranks, uint64_t seq, uint64_t arrive, uint64_t done) {
  coll_on(0xc4, rank, nranks, seq, arrive, done);
}

#endif
