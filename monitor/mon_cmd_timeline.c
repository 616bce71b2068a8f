/* mon_cmd_timeline.c -- `c4mon timeline`: a run as one picture, by training step: each rank's
 * tokens/s, the faults injected and c4mon's verdicts from raised to cleared. */
#include <stdio.h>

#include "c4_cli.h"
#include "mon_cli.h"
#include "mon_tl_png.h"
#include "mon_tl_run.h"

static int run(const struct mon_cmd *cmd, int argc, char **argv) {
  static const struct option opts[] = {{"steps", required_argument, 0, 'p'},
                                       {"expect", required_argument, 0, 'x'},
                                       {"marks", required_argument, 0, 'm'},
                                       {"png", required_argument, 0, 'P'},
                                       MON_CLI_HELP_OPTIONS,
                                       {0, 0, 0, 0}};
  const char *prog = c4_mon_cli_prog(cmd), *events = NULL, *steps = NULL, *expect = NULL,
             *marks = NULL, *png = NULL;
  int c, rc;
  while ((c = getopt_long(argc, argv, ":hV", opts, NULL)) != -1) {
    switch (c) {
    case 'p': steps = optarg; break;
    case 'x': expect = optarg; break;
    case 'm': marks = optarg; break;
    case 'P': png = optarg; break;
    default:
      if (c4_mon_cli_common(cmd, c, argv, NULL, &rc) != 0) return rc;
    }
  }
  if (optind < argc - 1) return c4_cli_usage(prog, "unexpected argument '%s'", argv[optind + 1]);
  if (optind == argc - 1) events = argv[optind];
  if (!events) return c4_cli_usage(prog, "an EVENTS file is required");
  if (!steps) return c4_cli_usage(prog, "--steps FILE (c4train's JSON lines) is required");
  if (!png) return c4_cli_usage(prog, "--png FILE is required");
  if (marks && !expect) return c4_cli_usage(prog, "--marks resolves --expect's times: give both");
  struct tl_run r = {0};
  char err[700];
  rc = tl_read_steps(&r, steps, err, sizeof err) || tl_read_events(&r, events, err, sizeof err) ||
       (expect && tl_read_faults(&r, expect, steps, marks, err, sizeof err)) ||
       tl_png(&r, png, err, sizeof err);
  tl_run_free(&r);
  if (rc) return c4_cli_fail(prog, "%s", err);
  printf("%s: wrote %s\n", prog, png);
  return C4_EXIT_OK;
}

const struct mon_cmd c4_mon_cmd_timeline = {
    .name = "timeline",
    .args = "EVENTS --steps FILE --png FILE [--expect FILE [--marks FILE]]",
    .summary = "a run as a picture by training step: ranks' tokens/s, faults, verdicts",
    .help =
        "Draws a run from its JSON: c4train's step lines (--steps, written by --json-out) give\n"
        "the x axis (training steps, the seconds since the first step beneath) and a lane of\n"
        "tokens/s for the whole job and one for each rank; c4mon's events (EVENTS, - for\n"
        "standard input) each verdict as a bar from where it was raised to where it was\n"
        "cleared, shaded in the lanes of the ranks it names; a table of expected verdicts\n"
        "(--expect) the faults injected, shaded under their names. Labels never overlap:\n"
        "each goes on the first row where it fits.\n"
        "  --steps FILE        c4train's JSON lines (its step lines)\n"
        "  --png FILE          the picture to write\n"
        "  --expect FILE       the faults injected: a table of expected verdicts\n"
        "                      (docs/events.md, Scoring; its step:N times from --steps)\n"
        "  --marks FILE        \"NAME T_NS\" lines, for the table's mark:NAME times\n",
    .run = run};
