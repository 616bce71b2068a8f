/* main.c -- c4perf: bandwidth, latency and allreduce through an NCCL net plugin between processes.
 */
#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "c4_cli.h"
#include "c4_env.h"
#include "c4_err.h"
#include "c4_log.h"
#include "c4_ranks.h"
#include "perf.h"

static void usage(FILE *f) {
  fprintf(
      f, "usage: c4perf [options]\n"
         "Measures an NCCL net plugin (default: c4's) between processes, driving it as NCCL's\n"
         "proxy does.\n\n"
         "  --mode bw|lat|allreduce  bw: rank 0 streams to rank 1 (default); lat: ping-pong\n"
         "                           round trip; allreduce: ring allreduce over all ranks\n"
         "  -b, --min-bytes N        smallest size (K, M, G suffixes), default 8\n"
         "  -e, --max-bytes N        largest size, default 64M\n"
         "  -f, --factor F           size multiplier between steps (1.1..1024), default 2\n"
         "  -n, --iters N            iterations per size (default: ~256 MiB worth, 20..2000)\n"
         "  -w, --warmup N           warm-up iterations per size, default 5\n"
         "      --inflight K         requests in flight for bw (default 8, like NCCL_STEPS)\n"
         "      --dev D              plugin device, default 0\n"
         "      --plugin PATH        net plugin library (default: ../lib/libnccl-net-c4.so beside\n"
         "                           this program, else libnccl-net-c4.so on the library path)\n"
         "      --no-check           skip the data check\n"
         "      --json               one JSON document on stdout instead of the table\n"
         "      --timeline FILE      allreduce: rank 0 writes a line per timed iteration, its\n"
         "                           end (ns, the host's monotonic clock) and its time (us)\n"
         "  ranks: --rank R --world N --master ADDR:PORT, or --spawn N to fork N ranks on\n"
         "         127.0.0.1, or the launcher's variables as c4train reads them: torchrun\n"
         "         (RANK, WORLD_SIZE), Slurm (SLURM_PROCID, SLURM_NTASKS), Open MPI\n"
         "         (OMPI_COMM_WORLD_RANK, _SIZE), PMI (PMI_RANK, PMI_SIZE); rank 0's address\n"
         "         from MASTER_ADDR and MASTER_PORT (default 29500)\n"
         "  -h, --help   -V, --version\n"
         "exit: 0 ok, 1 a transfer or data check failed, 2 bad usage\n");
}

static int parse_size(const char *s, size_t *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || !(v >= 0 && v < 1e15)) return C4_EINVAL;
  switch (*end) {
  case 'k':
  case 'K':
    v *= 1024;
    end++;
    break;
  case 'm':
  case 'M':
    v *= 1024 * 1024;
    end++;
    break;
  case 'g':
  case 'G':
    v *= 1024.0 * 1024 * 1024;
    end++;
    break;
  default: break;
  }
  if (*end) return C4_EINVAL;
  *out = (size_t)v;
  return 0;
}

/* Parses a whole decimal integer in [min, max]; -1 having printed the usage error naming flag. */
static int parse_int(const char *flag, const char *s, int min, int max, int *out) {
  long v;
  if (c4_cli_long("c4perf", flag, s, min, max, &v) != 0) return C4_EINVAL;
  *out = (int)v;
  return 0;
}

/* Forks n ranks; returns -1 in the parent after they all exit (worst status in *status), or the
 * child's rank. */
static int spawn(int n, int *port, int *status) {
  *port = c4_bootstrap_free_port();
  for (int r = 0; r < n; r++) {
    pid_t pid = fork();
    if (pid < 0) {
      perror("c4perf: fork");
      exit(1);
    }
    if (pid == 0) { /* what a launcher would give each rank, so the plugin reports its rank */
      char v[16];
      snprintf(v, sizeof v, "%d", r);
      setenv("RANK", v, 1);
      setenv("LOCAL_RANK", v, 1);
      snprintf(v, sizeof v, "%d", n);
      setenv("WORLD_SIZE", v, 1);
      return r;
    }
  }
  *status = 0;
  for (int r = 0; r < n; r++) {
    int st;
    if (wait(&st) < 0) break;
    int code = WIFEXITED(st) ? WEXITSTATUS(st) : 1;
    if (code > *status) *status = code;
  }
  return C4_NONE;
}

/* Reports a failure that ends the run: on stderr, and on rank 0 in --json mode as the one JSON
 * document ({"ok": false, "error": ...}). Returns 1. */
