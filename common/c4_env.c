/* c4_env.c -- environment variables, parsed strictly. */
#include "c4_env.h"

#include <errno.h>
#include <limits.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4_err.h"
#include "c4_log.h"
#include "c4_text.h"

long c4_env_long(const char *name, long def, long min, long max) {
  const char *v = getenv(name);
  if (!v || !*v) return def;
  char *end = NULL;
  errno = 0;
  /* decimal digits only: base 0 read C4_COLL_TIMEOUT_MS=0150 as octal 104 ms, and " 2", "+2" and
   * "0x3" passed without a word */
  long x = strtol(v, &end, 10);
  int digits = (*v >= '0' && *v <= '9') || (*v == '-' && v[1] >= '0' && v[1] <= '9');
  if (!digits || errno || end == v || *end || x < min || x > max) {
    C4_WARN_SETTING("%s=%s refused: not an integer from %ld to %ld; using %ld", name, v, min, max,
                    def);
    return def;
  }
  return x;
}

const char *c4_env_job(void) {
  const char *job = getenv("C4_JOB");
  return job && *job ? job : "default";
}

const char *c4_env_token(char *buf, size_t n) {
  const char *v = getenv("C4_TOKEN");
  if (!v) return NULL;
  snprintf(buf, n, "%.*s", (int)strcspn(v, "\r\n"), v);
  return buf;
}

const char *c4_env_first(const char *const *names) {
  for (; *names; names++) {
    const char *v = getenv(*names);
    if (v && *v) return v;
  }
  return NULL;
}

/* The first launcher variable that holds a rank (decimal digits). One that holds something else
 * is said once and passed over: RANK=abc was read as no rank, and C4_HOSTNAME=node-%r named the
 * host node--1, without a word. */
int c4_env_rank(void) {
  static const char *const names[] = {"RANK", "OMPI_COMM_WORLD_RANK", "SLURM_PROCID", "PMI_RANK"};
  static atomic_int said;
  for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
    const char *v = getenv(names[i]);
    if (!v || !*v) continue;
    char *end = NULL;
    errno = 0;
    long x = strtol(v, &end, 10);
    if (*v >= '0' && *v <= '9' && !errno && !*end && x <= INT_MAX) return (int)x;
    if (!atomic_exchange(&said, 1))
      C4_WARN_SETTING("%s=\"%s\" is not a rank (decimal digits): passed over", names[i], v);
  }
  return C4_NONE;
}

void c4_host_name(char *buf, size_t len) {
  const char *v = getenv("C4_HOSTNAME");
  if (v && *v) {
    /* each "%r" stands for the launcher rank, so one setting names every rank of a local job */
    char rank[16];
    snprintf(rank, sizeof rank, "%d", c4_env_rank());
    size_t n = 0;
    for (const char *p = v; *p && n + 1 < len; p++) {
      const char *put = p[0] == '%' && p[1] == 'r' ? rank : NULL;
      for (; put && *put && n + 1 < len; put++)
        buf[n++] = *put;
      if (put)
        p++;
      else
        buf[n++] = *p;
    }
    buf[n] = 0;
    c4_text_clean(buf); /* c4mon refuses records whose host is not clean text */
    return;
  }
  memset(buf, 0, len);
  if (gethostname(buf, len - 1) != 0 || !buf[0]) snprintf(buf, len, "unknown");
}

const char *c4_beside_program(char *buf, size_t len, const char *rel, const char *fallback) {
  char exe[4096];
  ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (n <= 0) return fallback;
  exe[n] = 0;
  char *slash = strrchr(exe, '/');
  if (!slash) return fallback;
  *slash = 0;
  int w = snprintf(buf, len, "%s/%s", exe, rel);
  return w > 0 && (size_t)w < len && access(buf, R_OK) == 0 ? buf : fallback;
}
