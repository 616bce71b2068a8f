/* mon_main.c -- c4mon's command line: finds the subcommand in the table and hands it the rest of
 * the arguments; each subcommand (mon_cmd_*.c) has its own options and --help. */
#include <stdio.h>
#include <string.h>

#include "c4_cli.h"
#include "c4_log.h"
#include "mon_cli.h"

/* Every subcommand, in the order `c4mon --help` lists them. A new one is a mon_cmd_NAME.c file
 * and a line here. */
static const struct mon_cmd *const commands[] = {
    &c4_mon_cmd_serve,  &c4_mon_cmd_record, &c4_mon_cmd_replay,
    &c4_mon_cmd_merge,  &c4_mon_cmd_status, &c4_mon_cmd_top,
    &c4_mon_cmd_matrix, &c4_mon_cmd_events, &c4_mon_cmd_timeline,
};
enum { N_COMMANDS = sizeof commands / sizeof commands[0] };

static void usage(FILE *f) {
  fprintf(f, "usage: c4mon COMMAND [options]   (c4mon COMMAND --help for its options)\n");
  for (int i = 0; i < N_COMMANDS; i++)
    fprintf(f, "  %-7s %s\n", commands[i]->name, commands[i]->summary);
  fprintf(f, "c4mon watches NCCL jobs that run with the c4 plugin: ranks stream their telemetry\n"
             "to `c4mon serve`, which reports stragglers, slow NICs, links and paths, hangs and\n"
             "lost ranks as JSON events (docs/events.md).\n"
             "  -h, --help      this text\n"
             "  -V, --version   c4mon's version\n"
             "exit: 0 ok, 1 failure, 2 bad usage\n");
}

static int tool_main(int argc, char **argv) {
  c4_log_set_program("c4mon");
  if (argc < 2) return c4_cli_usage("c4mon", "a COMMAND is required");
  const char *name = argv[1];
  if (!strcmp(name, "-h") || !strcmp(name, "--help")) {
    usage(stdout);
    return C4_EXIT_OK;
  }
  if (!strcmp(name, "-V") || !strcmp(name, "--version")) {
    c4_cli_version("c4mon");
    return C4_EXIT_OK;
  }
  for (int i = 0; i < N_COMMANDS; i++)
    if (!strcmp(name, commands[i]->name)) return commands[i]->run(commands[i], argc - 1, argv + 1);
  if (name[0] == '-') return c4_cli_usage("c4mon", "unknown option '%s' before the COMMAND", name);
  return c4_cli_usage("c4mon", "unknown command '%s'", name);
}

/* Every exit says when standard output was lost (c4_cli_exit). */
int main(int argc, char **argv) { return c4_cli_exit("c4mon", tool_main(argc, argv)); }
