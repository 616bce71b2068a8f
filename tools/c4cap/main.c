/* main.c -- c4cap: flows, throughput over time and path balance from a capture (live or a file). */
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate.h"
#include "c4_cli.h"
#include "c4_err.h"
#include "capture.h"
#include "paths.h"
#include "report.h"

#define MAX_IFS 64

static volatile sig_atomic_t stop;

static void on_signal(int sig) {
  (void)sig;
  stop = 1;
}

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: c4cap (-i IF [-i IF ...] [--seconds N] | -r FILE) [options]\n"
      "Groups packets into flows (TCP/UDP 5-tuple over IPv4 or IPv6; RoCEv2, UDP port 4791,\n"
      "also by the BTH destination QP) and reports per-flow and per-interface bytes,\n"
      "throughput over time, and how evenly the bytes spread over paths.\n\n"
      "  -i, --interface IF  capture live on IF (repeatable; \"any\" splits per interface);\n"
      "                      needs CAP_NET_RAW (root). Stops at --seconds or Ctrl-C\n"
      "  -r, --read FILE     read a pcap/pcapng file as tcpdump -w writes it (Ethernet,\n"
      "                      Linux cooked SLL/SLL2 from -i any, raw IP)\n"
      "      --seconds N     live capture length (default: until Ctrl-C)\n"
      "      --interval S    throughput interval in seconds, default 1\n"
      "      --paths BY      path balance: iface (a path per interface), flow (a path per\n"
      "                      flow), or a map FILE of \"SOURCE_PORT PATH\" lines; prints each\n"
      "                      path's IP bytes and the max/mean imbalance\n"
      "      --top N         flows in the table (default 20; --json has them all)\n"
      "      --json          one JSON document on stdout (docs/c4cap.md)\n"
      "  -h, --help          this text\n"
      "  -V, --version       c4cap's version\n"
      "Bytes: \"IP bytes\" sum the IP header's length field (what the network carried above the\n"
      "link layer, even when the capture was cut short); \"wire bytes\" the captured frames'\n"
      "original length, link header included (tcpdump -e's \"length\").\n"
      "exit: 0 ok, 1 capture or file error, 2 bad usage\n");
}

/* What the command line asked for. */
struct opts {
  char *ifs[MAX_IFS];
  int nifs, json;
  long top;
  const char *file, *paths_spec;
  double seconds, interval;
};

/* Reads the options into o. Returns -1 to go on, or the exit code (help, version, bad usage). */
static int parse_opts(int argc, char **argv, struct opts *o) {
  static const struct option opts[] = {{"interface", required_argument, NULL, 'i'},
                                       {"read", required_argument, NULL, 'r'},
                                       {"seconds", required_argument, NULL, 's'},
                                       {"interval", required_argument, NULL, 'I'},
                                       {"paths", required_argument, NULL, 'p'},
                                       {"top", required_argument, NULL, 't'},
                                       {"json", no_argument, NULL, 'j'},
                                       {"help", no_argument, NULL, 'h'},
                                       {"version", no_argument, NULL, 'V'},
                                       {NULL, 0, NULL, 0}};
  *o = (struct opts){.top = 20, .interval = 1};
  int c;
  while ((c = getopt_long(argc, argv, ":i:r:hV", opts, NULL)) != -1) {
    switch (c) {
    case 'i':
      if (o->nifs == MAX_IFS) return c4_cli_usage("c4cap", "at most %d interfaces (-i)", MAX_IFS);
      for (int i = 0; i < o->nifs; i++) /* captured twice, its packets would count twice */
        if (!strcmp(o->ifs[i], optarg)) return c4_cli_usage("c4cap", "-i %s given twice", optarg);
      o->ifs[o->nifs++] = optarg;
      break;
    case 'r':
      if (o->file) return c4_cli_usage("c4cap", "-r given twice (one capture file at a time)");
      o->file = optarg;
      break;
    case 's':
      if (c4_cli_double("c4cap", "--seconds", optarg, 1e-3, 1e9, &o->seconds)) return C4_EXIT_USAGE;
      break;
    case 'I':
      if (c4_cli_double("c4cap", "--interval", optarg, 1e-3, 1e6, &o->interval))
        return C4_EXIT_USAGE;
      break;
    case 'p': o->paths_spec = optarg; break;
    case 't':
      if (c4_cli_long("c4cap", "--top", optarg, 0, INT_MAX, &o->top)) return C4_EXIT_USAGE;
      break;
    case 'j': o->json = 1; break;
    case 'h': usage(stdout); return C4_EXIT_OK;
    case 'V': c4_cli_version("c4cap"); return C4_EXIT_OK;
    default: return c4_cli_bad_option("c4cap", argv, c);
    }
  }
  if (optind != argc) return c4_cli_usage("c4cap", "unexpected argument '%s'", argv[optind]);
  if (!o->file == !o->nifs)
    return c4_cli_usage("c4cap", "give either -r FILE or one or more -i IF");
  if (o->file && o->seconds > 0)
    return c4_cli_usage("c4cap", "--seconds is for live capture (-i), not -r FILE");
  return C4_NONE;
}

