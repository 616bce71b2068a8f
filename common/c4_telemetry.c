/* c4_telemetry.c -- the process-wide record ring and the C4_TRACE JSON-lines writer thread. */
#include "c4_telemetry.h"
#include "c4_thread.h"

#include <errno.h>
#include <jansson.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_env.h"
#include "c4_err.h"
#include "c4_lines.h"
#include "c4_log.h"
#include "c4_reporter.h"
#include "c4_ring.h"
#include "c4_trace_json.h"

#define DRAIN_PERIOD_MS 10

static struct {
  pthread_once_t ring_once;
  struct c4_ring ring;
  int ring_ok;
  atomic_uint_fast64_t emitted;
  atomic_uint_fast64_t lost_no_ring;
  atomic_uint_fast64_t written;   /* record lines that reached the trace file */
  atomic_uint_fast64_t unwritten; /* record lines that did not (a failed write, no memory) */

  pthread_mutex_t lock; /* writer start/stop only; never taken on the data path */
  int started;
  int stopping;
  pthread_t thread;
  pthread_cond_t wake;
  struct c4_lines out; /* the C4_TRACE file */
  int trace_said;      /* a failure of the trace said once */
  int streaming;       /* C4_MONITOR is set: records also go to the reporter */
  int running;         /* the telemetry thread was started */
  int exit_hook;       /* atexit(c4_telemetry_flush_and_stop) done; survives fork */
  _Atomic(void (*)(void)) periodic[4];

  pthread_once_t timing_once;
  atomic_int timing; /* C4_TIMING: -1 not read yet, else 0 or 1 */
} tel = {.ring_once = PTHREAD_ONCE_INIT,
         .out = {.f = {.fd = -1}},
         .lock = PTHREAD_MUTEX_INITIALIZER,
         .wake = PTHREAD_COND_INITIALIZER,
         .timing_once = PTHREAD_ONCE_INIT,
         .timing = -1};

static void before_fork(void) { pthread_mutex_lock(&tel.lock); }

static void after_fork_parent(void) { pthread_mutex_unlock(&tel.lock); }

/* The child has only the forking thread: the writer thread, the trace's buffered lines and the
 * records in flight are the parent's. The child forgets them (so its exit neither joins a thread
 * it does not have nor writes a summary into the parent's trace) and may start its own. */
static void after_fork_child(void) {
  c4_lines_forget(&tel.out); /* the parent writes its lines; the child must not write them again */
  tel.trace_said = 0;
  c4_reporter_forget_parent();
  tel.started = tel.stopping = tel.running = tel.streaming = 0;
  if (tel.ring_ok) c4_ring_clear(&tel.ring);
  atomic_store(&tel.emitted, 0);
  atomic_store(&tel.lost_no_ring, 0);
  atomic_store(&tel.written, 0);
  atomic_store(&tel.unwritten, 0);
  pthread_cond_init(&tel.wake, NULL);
  pthread_mutex_unlock(&tel.lock);
}

static void ring_setup(void) {
  /* at most 2^20 records (224 MiB): 2^24 cost 4.2 GB and a 22 s stall at the first record */
  long slots = c4_env_long("C4_RING_SLOTS", 16384, 2, 1 << 20);
  if (slots & (slots - 1)) {
    C4_WARN_SETTING("C4_RING_SLOTS=%ld is not a power of two; using 16384", slots);
    slots = 16384;
  }
  tel.ring_ok = c4_ring_init(&tel.ring, (size_t)slots, sizeof(struct c4_record)) == 0;
  if (!tel.ring_ok)
    C4_WARN("cannot allocate the telemetry ring (%ld records); records dropped", slots);
  if (pthread_atfork(before_fork, after_fork_parent, after_fork_child) != 0)
    C4_WARN("cannot register fork handlers; a forked child that exits may write to the trace");
}

static void read_timing(void) { atomic_store(&tel.timing, (int)c4_env_long("C4_TIMING", 1, 0, 1)); }

bool c4_telemetry_enabled(void) {
  int t = atomic_load_explicit(&tel.timing, memory_order_relaxed);
  if (t < 0) {
    pthread_once(&tel.timing_once, read_timing);
    t = atomic_load(&tel.timing);
  }
  return t != 0;
}

struct c4_ring *c4_telemetry_ring(void) {
  pthread_once(&tel.ring_once, ring_setup);
  return tel.ring_ok ? &tel.ring : NULL;
}

