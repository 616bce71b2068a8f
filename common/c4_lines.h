/* c4_lines.h -- the C4_TRACE file: JSON lines appended whole. Lines are gathered in memory and
 * written with O_APPEND, whole lines a write, so that processes sharing one file (a launcher
 * that exported one C4_TRACE to every rank) interleave lines, never bytes: through stdio's 4 KiB
 * buffer, 2,053 of 55,961 lines of three such processes were torn. Every write first asks
 * whether the descriptor is still c4's (c4_owned_fd.h). */
#ifndef C4_LINES_H
#define C4_LINES_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "c4_owned_fd.h"

struct c4_lines {
  struct c4_owned_fd f;
  char *buf;
  size_t len, cap;
  size_t lines;     /* lines in buf */
  uint64_t written; /* lines that reached the file, whole */
  uint64_t lost;    /* lines that did not: a write failed, no memory, the descriptor taken */
  int taken;        /* the program closed or replaced the descriptor: the file is left alone */
  int torn;         /* a write stopped inside a line: the file does not end with a newline */
};

/* Opens path for appending (created 0644, closed on exec). Returns 0, or C4_ESYS with errno. */
int c4_lines_open(struct c4_lines *l, const char *path);

/* Appends j as one compact line; writes what is gathered once it passes 256 KiB. Returns 0, or
 * what c4_lines_flush returned. A value jansson cannot write is left out (0), and counted lost
 * as a line there was no memory for is. Nothing is counted when there is no file. */
int c4_lines_put(struct c4_lines *l, const json_t *j);

/* Writes the lines gathered. Returns 0; C4_ESYS when a write failed (errno says why); C4_EREMOTE
 * when the descriptor is no longer c4's (taken set: every later call does nothing). Lines that
 * could not be written are dropped, so memory stays bounded, and counted in lost (a line a write
 * left torn too); the lines that reached the file whole are counted in written. */
int c4_lines_flush(struct c4_lines *l);

/* Flushes, closes the file if it is still c4's, and frees the buffer. */
void c4_lines_close(struct c4_lines *l);

/* In a forked child: the gathered lines are the parent's to write, and the descriptor the
 * parent's file; the child's copy is closed (if still c4's) and nothing is written. */
void c4_lines_forget(struct c4_lines *l);

/* Whether l has a file to write to. */
static inline int c4_lines_open_now(const struct c4_lines *l) { return l->f.fd >= 0 && !l->taken; }

#endif
