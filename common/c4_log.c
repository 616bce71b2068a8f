/* c4_log.c -- logging to NCCL's logger or stderr, with a level threshold from C4_DEBUG. */
#include "c4_log.h"

#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "c4_err.h"

#define C4_NCCL_SUBSYS_NET 0x10

static _Atomic(c4_logger_fn) nccl_logger;
static atomic_int stderr_level = -1;

static const char *program; /* set once, before any thread starts */

static int stderr_threshold(void);

/* Each also reads C4_DEBUG now, so that a misspelt level is said at start even when every line
 * goes to NCCL's logger. */
void c4_log_set_logger(c4_logger_fn fn) {
  atomic_store(&nccl_logger, fn);
  stderr_threshold();
}

void c4_log_set_program(const char *name) {
  program = name;
  stderr_threshold();
}

int c4_log_to_nccl(void) { return atomic_load(&nccl_logger) != NULL; }

/* "2026-11-25T22:50:01.123Z " into buf, or "" when journald stamps the lines itself (systemd
 * sets JOURNAL_STREAM for a service whose stderr goes to the journal). */
static void stamp(char *buf, size_t len) {
  buf[0] = 0;
  if (getenv("JOURNAL_STREAM")) return;
  struct timespec ts;
  struct tm tm;
  clock_gettime(CLOCK_REALTIME, &ts);
  gmtime_r(&ts.tv_sec, &tm);
  size_t n = strftime(buf, len, "%Y-%m-%dT%H:%M:%S", &tm);
  snprintf(buf + n, len - n, ".%03ldZ ", ts.tv_nsec / 1000000);
}

static int stderr_threshold(void) {
  int lvl = atomic_load_explicit(&stderr_level, memory_order_relaxed);
  if (lvl >= 0) return lvl;
  const char *v = getenv("C4_DEBUG");
  lvl = C4_LOG_WARN;
  if (v && strcasecmp(v, "INFO") == 0) lvl = C4_LOG_INFO;
  if (v && strcasecmp(v, "TRACE") == 0) lvl = C4_LOG_TRACE;
  if (v && strcasecmp(v, "NONE") == 0) lvl = C4_LOG_NONE;
  /* a misspelt level (C4_DEBUG=INF0) is said, once, not quietly taken as WARN */
  int unknown = v && *v && lvl == C4_LOG_WARN && strcasecmp(v, "WARN");
  if (atomic_exchange(&stderr_level, lvl) < 0 && unknown)
    fprintf(stderr, "c4: C4_DEBUG=%s refused: not NONE, WARN, INFO or TRACE; using WARN\n", v);
  return lvl;
}

/* msg to NCCL's logger (flags added to the NET subsystem's), or to stderr at C4_DEBUG's level. */
static void put(int level, unsigned long flags, const char *file, int line, const char *msg) {
  c4_logger_fn fn = atomic_load(&nccl_logger);
  if (fn) {
    fn(level, C4_NCCL_SUBSYS_NET | flags, file, line, "c4: %s", msg);
    return;
  }
  (void)file; /* source places are for NCCL's log; people reading stderr get none */
  (void)line;
  if (level > stderr_threshold()) return;
  const char *tag = level == C4_LOG_NOTE   ? "NOTE"
                    : level == C4_LOG_WARN ? "WARN"
                    : level == C4_LOG_INFO ? "INFO"
                                           : "TRACE";
  if (!program) {
    fprintf(stderr, "c4 %s %s\n", tag, msg);
    return;
  }
  /* A program's lines carry the time and its name once ("c4mon: ..." messages keep theirs). */
  char when[40];
  stamp(when, sizeof when);
  size_t plen = strlen(program);
  int named = !strncmp(msg, program, plen) && (msg[plen] == ':' || msg[plen] == ' ');
  fprintf(stderr, "%s%s %s%s%s\n", when, tag, named ? "" : program, named ? "" : ": ", msg);
}

void c4_log(int level, const char *file, int line, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  put(level, 0, file, line, msg);
}

void c4_log_setting(const char *file, int line, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  int mirror = c4_log_to_nccl() && stderr_threshold() >= C4_LOG_WARN;
  if (mirror) fprintf(stderr, "c4: %s\n", msg);
  put(C4_LOG_WARN, mirror ? C4_LOG_ON_STDERR : 0, file, line, msg);
}

const char *c4_strerror(int code) {
  switch (code) {
  case C4_OK: return "ok";
  case C4_EINVAL: return "invalid argument";
  case C4_ENOMEM: return "out of memory";
  case C4_ESYS: return "system call failed";
  case C4_EPROTO: return "peer broke the c4 wire protocol";
  case C4_EREMOTE: return "peer reported an error or went away";
  case C4_EAGAIN: return "not ready";
  case C4_ETRUNC: return "message larger than the posted receive buffer";
  case C4_ENOTFOUND: return "not found";
  case C4_EINTERNAL: return "internal error";
  case C4_EUSAGE: return "call not allowed here";
  case C4_ECUDA: return "unhandled CUDA error";
  case C4_EINPROGRESS: return "in progress";
  default: return "unknown error";
  }
}