static int report_error(const struct perf_opts *o, int rank, const char *mode, const char *fmt,
                        ...) {
  char msg[1024];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof msg, fmt, ap);
  va_end(ap);
  fprintf(stderr, "c4perf: %s\n", msg);
  if (o->json && rank == 0) {
    json_t *doc = json_pack("{s:s, s:s, s:s, s:b, s:s}", "tool", "c4perf", "version", C4_VERSION,
                            "mode", mode, "ok", 0, "error", msg);
    json_dumpf(doc, stdout, JSON_INDENT(2));
    printf("\n");
    json_decref(doc);
  }
  return 1;
}

/* Where this process stands in the run: its rank, the world and rank 0's address. */
struct perf_ranks {
  int rank, world, port, spawn_n;
  char master[256];
};

static int parse_mode(const char *s, enum perf_mode *mode) {
  static const char *const names[] = {
      [MODE_BW] = "bw", [MODE_LAT] = "lat", [MODE_ALLREDUCE] = "allreduce"};
  for (int m = 0; m < 3; m++)
    if (!strcmp(s, names[m])) {
      *mode = (enum perf_mode)m;
      return 0;
    }
  return c4_cli_usage("c4perf", "--mode wants bw, lat or allreduce, not '%s'", s), -1;
}

static int parse_bytes(const char *flag, const char *s, size_t *out) {
  if (parse_size(s, out) == 0) return 0;
  return c4_cli_usage("c4perf", "%s wants a size in bytes (K, M, G suffixes), not '%s'", flag, s),
         -1;
}

static int parse_master(const char *s, struct perf_ranks *r) {
  const char *colon = strrchr(s, ':');
  if (!colon || colon == s || (size_t)(colon - s) >= sizeof r->master)
    return c4_cli_usage("c4perf", "--master wants ADDR:PORT, not '%s'", s), -1;
  memcpy(r->master, s, (size_t)(colon - s));
  r->master[colon - s] = 0;
  return parse_int("--master (port)", colon + 1, 1, 65535, &r->port);
}

enum {
  O_MODE = 256,
  O_INFLIGHT,
  O_DEV,
  O_PLUGIN,
  O_NOCHECK,
  O_JSON,
  O_RANK,
  O_WORLD,
  O_MASTER,
  O_SPAWN,
  O_TIMELINE
};
static const struct option longs[] = {{"mode", 1, 0, O_MODE},
                                      {"min-bytes", 1, 0, 'b'},
                                      {"max-bytes", 1, 0, 'e'},
                                      {"factor", 1, 0, 'f'},
                                      {"iters", 1, 0, 'n'},
                                      {"warmup", 1, 0, 'w'},
                                      {"inflight", 1, 0, O_INFLIGHT},
                                      {"dev", 1, 0, O_DEV},
                                      {"plugin", 1, 0, O_PLUGIN},
                                      {"no-check", 0, 0, O_NOCHECK},
                                      {"json", 0, 0, O_JSON},
                                      {"rank", 1, 0, O_RANK},
                                      {"world", 1, 0, O_WORLD},
                                      {"master", 1, 0, O_MASTER},
                                      {"spawn", 1, 0, O_SPAWN},
                                      {"timeline", 1, 0, O_TIMELINE},
                                      {"help", 0, 0, 'h'},
                                      {"version", 0, 0, 'V'},
                                      {0, 0, 0, 0}};

/* Option c (one of longs' but help and version) with its value v into o or r. Returns 0, or
 * non-zero when v is bad (said in one line). */
static int take_option(int c, const char *v, struct perf_opts *o, struct perf_ranks *r) {
  switch (c) {
  case O_MODE: return parse_mode(v, &o->mode);
  case 'b': return parse_bytes("--min-bytes", v, &o->min_bytes);
  case 'e': return parse_bytes("--max-bytes", v, &o->max_bytes);
  case 'f': return c4_cli_double("c4perf", "--factor", v, 1.1, 1024, &o->factor);
  case 'n': return parse_int("--iters", v, 1, 100000000, &o->iters);
  case 'w': return parse_int("--warmup", v, 0, 100000000, &o->warmup);
  case O_INFLIGHT: return parse_int("--inflight", v, 1, 32, &o->inflight);
  case O_DEV: return parse_int("--dev", v, 0, 1023, &o->dev);
  case O_PLUGIN: o->plugin = v; return 0;
  case O_NOCHECK: o->check = 0; return 0;
  case O_JSON: o->json = 1; return 0;
  case O_TIMELINE: o->timeline = v; return 0;
  case O_RANK: return parse_int("--rank", v, 0, 1 << 20, &r->rank);
  case O_WORLD: return parse_int("--world", v, 1, 1 << 20, &r->world);
  case O_MASTER: return parse_master(v, r);
  case O_SPAWN: return parse_int("--spawn", v, 1, 64, &r->spawn_n);
  }
  return 0;
}

/* The sizes, once every option is in (--mode may follow them): the sweep's ends in order, and an
 * allreduce at least one float. Returns -1 when they do, else 2 (said in one line). */
