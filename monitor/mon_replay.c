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

/* One replay: the trace being read, where its records go and the pace they go at. */
struct replay {
  const char *prog, *path;
  struct c4_trace_reader rd;
  struct mon_sink *sink;
  const struct c4_det_job *job;   /* "replay": records whose lines name no job */
  const struct c4_det_job *named; /* the job the last line named */
  double speed;
  uint64_t start, first, last; /* the wall clock at the start; the trace's first and last times */
  uint64_t behind;             /* records more than BEHIND_NS older than the newest before them */
  unsigned long said;          /* bad lines or records said on stderr */
  struct c4_record held;       /* a record far ahead of the newest, until the next one says
                                * whether the trace jumped or the record is wrong (held_line) */
  const struct c4_det_job *held_job;
  unsigned long held_line; /* 0: none held */
};

/* How far a record may come behind the newest before it: the matrix judges each half-second once
 * its records may all be in (200 ms later), the windows keep a communicator's last 64
 * collectives. A trace far out of time order loses what comes late. */
#define BEHIND_NS 2000000000ull

/* How far ahead of the newest record one may come before the next decides whether it is taken:
 * a trace whose times then come back was not jumping, that one record was wrong (one record
 * 4e18 ns ahead, or a copy shifted by an hour, moved the clock past everything after it and every
 * later record was dropped as late). */
#define AHEAD_NS BEHIND_NS

/* Opens the trace (not a directory). Returns 0 or a C4_E* code, said on stderr. */
static int open_trace(struct replay *r) {
  struct stat st;
  if (strcmp(r->path, "-") && stat(r->path, &st) == 0 && S_ISDIR(st.st_mode)) {
    fprintf(stderr, "%s: %s: is a directory, not a trace\n", r->prog, r->path);
    return C4_EINVAL;
  }
  errno = 0;
  int rc = c4_trace_open(&r->rd, r->path);
  if (rc != 0)
    fprintf(stderr, "%s: %s: %s\n", r->prog, r->path, errno ? strerror(errno) : c4_strerror(rc));
  return rc;
}

/* The job of the record just read: the one its line names (C4_JOB, written by c4's trace writer
 * and by `c4mon record`), else "replay" (a binary trace, a line without one). */
static const struct c4_det_job *job_of_line(struct replay *r) {
  if (!r->rd.job[0]) return r->job;
  if (!r->named || strcmp(r->named->name, r->rd.job)) r->named = c4_det_job(r->rd.job);
  return r->named ? r->named : r->job;
}

/* Reads up to max good records into batch and their jobs into jobs, saying which are bad.
 * Returns how many; *rc is 0 at the end of the trace. */
static int read_batch(struct replay *r, struct c4_record *batch, const struct c4_det_job **jobs,
                      unsigned long *lines, int max, int *rc) {
  char err[300];
  unsigned long first = r->rd.lineno;
  int got = max > 1 ? c4_trace_next_many(&r->rd, batch, max) : 0, n = 0;
  for (int i = 0; i < got; i++) { /* decoded in one go (a mapped binary trace): checked here */
    const char *why = NULL;
    if (c4_mon_record_check(&batch[i], 0, &why) != 0) {
      if (r->said++ < C4_MON_BAD_SAID)
        fprintf(stderr, "%s: %s: record %lu: %s\n", r->prog, r->path, first + (unsigned long)i + 1,
                why);
      r->rd.bad++;
    } else {
      if (n != i) batch[n] = batch[i];
      lines[n] = first + (unsigned long)i + 1;
      jobs[n++] = r->job;
    }
  }
  *rc = 1;
  while (n < max && (*rc = c4_trace_next(&r->rd, &batch[n], err, sizeof err)) != 0) {
    const char *why = NULL;
    if (*rc < 0) {
      if (r->said++ < C4_MON_BAD_SAID || r->rd.binary) /* a binary trace's stops the reading */
        fprintf(stderr, "%s: %s: %s\n", r->prog, r->path, err);
    } else if (c4_mon_record_check(&batch[n], 0, &why) != 0) {
      if (r->said++ < C4_MON_BAD_SAID)
        fprintf(stderr, "%s: %s: %s %lu: %s\n", r->prog, r->path, r->rd.binary ? "record" : "line",
                r->rd.lineno, why);
      r->rd.bad++;
    } else {
      lines[n] = r->rd.lineno;
      jobs[n++] = job_of_line(r);
    }
  }
  return n;
}

/* Whether a record's time is when it was written: not a pending transfer (written seconds after
 * its post, its time) nor a collective never completed (written at the end, its arrival). */
static int settled(const struct c4_record *r) {
  if (r->kind == C4_REC_RANK && r->rank.event == C4_RANK_HELLO) return 0; /* its start */
  if (r->kind == C4_REC_XFER) return r->xfer.t_done != 0;
  if (r->kind == C4_REC_COLL) return r->coll.t_done != 0;
  return c4_mon_record_time(r) != 0;
}

/* Hands one record to detection and the sink, at the trace's pace when r->speed is set. Only a
 * settled record's time moves the newest: a header line's is its process's start. */
static void take_one(struct replay *r, struct c4_record *rec, const struct c4_det_job *job,
                     uint64_t t, int in_time) {
  if (r->speed > 0 && t) {
    if (!r->first) r->first = t;
    if (t > r->first) sleep_until(r->start + (uint64_t)((double)(t - r->first) / r->speed));
  }
  if (in_time && t > r->last) r->last = t;
  r->behind += in_time && t + BEHIND_NS < r->last;
  c4_mon_take_record(r->sink, job, 0, rec);
  if (r->speed > 0) c4_mon_outputs_tick(0);
}

