/* mon_cmd_top.c -- `c4mon top`: a live terminal view of a running c4mon. */
#include "c4_cli.h"
#include "mon_cli.h"
#include "mon_server.h"
#include "mon_tty.h"

static int run(const struct mon_cmd *cmd, int argc, char **argv) {
  static const struct option opts[] = {{"connect", required_argument, 0, 'c'},
                                       {"interval", required_argument, 0, 'i'},
                                       {"once", no_argument, 0, '1'},
                                       {"color", no_argument, 0, 'C'},
                                       {"no-color", no_argument, 0, 'N'},
                                       MON_CLI_TOKEN_OPTIONS,
                                       MON_CLI_HELP_OPTIONS,
                                       {0, 0, 0, 0}};
  const char *prog = c4_mon_cli_prog(cmd), *connect_to = NULL;
  int once = 0, color = -1, c, rc;
  double interval = 1;
  while ((c = getopt_long(argc, argv, ":hV", opts, NULL)) != -1) {
    switch (c) {
    case 'c': connect_to = optarg; break;
    case 'i':
      if (c4_cli_double(prog, "--interval", optarg, 0.01, 3600, &interval) != 0)
        return C4_EXIT_USAGE;
      break;
    case '1': once = 1; break;
    case 'C': color = 1; break;
    case 'N': color = 0; break;
    default:
      if (c4_mon_cli_common(cmd, c, argv, NULL, &rc) != 0) return rc;
    }
  }
  if (optind < argc) return c4_cli_usage(prog, "unexpected argument '%s'", argv[optind]);
  if (!connect_to) return c4_cli_usage(prog, "--connect ADDR:PORT is required");
  if (c4_cli_addr(prog, "--connect", connect_to, 0) != 0) return C4_EXIT_USAGE;
  c4_mon_cli_signals();
  rc = c4_mon_tty_run(connect_to, c4_mon_cli_token(), interval, once, color);
  if (rc == 0) return C4_EXIT_OK;
  return c4_cli_fail(prog, "%s: %s", connect_to, c4_mon_query_why(rc));
}

const struct mon_cmd c4_mon_cmd_top = {
    .name = "top",
    .args = "--connect ADDR:PORT [--interval S] [--once] [--color|--no-color]",
    .summary = "a live terminal view of a running c4mon: ranks, the delay matrix and verdicts",
    .help = "  --connect ADDR:PORT   the c4mon to watch (its --listen address)\n" MON_CLI_TOKEN_HELP
            "  --interval S          seconds between frames (1)\n"
            "  --once                one frame, without clearing the screen\n"
            "  --color, --no-color   colors on or off (default: on when stdout is a terminal)\n",
    .run = run};
