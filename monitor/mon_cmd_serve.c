/* mon_cmd_serve.c -- `c4mon serve` and `c4mon record`: accept ranks, detect, report verdicts;
 * record also writes what arrives to a trace file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "c4_cli.h"
#include "c4_log.h"
#include "mon_cli.h"
#include "mon_events.h"
#include "mon_server.h"

static void serve_tick(void *arg) {
  (void)arg;
  c4_mon_outputs_tick(1);
}

static int serve(const char *prog, struct mon_opts *o, const char *out, struct mon_detect_opts *d) {
  if (out && !(o->record = fopen(out, "a")))
    return c4_cli_fail(prog, "%s: %s", out, strerror(errno));
  if (!d->out.events) d->out.events = "-";
  c4_mon_events_live(1);
  int rc = C4_EXIT_FAIL;
  if (c4_det_init(&d->det) == 0 && c4_mon_outputs_start(&d->out) == 0) {
    rc = c4_mon_serve(o, &c4_mon_stop) ? C4_EXIT_FAIL : C4_EXIT_OK;
    if (c4_mon_stop)
      C4_NOTE("c4mon: stopping on SIG%s: active verdicts are cleared (nothing watches them any "
              "more)",
              sigabbrev_np(c4_mon_stop) ? sigabbrev_np(c4_mon_stop) : "NAL");
    c4_det_close_all(); /* before the outputs stop: the closing events are written */
    c4_mon_outputs_stop(2000);
  }
  c4_det_reset();
  if (o->record && fclose(o->record) != 0) rc = c4_cli_fail(prog, "%s: %s", out, strerror(errno));
  return rc;
}

/* serve and record differ in one option: record's --out is serve's --record, and required. */
static int run(const struct mon_cmd *cmd, int argc, char **argv) {
  int recording = cmd == &c4_mon_cmd_record;
  static const struct option opts[] = {{"listen", required_argument, 0, 'l'},
                                       {"job", required_argument, 0, 'j'},
                                       {"record", required_argument, 0, 'r'},
                                       {"out", required_argument, 0, 'o'},
                                       MON_CLI_TOKEN_OPTIONS,
                                       MON_CLI_DETECT_OPTIONS,
                                       MON_CLI_HELP_OPTIONS,
                                       {0, 0, 0, 0}};
  const char *prog = c4_mon_cli_prog(cmd), *out = NULL;
  struct mon_detect_opts d = {0};
  struct mon_opts o = {.tick = serve_tick};
  int c, rc;
  while ((c = getopt_long(argc, argv, ":hV", opts, NULL)) != -1) {
    switch (c) {
    case 'l':
      if (c4_cli_addr(prog, "--listen", optarg, 1) != 0) return C4_EXIT_USAGE;
      o.listen = optarg;
      break;
    case 'j': o.job = optarg; break;
    case 'r':
    case 'o':
      if ((c == 'o') != recording)
        return c4_cli_usage(prog, "unknown option '--%s'", c == 'o' ? "out" : "record");
      out = optarg;
      break;
    default:
      if (c4_mon_cli_common(cmd, c, argv, &d, &rc) != 0) return rc;
    }
  }
  if (optind < argc) return c4_cli_usage(prog, "unexpected argument '%s'", argv[optind]);
  if (!o.listen) return c4_cli_usage(prog, "--listen ADDR:PORT is required");
  if (recording && !out) return c4_cli_usage(prog, "--out FILE is required");
  o.token = c4_mon_cli_token() ? c4_mon_cli_token() : "";
  o.plan = d.det.plan;
  c4_mon_cli_signals();
  return serve(prog, &o, out, &d);
}

const struct mon_cmd c4_mon_cmd_serve = {
    .name = "serve",
    .args = "--listen ADDR:PORT [--token-file FILE] [--job NAME] [--record FILE] [DETECT]",
    .summary = "collect the ranks' telemetry, detect, and report each verdict",
    .help =
        "Accepts ranks that stream with C4_MONITOR=ADDR:PORT and prove the job token, detects\n"
        "stragglers, slow NICs, links and paths, hangs and lost ranks, and reports each verdict\n"
        "as a JSON line (docs/events.md), on standard output unless --events. With --plan, each\n"
        "rank is pushed its host's flows of the plan (again when the file changes). Stops on\n"
        "SIGINT, SIGTERM or SIGHUP.\n"
        "  --listen ADDR:PORT    where ranks connect (port 0: any free one, printed at start)\n"
        "  --token-file FILE     the job token ranks must prove: FILE's first line (default:\n"
        "                        $C4_TOKEN; --token T also works, visible in ps); without\n"
        "                        one c4mon warns and accepts anyone\n"
        "  --job NAME            accept only this job\n"
        "  --record FILE         append what arrives as trace JSON lines (docs/trace-format.md)\n"
        "                        in c4mon's clock\n" MON_CLI_DETECT_HELP,
    .run = run};

const struct mon_cmd c4_mon_cmd_record = {
    .name = "record",
    .args = "--listen ADDR:PORT --out FILE [--token-file FILE] [--job NAME] [DETECT]",
    .summary = "serve, writing what arrives as a trace to --out",
    .help = "As serve --record FILE.\n"
            "  --listen ADDR:PORT    where ranks connect\n"
            "  --out FILE            the trace to append to\n"
            "  --token-file FILE     the job token ranks must prove: FILE's first line (default:\n"
            "                        $C4_TOKEN; --token T also works, visible in ps); without\n"
            "                        one c4mon warns and accepts anyone\n"
            "  --job NAME            accept only this job\n" MON_CLI_DETECT_HELP,
    .run = run};
