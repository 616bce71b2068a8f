/* c4_score.h -- c4mon's events (docs/events.md) scored against what was injected: a scenario's
 * truth file (c4scen score, docs/scenarios.md) or a table of expected verdicts (c4mon events
 * --score, docs/events.md): which faults were found, where, how fast, what alarmed for nothing. */
#ifndef C4_SCORE_H
#define C4_SCORE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define C4_SCORE_EARLY_NS 500000000ull  /* an event may come this long before a fault's onset */
#define C4_SCORE_LATE_NS 10000000000ull /* ... and this long after its end */

/* One injected fault, as the truth file gives it (the strings point into doc). where is its
 * place kind, or the first of the alternatives an expected table allows. */
struct c4_score_fault {
  json_t *obj;
  const char *kind, *where;
  uint64_t onset, end;  /* end 0: not restored */
  uint64_t early, late; /* an event may come this long before the onset, after the end */
};

struct c4_score_truth {
  json_t *doc;
  struct c4_score_fault *f;
  size_t n;
  uint64_t start, trace_end, hang_ns;
  json_t *blips; /* array (borrowed from doc) */
  int strict;    /* an event is accounted for only at the right place of a fault it fits (an
                    expected table); else by kind and time (a scenario's truth) */
};

/* One verdict (recovered events and kinds this scorer does not know are left out). */
struct c4_score_event {
  json_t *obj;
  const char *kind;
  uint64_t t;
  long line;
};

struct c4_score_events {
  struct c4_score_event *ev;
  size_t n;
  size_t recovered; /* recovered events read */
};

/* Reads a truth file. Returns 0, or 1 with "FILE:LINE: reason" or "FILE: field: reason" in err. */
int c4_score_truth_load(const char *path, struct c4_score_truth *t, char *err, size_t errlen);
void c4_score_truth_free(struct c4_score_truth *t);

/* The same from a parsed document (named path in errors, its faults called list), which t then
 * owns (freed by c4_score_truth_free, also after a failure). */
int c4_score_truth_from_doc(const char *path, json_t *doc, const char *list,
                            struct c4_score_truth *t, char *err, size_t errlen);

/* Reads a table of expected verdicts (docs/events.md, "Scoring") and resolves its times: "step:N"
 * from steps (c4train's JSON lines; NULL: none), "mark:NAME" from marks ("NAME T_NS" lines;
 * NULL: none). The truth is strict. Returns 0, or 1 with "FILE: expect[I].field: reason" in err. */
int c4_score_expect_load(const char *path, const char *steps, const char *marks,
                         struct c4_score_truth *t, char *err, size_t errlen);

/* Resolves one time reference as the table's "from" (is_end 0) or "to" (is_end 1) would be:
 * decimal nanoseconds, "step:N" (steps: c4train's JSON lines) or "mark:NAME" (marks). Returns 0,
 * or 1 with the reason in err. */
int c4_score_time_ref(const char *ref, const char *steps, const char *marks, int is_end,
                      uint64_t *t, char *err, size_t errlen);

/* Reads c4train's JSON lines at path into *steps, an object "N" -> [t_start_ns, t_ns] for the
 * first line of each step N (the caller owns it). Returns 0, or 1 with the reason in err. */
int c4_score_steps_load(const char *path, json_t **steps, char *err, size_t errlen);

/* Reads an events file (JSON lines). Returns 0, or 1 with "FILE:LINE: reason" in err. */
int c4_score_events_load(const char *path, struct c4_score_events *e, char *err, size_t errlen);
void c4_score_events_free(struct c4_score_events *e);

/* Scores e against t: the --json document (docs/scenarios.md; with t->strict also "ok" and
 * "repeats", docs/events.md); the caller owns it. NULL without memory. */
json_t *c4_score_run(const struct c4_score_truth *t, const struct c4_score_events *e);

/* 1 when event ev names the place of truth fault tf (a where it allows, and the same ranks, NIC,
 * link or path). */
int c4_score_place_right(const json_t *tf, const json_t *ev);

/* A short human name of the place an event or fault object names ("rank 5", "h0001/2",
 * "h0001->h0002", "spine1"), into buf. */
void c4_score_place_name(const json_t *obj, char *buf, size_t n);

#endif
