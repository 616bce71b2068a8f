/* mon_pipeline.h -- what c4mon does with every record, live (serve) or replayed: move its times
 * into c4mon's clock, count it, and write it as a trace line.  */
#ifndef C4_MON_PIPELINE_H
#define C4_MON_PIPELINE_H

#include <stdint.h>
#include <stdio.h>

#include "c4_frame.h"
#include "c4_record.h"
#include "det_job.h"

/* Bad lines or records a replay or a merge says one by one before it only counts the rest: a
 * garbage file of 5 MB said 20,194 of them. */
#define C4_MON_BAD_SAID 100

struct mon_sink {
  FILE *out; /* trace lines, or NULL */
  uint64_t records, heartbeats;
};

/* 0 when time t (0: "not yet", always fine) moved by off is above 0 and fits an int64_t, with t
 * and |off| at most C4_FRAME_TIME_MAX; else C4_EPROTO. No arithmetic in it can overflow. */
int c4_mon_time_ok(uint64_t t, int64_t off);

/* Checks what a rank cannot be trusted with: every time of r at most C4_FRAME_TIME_MAX and, moved
 * by offset, above 0; sizes, counts and sequence numbers at most INT64_MAX; ranks and rank counts
 * not negative (-1 allowed for "none") and a rank below its count. Returns 0, or -1 with a
 * reason in *why (a static string). */
int c4_mon_record_check(const struct c4_record *r, int64_t offset, const char **why);

/* Adds offset to every time r carries (c4_mon_record_check(r, offset) passed; 0 stays 0: "not
 * yet"), counts it, hands it to detection and writes it with its job's name (c4mon's rank records
 * as "hb" and "end" lines). job is not NULL. */
void c4_mon_take_record(struct mon_sink *s, const struct c4_det_job *job, int64_t offset,
                        struct c4_record *r);

/* Adds off to every time r carries (0 stays 0: "not yet"); c4_mon_record_check(r, off) passed. */
void c4_mon_record_shift(struct c4_record *r, int64_t off);

/* The time a record happened at, for pacing a replay: done, else arrival or post, else t. */
uint64_t c4_mon_record_time(const struct c4_record *r);

#endif