void c4_telemetry_emit(const struct c4_record *r) {
  struct c4_ring *ring = c4_telemetry_ring();
  atomic_fetch_add_explicit(&tel.emitted, 1, memory_order_relaxed);
  if (!ring) {
    atomic_fetch_add_explicit(&tel.lost_no_ring, 1, memory_order_relaxed);
    return;
  }
  c4_ring_push(ring, r);
}

void c4_telemetry_emit_xfer(const struct c4_xfer_record *x) {
  struct c4_record r = {.kind = C4_REC_XFER, .xfer = *x};
  c4_telemetry_emit(&r);
}

void c4_telemetry_counters(uint64_t *emitted, uint64_t *dropped, uint64_t *written,
                           uint64_t *unwritten) {
  struct c4_ring *ring = c4_telemetry_ring();
  if (emitted) *emitted = atomic_load(&tel.emitted);
  if (dropped) *dropped = atomic_load(&tel.lost_no_ring) + (ring ? c4_ring_dropped(ring) : 0);
  if (written) *written = atomic_load(&tel.written);
  if (unwritten) *unwritten = atomic_load(&tel.unwritten);
}

/* Every line names its job (C4_JOB, "default" when unset), as the stream to c4mon does: a
 * replay of the file keeps the job's name. */
static char trace_job[64]; /* read once as the thread starts: getenv is not for other threads */

/* Says once why the trace stopped or lost lines: a write failed (a full disk), or the program
 * closed or replaced its descriptor (the file is then left alone, and the trace ends). */
static void trace_failed(int rc) {
  if (!rc || tel.trace_said) return;
  tel.trace_said = 1;
  if (rc == C4_EREMOTE)
    C4_WARN_SETTING("C4_TRACE: the program closed or replaced the trace's descriptor; the trace "
                    "ends "
                    "here, and its file is left alone");
  else
    C4_WARN_SETTING("C4_TRACE: %s; lines were lost",
                    rc == C4_ESYS ? strerror(errno) : "out of memory for the lines to write");
}

static void write_json_line(json_t *j) {
  if (!j) return;
  json_object_set_new(j, "job", json_string(trace_job)); /* not UTF-8: no field (NULL is refused) */
  trace_failed(c4_lines_put(&tel.out, j));
  json_decref(j);
}

static void write_clock_line(const char *type) {
  char host[C4_HOST_MAX] = "unknown";
  c4_host_name(host, sizeof host);
  uint64_t emitted, dropped, written, unwritten;
  c4_telemetry_counters(&emitted, &dropped, &written, &unwritten);
  json_t *j =
      json_pack("{s:i, s:s, s:s, s:I, s:i, s:I, s:I, s:s}", "v", C4_RECORD_VERSION, "type", type,
                "host", host, "pid", (json_int_t)getpid(), "rank", c4_env_rank(), "wall_ns",
                (json_int_t)c4_wall_ns(), "mono_ns", (json_int_t)c4_now_ns(), "c4", C4_VERSION);
  if (j && strcmp(type, "summary") == 0) {
    json_object_set_new(j, "emitted", json_integer((json_int_t)emitted));
    json_object_set_new(j, "dropped", json_integer((json_int_t)dropped));
    json_object_set_new(j, "written", json_integer((json_int_t)written));
    json_object_set_new(j, "unwritten", json_integer((json_int_t)unwritten));
  }
  write_json_line(j);
}

/* Moves the records in the ring to the sinks in use (the trace file and the c4mon stream), at most
 * one ring's worth, so producers that never stop cannot keep the writer here. Returns how many.
 * A record line counts as written once the file has it, not once it is gathered: a full disk's
 * lines were counted written. The lines gathered here are records alone (the header went out
 * before the first drain, the summary comes after the last), so what the trace counted from
 * here to the flush that ends the drain is theirs. */
static size_t drain(void) {
  struct c4_ring *ring = c4_telemetry_ring();
  struct c4_record r;
  size_t n = 0;
  uint64_t written = tel.out.written, lost = tel.out.lost;
  while (ring && n <= ring->mask && c4_ring_pop(ring, &r)) {
    if (tel.streaming) c4_reporter_push(&r);
    if (c4_lines_open_now(&tel.out)) {
      json_t *j = c4_record_json(&r);
      if (j)
        write_json_line(j);
      else /* no memory for its line */
        atomic_fetch_add(&tel.unwritten, 1);
    }
    n++;
  }
  if (n) trace_failed(c4_lines_flush(&tel.out));
  atomic_fetch_add(&tel.written, tel.out.written - written);
  atomic_fetch_add(&tel.unwritten, tel.out.lost - lost);
  return n;
}

