/* mon_main.c -- c4mon: the collector ranks stream to (serve, record) and its status. Detection
 * comes in the next part; this is the receiving end. */
#include <getopt.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "c4_clock.h"
#include "c4_log.h"
#include "c4_trace_read.h"
#include "mon_pipeline.h"
#include "mon_server.h"
#include "mon_windows.h"

static volatile int stop_flag;
static void on_signal(int sig) {
  (void)sig;
  stop_flag = 1;
}

static void usage(FILE *f) {
  fprintf(f, "usage:\n"
             "  c4mon serve  --listen ADDR:PORT [--token T] [--job NAME] [--record FILE]\n"
             "  c4mon record --listen ADDR:PORT --out FILE [--token T] [--job NAME]\n"
             "  c4mon status --connect ADDR:PORT [--json]\n"
             "  c4mon replay FILE [--out FILE] [--speed X] [--json]\n"
             "\n"
             "serve: accept ranks that stream with C4_MONITOR=ADDR:PORT and prove the job token\n"
             "(--token, else C4_TOKEN); --record writes what arrives as trace JSON lines\n"
             "(docs/trace-format.md), times in c4mon's clock. record: serve that writes to --out.\n"
             "status: ranks connected, records/s, drops, clock offsets; --json for the document.\n"
             "replay: feeds a trace (C4_TRACE or --record output) through the same pipeline as\n"
             "live data, as fast as possible or at X times its recorded pace (--speed 1: as\n"
             "recorded); bad lines are reported with their numbers and skipped.\n"
             "Stops on SIGINT or SIGTERM. Exit: 0 ok, 1 failure, 2 bad usage.\n"
             "  -h, --help   -V, --version\n");
}

static int print_status(const char *addr, int as_json) {
  char *doc = NULL;
  if (c4_mon_query_status(addr, &doc) != 0) {
    fprintf(stderr, "c4mon status: no c4mon answered at %s\n", addr);
    return 1;
  }
  if (as_json) {
    printf("%s\n", doc);
    free(doc);
    return 0;
  }
  json_t *j = json_loads(doc, 0, NULL);
  free(doc);
  if (!j) {
    fprintf(stderr, "c4mon status: the answer from %s is not JSON\n", addr);
    return 1;
  }
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
  size_t i;
  json_t *r;
  printf("%-16s %6s %-16s %8s %10s %8s %12s\n", "job", "rank", "host", "pid", "records", "dropped",
         "offset_us");
  json_array_foreach(json_object_get(j, "ranks"), i, r) {
    printf("%-16s %6lld %-16s %8lld %10lld %8lld %12.1f\n",
           json_string_value(json_object_get(r, "job")),
           (long long)json_integer_value(json_object_get(r, "rank")),
           json_string_value(json_object_get(r, "host")),
           (long long)json_integer_value(json_object_get(r, "pid")),
           (long long)json_integer_value(json_object_get(r, "records")),
           (long long)json_integer_value(json_object_get(r, "dropped")),
           (double)json_integer_value(json_object_get(r, "clock_offset_ns")) / 1e3);
  }
  json_decref(j);
  return 0;
}

/* Sleeps until the monotonic clock reaches t (ns); returns at once if it already has. */
static void sleep_until(uint64_t t) {
  uint64_t now = c4_now_ns();
  if (t <= now) return;
  struct timespec ts = {(time_t)((t - now) / 1000000000ull), (long)((t - now) % 1000000000ull)};
  nanosleep(&ts, NULL);
}