static int check_sizes(struct perf_opts *o) {
  if (o->min_bytes == 0) return c4_cli_usage("c4perf", "--min-bytes must be at least 1");
  if (o->min_bytes > o->max_bytes)
    return c4_cli_usage("c4perf", "--min-bytes %zu is above --max-bytes %zu", o->min_bytes,
                        o->max_bytes);
  if (o->mode == MODE_ALLREDUCE && o->min_bytes < sizeof(float)) o->min_bytes = sizeof(float);
  if (o->mode == MODE_ALLREDUCE && o->max_bytes < sizeof(float))
    return c4_cli_usage("c4perf", "allreduce needs --max-bytes of at least %zu", sizeof(float));
  return C4_NONE;
}

/* The options into o and r. Returns -1 to go on, else the exit status (help, version: 0; a
 * usage error, said in one line: 2). */
static int parse_args(int argc, char **argv, struct perf_opts *o, struct perf_ranks *r) {
  int c, bad = 0;
  while (!bad && (c = getopt_long(argc, argv, ":b:e:f:n:w:hV", longs, NULL)) != -1) {
    if (c == 'h') {
      usage(stdout);
      return C4_EXIT_OK;
    }
    if (c == 'V') {
      c4_cli_version("c4perf");
      return C4_EXIT_OK;
    }
    if (c == '?' || c == ':') return c4_cli_bad_option("c4perf", argv, c);
    bad = take_option(c, optarg, o, r);
  }
  if (bad) return C4_EXIT_USAGE;
  if (optind < argc) return c4_cli_usage("c4perf", "unexpected argument '%s'", argv[optind]);
  return check_sizes(o);
}

/* Fills what the flags left open from the launcher's variables (c4_ranks.h), then checks the
 * whole. Returns -1 to go on, else the exit status (2, said in one line). */
static int resolve_ranks(struct perf_ranks *r, int spawned) {
  if (!spawned && (r->rank < 0 || r->world < 0 || r->port < 0 || !*r->master)) {
    struct c4_ranks l;
    char err[512];
    if (c4_ranks_from_env(&l, err, sizeof err) != 0) return c4_cli_usage("c4perf", "%s", err);
    if (r->rank < 0) r->rank = l.rank;
    if (r->world < 0) r->world = l.world;
    if (r->port < 0) r->port = l.port;
    if (!*r->master) snprintf(r->master, sizeof r->master, "%s", l.master);
  }
  if (r->rank >= r->world)
    return c4_cli_usage("c4perf", "rank %d is not below the world of %d", r->rank, r->world);
  return C4_NONE;
}

/* Opens the plugin's device and prints the table's header on rank 0. Returns 0, or the exit
 * status (reported). */
static int open_plugin(struct perf_ctx *p, const struct perf_ranks *r, const char *mode,
                       ncclNetProperties_v11_t *props) {
  struct perf_opts *o = p->o;
  char plugin_path[4096];
  if (!o->plugin) /* the one built beside this program, else the name NCCL_NET_PLUGIN=c4 finds */
    o->plugin = c4_beside_program(plugin_path, sizeof plugin_path, "../lib/libnccl-net-c4.so",
                                  "libnccl-net-c4.so");
  if (c4_netapi_open(&p->api, o->plugin, 0) != 0)
    return report_error(o, r->rank, mode, "%s", p->api.err);
  int ndev = 0;
  c4_netapi_devices(&p->api, &ndev);
  if (o->dev < 0 || o->dev >= ndev) {
    c4_netapi_close(&p->api);
    report_error(o, r->rank, mode, "device %d does not exist (the plugin has %d)", o->dev, ndev);
    return C4_EXIT_USAGE;
  }
  c4_netapi_properties(&p->api, o->dev, props);
  /* bw and lat send each size whole: past the plugin's largest message every isend is refused */
  if (o->mode != MODE_ALLREDUCE && props->maxP2pBytes && o->max_bytes > props->maxP2pBytes) {
    c4_netapi_close(&p->api);
    report_error(o, r->rank, mode, "--max-bytes %zu is above the plugin's largest message (%zu)",
                 o->max_bytes, (size_t)props->maxP2pBytes);
    return C4_EXIT_USAGE;
  }
  if (r->rank == 0 && !o->json) {
    printf("# c4perf %s: %s, %d ranks, plugin %s (ncclNet v%d), device %d = %s, %d Mbps\n",
           C4_VERSION, mode, r->world, p->api.name, p->api.version, o->dev, props->name,
           props->speed);
    if (o->mode == MODE_BW) printf("# %10s %8s %12s %10s\n", "bytes", "iters", "time_us", "GB/s");
    if (o->mode == MODE_LAT)
      printf("# %10s %8s %12s %12s\n", "bytes", "iters", "rtt_us_med", "rtt_us_p99");
    if (o->mode == MODE_ALLREDUCE)
      printf("# %10s %8s %12s %10s %10s\n", "bytes", "iters", "time_us", "algbw", "busbw");
    fflush(stdout);
  }
  return 0;
}

