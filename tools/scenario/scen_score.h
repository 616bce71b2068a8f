/* scen_score.h -- c4scen score: c4mon's events (docs/events.md) against a truth file
 * (docs/scenarios.md): which faults were found, where, how fast, and what alarmed for nothing. */
#ifndef C4_SCEN_SCORE_H
#define C4_SCEN_SCORE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* One injected fault, as the truth file gives it (the strings point into doc). */
struct c4_scen_tfault {
  json_t *obj;
  const char *kind, *where;
  uint64_t onset, end; /* end 0: not restored */
};

struct c4_scen_truth {
  json_t *doc;
  struct c4_scen_tfault *f;
  size_t n;
  uint64_t start, trace_end, hang_ns;
  json_t *blips; /* array (borrowed from doc) */
};

/* One verdict (recovered events and kinds this scorer does not know are left out). */
struct c4_scen_event {
  json_t *obj;
  const char *kind;
  uint64_t t;
  long line;
};

struct c4_scen_events {
  struct c4_scen_event *ev;
  size_t n;
  size_t recovered; /* recovered events read */
};

/* Reads a truth file. Returns 0, or 1 with "FILE:LINE: reason" or "FILE: field: reason" in err. */
int c4_scen_truth_load(const char *path, struct c4_scen_truth *t, char *err, size_t errlen);
void c4_scen_truth_free(struct c4_scen_truth *t);

/* Reads an events file (JSON lines). Returns 0, or 1 with "FILE:LINE: reason" in err. */
int c4_scen_events_load(const char *path, struct c4_scen_events *e, char *err, size_t errlen);
void c4_scen_events_free(struct c4_scen_events *e);

/* Scores e against t: the --json document (docs/scenarios.md); the caller owns it. NULL without
 * memory. */
json_t *c4_scen_score(const struct c4_scen_truth *t, const struct c4_scen_events *e);

/* 1 when event ev names the place of truth fault tf (same where, and the same ranks, NIC, link
 * or path). */
int c4_scen_place_right(const json_t *tf, const json_t *ev);

/* A short human name of the place an event or fault object names ("rank 5", "h0001/2",
 * "h0001->h0002", "spine1"), into buf. */
void c4_scen_place_name(const json_t *obj, char *buf, size_t n);

#endif