/* Takes rec, first deciding on a record held as far ahead (AHEAD_NS): rec back at the old times
 * says the held one was wrong (dropped, said as a bad line or record); anything else, that the
 * trace moved on (taken). A settled record far ahead of the newest is held in its turn, and so is
 * the first settled one, which has no newest to be judged against. */
static void take_in_time(struct replay *r, struct c4_record *rec, const struct c4_det_job *job,
                         unsigned long line) {
  int in_time = settled(rec);
  uint64_t t = c4_mon_record_time(rec);
  if (__builtin_expect(r->held_line && in_time, 0)) {
    uint64_t held_t = c4_mon_record_time(&r->held);
    if (t + BEHIND_NS < held_t) {
      if (r->said++ < C4_MON_BAD_SAID)
        fprintf(stderr,
                "%s: %s: %s %lu: its time is %.0f s ahead of the records %s it "
                "(a wrong time field): dropped\n",
                r->prog, r->path, r->rd.binary ? "record" : "line", r->held_line,
                (double)(held_t - (r->last ? r->last : t)) / 1e9,
                r->last ? "before and after" : "after");
      r->rd.bad++;
    } else {
      take_one(r, &r->held, r->held_job, held_t, 1);
    }
    r->held_line = 0;
  }
  if (__builtin_expect(in_time && (!r->last || t > r->last + AHEAD_NS) && !r->held_line, 0)) {
    r->held = *rec;
    r->held_job = job;
    r->held_line = line;
    return;
  }
  take_one(r, rec, job, t, in_time);
}

/* Hands n records to detection and the sink, their first cache misses overlapped (prefetched). */
static void take_batch(struct replay *r, struct c4_record *batch,
                       const struct c4_det_job *const *jobs, const unsigned long *lines, int n) {
  for (int stage = 0; stage < 2; stage++)
    for (int i = 0; i < n; i++)
      c4_det_prefetch(&batch[i], stage);
  for (int i = 0; i < n; i++)
    take_in_time(r, &batch[i], jobs[i], lines[i]);
}

/* Closes the trace and says how the read ended: 0, or a C4_E* code for a read error, a binary
 * trace cut short, or a trace without one valid record. */
static int close_trace(struct replay *r, volatile int *stop) {
  if (r->said > C4_MON_BAD_SAID)
    fprintf(stderr, "%s: %s: %lu more bad lines or records, not said one by one\n", r->prog,
            r->path, r->said - C4_MON_BAD_SAID);
  int read_error = r->rd.f && ferror(r->rd.f) ? errno : 0;
  int cut_short = r->rd.binary == 2; /* a binary trace stopped at a bad record (its place said) */
  unsigned long bad = r->rd.bad;
  c4_trace_close(&r->rd); /* clears r->rd */
  if (read_error) {
    fprintf(stderr, "%s: %s: read error: %s\n", r->prog, r->path, strerror(read_error));
    return C4_ESYS;
  }
  if (cut_short) {
    fprintf(stderr, "%s: %s: reading stopped at that place (above): the rest was not read\n",
            r->prog, r->path);
    return C4_EPROTO;
  }
  if (!*stop && !r->sink->records && !r->sink->heartbeats) {
    fprintf(stderr, "%s: %s: no valid record (%lu bad lines)\n", r->prog, r->path, bad);
    return C4_EPROTO;
  }
  if (r->behind) /* said, not refused: what came in order was judged */
    fprintf(stderr,
            "%s: %s: warning: %llu of %llu records came more than %.0f s behind the newest "
            "before them: detection reads a trace in time order and drops what comes after its "
            "time was judged (per-process trace files: merge them with `c4mon merge`, not cat)\n",
            r->prog, r->path, (unsigned long long)r->behind,
            (unsigned long long)(r->sink->records + r->sink->heartbeats), BEHIND_NS / 1e9);
  return 0;
}

int c4_mon_replay_file(const char *prog, const char *path, FILE *trace_out, double speed,
                       struct mon_sink *sink, unsigned long *bad, volatile int *stop) {
  struct replay r = {.prog = prog, .path = path, .sink = sink, .speed = speed};
  int rc = open_trace(&r);
  if (rc != 0) return rc;
  sink->out = trace_out;
  r.start = c4_now_ns();
  r.job = c4_det_job("replay");
  /* Records go through in batches when not paced: detection prefetches what each will touch
   * first, so the cache misses of a batch overlap instead of queueing one behind another. */
  enum { BATCH = 32 };
  static struct c4_record batch[BATCH];
  const struct c4_det_job *jobs[BATCH];
  unsigned long lines[BATCH];
  rc = 1;
  while (!*stop && rc != 0) {
    int n = read_batch(&r, batch, jobs, lines, speed > 0 ? 1 : BATCH, &rc);
    take_batch(&r, batch, jobs, lines, n);
  }
  if (r.held_line) /* nothing after it says it was wrong */
    take_one(&r, &r.held, r.held_job, c4_mon_record_time(&r.held), 1);
  /* judge the trace's last second too, and a hang it ends inside up to its threshold */
  uint64_t end = r.last + 1000000000ull, due = c4_det_hang_due_at_end();
  c4_det_advance(due >= end ? due + 1 : end);
  *bad = r.rd.bad;
  return close_trace(&r, stop);
}
