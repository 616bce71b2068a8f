/* ring_bench.c -- the hot-path cost of timing one request: the three clock reads, building the
 * record and pushing it into the process ring (c4_telemetry_emit_xfer), with a consumer thread
 * draining the ring concurrently; the push alone; and the C4_TIMING=0 path (the enabled check
 * only). Each figure is the median of 5 runs of 1M requests, in ns per request. */
#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_frame.h"
#include "c4_ring.h"
#include "c4_telemetry.h"

#define N 1000000
#define RUNS 5

static atomic_int stop;

static void *drain(void *arg) {
  struct c4_ring *r = arg;
  struct c4_record rec;
  while (!atomic_load(&stop))
    while (c4_ring_pop(r, &rec)) {
    }
  return NULL;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double median(double *v) {
  qsort(v, RUNS, sizeof(double), cmp);
  return v[RUNS / 2];
}

enum { WITH_CLOCKS, PUSH_ONLY, CHECK_ONLY };

/* One run of N requests the way the plugin times them; returns ns per request. */
static double run(int mode) {
  struct c4_xfer_record rec = {.version = C4_RECORD_VERSION, .bytes = 8};
  strcpy(rec.peer.host, "peer");
  uint64_t t0 = c4_now_ns();
  for (int i = 0; i < N; i++) {
    rec.seq = (uint64_t)i;
    if (mode == CHECK_ONLY && !c4_telemetry_enabled()) continue;
    if (mode != PUSH_ONLY) {
      rec.t_posted = c4_now_ns();
      rec.t_first_byte = c4_now_ns();
      rec.t_done = c4_now_ns();
    }
    c4_telemetry_emit_xfer(&rec);
  }
  return (double)(c4_now_ns() - t0) / N;
}

/* The C4_TIMING=0 loop, in a child forked before this process reads C4_TIMING (it is read once
 * per process). Returns the median, or a negative value if the child failed. */
/* The reporter's own work per record on the telemetry thread: encoding it into a RECORDS frame
 * (the send is one system call per ~300 records). Median ns per record. */
static double encode_ns(void) {
  static uint8_t frame[C4_FRAME_MAX_PAYLOAD];
  struct c4_record r = {.kind = C4_REC_XFER};
  strcpy(r.xfer.self.host, "node-3");
  strcpy(r.xfer.peer.host, "node-4");
  double v[RUNS];
  for (int k = 0; k < RUNS; k++) {
    size_t used = 0;
    uint64_t t0 = c4_now_ns();
    for (int i = 0; i < N; i++) {
      r.xfer.seq = (uint64_t)i;
      size_t n = c4_frame_put_record(frame + used, sizeof frame - used, &r);
      if (!n) {
        used = 0;
        n = c4_frame_put_record(frame, sizeof frame, &r);
      }
      used += n;
    }
    v[k] = (double)(c4_now_ns() - t0) / N;
  }
  return median(v);
}

static double disabled_in_child(void) {
  int fds[2];
  if (pipe(fds) != 0) return C4_ESYS;
  pid_t child = fork();
  if (child < 0) {
    close(fds[0]);
    close(fds[1]);
    return C4_ESYS;
  }
  if (child == 0) {
    close(fds[0]);
    setenv("C4_TIMING", "0", 1);
    double v[RUNS];
    for (int k = 0; k < RUNS; k++)
      v[k] = run(CHECK_ONLY);
    double m = c4_telemetry_enabled() ? -1 : median(v);
    _exit(write(fds[1], &m, sizeof m) == sizeof m ? 0 : 1);
  }
  close(fds[1]);
  double m = -1;
  if (read(fds[0], &m, sizeof m) != sizeof m) m = -1;
  close(fds[0]);
  int st;
  while (waitpid(child, &st, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? m : -1;
}

static void usage(FILE *f) {
  fprintf(f, "usage: c4-ring-bench [--json] [--help] [--version]\n"
             "Measures c4's per-request timing cost (median of 5 runs of 1M requests, a consumer\n"
             "thread draining the ring): timing_ns_per_request (clocks + record + push),\n"
             "ring_push_ns (c4_telemetry_emit_xfer alone) and disabled_check_ns (C4_TIMING=0:\n"
             "the enabled check only). C4_RING_SLOTS sets the ring size.\n");
}

/* The figures of one bench run. */
struct figures {
  double full_ns, push_ns, enc_ns, off; /* off < 0: the C4_TIMING=0 child failed */
  uint64_t emitted, dropped;
};

/* Reads the arguments. Returns -1 to go on (*json set for --json), or the exit code. */
static int parse_args(int argc, char **argv, int *json) {
  for (int i = 1; i < argc; i++) {
    if (!strcmp(argv[i], "--json")) {
      *json = 1;
    } else if (!strcmp(argv[i], "--help")) {
      usage(stdout);
      return 0;
    } else if (!strcmp(argv[i], "--version")) {
      printf("c4-ring-bench %s\n", C4_VERSION);
      return 0;
    } else {
      fprintf(stderr, "c4-ring-bench: unknown argument '%s'\n", argv[i]);
      usage(stderr);
      return 2;
    }
  }
  return C4_NONE;
}

/* Prints the figures as JSON or as lines. Returns 0, or 1 when the JSON could not be built. */
static int print_figures(const struct figures *g, int json) {
  if (!json) {
    printf("timing_ns_per_request %.1f\nring_push_ns %.1f\nreporter_encode_ns %.1f\n", g->full_ns,
           g->push_ns, g->enc_ns);
    if (g->off < 0)
      printf("disabled_check_ns unavailable (the C4_TIMING=0 child failed)\n");
    else
      printf("disabled_check_ns %.1f\n", g->off);
    printf("dropped_while_draining %llu of %llu\n", (unsigned long long)g->dropped,
           (unsigned long long)g->emitted);
    return 0;
  }
  json_t *j = json_pack("{s:f, s:f, s:f, s:o, s:I, s:I, s:i, s:i}", "timing_ns_per_request",
                        g->full_ns, "ring_push_ns", g->push_ns, "reporter_encode_ns", g->enc_ns,
                        "disabled_check_ns", g->off < 0 ? json_null() : json_real(g->off),
                        "dropped_while_draining", (json_int_t)g->dropped, "emitted",
                        (json_int_t)g->emitted, "runs", RUNS, "requests_per_run", N);
  if (!j || json_dumpf(j, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(4)) != 0) {
    fprintf(stderr, "c4-ring-bench: cannot build the JSON report\n");
    json_decref(j);
    return 1;
  }
  putchar('\n');
  json_decref(j);
  return 0;
}

int main(int argc, char **argv) {
  int json = 0, rc = parse_args(argc, argv, &json);
  if (rc >= 0) return rc;
  struct figures g = {.off = disabled_in_child()};
  if (!c4_telemetry_enabled()) {
    fprintf(stderr, "c4-ring-bench: C4_TIMING=0 in the environment; unset it to measure\n");
    return 1;
  }
  struct c4_ring *r = c4_telemetry_ring();
  if (!r) {
    fprintf(stderr, "c4-ring-bench: cannot allocate the telemetry ring\n");
    return 1;
  }
  pthread_t th;
  if (pthread_create(&th, NULL, drain, r) != 0) {
    fprintf(stderr, "c4-ring-bench: cannot start the consumer thread\n");
    return 1;
  }
  double full[RUNS], push[RUNS];
  for (int k = 0; k < RUNS; k++) {
    full[k] = run(WITH_CLOCKS);
    push[k] = run(PUSH_ONLY);
  }
  atomic_store(&stop, 1);
  pthread_join(th, NULL);
  c4_telemetry_counters(&g.emitted, &g.dropped, NULL, NULL);
  g.full_ns = median(full);
  g.push_ns = median(push);
  g.enc_ns = encode_ns();
  if (print_figures(&g, json) != 0) return 1;
  return g.off < 0 ? 1 : 0;
}
