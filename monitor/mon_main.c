/* mon_main.c -- c4mon's command line: serve (collect and detect), record, status, replay (detect
 * on a trace), top (a live view) and matrix (the delay matrix as a picture). */
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
#include "det.h"
#include "mon_image.h"
#include "mon_outputs.h"
#include "mon_pipeline.h"
#include "mon_server.h"
#include "mon_tty.h"
#include "mon_windows.h"

static volatile int stop_flag;
static void on_signal(int sig) {
  (void)sig;
  stop_flag = 1;
}

static void usage(FILE *f) {
  fprintf(f, "usage:\n"
             "  c4mon serve  --listen ADDR:PORT [--token T] [--job NAME] [--record FILE] [DETECT]\n"
             "  c4mon record --listen ADDR:PORT --out FILE [--token T] [--job NAME] [DETECT]\n"
             "  c4mon replay FILE [--out FILE] [--speed X] [--json] [DETECT]\n"
             "  c4mon status --connect ADDR:PORT [--json]\n"
             "  c4mon top    --connect ADDR:PORT [--interval S] [--once] [--color|--no-color]\n"
             "  c4mon matrix (--connect ADDR:PORT | --trace FILE) (--png FILE | --svg FILE)\n"
             "DETECT: [--events FILE|-] [--on-event CMD] [--subscribe ADDR:PORT]\n"
             "        [--metrics ADDR:PORT] [--plan FILE] [--hang-ms N] [--lost-ms N]\n"
             "\n"
             "serve: accept ranks that stream with C4_MONITOR=ADDR:PORT and prove the job token\n"
             "(--token, else C4_TOKEN), detect stragglers, slow NICs, links and paths, hangs and\n"
             "lost ranks, and report each verdict as a JSON line (docs/events.md) on standard\n"
             "output or --events FILE; --on-event runs CMD with the event on its stdin,\n"
             "--subscribe lets any process read the verdicts over TCP, --metrics serves\n"
             "Prometheus text on http://ADDR:PORT/metrics, --plan names the paths of a traffic\n"
             "plan (docs/plan-format.md) and, with serve, pushes each rank its host's flows of it\n"
             "(again when the file changes), which the plugin follows when C4_PLAN is unset.\n"
             "--record writes what arrives as trace JSON lines\n"
             "(docs/trace-format.md) in c4mon's clock. record: serve that writes to --out.\n"
             "replay: runs the same detection on a trace (JSON lines or the binary form) as fast\n"
             "as possible, or at X times its recorded pace (--speed 1: as recorded); events go\n"
             "to standard output unless --json or --events; bad lines are reported by number.\n"
             "status: ranks connected, records/s, drops, clock offsets; --json for the document.\n"
             "top: a live terminal view of ranks, the delay matrix and verdicts.\n"
             "matrix: the delay matrix of a running c4mon or of a trace as a PNG or SVG picture.\n"
             "Hang threshold --hang-ms (3000), lost-rank threshold --lost-ms (10000).\n"
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
  json_t *verdicts = json_object_get(json_object_get(j, "detect"), "verdicts");
  printf("%zu verdict(s) active\n", json_array_size(verdicts));
  json_array_foreach(verdicts, i, r) {
    printf("  #%lld %-12s %-7s factor %.2f  %s\n",
           (long long)json_integer_value(json_object_get(r, "id")),
           json_string_value(json_object_get(r, "kind")),
           json_string_value(json_object_get(r, "where")),
           json_number_value(json_object_get(r, "factor")),
           json_string_value(json_object_get(r, "detail")));
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

/* Feeds a trace through the pipeline and detection; events go where outputs were told. */
static int replay_file(const char *path, FILE *trace_out, double speed, struct mon_sink *sink,
                       unsigned long *bad) {
  struct c4_trace_reader rd;
  if (c4_trace_open(&rd, path) != 0) {
    fprintf(stderr, "c4mon replay: cannot open %s\n", path);
    return 1;
  }
  sink->out = trace_out;
  uint64_t start = c4_now_ns(), first = 0, last = 0;
  /* Records go through in batches when not paced: detection prefetches what each will touch
   * first, so the cache misses of a batch overlap instead of queueing one behind another. */
  enum { BATCH = 32 };
  static struct c4_record batch[BATCH];
  char err[300];
  int rc = 1;
  while (!stop_flag && rc != 0) {
    int n = 0;
    while (n < (speed > 0 ? 1 : BATCH) &&
           (rc = c4_trace_next(&rd, &batch[n], err, sizeof err)) != 0) {
      if (rc < 0)
        fprintf(stderr, "c4mon replay: %s %s\n", path, err);
      else
        n++;
    }
    for (int stage = 0; stage < 2; stage++)
      for (int i = 0; i < n; i++)
        c4_det_prefetch(&batch[i], stage);
    for (int i = 0; i < n; i++) {
      uint64_t t = c4_mon_record_time(&batch[i]);
      if (speed > 0 && t) {
        if (!first) first = t;
        if (t > first) sleep_until(start + (uint64_t)((double)(t - first) / speed));
      }
      if (t > last) last = t;
      c4_mon_take_record(sink, "replay", 0, &batch[i]);
      if (speed > 0) c4_mon_outputs_tick(0);
    }
  }
  c4_det_advance(last + 1000000000ull); /* judge the trace's last second too */
  *bad = rd.bad;
  c4_trace_close(&rd);
  return 0;
}

struct detect_opts {
  struct c4_det_config det;
  struct mon_outputs_opts out;
};

static int replay(const char *path, const char *out_path, double speed, int as_json,
                  struct detect_opts *d) {
  if (!d->out.events && !as_json) d->out.events = "-";
  FILE *trace_out = NULL;
  if (out_path && !(trace_out = fopen(out_path, "w"))) {
    fprintf(stderr, "c4mon replay: cannot write %s\n", out_path);
    return 1;
  }
  if (c4_det_init(&d->det) != 0 || c4_mon_outputs_start(&d->out) != 0) {
    if (trace_out) fclose(trace_out);
    return 1;
  }
  struct mon_sink sink = {0};
  unsigned long bad = 0;
  uint64_t start = c4_now_ns();
  int rc = replay_file(path, trace_out, speed, &sink, &bad);
  double secs = (double)(c4_now_ns() - start) / 1e9;
  c4_mon_outputs_tick(0);
  if (!rc && as_json) {
    json_t *doc =
        json_pack("{s:I, s:I, s:I, s:f, s:I, s:o, s:o}", "records", (json_int_t)sink.records,
                  "heartbeats", (json_int_t)sink.heartbeats, "bad_lines", (json_int_t)bad,
                  "seconds", secs, "events", (json_int_t)c4_mon_outputs_events(), "windows",
                  c4_mon_windows_json(), "detect", c4_det_state_json());
    json_dumpf(doc, stdout, JSON_COMPACT);
    printf("\n");
    json_decref(doc);
  } else if (!rc) {
    fprintf(stderr, "c4mon replay: %llu records, %lu bad lines, %llu events, %.3f s\n",
            (unsigned long long)sink.records, bad, (unsigned long long)c4_mon_outputs_events(),
            secs);
  }
  c4_mon_outputs_stop(5000);
  if (trace_out) fclose(trace_out);
  c4_det_reset();
  return rc;
}

/* `c4mon matrix`: the delay matrix of a trace (replayed here) or of a running c4mon. */
static int matrix(const char *connect_to, const char *trace, const char *png, const char *svg,
                  struct detect_opts *d) {
  json_t *state = NULL;
  if (trace) {
    struct mon_sink sink = {0};
    unsigned long bad;
    if (c4_det_init(&d->det) != 0) return 1;
    if (replay_file(trace, NULL, 0, &sink, &bad) != 0) return 1;
    state = c4_det_state_json();
    c4_det_reset();
  } else {
    char *doc = NULL;
    if (c4_mon_query_status(connect_to, &doc) != 0) {
      fprintf(stderr, "c4mon matrix: no c4mon answered at %s\n", connect_to);
      return 1;
    }
    json_t *st = json_loads(doc, 0, NULL);
    free(doc);
    state = json_incref(json_object_get(st, "detect"));
    json_decref(st);
    if (!state) {
      fprintf(stderr, "c4mon matrix: the c4mon at %s sent no detection state\n", connect_to);
      return 1;
    }
  }
  int rc = png ? c4_mon_image_png(state, png) : c4_mon_image_svg(state, svg);
  json_decref(state);
  if (rc != 0) return 1;
  printf("c4mon matrix: wrote %s\n", png ? png : svg);
  return 0;
}

static int positive_ms(const char *arg, uint64_t *ns) {
  char *end;
  long v = strtol(arg, &end, 10);
  if (*end || v <= 0) return -1;
  *ns = (uint64_t)v * 1000000ull;
  return 0;
}

static void serve_tick(void *arg) {
  (void)arg;
  c4_mon_outputs_tick(1);
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
  const char *trace = NULL, *png = NULL, *svg = NULL;
  int as_json = 0, once = 0, color = -1;
  double speed = 0, interval = 1;
  struct detect_opts d = {0};
  static const struct option longs[] = {
      {"listen", 1, 0, 'l'},  {"connect", 1, 0, 'c'},  {"token", 1, 0, 't'},
      {"job", 1, 0, 'j'},     {"record", 1, 0, 'r'},   {"out", 1, 0, 'o'},
      {"json", 0, 0, 'J'},    {"help", 0, 0, 'h'},     {"speed", 1, 0, 's'},
      {"events", 1, 0, 'e'},  {"on-event", 1, 0, 'x'}, {"subscribe", 1, 0, 'S'},
      {"metrics", 1, 0, 'm'}, {"plan", 1, 0, 'p'},     {"hang-ms", 1, 0, 'H'},
      {"lost-ms", 1, 0, 'L'}, {"interval", 1, 0, 'i'}, {"once", 0, 0, '1'},
      {"color", 0, 0, 'C'},   {"no-color", 0, 0, 'N'}, {"trace", 1, 0, 'T'},
      {"png", 1, 0, 'P'},     {"svg", 1, 0, 'G'},      {0, 0, 0, 0}};
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
    case 'e': d.out.events = optarg; break;
    case 'x': d.out.on_event = optarg; break;
    case 'S': d.out.subscribe = optarg; break;
    case 'm': d.out.metrics = optarg; break;
    case 'p': d.det.plan = optarg; break;
    case 'H':
    case 'L':
      if (positive_ms(optarg, c == 'H' ? &d.det.hang_ns : &d.det.lost_ns) != 0) {
        fprintf(stderr, "c4mon: --%s wants a positive number of milliseconds\n",
                c == 'H' ? "hang-ms" : "lost-ms");
        return 2;
      }
      break;
    case 'i':
      interval = atof(optarg);
      if (interval <= 0) {
        usage(stderr);
        return 2;
      }
      break;
    case '1': once = 1; break;
    case 'C': color = 1; break;
    case 'N': color = 0; break;
    case 'T': trace = optarg; break;
    case 'P': png = optarg; break;
    case 'G': svg = optarg; break;
    case 'h': usage(stdout); return 0;
    default: usage(stderr); return 2;
    }
  }
  signal(SIGINT, on_signal);
  signal(SIGTERM, on_signal);
  signal(SIGPIPE, SIG_IGN);
  if (!strcmp(cmd, "top")) {
    if (!connect_to) {
      usage(stderr);
      return 2;
    }
    return c4_mon_tty_run(connect_to, interval, once, color) ? 1 : 0;
  }
  if (!strcmp(cmd, "matrix")) {
    if (!connect_to == !trace || !png == !svg) {
      usage(stderr);
      return 2;
    }
    return matrix(connect_to, trace, png, svg, &d);
  }
  if (!strcmp(cmd, "replay")) {
    if (optind != argc - 1) {
      usage(stderr);
      return 2;
    }
    return replay(argv[optind], out, speed, as_json, &d);
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
  struct mon_opts o = {.listen = listen,
                       .token = token ? token : "",
                       .job = job,
                       .tick = serve_tick,
                       .plan = d.det.plan};
  if (out) {
    o.record = fopen(out, "a");
    if (!o.record) {
      fprintf(stderr, "c4mon: cannot open %s for appending\n", out);
      return 1;
    }
  }
  if (!d.out.events) d.out.events = "-";
  if (c4_det_init(&d.det) != 0 || c4_mon_outputs_start(&d.out) != 0) {
    if (o.record) fclose(o.record);
    return 1;
  }
  int rc = c4_mon_serve(&o, &stop_flag);
  c4_mon_outputs_stop(2000);
  c4_det_reset();
  if (o.record) fclose(o.record);
  return rc ? 1 : 0;
}
