/* main.c -- c4plan's command line: `assign` places a job's flows on the fabric's paths and writes
 * the plan; `probe` (probe.h) finds which spine each source port takes. */
#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "assign.h"
#include "c4_cli.h"
#include "c4_err.h"
#include "flows.h"
#include "plan.h"
#include "plan_show.h"
#include "portmap.h"
#include "probe.h"
#include "topo.h"

static void usage(FILE *f) {
  fprintf(f, "usage:\n"
             "  c4plan assign [--topo FILE] (--flows FILE | --trace FILE) [--probe FILE]...\n"
             "                [--out PLAN] [--json] [--seed N]\n"
             "  c4plan probe ...   (c4plan probe --help)\n"
             "  c4plan flows PLAN  (a plan's flows as text lines: SRC DST PATH SRC_PORT)\n"
             "\n"
             "assign: a path for every flow (NIC ports, spine, source port from the probe maps)\n"
             "that keeps the most loaded link as light as it can; prints that load over a lower\n"
             "bound, beside ECMP's random hashing (seeded by --seed), and writes the plan\n"
             "(docs/plan-format.md) to --out (-: standard output, the report then on\n"
             "standard error). --topo defaults to $C4_TOPO, then\n"
             "  " C4_PLAN_DEFAULT_TOPO ".\n"
             "  -h, --help   -V, --version\n"
             "exit: 0 ok, 1 failure, 2 bad usage\n");
}

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

struct args {
  const char *topo, *flows, *trace, *out, **probes;
  int nprobes, json;
  unsigned long long seed;
};

/* The options into a. Returns 0, 1 when --help or --version was printed, or -1 having printed
 * the one-line usage error. */
static int parse(int argc, char **argv, struct args *a) {
  static const char *prog = "c4plan assign";
  static const struct option opts[] = {
      {"topo", required_argument, 0, 't'},  {"flows", required_argument, 0, 'f'},
      {"trace", required_argument, 0, 'r'}, {"probe", required_argument, 0, 'p'},
      {"out", required_argument, 0, 'o'},   {"json", no_argument, 0, 'j'},
      {"seed", required_argument, 0, 's'},  {"help", no_argument, 0, 'h'},
      {"version", no_argument, 0, 'V'},     {0, 0, 0, 0}};
  int c;
  long seed;
  while ((c = getopt_long(argc, argv, ":hV", opts, NULL)) != -1)
    switch (c) {
    case 't': a->topo = optarg; break;
    case 'f': a->flows = optarg; break;
    case 'r': a->trace = optarg; break;
    case 'p': a->probes[a->nprobes++] = optarg; break;
    case 'o': a->out = optarg; break;
    case 'j': a->json = 1; break;
    case 's':
      if (c4_cli_long(prog, "--seed", optarg, 0, LONG_MAX, &seed) != 0) return C4_EINVAL;
      a->seed = (unsigned long long)seed;
      break;
    case 'h': usage(stdout); return 1;
    case 'V': c4_cli_version("c4plan"); return 1;
    default: c4_cli_bad_option(prog, argv, c); return C4_EINVAL;
    }
  if (optind < argc) return c4_cli_usage(prog, "unexpected argument '%s'", argv[optind]), -1;
  if (!a->topo) a->topo = getenv("C4_TOPO") ? getenv("C4_TOPO") : C4_PLAN_DEFAULT_TOPO;
  if (!!a->flows == !!a->trace) return c4_cli_usage(prog, "give one of --flows and --trace"), -1;
  if (a->out && !strcmp(a->out, "-") && a->json)
    return c4_cli_usage(prog, "--out - and --json both write to standard output"), -1;
  return 0;
}

/* Prints the result: one JSON object with --json, else lines for people, on standard error when
 * the plan itself went to standard output (--out -). */
static void report(const struct args *a, int n, double bound, double plan, double hash, double ms) {
  if (a->json) {
    json_t *j =
        json_pack("{sisfsfsfsfsfsIss?}", "flows", n, "lower_bound_s", bound, "plan_max_s", plan,
                  "plan_ratio", bound > 0 ? plan / bound : 1.0, "hash_max_s", hash, "hash_ratio",
                  bound > 0 ? hash / bound : 1.0, "seed", (json_int_t)a->seed, "out", a->out);
    json_object_set_new(j, "plan_ms", json_real(ms));
    json_dumpf(j, stdout, JSON_COMPACT);
    putchar('\n');
    json_decref(j);
    return;
  }
  int to_stdout = a->out && !strcmp(a->out, "-");
  FILE *f = to_stdout ? stderr : stdout;
  fprintf(f, "%d flows, lower bound on the most loaded link: %.6f s\n", n, bound);
  fprintf(f, "plan:           max link load %.6f s = %.3f x bound (%.1f ms to plan)\n", plan,
          bound > 0 ? plan / bound : 1.0, ms);
  fprintf(f, "random hashing: max link load %.6f s = %.3f x bound (seed %llu)\n", hash,
          bound > 0 ? hash / bound : 1.0, a->seed);
  if (a->out && !to_stdout) printf("plan written to %s\n", a->out);
}

/* Reads the topology, the flows (a flows file or a trace) and the probe maps. Returns the number
 * of flows, or -1 with what is wrong in err. */
static int load_inputs(const struct args *a, struct c4_plan_topo **t, struct c4_plan_flow **flows,
                       struct c4_plan_portmap *ports, char *err, size_t errlen) {
  if (!(*t = c4_plan_topo_load(a->topo, err, errlen))) return C4_EINVAL;
  int n = a->flows ? c4_plan_flows_load(a->flows, *t, flows, err, errlen)
                   : c4_plan_flows_from_trace(a->trace, *t, flows, err, errlen);
  if (n < 0) return C4_EINVAL;
  for (int i = 0; i < a->nprobes; i++)
    if (c4_plan_portmap_load(ports, a->probes[i], *t, err, errlen) < 0) return C4_EINVAL;
  return n;
}

