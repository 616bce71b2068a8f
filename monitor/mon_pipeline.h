/* mon_pipeline.h -- what c4mon does with every record, live (serve) or replayed: move its times
 * into c4mon's clock, count it, and write it as a trace line. Detection will hang off here. */
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

/* Adds offset to every time r carries (0 stays 0: "not yet"), counts it, writes it with "job". */
void c4_mon_take_record(struct mon_sink *s, const char *job, int64_t offset, struct c4_record *r);

/* Writes an "hb" line: the rank's collective counts at time hb->t (moved by its offset). */
void c4_mon_take_heartbeat(struct mon_sink *s, const char *job, int rank, const char *host,
                           const struct c4_heartbeat *hb);

/* The time a record happened at, for pacing a replay: done, else arrival or post, else t. */
uint64_t c4_mon_record_time(const struct c4_record *r);

#endif
