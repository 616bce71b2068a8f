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

#include "c4_env.h"
#include "c4_log.h"
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
         "  ranks: --rank R --world N --master ADDR:PORT, or RANK, WORLD_SIZE, MASTER_ADDR,\n"
         "         MASTER_PORT (torchrun-style), or --spawn N to fork N ranks on 127.0.0.1\n"
         "  -h, --help   -V, --version\n"
         "exit: 0 ok, 1 a transfer or data check failed, 2 bad usage\n");
}

static int parse_size(const char *s, size_t *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || v < 0) return -1;
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
  if (*end) return -1;
  *out = (size_t)v;
  return 0;
}

/* Parses a whole decimal integer in [min, max]; -1 on anything else. */
static int parse_int(const char *s, int min, int max, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < min || v > max) return -1;
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
  return -1;
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

int main(int argc, char **argv) {
  struct perf_opts o = {.mode = MODE_BW,
                        .min_bytes = 8,
                        .max_bytes = 64 << 20,
                        .factor = 2,
                        .warmup = 5,
                        .inflight = 8,
                        .check = 1};
  int rank = -1, world = -1, spawn_n = 0, port = -1;
  char master[256] = "";
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
    O_SPAWN
  };
  static const struct option longs[] = {
      {"mode", 1, 0, O_MODE},         {"min-bytes", 1, 0, 'b'},
      {"max-bytes", 1, 0, 'e'},       {"factor", 1, 0, 'f'},
      {"iters", 1, 0, 'n'},           {"warmup", 1, 0, 'w'},
      {"inflight", 1, 0, O_INFLIGHT}, {"dev", 1, 0, O_DEV},
      {"plugin", 1, 0, O_PLUGIN},     {"no-check", 0, 0, O_NOCHECK},
      {"json", 0, 0, O_JSON},         {"rank", 1, 0, O_RANK},
      {"world", 1, 0, O_WORLD},       {"master", 1, 0, O_MASTER},
      {"spawn", 1, 0, O_SPAWN},       {"help", 0, 0, 'h'},
      {"version", 0, 0, 'V'},         {0, 0, 0, 0}};
  int c;
  while ((c = getopt_long(argc, argv, "b:e:f:n:w:hV", longs, NULL)) != -1) {
    switch (c) {
    case O_MODE:
      if (!strcmp(optarg, "bw"))
        o.mode = MODE_BW;
      else if (!strcmp(optarg, "lat"))
        o.mode = MODE_LAT;
      else if (!strcmp(optarg, "allreduce"))
        o.mode = MODE_ALLREDUCE;
      else
        goto bad;
      break;
    case 'b':
      if (parse_size(optarg, &o.min_bytes)) goto bad;
      break;
    case 'e':
      if (parse_size(optarg, &o.max_bytes)) goto bad;
      break;
    case 'f': {
      char *end;
      o.factor = strtod(optarg, &end);
      if (*end || !(o.factor >= 1.1 && o.factor <= 1024)) goto bad;
      break;
    }
    case 'n':
      if (parse_int(optarg, 1, 100000000, &o.iters)) goto bad;
      break;
    case 'w':
      if (parse_int(optarg, 0, 100000000, &o.warmup)) goto bad;
      break;
    case O_INFLIGHT:
      if (parse_int(optarg, 1, 32, &o.inflight)) goto bad;
      break;
    case O_DEV:
      if (parse_int(optarg, 0, 1023, &o.dev)) goto bad;
      break;
    case O_PLUGIN: o.plugin = optarg; break;
    case O_NOCHECK: o.check = 0; break;
    case O_JSON: o.json = 1; break;
    case O_RANK:
      if (parse_int(optarg, 0, 1 << 20, &rank)) goto bad;
      break;
    case O_WORLD:
      if (parse_int(optarg, 1, 1 << 20, &world)) goto bad;
      break;
    case O_MASTER: {
      const char *colon = strrchr(optarg, ':');
      if (!colon || colon == optarg || (size_t)(colon - optarg) >= sizeof master) goto bad;
      memcpy(master, optarg, (size_t)(colon - optarg));
      master[colon - optarg] = 0;
      if (parse_int(colon + 1, 1, 65535, &port)) goto bad;
      break;
    }
    case O_SPAWN:
      if (parse_int(optarg, 1, 64, &spawn_n)) goto bad;
      break;
    case 'h': usage(stdout); return 0;
    case 'V': printf("c4perf %s\n", C4_VERSION); return 0;
    default: goto bad;
    }
  }
  if (optind < argc || o.min_bytes > o.max_bytes) goto bad;
  if (o.mode == MODE_ALLREDUCE && o.min_bytes < sizeof(float)) o.min_bytes = sizeof(float);
  if (o.mode == MODE_ALLREDUCE && o.max_bytes < sizeof(float)) goto bad;
  if (spawn_n && spawn_n < 2 && o.mode != MODE_ALLREDUCE) {
    fprintf(stderr, "c4perf: bw and lat need 2 ranks (--spawn 2, or RANK/WORLD_SIZE)\n");
    return 2;
  }
  if (spawn_n) {
    int status = 0;
    int r = spawn(spawn_n, &port, &status);
    if (r < 0) return status;
    rank = r;
    world = spawn_n;
    strcpy(master, "127.0.0.1");
  }
  if (rank < 0) rank = (int)c4_env_long("RANK", 0, 0, 1 << 20);
  if (world < 0) world = (int)c4_env_long("WORLD_SIZE", 1, 1, 1 << 20);
  if (!*master)
    snprintf(master, sizeof master, "%s",
             getenv("MASTER_ADDR") ? getenv("MASTER_ADDR") : "127.0.0.1");
  if (port < 0) port = (int)c4_env_long("MASTER_PORT", 29500, 1, 65535);
  if (o.mode != MODE_ALLREDUCE && world < 2) {
    fprintf(stderr, "c4perf: bw and lat need 2 ranks (--spawn 2, or RANK/WORLD_SIZE)\n");
    return 2;
  }
  if (rank >= world) goto bad;
  /* the plugin names this process by the launcher's variables: give them the flags' values */
  char num[16];
  snprintf(num, sizeof num, "%d", rank);
  setenv("RANK", num, 0);
  snprintf(num, sizeof num, "%d", world);
  setenv("WORLD_SIZE", num, 0);

  char plugin_path[4096];
  if (!o.plugin) /* the one built beside this program, else the name NCCL_NET_PLUGIN=c4 finds */
    o.plugin = c4_beside_program(plugin_path, sizeof plugin_path, "../lib/libnccl-net-c4.so",
                                 "libnccl-net-c4.so");
  struct perf_ctx p = {.o = &o};
  static const char *mode_name[] = {"bw", "lat", "allreduce"};
  if (c4_bootstrap_init(&p.bs, rank, world, master, port) != 0) {
    c4_bootstrap_close(&p.bs);
    return report_error(&o, rank, mode_name[o.mode], "rank %d of %d: rendezvous at %s:%d failed",
                        rank, world, master, port);
  }
  if (c4_netapi_open(&p.api, o.plugin, 0) != 0) {
    c4_bootstrap_close(&p.bs);
    return report_error(&o, rank, mode_name[o.mode], "%s", p.api.err);
  }
  int ndev = 0;
  c4_netapi_devices(&p.api, &ndev);
  if (o.dev < 0 || o.dev >= ndev) {
    c4_bootstrap_close(&p.bs);
    c4_netapi_close(&p.api);
    report_error(&o, rank, mode_name[o.mode], "device %d does not exist (the plugin has %d)", o.dev,
                 ndev);
    return 2;
  }
  ncclNetProperties_v11_t props;
  c4_netapi_properties(&p.api, o.dev, &props);
  p.results = json_array();
  if (rank == 0 && !o.json) {
    printf("# c4perf %s: %s, %d ranks, plugin %s (ncclNet v%d), device %d = %s, %d Mbps\n",
           C4_VERSION, mode_name[o.mode], world, p.api.name, p.api.version, o.dev, props.name,
           props.speed);
    if (o.mode == MODE_BW) printf("# %10s %8s %12s %10s\n", "bytes", "iters", "time_us", "GB/s");
    if (o.mode == MODE_LAT)
      printf("# %10s %8s %12s %12s\n", "bytes", "iters", "rtt_us_med", "rtt_us_p99");
    if (o.mode == MODE_ALLREDUCE)
      printf("# %10s %8s %12s %10s %10s\n", "bytes", "iters", "time_us", "algbw", "busbw");
    fflush(stdout);
  }
  int failed = o.mode == MODE_BW    ? perf_p2p_bw(&p)
               : o.mode == MODE_LAT ? perf_p2p_lat(&p)
                                    : perf_allreduce(&p);
  if (rank == 0) {
    if (o.json) {
      json_t *doc = json_pack("{s:s, s:s, s:s, s:i, s:s, s:i, s:s, s:i, s:i, s:b, s:o}", "tool",
                              "c4perf", "version", C4_VERSION, "mode", mode_name[o.mode], "world",
                              world, "plugin", p.api.name, "ncclnet_version", p.api.version,
                              "device", props.name, "speed_mbps", props.speed, "inflight",
                              o.inflight, "ok", !failed, "results", p.results);
      if (failed)
        json_object_set_new(doc, "error",
                            json_string("a transfer or the data check failed (see stderr)"));
      json_dumpf(doc, stdout, JSON_INDENT(2));
      printf("\n");
      json_decref(doc);
    } else {
      json_decref(p.results);
      if (failed) printf("# FAILED: a transfer or the data check failed (see the log above)\n");
    }
  } else {
    json_decref(p.results);
  }
  c4_bootstrap_close(&p.bs);
  c4_netapi_close(&p.api);
  return failed ? 1 : 0;
bad:
  usage(stderr);
  return 2;
}
