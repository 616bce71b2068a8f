/* mon_cmd_matrix.c -- `c4mon matrix`: the delay matrix of a trace or of a running c4mon as a PNG
 * or SVG picture. */
#include <jansson.h>
#include <stdlib.h>

#include "c4_cli.h"
#include "mon_cli.h"
#include "mon_image.h"
#include "mon_replay.h"
#include "mon_server.h"

/* Detection's state after replaying the trace at path, or NULL (reported). */
static json_t *state_of_trace(const char *prog, const char *path, struct mon_detect_opts *d) {
  struct mon_sink sink = {0};
  unsigned long bad;
  if (c4_det_init(&d->det) != 0) return NULL;
  json_t *state = NULL;
  if (c4_mon_replay_file(prog, path, NULL, 0, &sink, &bad, &c4_mon_stop) == 0)
    state = c4_det_state_json();
  c4_det_reset();
  return state;
}

/* Detection's state of the c4mon at addr, or NULL (reported). */
static json_t *state_of_server(const char *prog, const char *addr) {
  char *doc = NULL;
  int rc = c4_mon_query_status(addr, c4_mon_cli_token(), &doc);
  if (rc != 0) {
    c4_cli_fail(prog, "%s: %s", addr, c4_mon_query_why(rc));
    return NULL;
  }
  json_t *st = json_loads(doc, 0, NULL);
  free(doc);
  json_t *state = json_incref(json_object_get(st, "detect"));
  json_decref(st);
  if (!state) c4_cli_fail(prog, "%s: the c4mon sent no detection state", addr);
  return state;
}

static int run(const struct mon_cmd *cmd, int argc, char **argv) {
  static const struct option opts[] = {{"connect", required_argument, 0, 'c'},
                                       {"trace", required_argument, 0, 'T'},
                                       {"png", required_argument, 0, 'P'},
                                       {"svg", required_argument, 0, 'G'},
                                       MON_CLI_JUDGE_OPTIONS,
                                       MON_CLI_TOKEN_OPTIONS,
                                       MON_CLI_HELP_OPTIONS,
                                       {0, 0, 0, 0}};
  const char *prog = c4_mon_cli_prog(cmd), *connect_to = NULL, *trace = NULL, *png = NULL,
             *svg = NULL;
  struct mon_detect_opts d = {0};
  int c, rc;
  while ((c = getopt_long(argc, argv, ":hV", opts, NULL)) != -1) {
    switch (c) {
    case 'c': connect_to = optarg; break;
    case 'T': trace = optarg; break;
    case 'P': png = optarg; break;
    case 'G': svg = optarg; break;
    default:
      if (c4_mon_cli_common(cmd, c, argv, &d, &rc) != 0) return rc;
    }
  }
  if (optind < argc) return c4_cli_usage(prog, "unexpected argument '%s'", argv[optind]);
  if (!connect_to == !trace) return c4_cli_usage(prog, "give one of --connect and --trace");
  if (!png == !svg) return c4_cli_usage(prog, "give one of --png FILE and --svg FILE");
  if (connect_to && c4_cli_addr(prog, "--connect", connect_to, 0) != 0) return C4_EXIT_USAGE;
  c4_mon_cli_signals();
  json_t *state = trace ? state_of_trace(prog, trace, &d) : state_of_server(prog, connect_to);
  if (!state) return C4_EXIT_FAIL;
  rc = png ? c4_mon_image_png(state, png) : c4_mon_image_svg(state, svg);
  json_decref(state);
  if (rc != 0) return C4_EXIT_FAIL;
  printf("%s: wrote %s\n", prog, png ? png : svg);
  return C4_EXIT_OK;
}

const struct mon_cmd c4_mon_cmd_matrix = {
    .name = "matrix",
    .args = "(--connect ADDR:PORT | --trace FILE) (--png FILE | --svg FILE) [--plan FILE]",
    .summary = "the delay matrix of a running c4mon or of a trace as a PNG or SVG picture",
    .help = "  --connect ADDR:PORT   the running c4mon to draw\n" MON_CLI_TOKEN_HELP
            "  --trace FILE          replay this trace and draw its matrix\n"
            "  --png FILE, --svg FILE  the picture to write\n" MON_CLI_JUDGE_HELP,
    .run = run};