/* Rank 0's closing output: the JSON document, or a FAILED line under the table. */
static void report(struct perf_ctx *p, const struct perf_ranks *r, const char *mode,
                   const ncclNetProperties_v11_t *props, int failed) {
  const struct perf_opts *o = p->o;
  if (r->rank != 0 || !o->json) {
    if (r->rank == 0 && failed)
      printf("# FAILED: a transfer or the data check failed (see the log above)\n");
    json_decref(p->results);
    return;
  }
  json_t *doc =
      json_pack("{s:s, s:s, s:s, s:i, s:s, s:i, s:s, s:i, s:i, s:b, s:o}", "tool", "c4perf",
                "version", C4_VERSION, "mode", mode, "world", r->world, "plugin", p->api.name,
                "ncclnet_version", p->api.version, "device", props->name, "speed_mbps",
                props->speed, "inflight", o->inflight, "ok", !failed, "results", p->results);
  if (failed)
    json_object_set_new(doc, "error",
                        json_string("a transfer or the data check failed (see stderr)"));
  json_dumpf(doc, stdout, JSON_INDENT(2));
  printf("\n");
  json_decref(doc);
}

/* One rank's run once it knows its place: rendezvous, plugin, measurement, report. */
static int run(struct perf_opts *o, const struct perf_ranks *r, int spawned) {
  static const char *mode_name[] = {"bw", "lat", "allreduce"};
  const char *mode = mode_name[o->mode];
  /* the plugin names this process by the launcher's variables: give them the flags' values */
  char num[16];
  snprintf(num, sizeof num, "%d", r->rank);
  setenv("RANK", num, 0);
  snprintf(num, sizeof num, "%d", r->world);
  setenv("WORLD_SIZE", num, 0);
  struct perf_ctx p = {.o = o};
  if (r->world > 1 && !spawned)
    fprintf(stderr, "c4perf: rank %d: waiting for %d ranks at %s:%d\n", r->rank, r->world,
            r->master, r->port);
  if (c4_bootstrap_init(&p.bs, r->rank, r->world, r->master, r->port) != 0) {
    c4_bootstrap_close(&p.bs);
    return report_error(o, r->rank, mode, "rank %d of %d: rendezvous at %s:%d failed", r->rank,
                        r->world, r->master, r->port);
  }
  ncclNetProperties_v11_t props;
  int rc = open_plugin(&p, r, mode, &props);
  if (rc != 0) {
    c4_bootstrap_close(&p.bs);
    return rc;
  }
  p.results = json_array();
  int failed = o->mode == MODE_BW    ? perf_p2p_bw(&p)
               : o->mode == MODE_LAT ? perf_p2p_lat(&p)
                                     : perf_allreduce(&p);
  report(&p, r, mode, &props, failed);
  c4_bootstrap_close(&p.bs);
  c4_netapi_close(&p.api);
  return failed ? C4_EXIT_FAIL : C4_EXIT_OK;
}

static int tool_main(int argc, char **argv) {
  struct perf_opts o = {.mode = MODE_BW,
                        .min_bytes = 8,
                        .max_bytes = 64 << 20,
                        .factor = 2,
                        .warmup = 5,
                        .inflight = 8,
                        .check = 1};
  struct perf_ranks r = {.rank = -1, .world = -1, .port = -1};
  int rc = parse_args(argc, argv, &o, &r);
  if (rc >= 0) return rc;
  int pairs = o.mode != MODE_ALLREDUCE;
  if (r.spawn_n && r.spawn_n < 2 && pairs)
    return c4_cli_usage("c4perf", "--mode bw and lat need --spawn 2 or more");
  if (r.spawn_n) {
    int status = 0, me = spawn(r.spawn_n, &r.port, &status);
    if (me < 0) return status;
    r.rank = me;
    r.world = r.spawn_n;
    strcpy(r.master, "127.0.0.1");
  }
  if ((rc = resolve_ranks(&r, r.spawn_n > 0)) >= 0) return rc;
  if (pairs && r.world < 2)
    return c4_cli_usage("c4perf",
                        "--mode %s needs 2 ranks (--spawn 2, --world 2, or a "
                        "launcher's variables)",
                        o.mode == MODE_BW ? "bw" : "lat");
  return run(&o, &r, r.spawn_n > 0);
}

/* Every exit says when standard output was lost (c4_cli_exit). */
int main(int argc, char **argv) { return c4_cli_exit("c4perf", tool_main(argc, argv)); }
