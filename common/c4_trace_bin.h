/* c4_trace_bin.h -- the binary form of a trace (docs/trace-format.md, "Binary form"): an 8-byte
 * magic, then records as the stream protocol encodes them (docs/stream.md), back to back. For
 * traces too big to replay at speed as JSON lines (16,384 ranks); c4_trace_open reads both. */
#ifndef C4_TRACE_BIN_H
#define C4_TRACE_BIN_H

#include <stdio.h>

#include "c4_record.h"

#define C4_TRACE_BIN_MAGIC "C4TRACE\002" /* the last byte: the stream protocol's version */
#define C4_TRACE_BIN_MAGIC_LEN 8

/* Writes the magic; call once at the start of the file. Returns 0 or C4_ESYS (errno set). */
int c4_trace_bin_start(FILE *f);

/* Appends one record. Returns 0, C4_EINVAL for a kind the format has no encoding for, or C4_ESYS
 * (errno set). */
int c4_trace_bin_write(FILE *f, const struct c4_record *r);

#endif
