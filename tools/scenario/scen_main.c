/* scen_main.c -- c4scen: generates fault scenarios as c4 traces, and scores c4mon's verdicts on
 * them (docs/scenarios.md). */
#include <stdio.h>
#include <string.h>

#include "c4_cli.h"
#include "scen_cli.h"

static void usage(FILE *f) {
  fprintf(f, "usage: c4scen gen --hosts H --gpus G --truth FILE [options]\n"
             "       c4scen score --truth FILE --events FILE [--json]\n"
             "gen writes the trace of a simulated data-parallel job with the faults asked for\n"
             "(and one-off blips that must not alarm), plus a truth file naming them; score\n"
             "compares c4mon's events with the truth: precision, recall, location, time to flag.\n"
             "'c4scen gen --help' and 'c4scen score --help' list their options.\n"
             "  -h, --help   -V, --version\n"
             "exit: 0 ok, 1 failure (unreadable input, a write failed), 2 bad usage\n");
}

static int tool_main(int argc, char **argv) {
  if (argc < 2) return c4_cli_usage("c4scen", "a COMMAND (gen or score) is required");
  if (!strcmp(argv[1], "gen")) return c4_scen_gen_main(argc - 1, argv + 1);
  if (!strcmp(argv[1], "score")) return c4_scen_score_main(argc - 1, argv + 1);
  if (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version")) {
    c4_cli_version("c4scen");
    return 0;
  }
  if (argv[1][0] == '-')
    return c4_cli_usage("c4scen", "unknown option '%s' before the COMMAND", argv[1]);
  return c4_cli_usage("c4scen", "unknown command '%s' (gen or score)", argv[1]);
}

/* Every exit says when standard output was lost (c4_cli_exit). */
int main(int argc, char **argv) { return c4_cli_exit("c4scen", tool_main(argc, argv)); }
