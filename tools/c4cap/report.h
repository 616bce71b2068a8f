/* report.h -- c4cap's output: one JSON document (--json) or the human tables, from an aggregation.
 */
#ifndef C4CAP_REPORT_H
#define C4CAP_REPORT_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "aggregate.h"
#include "paths.h"

struct c4cap_run {
  const char *source; /* "file PATH" or "live IF,IF" */
  uint64_t dropped;   /* packets the kernel dropped (live: pcap_stats), 0 for a file */
  int top;            /* flows in the human table; the JSON has them all */
};

/* The whole report as one JSON tree (schema in docs/c4cap.md); paths may be NULL (no --paths).
 * The caller owns the result; NULL when out of memory. */
json_t *c4cap_report_json(const struct c4cap_agg *a, const struct c4cap_paths *p,
                          const struct c4cap_run *run);

/* The same as tables on out. 0, or -ENOMEM. */
int c4cap_report_table(FILE *out, const struct c4cap_agg *a, const struct c4cap_paths *p,
                       const struct c4cap_run *run);

#endif
