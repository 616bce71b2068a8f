/* mon_cli.h -- c4mon's subcommands: one table entry each (mon_main.c), each with its own option
 * table and --help, and the detection options that serve, record, replay and matrix share. */
#ifndef C4_MON_CLI_H
#define C4_MON_CLI_H

#include <getopt.h>
#include <stdio.h>

#include "det.h"
#include "mon_outputs.h"

/* One subcommand. run gets argv[0] = the subcommand's name and returns the exit status. */
struct mon_cmd {
  const char *name;
  const char *args;    /* the synopsis after "c4mon NAME" */
  const char *summary; /* one line for `c4mon --help` */
  const char *help;    /* the rest of `c4mon NAME --help`: what it does, its options */
  int (*run)(const struct mon_cmd *cmd, int argc, char **argv);
};

/* The subcommands, each in its own mon_cmd_NAME.c. */
extern const struct mon_cmd c4_mon_cmd_serve, c4_mon_cmd_record, c4_mon_cmd_replay,
    c4_mon_cmd_merge, c4_mon_cmd_status, c4_mon_cmd_top, c4_mon_cmd_matrix, c4_mon_cmd_events,
    c4_mon_cmd_timeline;

/* Set by SIGINT and SIGTERM; long-running subcommands stop when it becomes nonzero. */
extern volatile int c4_mon_stop;

/* Installs the handlers that set c4_mon_stop to the signal's number (SIGINT, SIGTERM, SIGHUP), and
 * ignores SIGPIPE. */
void c4_mon_cli_signals(void);

/* "c4mon NAME", the program name in a subcommand's messages. */
const char *c4_mon_cli_prog(const struct mon_cmd *cmd);

/* Whether paths a and b name one existing file (also through a link; "-" is none): --out FILE
 * truncates FILE before the trace is read, so a trace given as its own --out was lost. */
int c4_mon_same_file(const char *a, const char *b);

/* Prints `c4mon NAME --help` to f. */
void c4_mon_cli_help(const struct mon_cmd *cmd, FILE *f);

/* Options every subcommand takes, for the end of its option table. */
#define MON_CLI_HELP_OPTIONS                                                                       \
  {"help", no_argument, 0, 'h'}, { "version", no_argument, 0, 'V' }

/* What serve, record, replay and matrix detect with, and where their verdicts go. */
struct mon_detect_opts {
  struct c4_det_config det;
  struct mon_outputs_opts out;
};

/* The detection options (DETECT in the help texts), for an option table. Their values are
 * 0x100 and up, so that they never clash with a subcommand's own. */
enum {
  MON_OPT_EVENTS = 0x100,
  MON_OPT_ON_EVENT,
  MON_OPT_SUBSCRIBE,
  MON_OPT_METRICS,
  MON_OPT_PLAN,
  MON_OPT_HANG_MS,
  MON_OPT_LOST_MS,
  MON_OPT_FORGET_MS,
  MON_OPT_FALSE_ALARM,
  MON_OPT_MIN_EFFECT, /* the last detection option */
  MON_OPT_TOKEN,
  MON_OPT_TOKEN_FILE
};
/* How detection judges (--plan, --hang-ms, --lost-ms, --forget-ms, the noise model's
 * --false-alarm and --min-effect), for every subcommand that detects. */
#define MON_CLI_JUDGE_OPTIONS                                                                      \
  {"plan", required_argument, 0, MON_OPT_PLAN},                                                    \
      {"hang-ms", required_argument, 0, MON_OPT_HANG_MS},                                          \
      {"lost-ms", required_argument, 0, MON_OPT_LOST_MS},                                          \
      {"forget-ms", required_argument, 0, MON_OPT_FORGET_MS},                                      \
      {"false-alarm", required_argument, 0, MON_OPT_FALSE_ALARM}, {                                \
    "min-effect", required_argument, 0, MON_OPT_MIN_EFFECT                                         \
  }
#define MON_CLI_JUDGE_HELP                                                                         \
  "  --plan FILE           a traffic plan (docs/plan-format.md) naming the paths\n"                \
  "  --hang-ms N           a collective stalled N ms is a hang (3000)\n"                           \
  "  --lost-ms N           a rank silent N ms is lost (10000)\n"                                   \
  "  --forget-ms N         a job whose ranks all ended keeps its series N ms (120000)\n"           \
  "  --false-alarm P       the chance per look that a signal's normal noise alone passes its\n"    \
  "                        threshold (1e-6; docs/events.md, the noise model)\n"                    \
  "  --min-effect F        the smallest slowdown worth a verdict, a factor (1.1)\n"

/* The judge options and where verdicts go (DETECT in the help texts). */
#define MON_CLI_DETECT_OPTIONS                                                                     \
  MON_CLI_JUDGE_OPTIONS, {"events", required_argument, 0, MON_OPT_EVENTS},                         \
      {"on-event", required_argument, 0, MON_OPT_ON_EVENT},                                        \
      {"subscribe", required_argument, 0, MON_OPT_SUBSCRIBE}, {                                    \
    "metrics", required_argument, 0, MON_OPT_METRICS                                               \
  }
#define MON_CLI_DETECT_HELP                                                                        \
  "detection and where verdicts go (DETECT):\n"                                                    \
  "  --events FILE|-       append each verdict as a JSON line (docs/events.md) to FILE\n"          \
  "  --on-event CMD        run CMD (sh -c) per verdict, the event on its stdin\n"                  \
  "  --subscribe ADDR:PORT any process may read the verdicts over TCP here\n"                      \
  "  --metrics ADDR:PORT   Prometheus text on http://ADDR:PORT/metrics\n" MON_CLI_JUDGE_HELP

/* The job token (--token-file FILE: its first line; --token T, which shows T in ps; else
 * $C4_TOKEN), for serve, record and the clients that ask a c4mon for its status. */
#define MON_CLI_TOKEN_OPTIONS                                                                      \
  {"token", required_argument, 0, MON_OPT_TOKEN}, {                                                \
    "token-file", required_argument, 0, MON_OPT_TOKEN_FILE                                         \
  }
#define MON_CLI_TOKEN_HELP                                                                         \
  "  --token-file FILE     the job token: FILE's first line (default: $C4_TOKEN)\n"                \
  "  --token T             the job token on the command line (visible in ps)\n"

/* The token the options or the environment gave (NULL: none). */
const char *c4_mon_cli_token(void);

/* Handles option c of getopt_long when it is one of the common ones: --help and --version
 * (print, and *exit_status = 0), a token option (an unreadable or empty --token-file:
 * *exit_status = 1), a detection option (into d when d is not NULL), or a rejected
 * one ('?', ':': the one-line usage error, *exit_status = 2). Returns 1 when the caller should
 * return *exit_status now, 0 when c was handled and parsing goes on, -1 when c is not one of
 * them. */
int c4_mon_cli_common(const struct mon_cmd *cmd, int c, char **argv, struct mon_detect_opts *d,
                      int *exit_status);

#endif
