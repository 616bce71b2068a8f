/* c4_trace_read.h -- reads trace lines (docs/trace-format.md) back into records, for c4mon
 * replay and tests: a bad line is reported with its number and reason, and reading goes on. */
#ifndef C4_TRACE_READ_H
#define C4_TRACE_READ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "c4_record.h"

/* Parses one line (len bytes, no newline needed). Returns 1 with *out filled (an xfer, coll,
 * comm, link, path, hb or end line; a header with a host, pid and launcher rank, as a
 * C4_RANK_HELLO rank record), 0 for a valid line that carries no record (a summary, a header
 * without those, or a type this reader does not know), or C4_EPROTO with the reason in err (not
 * JSON, no or unknown "v", a field missing, of the wrong type, or out of range). */
int c4_trace_parse_line(const char *line, size_t len, struct c4_record *out, char *err,
                        size_t errlen);

/* The same, and the line's optional "job" (a string: the C4_JOB of the process that wrote it)
 * into job (joblen bytes, cut to fit; empty when the line has none). */
int c4_trace_parse_line_job(const char *line, size_t len, struct c4_record *out, char *job,
                            size_t joblen, char *err, size_t errlen);

/* Sets r's optional fields (docs/trace-format.md) to what the reader assumes when a line leaves
 * them out: r becomes the record its line with the required fields only reads back as. */
void c4_trace_minimal(struct c4_record *r);

struct c4_trace_reader {
  FILE *f;
  unsigned long lineno; /* of the line (binary: record) last read */
  unsigned long bad;    /* lines rejected so far */
  int binary;   /* 1: the binary form; 2: it hit a bad record and stopped; 3: another version's */
  uint8_t *buf; /* bytes read, not yet parsed from pos on; cap grows for long lines */
  size_t cap, have, pos;
  uint64_t offset;    /* file offset of buf[0] */
  const uint8_t *map; /* a binary trace in a regular file, mapped whole (no copy), or NULL */
  size_t map_len;
  size_t ahead;     /* the mapping is prefetched up to here */
  size_t populated; /* and its page tables filled up to here (populate_ahead) */
  char job[64];     /* JSON lines: the job the last record's line named ("job"), empty if none */
  int64_t clock;    /* JSON lines: wall_ns - mono_ns of the last header line that gave both, */
  unsigned long clock_line; /* and its line number (0: none yet) */
};

/* Opens path ("-" for standard input), JSON lines or the binary form (told apart by the binary
 * form's magic). Returns 0 or C4_ENOTFOUND (errno kept). */
int c4_trace_open(struct c4_trace_reader *r, const char *path);

/* Same, on a stream already open (a pipe, fmemopen); the reader closes it. */
int c4_trace_open_stream(struct c4_trace_reader *r, FILE *f);

/* Next record: 1 with *out filled, 0 at the end of the file, or C4_EPROTO for a bad line, with
 * "line N: reason" in err; call again to go on. In the binary form a bad record cannot be
 * skipped (its length is unknown): C4_EPROTO names its byte offset, and the next call returns 0.
 * A binary trace of another version of the format gives one C4_EPROTO saying so, then 0. */
int c4_trace_next(struct c4_trace_reader *r, struct c4_record *out, char *err, size_t errlen);

/* Up to max records of a binary trace read through its mapping (c4_trace_open of a regular
 * file) into out, decoded in one loop: what c4_trace_next would give, without its per-record
 * call. Stops before anything else (a record it cannot decode, the end): returns how many it
 * decoded, 0 included, and c4_trace_next goes on from there, saying what stopped it. */
int c4_trace_next_many(struct c4_trace_reader *r, struct c4_record *out, int max);

void c4_trace_close(struct c4_trace_reader *r);

#endif
