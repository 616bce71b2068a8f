/* c4_lines.c -- whole JSON lines appended to the C4_TRACE file (c4_lines.h). */
#include "c4_lines.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4_err.h"

#define FLUSH_AT (256u << 10)

int c4_lines_open(struct c4_lines *l, const char *path) {
  *l = (struct c4_lines){.f = {.fd = -1}};
  int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return C4_ESYS;
  if (c4_owned_take(&l->f, fd) != 0) {
    int e = errno;
    close(fd);
    errno = e;
    return C4_ESYS;
  }
  return 0;
}

/* Room for n more bytes. Returns 0 or C4_ENOMEM. */
static int room(struct c4_lines *l, size_t n) {
  if (l->len + n <= l->cap) return 0;
  size_t cap = l->cap ? l->cap : 64u << 10;
  while (cap < l->len + n)
    cap *= 2;
  char *grown = realloc(l->buf, cap);
  if (!grown) return C4_ENOMEM;
  l->buf = grown;
  l->cap = cap;
  return 0;
}

int c4_lines_put(struct c4_lines *l, const json_t *j) {
  if (!c4_lines_open_now(l)) return 0;
  size_t n = json_dumpb(j, NULL, 0, JSON_COMPACT);
  if (!n) {
    l->lost++;
    return 0;
  }
  if (room(l, n + 1) != 0) { /* no memory for it: what is gathered goes out, and this line */
    int rc = c4_lines_flush(l);
    if (rc != 0 || room(l, n + 1) != 0) {
      l->lost++;
      return rc ? rc : C4_ENOMEM;
    }
  }
  json_dumpb(j, l->buf + l->len, n, JSON_COMPACT);
  l->buf[l->len + n] = '\n';
  l->len += n + 1;
  l->lines++;
  return l->len >= FLUSH_AT ? c4_lines_flush(l) : 0;
}

/* The whole lines in the first n bytes of the buffer: what a write that stopped after n bytes
 * put in the file (a compact JSON line has no newline but its last byte). */
static size_t whole_lines(const struct c4_lines *l, size_t n) {
  size_t k = 0;
  for (const char *p = l->buf, *end = l->buf + n; (p = memchr(p, '\n', (size_t)(end - p))); p++)
    k++;
  return k;
}

/* Ends the line a write left cut off, so that the next line starts a line of its own: the
 * cut-off part stays one bad line, and the next whole line would otherwise have been glued to
 * it and lost while counted written. Returns 1 when done. */
static int end_torn_line(struct c4_lines *l) {
  ssize_t k;
  while ((k = write(l->f.fd, "\n", 1)) < 0 && errno == EINTR)
    ;
  l->torn = k != 1;
  return k == 1;
}

int c4_lines_flush(struct c4_lines *l) {
  size_t len = l->len, lines = l->lines;
  l->len = l->lines = 0; /* written or dropped: never kept to grow without bound */
  if (!len || !c4_lines_open_now(l)) {
    l->lost += lines;
    return l->taken ? C4_EREMOTE : 0;
  }
  if (!c4_owned_still(&l->f)) {
    l->taken = 1;
    l->lost += lines;
    return C4_EREMOTE;
  }
  if (l->torn && !end_torn_line(l)) {
    l->lost += lines;
    return C4_ESYS;
  }
  for (size_t off = 0; off < len;) {
    ssize_t k = write(l->f.fd, l->buf + off, len - off);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      size_t whole = whole_lines(l, off);
      l->written += whole;
      l->lost += lines - whole;
      l->torn = off > 0 && l->buf[off - 1] != '\n';
      return C4_ESYS;
    }
    off += (size_t)k;
  }
  l->written += lines;
  return 0;
}

void c4_lines_close(struct c4_lines *l) {
  c4_lines_flush(l);
  if (!l->taken) c4_owned_close(&l->f);
  free(l->buf);
  *l = (struct c4_lines){.f = {.fd = -1}};
}

/* The buffer is dropped, not freed: the parent's writer thread may have been inside realloc when
 * the fork came (it takes no lock the fork waits for), and a free of what it was replacing would
 * free it twice. It stays reachable here (a leak checker's report would fail the child's exit);
 * one buffer, at most 256 KiB, is what that costs a forked child. */
static void *volatile left_at_fork; /* volatile: a store no compiler may leave out */

void c4_lines_forget(struct c4_lines *l) {
  if (!l->taken) c4_owned_close(&l->f);
  left_at_fork = l->buf;
  *l = (struct c4_lines){.f = {.fd = -1}};
}
