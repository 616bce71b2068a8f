/* scen_out.h -- c4scen's trace writer: takes records in any order, writes them in time order
 * (JSON lines or the binary form), up to a time the generator knows nothing earlier will come. */
#ifndef C4_SCEN_OUT_H
#define C4_SCEN_OUT_H

#include <stddef.h>
#include <stdint.h>

#include "c4_record.h"

struct c4_scen_sortitem;
struct c4_scen_sink;

/* What kind of tracer the trace looks like it came from (docs/scenarios.md, "Variants"). */
enum {
  C4_SCEN_FULL = 0, /* c4's own plugin and profiler: every field */
  C4_SCEN_MINIMAL,  /* only the required fields of docs/trace-format.md */
  C4_SCEN_SEND,     /* transfers seen from the sending end only */
  C4_SCEN_RECV,     /* transfers seen from the receiving end only */
  C4_SCEN_WRAP      /* c4 wrapping another plugin (docs/wrap.md): no first-byte times, and
                       receives that do not know their peer */
};

/* The variant named s ("full", "minimal", "send", "recv", "wrap"), or -1. */
int c4_scen_variant_of(const char *s);

struct c4_scen_out {
  struct c4_scen_sink *sink; /* the file, written by its own thread */
  int bin;
  int variant;           /* C4_SCEN_* */
  struct c4_record *rec; /* held records, [n] of [cap] */
  size_t n, cap;
  struct c4_scen_sortitem *items, *tmp; /* sorting scratch, [cap] each */
  struct c4_record *keep;               /* compaction scratch, [cap] */
  int drop_rank; /* a lost rank (-1: none): its records from drop_from on are gone */
  uint64_t drop_from;
  uint64_t written; /* records written */
  int err;          /* 0, or the first C4_E* */
};

/* A record's place in time: coll -> t_done, or t_arrive when it has none; xfer -> t_done, or
 * for a pending one t_post + C4_STUCK_MS (when the plugin writes it), else t_post; comm, hb,
 * end -> t. */
uint64_t c4_scen_record_time(const struct c4_record *r);

/* Opens path ("-": standard output) and, for bin, writes the binary magic; records are written
 * as the variant's tracer would have written them. Returns 0 or C4_ESYS (errno kept). */
int c4_scen_out_open(struct c4_scen_out *o, const char *path, int bin, int variant);

/* A zeroed record of kind held for writing, valid until the next call; NULL without memory (o->err
 * is set). */
struct c4_record *c4_scen_out_add(struct c4_scen_out *o, uint32_t kind);

/* Writes, in time order, every held record whose time is <= upto. Returns 0 or o->err. */
int c4_scen_out_flush(struct c4_scen_out *o, uint64_t upto);

/* Writes what is held and closes. Returns 0, or the first error (C4_ESYS, C4_ENOMEM). */
int c4_scen_out_close(struct c4_scen_out *o);

#endif