/* Reads the file or captures live into agg, naming the source in run. Returns 0, or nonzero with
 * what went wrong in err. */
static int capture(const struct opts *o, struct c4cap_agg *agg, struct c4cap_run *run, char *source,
                   size_t srclen, char *err, size_t errlen) {
  if (o->file) {
    snprintf(source, srclen, "file %s", o->file);
    return c4cap_read_file(agg, o->file, err, errlen);
  }
  int n = snprintf(source, srclen, "live");
  for (int i = 0; i < o->nifs && n > 0 && (size_t)n < srclen; i++)
    n += snprintf(source + n, srclen - (size_t)n, "%s%s", i ? "," : " ", o->ifs[i]);
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  return c4cap_live(agg, o->ifs, o->nifs, o->seconds, &stop, &run->dropped, err, errlen);
}

/* Prints the report (JSON, with the capture's error if any, or the table). Returns rc, or -1 when
 * the report could not be written. */
static int report(const struct opts *o, struct c4cap_agg *agg, const struct c4cap_paths *paths,
                  struct c4cap_run *run, int rc, const char *err) {
  if (o->json) {
    json_t *j = c4cap_report_json(agg, paths, run);
    if (j && rc) json_object_set_new(j, "error", json_string(err));
    if (!j || json_dumpf(j, stdout, JSON_INDENT(2)) < 0) rc = -1;
    fputc('\n', stdout);
    json_decref(j);
  } else if (c4cap_report_table(stdout, agg, paths, run)) {
    rc = -1;
  }
  return rc;
}

static int tool_main(int argc, char **argv) {
  struct opts o;
  int rc = parse_opts(argc, argv, &o);
  if (rc >= 0) return rc;
  char err[512] = "";
  struct c4cap_paths paths = {.by = C4CAP_PATHS_NONE};
  if (o.paths_spec && c4cap_paths_parse(&paths, o.paths_spec, err, sizeof err))
    return c4_cli_fail("c4cap", "--paths: %s", err);
  struct c4cap_agg agg;
  if (c4cap_agg_init(&agg, o.interval)) {
    fprintf(stderr, "c4cap: out of memory\n");
    return 1;
  }
  char source[1024];
  struct c4cap_run run = {.source = source, .top = (int)o.top};
  rc = capture(&o, &agg, &run, source, sizeof source, err, sizeof err);
  /* an error before the first interface or packet leaves nothing to report */
  if (rc == 0 || agg.total.packets) rc = report(&o, &agg, &paths, &run, rc, err);
  if (rc) fprintf(stderr, "c4cap: %s\n", err[0] ? err : "out of memory");
  c4cap_agg_free(&agg);
  c4cap_paths_free(&paths);
  return rc ? C4_EXIT_FAIL : C4_EXIT_OK;
}

/* Every exit says when standard output was lost (c4_cli_exit). */
int main(int argc, char **argv) { return c4_cli_exit("c4cap", tool_main(argc, argv)); }
