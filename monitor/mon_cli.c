/* mon_cli.c -- what c4mon's subcommands share on the command line: signals, help, the common and
 * the detection options. */
#include "mon_cli.h"
#include <errno.h>
#include <stdlib.h>

#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/stat.h>

#include "c4_cli.h"
#include "c4_env.h"
#include "c4_err.h"

volatile int c4_mon_stop;

static void on_signal(int sig) { c4_mon_stop = sig; }

/* SIGHUP too: a c4mon serve started with & from a shell whose terminal went away died at once,
 * said nothing, and left every active verdict open in its events file for good. Unless it was
 * started with SIGHUP ignored: nohup ignores it for the very purpose of not being stopped by it.
 * SIGINT is caught whatever it inherited: a script's & ignores it for its background jobs, and a
 * kill -INT meant for c4mon then did nothing. */
void c4_mon_cli_signals(void) {
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  struct sigaction hup;
  if (sigaction(SIGHUP, NULL, &hup) != 0 || hup.sa_handler != SIG_IGN) signal(SIGHUP, on_signal);
  signal(SIGPIPE, SIG_IGN);
}

const char *c4_mon_cli_prog(const struct mon_cmd *cmd) {
  static char prog[64];
  snprintf(prog, sizeof prog, "c4mon %s", cmd->name);
  return prog;
}

void c4_mon_cli_help(const struct mon_cmd *cmd, FILE *f) {
  fprintf(f,
          "usage: c4mon %s %s\n%s\n%s  -h, --help        this text\n  -V, --version     c4mon's "
          "version\n"
          "exit: 0 ok, 1 failure, 2 bad usage\n",
          cmd->name, cmd->args, cmd->summary, cmd->help);
}

/* --hang-ms and --lost-ms: positive milliseconds into ns. */
static int millis(const struct mon_cmd *cmd, const char *flag, const char *arg, uint64_t *ns) {
  long v;
  if (c4_cli_long(c4_mon_cli_prog(cmd), flag, arg, 1, 86400000, &v) != 0) return C4_EINVAL;
  *ns = (uint64_t)v * 1000000ull;
  return 0;
}

/* The ADDR:PORT options: a port from 0 (any free one) to 65535. */
static int addr(const struct mon_cmd *cmd, const char *flag, const char *arg, const char **to) {
  if (c4_cli_addr(c4_mon_cli_prog(cmd), flag, arg, 1) != 0) return C4_EINVAL;
  *to = arg;
  return 0;
}

static int detect_option(const struct mon_cmd *cmd, int c, struct mon_detect_opts *d) {
  switch (c) {
  case MON_OPT_EVENTS: d->out.events = optarg; return 0;
  case MON_OPT_ON_EVENT: d->out.on_event = optarg; return 0;
  case MON_OPT_SUBSCRIBE: return addr(cmd, "--subscribe", optarg, &d->out.subscribe);
  case MON_OPT_METRICS: return addr(cmd, "--metrics", optarg, &d->out.metrics);
  case MON_OPT_PLAN: d->det.plan = optarg; return 0;
  case MON_OPT_HANG_MS: return millis(cmd, "--hang-ms", optarg, &d->det.hang_ns);
  case MON_OPT_LOST_MS: return millis(cmd, "--lost-ms", optarg, &d->det.lost_ns);
  case MON_OPT_FORGET_MS: return millis(cmd, "--forget-ms", optarg, &d->det.forget_ns);
  case MON_OPT_FALSE_ALARM:
    return c4_cli_double(c4_mon_cli_prog(cmd), "--false-alarm", optarg, 1e-12, 0.25,
                         &d->det.false_alarm);
  case MON_OPT_MIN_EFFECT:
    return c4_cli_double(c4_mon_cli_prog(cmd), "--min-effect", optarg, 1, 100, &d->det.min_effect);
  }
  return 1;
}

static const char *token_given;

const char *c4_mon_cli_token(void) {
  static char env_token[256];
  return token_given ? token_given : c4_env_token(env_token, sizeof env_token);
}

/* Reads the token from the first line of path. Returns 0, or C4_EXIT_FAIL with a message. */
static int read_token_file(const char *prog, const char *path) {
  static char buf[256];
  FILE *f = fopen(path, "r");
  int e = f ? 0 : errno, ok = 0;
  if (f) { /* a directory opens, and its read fails */
    ok = fgets(buf, sizeof buf, f) != NULL;
    if (!ok && ferror(f)) e = errno;
    fclose(f);
  }
  if (!ok) return c4_cli_fail(prog, "--token-file %s: %s", path, e ? strerror(e) : "empty");
  buf[strcspn(buf, "\r\n")] = 0;
  if (!buf[0]) return c4_cli_fail(prog, "--token-file %s: its first line is empty", path);
  token_given = buf;
  return 0;
}

int c4_mon_cli_common(const struct mon_cmd *cmd, int c, char **argv, struct mon_detect_opts *d,
                      int *exit_status) {
  switch (c) {
  case MON_OPT_TOKEN: token_given = optarg; return 0;
  case MON_OPT_TOKEN_FILE:
    if ((*exit_status = read_token_file(c4_mon_cli_prog(cmd), optarg)) != 0) return 1;
    return 0;
  case 'h':
    c4_mon_cli_help(cmd, stdout);
    *exit_status = C4_EXIT_OK;
    return 1;
  case 'V':
    c4_cli_version("c4mon");
    *exit_status = C4_EXIT_OK;
    return 1;
  case '?':
  case ':': *exit_status = c4_cli_bad_option(c4_mon_cli_prog(cmd), argv, c); return 1;
  }
  if (d && c >= MON_OPT_EVENTS && c <= MON_OPT_MIN_EFFECT) {
    if (detect_option(cmd, c, d) == 0) return 0;
    *exit_status = C4_EXIT_USAGE;
    return 1;
  }
  return C4_NONE;
}

int c4_mon_same_file(const char *a, const char *b) {
  struct stat sa, sb;
  return strcmp(a, "-") && strcmp(b, "-") && stat(a, &sa) == 0 && stat(b, &sb) == 0 &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}
