/* mon_cmd_replay.c -- `c4mon replay`: detection on a recorded trace, as fast as possible or at a
 * multiple of its recorded pace. */
#include <errno.h>
#include <jansson.h>
#include <string.h>
#include <sys/stat.h>

#include "c4_cli.h"
#include "c4_clock.h"
#include "mon_cli.h"
#include "mon_replay.h"
#include "mon_windows.h"

/* The --json summary: counts, seconds, the windows and detection's final state. */
static void print_summary(const struct mon_sink *sink, unsigned long bad, double secs) {
  json_t *doc =
      json_pack("{s:I, s:I, s:I, s:f, s:I, s:o, s:o}", "records", (json_int_t)sink->records,
                "heartbeats", (json_int_t)sink->heartbeats, "bad_lines", (json_int_t)bad, "seconds",
                secs, "events", (json_int_t)c4_mon_outputs_events(), "windows",
                c4_mon_windows_json(), "detect", c4_det_state_json());
  json_dumpf(doc, stdout, JSON_COMPACT);
  printf("\n");
  json_decref(doc);
}

static int replay(const char *prog, const char *path, const char *out_path, double speed,
                  int as_json, struct mon_detect_opts *d) {
  if (out_path && c4_mon_same_file(path, out_path))
    return c4_cli_usage(prog,
                        "--out %s is the trace being replayed: it would be emptied before "
                        "it is read",
                        out_path);
  if (d->out.events && c4_mon_same_file(path, d->out.events))
    return c4_cli_usage(prog, "--events %s is the trace being replayed", d->out.events);
  if (!d->out.events && !as_json) d->out.events = "-";
  if (out_path && !strcmp(out_path, "-") && (as_json || !strcmp(d->out.events, "-")))
    return c4_cli_usage(prog,
                        "--out - writes the trace to standard output, where the %s go too: "
                        "give --events FILE (or --out FILE)",
                        as_json ? "summary" : "events");
  struct stat st; /* events are appended: a second replay into one file numbers its own from 1 */
  if (strcmp(d->out.events ? d->out.events : "-", "-") && stat(d->out.events, &st) == 0 &&
      S_ISREG(st.st_mode) && st.st_size > 0)
    fprintf(stderr,
            "%s: --events %s holds events already: this replay's go after them, numbered from 1 "
            "again (remove it first for a file of this replay alone)\n",
            prog, d->out.events);
  FILE *trace_out = NULL;
  if (out_path && !strcmp(out_path, "-"))
    trace_out = stdout;
  else if (out_path && !(trace_out = fopen(out_path, "w")))
    return c4_cli_fail(prog, "%s: %s", out_path, strerror(errno));
  if (c4_det_init(&d->det) != 0 || c4_mon_outputs_start(&d->out) != 0) {
    if (trace_out && trace_out != stdout) fclose(trace_out);
    return C4_EXIT_FAIL;
  }
  struct mon_sink sink = {0};
  unsigned long bad = 0;
  uint64_t start = c4_now_ns();
  int rc = c4_mon_replay_file(prog, path, trace_out, speed, &sink, &bad, &c4_mon_stop);
  double secs = (double)(c4_now_ns() - start) / 1e9;
  c4_mon_outputs_tick(0);
  if (!rc && c4_mon_stop) /* a partial replay's summary would read as the trace's */
    rc = c4_cli_fail(prog, "%s: interrupted after %llu records: the rest was not replayed", path,
                     (unsigned long long)(sink.records + sink.heartbeats));
  if (!rc && as_json)
    print_summary(&sink, bad, secs);
  else if (!rc)
    fprintf(stderr, "%s: %llu records and %llu heartbeats, %lu bad lines, %llu events, %.3f s\n",
            prog, (unsigned long long)sink.records, (unsigned long long)sink.heartbeats, bad,
            (unsigned long long)c4_mon_outputs_events(), secs);
  c4_mon_outputs_stop(5000);
  if (trace_out && (trace_out == stdout ? fflush(stdout) : fclose(trace_out)) != 0 && !rc)
    rc = c4_cli_fail(prog, "%s: %s", out_path, strerror(errno));
  c4_det_reset();
  return rc ? C4_EXIT_FAIL : C4_EXIT_OK;
}

static int run(const struct mon_cmd *cmd, int argc, char **argv) {
  static const struct option opts[] = {{"out", required_argument, 0, 'o'},
                                       {"speed", required_argument, 0, 's'},
                                       {"json", no_argument, 0, 'J'},
                                       MON_CLI_DETECT_OPTIONS,
                                       MON_CLI_HELP_OPTIONS,
                                       {0, 0, 0, 0}};
  const char *prog = c4_mon_cli_prog(cmd), *out = NULL;
  struct mon_detect_opts d = {0};
  double speed = 0;
  int as_json = 0, c, rc;
  while ((c = getopt_long(argc, argv, ":hV", opts, NULL)) != -1) {
    switch (c) {
    case 'o': out = optarg; break;
    case 's':
      if (c4_cli_double(prog, "--speed", optarg, 0, 1e9, &speed) != 0) return C4_EXIT_USAGE;
      break;
    case 'J': as_json = 1; break;
    default:
      if (c4_mon_cli_common(cmd, c, argv, &d, &rc) != 0) return rc;
    }
  }
  if (optind == argc) return c4_cli_usage(prog, "the trace FILE to replay is missing");
  if (optind < argc - 1) return c4_cli_usage(prog, "unexpected argument '%s'", argv[optind + 1]);
  c4_mon_cli_signals();
  return replay(prog, argv[optind], out, speed, as_json, &d);
}

const struct mon_cmd c4_mon_cmd_replay = {
    .name = "replay",
    .args = "FILE [--out FILE] [--speed X] [--json] [DETECT]",
    .summary = "run serve's detection on a trace (JSON lines or the binary form)",
    .help = "Events go to standard output unless --json or --events; bad lines are reported\n"
            "by number and skipped. FILE - reads standard input.\n"
            "  --out FILE            write the records as trace JSON lines (- : standard\n"
            "                        output, with --events FILE; not FILE itself)\n"
            "  --speed X             X times the recorded pace (1: as recorded; default: as\n"
            "                        fast as possible)\n"
            "  --json                one summary document (counts, windows, detection "
            "state)\n" MON_CLI_DETECT_HELP,
    .run = run};
