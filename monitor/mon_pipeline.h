/* mon_pipeline.h -- what c4mon does with every record, live (serve) or replayed: move its times
 * into c4mon's clock, count it, and write it as a trace line.  */
#ifndef C4_MON_PIPELINE_H
#define C4_MON_PIPELINE_H

#include <stdint.h>
#include <stdio.h>

#include "c4_frame.h"
#include "c4_record.h"

struct mon_sink {
  FILE *out; /* trace lines, or NULL */
  uint64_t records, heartbeats;
};

/* Adds offset to every time r carries (0 stays 0: "not yet"), counts it, hands it to detection
 * and writes it with "job" (c4mon's rank records as "hb" and "end" lines). */
void c4_mon_take_record(struct mon_sink *s, const char *job, int64_t offset, struct c4_record *r);

/* The time a record happened at, for pacing a replay: done, else arrival or post, else t. */
uint64_t c4_mon_record_time(const struct c4_record *r);

#endif