/* Places the n flows by the planner (paths, taking *ms) and by random hashing (hashed). Returns
 * 0, or -1 with what is wrong in err. */
static int place_flows(const struct args *a, const struct c4_plan_topo *t,
                       const struct c4_plan_flow *flows, int n, struct c4_plan_path *paths,
                       struct c4_plan_path *hashed, double *ms, char *err, size_t errlen) {
  double t0 = now_ms();
  int rc = c4_plan_assign(t, flows, n, paths);
  if (rc == 0) rc = c4_plan_hash(t, flows, n, a->seed, hashed);
  if (rc < 0) {
    int f = c4_plan_unroutable(t, flows, n);
    if (rc == C4_ENOMEM || f < 0) {
      snprintf(err, errlen, rc == C4_ENOMEM ? "out of memory" : "%s: no plan found", a->topo);
      return rc;
    }
    snprintf(err, errlen, "%s: no path from %s to %s (no leaf or spine joins their ports)", a->topo,
             t->hosts[flows[f].src].name, t->hosts[flows[f].dst].name);
    return C4_EINVAL;
  }
  *ms = now_ms() - t0;
  return 0;
}

/* Writes the plan to --out (-: standard output), when given. Returns 0, or a C4_E* code with
 * what is wrong in err. */
static int write_plan(const struct args *a, const struct c4_plan_topo *t,
                      const struct c4_plan_flow *flows, int n, const struct c4_plan_path *paths,
                      const struct c4_plan_portmap *ports, char *err, size_t errlen) {
  if (!a->out) return 0;
  json_t *plan = c4_plan_json(t, flows, n, paths, a->nprobes ? ports : NULL);
  if (!plan) {
    snprintf(err, errlen, "out of memory");
    return C4_ENOMEM;
  }
  int rc = 0;
  if (!strcmp(a->out, "-")) {
    if (json_dumpf(plan, stdout, JSON_COMPACT) < 0 || putchar('\n') == EOF || fflush(stdout)) {
      snprintf(err, errlen, "standard output: cannot write the plan: %s", strerror(errno));
      rc = C4_ESYS;
    }
  } else {
    rc = c4_plan_write(a->out, plan, err, errlen);
  }
  json_decref(plan);
  return rc < 0 ? -1 : 0;
}

static int assign_main(int argc, char **argv) {
  struct args a = {.probes = calloc((size_t)argc, sizeof(char *)), .seed = 1};
  struct c4_plan_portmap ports = {0};
  struct c4_plan_topo *t = NULL;
  struct c4_plan_flow *flows = NULL;
  struct c4_plan_path *paths = NULL, *hashed = NULL;
  char err[512];
  int rc = 1, n = 0;
  double ms = 0;
  if (!a.probes) {
    snprintf(err, sizeof err, "out of memory");
    goto fail;
  }
  int parsed = parse(argc, argv, &a);
  if (parsed != 0) {
    rc = parsed > 0 ? C4_EXIT_OK : C4_EXIT_USAGE;
    goto out;
  }
  if ((n = load_inputs(&a, &t, &flows, &ports, err, sizeof err)) < 0) goto fail;
  paths = malloc(sizeof *paths * (size_t)(n ? n : 1));
  hashed = malloc(sizeof *hashed * (size_t)(n ? n : 1));
  if (!paths || !hashed) {
    snprintf(err, sizeof err, "out of memory");
    goto fail;
  }
  if (place_flows(&a, t, flows, n, paths, hashed, &ms, err, sizeof err) < 0 ||
      write_plan(&a, t, flows, n, paths, &ports, err, sizeof err) < 0)
    goto fail;
  report(&a, n, c4_plan_lower_bound(t, flows, n), c4_plan_max_load(t, flows, n, paths),
         c4_plan_max_load(t, flows, n, hashed), ms);
  rc = 0;
  goto out;
fail:
  if (a.json) {
    json_t *j = json_pack("{ss}", "error", err);
    json_dumpf(j, stdout, JSON_COMPACT);
    putchar('\n');
    json_decref(j);
  }
  fprintf(stderr, "c4plan assign: %s\n", err);
out:
  free(hashed);
  free(paths);
  free(flows);
  c4_plan_portmap_free(&ports);
  c4_plan_topo_free(t);
  free(a.probes);
  return rc;
}

static int tool_main(int argc, char **argv) {
  if (argc < 2) return c4_cli_usage("c4plan", "a COMMAND (assign, probe or flows) is required");
  const char *cmd = argv[1];
  if (!strcmp(cmd, "assign")) return assign_main(argc - 1, argv + 1);
  if (!strcmp(cmd, "probe")) return c4plan_probe_main(argc - 1, argv + 1);
  if (!strcmp(cmd, "flows")) return c4plan_flows_main(argc - 1, argv + 1);
  if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h")) {
    usage(stdout);
    return C4_EXIT_OK;
  }
  if (!strcmp(cmd, "--version") || !strcmp(cmd, "-V")) {
    c4_cli_version("c4plan");
    return C4_EXIT_OK;
  }
  if (cmd[0] == '-') return c4_cli_usage("c4plan", "unknown option '%s' before the COMMAND", cmd);
  return c4_cli_usage("c4plan", "unknown command '%s'", cmd);
}

/* Every exit says when standard output was lost (c4_cli_exit). */
int main(int argc, char **argv) { return c4_cli_exit("c4plan", tool_main(argc, argv)); }