static int replay(const char *path, const char *out_path, double speed, int as_json) {
  struct c4_trace_reader rd;
  if (c4_trace_open(&rd, path) != 0) {
    fprintf(stderr, "c4mon replay: cannot open %s\n", path);
    return 1;
  }
  struct mon_sink sink = {0};
  if (out_path && !(sink.out = fopen(out_path, "w"))) {
    fprintf(stderr, "c4mon replay: cannot write %s\n", out_path);
    c4_trace_close(&rd);
    return 1;
  }
  uint64_t start = c4_now_ns(), first = 0;
  struct c4_record r;
  char err[300];
  int rc;
  while ((rc = c4_trace_next(&rd, &r, err, sizeof err)) != 0) {
    if (rc < 0) {
      fprintf(stderr, "c4mon replay: %s %s\n", path, err);
      continue;
    }
    uint64_t t = c4_mon_record_time(&r);
    if (speed > 0 && t) {
      if (!first) first = t;
      if (t > first) sleep_until(start + (uint64_t)((double)(t - first) / speed));
    }
    c4_mon_take_record(&sink, "replay", 0, &r);
  }
  double secs = (double)(c4_now_ns() - start) / 1e9;
  if (as_json) {
    json_t *doc =
        json_pack("{s:I, s:I, s:f, s:o}", "records", (json_int_t)sink.records, "bad_lines",
                  (json_int_t)rd.bad, "seconds", secs, "windows", c4_mon_windows_json());
    json_dumpf(doc, stdout, JSON_COMPACT);
    printf("\n");
    json_decref(doc);
  } else
    printf("c4mon replay: %llu records, %lu bad lines, %.3f s\n", (unsigned long long)sink.records,
           rd.bad, secs);
  if (sink.out) fclose(sink.out);
  c4_trace_close(&rd);
  c4_mon_windows_reset();
  return 0;
}

int main(int argc, char **argv) {
  if (argc < 2) {
    usage(stderr);
    return 2;
  }
  const char *cmd = argv[1];
  if (!strcmp(cmd, "-h") || !strcmp(cmd, "--help")) {
    usage(stdout);
    return 0;
  }
  if (!strcmp(cmd, "-V") || !strcmp(cmd, "--version")) {
    printf("c4mon %s\n", C4_VERSION);
    return 0;
  }
  const char *listen = NULL, *connect_to = NULL, *token = getenv("C4_TOKEN"), *job = NULL,
             *out = NULL;
  int as_json = 0;
  double speed = 0;
  static const struct option longs[] = {{"listen", 1, 0, 'l'}, {"connect", 1, 0, 'c'},
                                        {"token", 1, 0, 't'},  {"job", 1, 0, 'j'},
                                        {"record", 1, 0, 'r'}, {"out", 1, 0, 'o'},
                                        {"json", 0, 0, 'J'},   {"help", 0, 0, 'h'},
                                        {"speed", 1, 0, 's'},  {0, 0, 0, 0}};
  optind = 2;
  int c;
  while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
    switch (c) {
    case 'l': listen = optarg; break;
    case 'c': connect_to = optarg; break;
    case 't': token = optarg; break;
    case 'j': job = optarg; break;
    case 'r':
    case 'o': out = optarg; break;
    case 'J': as_json = 1; break;
    case 's':
      speed = atof(optarg);
      if (speed < 0) {
        usage(stderr);
        return 2;
      }
      break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  if (!strcmp(cmd, "replay")) {
    if (optind != argc - 1) {
      usage(stderr);
      return 2;
    }
    return replay(argv[optind], out, speed, as_json);
  }
  if (!strcmp(cmd, "status")) {
    if (!connect_to) {
      usage(stderr);
      return 2;
    }
    return print_status(connect_to, as_json);
  }
  if (strcmp(cmd, "serve") && strcmp(cmd, "record")) {
    usage(stderr);
    return 2;
  }
  if (!listen || (!strcmp(cmd, "record") && !out)) {
    usage(stderr);
    return 2;
  }
  struct mon_opts o = {.listen = listen, .token = token ? token : "", .job = job};
  if (out) {
    o.record = fopen(out, "a");
    if (!o.record) {
      fprintf(stderr, "c4mon: cannot open %s for appending\n", out);
      return 1;
    }
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGPIPE, SIG_IGN);
  int rc = c4_mon_serve(&o, &stop_flag);
  if (o.record) fclose(o.record);
  return rc ? 1 : 0;
}
