/* plan_show.c -- `c4plan flows PLAN`: one line per flow of a plan, "SRC DST PATH SRC_PORT"
 * (PATH and SRC_PORT "-" when the plan gives none), in the plan's order. The plan is read by the
 * plugin's own reader, so a plan this prints is one the plugin takes, and one it refuses is
 * refused here with the same words. */
#include "plan_show.h"

#include "c4_cli.h"
#include "c4_planfile.h"

#include <stdio.h>
#include <string.h>

static void usage(FILE *f) {
  fprintf(f, "usage: c4plan flows PLAN\n"
             "Prints each flow of a plan (docs/plan-format.md) as a line: SRC DST PATH SRC_PORT\n"
             "(PATH, SRC_PORT - when the plan has none), in the plan's order; for scripts.\n"
             "  -h, --help   -V, --version\n"
             "exit: 0 ok, 1 the plan could not be read, 2 bad usage\n");
}

int c4plan_flows_main(int argc, char **argv) {
  const char *prog = "c4plan flows";
  if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
    usage(stdout);
    return C4_EXIT_OK;
  }
  if (argc == 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
    c4_cli_version("c4plan");
    return C4_EXIT_OK;
  }
  if (argc != 2) return c4_cli_usage(prog, "one PLAN file is required");
  if (argv[1][0] == '-') return c4_cli_usage(prog, "unknown option '%s'", argv[1]);
  struct c4_planfile *plan = NULL;
  char err[300];
  if (c4_planfile_read(argv[1], C4_PLANFILE_FLOWS, &plan, err, sizeof err))
    return c4_cli_fail(prog, "%s: %s", argv[1], err);
  for (size_t i = 0; i < plan->nflows; i++) {
    const struct c4_planfile_flow *f = &plan->flows[i];
    if (f->src_port)
      printf("%s %s %s %u\n", f->src, f->dst, f->path ? f->path : "-", (unsigned)f->src_port);
    else
      printf("%s %s %s -\n", f->src, f->dst, f->path ? f->path : "-");
  }
  c4_planfile_free(plan);
  return C4_EXIT_OK;
}
