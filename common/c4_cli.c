/* c4_cli.c -- the command-line convention of every c4 tool: usage errors, failures, versions and
 * strictly parsed option values. */
#include "c4_cli.h"
#include "c4_err.h"

#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void c4_cli_version(const char *prog) { printf("%s %s\n", prog, C4_VERSION); }

int c4_cli_usage(const char *prog, const char *fmt, ...) {
  char msg[512];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s: %s (see %s --help)\n", prog, msg, prog);
  return C4_EXIT_USAGE;
}

int c4_cli_exit(const char *prog, int rc) {
  int e = fflush(stdout) ? errno : ferror(stdout) ? EIO : 0;
  if (!e || rc != C4_EXIT_OK) return rc;
  fprintf(stderr, "%s: standard output: %s\n", prog, strerror(e));
  return C4_EXIT_FAIL;
}

int c4_cli_fail(const char *prog, const char *fmt, ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "%s: %s\n", prog, msg);
  return C4_EXIT_FAIL;
}

int c4_cli_bad_option(const char *prog, char **argv, int c) {
  /* getopt_long has moved optind past a rejected long option, and past a short one unless it
   * sits inside a cluster (-xq), where optopt still names it. */
  const char *arg = optind > 0 ? argv[optind - 1] : "";
  int is_long = !strncmp(arg, "--", 2);
  int len = (int)strcspn(arg, "=");
  if (c == ':') {
    if (is_long) return c4_cli_usage(prog, "option '%.*s' needs a value", len, arg);
    return c4_cli_usage(prog, "option '-%c' needs a value", optopt);
  }
  if (is_long && optopt && arg[len] == '=')
    return c4_cli_usage(prog, "option '%.*s' takes no value", len, arg);
  if (is_long) return c4_cli_usage(prog, "unknown option '%.*s'", len, arg);
  return c4_cli_usage(prog, "unknown option '-%c'", optopt ? optopt : '?');
}

int c4_cli_long(const char *prog, const char *flag, const char *arg, long min, long max,
                long *out) {
  char *end = NULL;
  errno = 0;
  long v = strtol(arg, &end, 10);
  if (errno || end == arg || *end || v < min || v > max) {
    c4_cli_usage(prog, "%s wants an integer from %ld to %ld, not '%s'", flag, min, max, arg);
    return C4_EINVAL;
  }
  *out = v;
  return 0;
}

int c4_cli_double(const char *prog, const char *flag, const char *arg, double min, double max,
                  double *out) {
  char *end = NULL;
  errno = 0;
  double v = strtod(arg, &end);
  if (errno || end == arg || *end || !isfinite(v) || v < min || v > max) {
    c4_cli_usage(prog, "%s wants a number from %g to %g, not '%s'", flag, min, max, arg);
    return C4_EINVAL;
  }
  *out = v;
  return 0;
}

int c4_cli_addr(const char *prog, const char *flag, const char *s, int allow_zero) {
  const char *colon = strrchr(s, ':');
  char *end = NULL;
  long port = -1;
  if (colon && colon > s && colon[1]) {
    errno = 0;
    port = strtol(colon + 1, &end, 10);
    if (errno || *end) port = -1;
  }
  if (port < (allow_zero ? 0 : 1) || port > 65535) {
    c4_cli_usage(prog, "%s wants HOST:PORT with a port from %d to 65535, not '%s'", flag,
                 allow_zero ? 0 : 1, s);
    return C4_EINVAL;
  }
  return 0;
}

const char *c4_cli_json_why(const json_error_t *e, char *buf, size_t len) {
  /* Jansson says "unable to open PATH: REASON" on line -1 when fopen failed. */
  const char *colon = strrchr(e->text, ':');
  if (e->line < 0 && !strncmp(e->text, "unable to open ", 15) && colon)
    snprintf(buf, len, "%s", colon + 2);
  else if (e->line < 0)
    snprintf(buf, len, "%s", e->text);
  else
    snprintf(buf, len, "line %d: %s", e->line, e->text);
  return buf;
}