int c4_telemetry_add_periodic(void (*fn)(void)) {
  for (int i = 0; i < 4; i++) {
    void (*none)(void) = NULL;
    if (atomic_load(&tel.periodic[i]) == fn ||
        atomic_compare_exchange_strong(&tel.periodic[i], &none, fn))
      return 0;
  }
  return C4_ENOMEM;
}

static void run_periodic(void) {
  for (int i = 0; i < 4; i++) {
    void (*fn)(void) = atomic_load(&tel.periodic[i]);
    if (fn) fn();
  }
}

static void *writer_main(void *arg) {
  (void)arg;
  pthread_mutex_lock(&tel.lock);
  while (!tel.stopping) {
    pthread_mutex_unlock(&tel.lock);
    run_periodic();
    size_t n = drain();
    if (tel.streaming) c4_reporter_tick(c4_now_ns());
    pthread_mutex_lock(&tel.lock);
    if (tel.stopping) break;
    struct c4_ring *ring = c4_telemetry_ring();
    if (ring && n > ring->mask / 2) continue; /* the ring was half full or more: no pause */
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_nsec += DRAIN_PERIOD_MS * 1000000L;
    if (until.tv_nsec >= 1000000000L) {
      until.tv_sec++;
      until.tv_nsec -= 1000000000L;
    }
    pthread_cond_timedwait(&tel.wake, &tel.lock, &until);
  }
  pthread_mutex_unlock(&tel.lock);
  return NULL;
}

/* Starts the telemetry thread once, when there is somewhere to send records: a C4_TRACE file,
 * a C4_MONITOR, or both. */
int c4_telemetry_start(void) {
  const char *path = getenv("C4_TRACE");
  c4_telemetry_ring();
  pthread_mutex_lock(&tel.lock);
  if (tel.started) {
    pthread_mutex_unlock(&tel.lock);
    return 0;
  }
  tel.started = 1;
  tel.streaming = c4_reporter_init() == 1;
  if (path && *path) {
    snprintf(trace_job, sizeof trace_job, "%s", c4_env_job());
    if (c4_lines_open(&tel.out, path) != 0)
      C4_WARN_SETTING("C4_TRACE=%s: cannot open for appending: %s; timing goes on without a trace",
                      path, strerror(errno));
  }
  int tracing = c4_lines_open_now(&tel.out);
  if (tracing) {
    write_clock_line("header");
    trace_failed(c4_lines_flush(&tel.out));
  }
  if ((tracing || tel.streaming) && c4_thread_start(&tel.thread, NULL, writer_main, NULL) != 0) {
    C4_WARN("cannot start the telemetry thread; no trace and no streaming");
    c4_lines_close(&tel.out);
    tracing = tel.streaming = 0;
  }
  tel.running = tracing || tel.streaming;
  int hook = tel.running && !tel.exit_hook;
  if (hook) tel.exit_hook = 1;
  pthread_mutex_unlock(&tel.lock);
  if (hook && atexit(c4_telemetry_flush_and_stop) != 0)
    C4_WARN("cannot register the exit flush; call c4_telemetry_flush_and_stop before exiting");
  return 0;
}

void c4_telemetry_flush_and_stop(void) {
  pthread_mutex_lock(&tel.lock);
  if (!tel.running || tel.stopping) {
    pthread_mutex_unlock(&tel.lock);
    return;
  }
  tel.stopping = 1;
  pthread_cond_signal(&tel.wake);
  pthread_mutex_unlock(&tel.lock);
  pthread_join(tel.thread, NULL);
  run_periodic();
  drain();
  if (tel.streaming) c4_reporter_finish(1000);
  if (c4_lines_open_now(&tel.out)) {
    write_clock_line("summary");
    trace_failed(c4_lines_flush(&tel.out));
  }
  c4_lines_close(&tel.out);
  uint64_t written, unwritten;
  c4_telemetry_counters(NULL, NULL, &written, &unwritten);
  if (unwritten) /* the summary saying so may itself be among the lines lost */
    C4_WARN_SETTING("C4_TRACE: %llu of %llu record lines did not reach the file",
                    (unsigned long long)unwritten, (unsigned long long)(written + unwritten));
}
