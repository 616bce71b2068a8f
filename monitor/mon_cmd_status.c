/* mon_cmd_status.c -- `c4mon status`: a running c4mon's ranks, counters and active verdicts. */
#include <jansson.h>
#include <stdlib.h>

#include "c4_cli.h"
#include "mon_cli.h"
#include "mon_evq.h"
#include "mon_server.h"

static void print_ranks(json_t *ranks) {
  size_t i;
  json_t *r;
  printf("%-16s %6s %-16s %8s %10s %8s %12s\n", "job", "rank", "host", "pid", "records", "dropped",
         "offset_us");
  json_array_foreach(ranks, i, r) {
    printf("%-16s %6lld %-16s %8lld %10lld %8lld %12.1f\n",
           json_string_value(json_object_get(r, "job")),
           (long long)json_integer_value(json_object_get(r, "rank")),
           json_string_value(json_object_get(r, "host")),
           (long long)json_integer_value(json_object_get(r, "pid")),
           (long long)json_integer_value(json_object_get(r, "records")),
           (long long)json_integer_value(json_object_get(r, "dropped")),
           (double)json_integer_value(json_object_get(r, "clock_offset_ns")) / 1e3);
  }
}

/* The jobs whose ranks are gone (ended, or lost) but not yet forgotten (--forget-ms): the table
 * above lists connections, so a job that had just ended vanished from it at once. A line a job. */
static void print_ended(json_t *ranks) {
  json_t *jobs = json_object(), *r, *c;
  size_t i;
  json_array_foreach(ranks, i, r) {
    int lost = json_is_true(json_object_get(r, "lost"));
    if (!lost && !json_is_true(json_object_get(r, "ended"))) continue;
    const char *job = json_string_value(json_object_get(r, "job"));
    if (!job) continue;
    if (!(c = json_object_get(jobs, job)))
      json_object_set_new(jobs, job, c = json_pack("[i,i]", 0, 0));
    json_array_set_new(c, lost, json_integer(json_integer_value(json_array_get(c, lost)) + 1));
  }
  const char *job;
  json_object_foreach(jobs, job, c)
      printf("job %s: %lld rank(s) ended, %lld lost (kept until c4mon forgets the job)\n", job,
             (long long)json_integer_value(json_array_get(c, 0)),
             (long long)json_integer_value(json_array_get(c, 1)));
  json_decref(jobs);
}

static void print_verdicts(json_t *verdicts) {
  size_t i;
  json_t *r;
  printf("%zu verdict(s) active\n", json_array_size(verdicts));
  json_array_foreach(verdicts, i, r) {
    char place[400];
    c4_mon_evq_place(r, place, sizeof place);
    char factor[32] = ""; /* a hang or a lost rank has none */
    double f = json_number_value(json_object_get(r, "factor"));
    if (f > 0) snprintf(factor, sizeof factor, "  factor %.2f", f);
    printf("  #%lld %-12s %s, job %s%s  %s\n",
           (long long)json_integer_value(json_object_get(r, "id")),
           json_string_value(json_object_get(r, "kind")), place,
           json_string_value(json_object_get(r, "job")), factor,
           json_string_value(json_object_get(r, "detail")));
  }
}

static int print_status(const char *prog, const char *addr, int as_json) {
  char *doc = NULL;
  int rc = c4_mon_query_status(addr, c4_mon_cli_token(), &doc);
  if (rc != 0) return c4_cli_fail(prog, "%s: %s", addr, c4_mon_query_why(rc));
  if (as_json) {
    printf("%s\n", doc);
    free(doc);
    return 0;
  }
  json_t *j = json_loads(doc, 0, NULL);
  free(doc);
  if (!j) return c4_cli_fail(prog, "%s: the answer is not JSON", addr);
  printf("c4mon %s at %s: %lld ranks connected, %lld records (%.0f/s), %lld rejected, %lld bad "
         "frames, %lld lost, up %.0f s\n",
         json_string_value(json_object_get(j, "c4mon")), addr,
         (long long)json_integer_value(json_object_get(j, "ranks_connected")),
         (long long)json_integer_value(json_object_get(j, "records")),
         json_real_value(json_object_get(j, "records_per_s")),
         (long long)json_integer_value(json_object_get(j, "rejected")),
         (long long)json_integer_value(json_object_get(j, "bad_frames")),
         (long long)json_integer_value(json_object_get(j, "lost")),
         json_real_value(json_object_get(j, "uptime_s")));
  json_int_t twins =
      json_integer_value(json_object_get(json_object_get(j, "detect"), "twin_ranks"));
  if (twins > 0) /* said in c4mon's log once; an operator reading status should see it too */
    printf("warning: %lld rank number(s) streamed by two processes at once: two jobs under one "
           "C4_JOB? Their hangs and lost ranks cannot be told apart (c4mon's log names them)\n",
           (long long)twins);
  print_ranks(json_object_get(j, "ranks"));
  print_ended(json_object_get(json_object_get(j, "detect"), "ranks"));
  print_verdicts(json_object_get(json_object_get(j, "detect"), "verdicts"));
  json_decref(j);
  return 0;
}

static int run(const struct mon_cmd *cmd, int argc, char **argv) {
  static const struct option opts[] = {{"connect", required_argument, 0, 'c'},
                                       {"json", no_argument, 0, 'J'},
                                       MON_CLI_TOKEN_OPTIONS,
                                       MON_CLI_HELP_OPTIONS,
                                       {0, 0, 0, 0}};
  const char *prog = c4_mon_cli_prog(cmd), *connect_to = NULL;
  int as_json = 0, c, rc;
  while ((c = getopt_long(argc, argv, ":hV", opts, NULL)) != -1) {
    switch (c) {
    case 'c': connect_to = optarg; break;
    case 'J': as_json = 1; break;
    default:
      if (c4_mon_cli_common(cmd, c, argv, NULL, &rc) != 0) return rc;
    }
  }
  if (optind < argc) return c4_cli_usage(prog, "unexpected argument '%s'", argv[optind]);
  if (!connect_to) return c4_cli_usage(prog, "--connect ADDR:PORT is required");
  if (c4_cli_addr(prog, "--connect", connect_to, 0) != 0) return C4_EXIT_USAGE;
  return print_status(prog, connect_to, as_json);
}

const struct mon_cmd c4_mon_cmd_status = {
    .name = "status",
    .args = "--connect ADDR:PORT [--token-file FILE] [--json]",
    .summary = "a running c4mon's ranks, records/s, drops, clock offsets and active verdicts",
    .help = "  --connect ADDR:PORT   the c4mon to ask (its --listen address)\n" MON_CLI_TOKEN_HELP
            "  --json                the status document as JSON\n",
    .run = run};
