/* mon_replay.c -- a trace file through c4mon's pipeline and detection, as fast as possible or at
 * a multiple of its recorded pace. */
#include "mon_replay.h"

#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_log.h"
#include "c4_trace_read.h"
#include "det.h"
#include "mon_outputs.h"

/* Sleeps until the monotonic clock reaches t (ns); returns at once if it already has. */
static void sleep_until(uint64_t t) {
  uint64_t now = c4_now_ns();
  if (t <= now) return;
  struct timespec ts = {(time_t)((t - now) / 1000000000ull), (long)((t - now) % 1000000000ull)};
  nanosleep(&ts, NULL);
}

int c4_mon_replay_file(const char *prog, const char *path, FILE *trace_out, double speed,
                       struct mon_sink *sink, unsigned long *bad, volatile int *stop) {
  struct c4_trace_reader rd;
  struct stat st;
  if (strcmp(path, "-") && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    fprintf(stderr, "%s: %s: is a directory, not a trace\n", prog, path);
    return C4_EINVAL;
  }
  errno = 0;
  int orc = c4_trace_open(&rd, path);
  if (orc != 0) {
    fprintf(stderr, "%s: %s: %s\n", prog, path, errno ? strerror(errno) : c4_strerror(orc));
    return orc;
  }
  sink->out = trace_out;
  uint64_t start = c4_now_ns(), first = 0, last = 0;
  const struct c4_det_job *job = c4_det_job("replay");
  /* Records go through in batches when not paced: detection prefetches what each will touch
   * first, so the cache misses of a batch overlap instead of queueing one behind another. */
  enum { BATCH = 32 };
  static struct c4_record batch[BATCH];
  char err[300];
  int rc = 1;
  while (!*stop && rc != 0) {
    int n = 0;
    while (n < (speed > 0 ? 1 : BATCH) &&
           (rc = c4_trace_next(&rd, &batch[n], err, sizeof err)) != 0) {
      const char *why = NULL;
      if (rc < 0)
        fprintf(stderr, "%s: %s: %s\n", prog, path, err);
      else if (c4_mon_record_check(&batch[n], 0, &why) != 0) {
        fprintf(stderr, "%s: %s: %s %lu: %s\n", prog, path, rd.binary ? "record" : "line",
                rd.lineno, why);
        rd.bad++;
      } else
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
      c4_mon_take_record(sink, job, 0, &batch[i]);
      if (speed > 0) c4_mon_outputs_tick(0);
    }
  }
  c4_det_advance(last + 1000000000ull); /* judge the trace's last second too */
  *bad = rd.bad;
  int read_error = rd.f && ferror(rd.f) ? errno : 0;
  int cut_short = rd.binary == 2; /* a binary trace stopped at a bad record (its place said) */
  c4_trace_close(&rd);
  if (read_error) {
    fprintf(stderr, "%s: %s: read error: %s\n", prog, path, strerror(read_error));
    return C4_ESYS;
  }
  if (cut_short) {
    fprintf(stderr, "%s: %s: reading stopped at that place (above): the rest was not read\n", prog,
            path);
    return C4_EPROTO;
  }
  if (!*stop && !sink->records && !sink->heartbeats) {
    fprintf(stderr, "%s: %s: no valid record (%lu bad lines)\n", prog, path, *bad);
    return C4_EPROTO;
  }
  return 0;
}
