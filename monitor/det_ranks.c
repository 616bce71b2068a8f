/* det_ranks.c -- liveness: every rank's heartbeats and the end of its stream. A stream that ended
 * without a goodbye, or heartbeats silent for the lost threshold, is a lost rank; that process's
 * heartbeats again clear it. Also answers, for the hang detector, which ranks are inside a
 * collective (entered > done) and which have gone quiet. And a job's life: running while any of
 * its ranks streams; ended when none does and at least one said goodbye. At the end an event
 * (`job_end`) says so and the job's verdicts close, but for lost ranks, which keep theirs; once
 * the forget period has passed (after the end, or after the last rank of a job whose every rank
 * was lost) the lost ranks' verdicts close too, and the job's ranks and its matrix leave
 * detection's state, and so status and /metrics. A rank streaming again under the job's name
 * starts it anew. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_hash.h"
#include "c4_log.h"
#include "det_internal.h"
#include "det_ranks.h"

/* Every rank seen, in arrival order (det_index: 2^18 ranks). */
static struct det_index ranks = {
    .item_size = sizeof(struct det_rank), .nslots = 1 << 19, .probes = 256};
static uint64_t next_check, quiet_until;
static uint64_t twins;
static const struct det_ctx *ctx;

static uint64_t hash(const char *host, uint32_t pid) {
  return c4_fnv1a_str(C4_FNV_BASIS_OLD ^ pid, host) * 0x9e3779b97f4a7c15ull;
}

struct rank_key {
  const struct c4_det_job *job;
  const char *host;
  int rank;
  uint32_t pid;
};

static int rank_match(const void *item, const void *key) {
  const struct det_rank *e = item;
  const struct rank_key *k = key;
  return e->rank == k->rank && e->job == k->job &&
         (k->rank >= 0 || (e->pid == k->pid && !strcmp(e->host, k->host)));
}

struct det_rank *det_rank_get(const struct c4_det_job *job, int rank, const char *host,
                              uint32_t pid, int insert) {
  uint64_t h = ((uint64_t)job->id << 32 | (uint32_t)rank) * 0x9e3779b97f4a7c15ull ^
               (rank < 0 ? hash(host, pid) : 0);
  struct rank_key k = {job, host, rank, pid};
  int added;
  struct det_rank *e = det_index_get(&ranks, h >> 45, rank_match, &k, insert, &added);
  if (e && added) {
    e->used = 1;
    e->rank = rank;
    e->pid = pid;
    snprintf(e->host, sizeof e->host, "%s", host);
    e->job = job;
  }
  return e;
}

void det_ranks_each(const struct c4_det_job *job, void (*fn)(struct det_rank *r, void *arg),
                    void *arg) {
  for (long i = 0; i < ranks.n; i++) {
    struct det_rank *e = det_index_at(&ranks, i);
    if (!job || e->job == job) fn(e, arg);
  }
}

/* A lost rank's verdict is its process's: a job restarted on its survivors numbers them again,
 * and another process streaming as rank N does not bring the lost rank N back (by the rank's
 * number alone, a survivor renumbered into a killed rank's place cleared its verdict 0.24 s after
 * it was raised, "the rank is streaming again"). */
static void key_of(const struct det_rank *e, char *key, size_t n) {
  snprintf(key, n, "rank_lost/%s/%d/%s/%u", e->job->name, e->rank, e->host, e->pid);
}

static void raise_lost(struct det_rank *e, const char *why) {
  char key[320];
  key_of(e, key, sizeof key);
  struct det_finding f = {.kind = "rank_lost",
                          .where = "gpu",
                          .job = e->job->name,
                          .ranks = json_pack("[i]", e->rank),
                          .hosts = json_pack("[s]", e->host),
                          .factor = 0,
                          .confidence = 1,
                          .first_seen = e->last_hb ? e->last_hb : ctx->now};
  snprintf(f.detail, sizeof f.detail, "%s", why);
  det_book_raise(key, &f, ctx->now);
  e->lost = 1;
  e->lost_at = ctx->now;
}

void det_ranks_take(const struct c4_det_job *job, const struct c4_rank_record *k) {
  struct det_rank *e = det_rank_get(job, k->rank, k->host, k->pid, 1);
  if (!e) return;
  int other = e->pid != k->pid || strcmp(e->host, k->host), was_lost = e->lost;
  if (e->lost && other)
    e->lost = 0; /* another process has its number: the lost one's verdict stands (key_of) */
  /* Two processes alive as one rank of one job: two jobs under one C4_JOB name. Their heartbeats
   * interleave as one rank's, so neither can be found hung or lost (a fresh user's two 2-rank jobs
   * named alike: one's rank stopped for 14 s raised nothing). Said, since c4mon cannot part them.
   */
  /* A process taking a lost one's number is its replacement (a job restarted on the survivors
   * renumbers them), not a twin: that was said for every restart after a kill. */
  if (other && k->event == C4_RANK_HB && !e->ended && !was_lost && e->last_hb &&
      k->t < e->last_hb + ctx->cfg.lost_ns && !e->twin) {
    e->twin = 1;
    twins++;
    C4_WARN("c4mon: job %s: two processes stream as rank %d (%s pid %u, %s pid %u): two jobs "
            "under one C4_JOB? Give each its own: their hangs and lost ranks cannot be told apart",
            e->job->name, e->rank, e->host, e->pid, k->host, k->pid);
  }
  snprintf(e->host, sizeof e->host, "%s", k->host);
  e->pid = k->pid;
  if (k->event == C4_RANK_HB) {
    /* a new process learns its own interval, and the gap of a loss is no interval: learned, it
     * stretched the quiet test (det_rank_quiet) of a replacement or a returning rank */
    if (other) e->hb_interval = 0;
    if (e->last_hb && k->t > e->last_hb && !other && !was_lost) {
      uint64_t gap = k->t - e->last_hb;
      e->hb_interval = e->hb_interval ? (e->hb_interval * 3 + gap) / 4 : gap;
    }
    /* a heartbeat says a collective completed since the last one, not when: take the earliest */
    if (k->done > e->done) ctx->progress(job, e->last_hb ? e->last_hb : k->t, 0);
    /* inside since its previous heartbeat at the earliest, the way progress is taken */
    if (k->entered <= k->done)
      e->inside_since = 0;
    else if (!e->inside_since || k->done > e->done)
      e->inside_since = e->last_hb ? e->last_hb : k->t;
    e->last_hb = k->t;
    e->entered = k->entered;
    e->done = k->done;
    e->ended = 0;
    if (e->lost) {
      char key[320];
      key_of(e, key, sizeof key);
      det_book_clear(key, "the rank is streaming again", ctx->now);
      e->lost = 0;
    }
  } else if (k->event == C4_RANK_BYE) {
    e->ended = 1;
  } else if (!e->lost) {
    e->last_hb = e->last_hb ? e->last_hb : k->t;
    raise_lost(e, "its stream to c4mon ended without a goodbye");
  }
}

static void check_silence(struct det_rank *e, void *arg) {
  (void)arg;
  if (e->lost || e->ended || !e->last_hb) return;
  if (ctx->now - e->last_hb >= ctx->cfg.lost_ns) {
    char why[120];
    snprintf(why, sizeof why, "no heartbeat for %.1f s", (double)(ctx->now - e->last_hb) / 1e9);
    raise_lost(e, why);
  }
}

#define MAX_JOBS 256 /* jobs tracked at once; more are not ended (their verdicts stay) */

struct life {
  const struct c4_det_job *job;
  int alive, clean, lost; /* ranks in this pass: streaming, said goodbye, lost */
  int ended, gone;        /* ended: job_end given; gone: past the forget period */
  uint64_t ended_at;
  uint64_t dead_at;      /* every rank lost, none said goodbye: since then (0: not so) */
  int lost_cleared;      /* its lost ranks' verdicts closed as it went */
  json_t *ranks, *hosts; /* this pass's ranks that said goodbye, for the event */
};

static struct life jobs[MAX_JOBS];
static int njobs;

static struct life *life_of(const struct c4_det_job *job) {
  for (int i = 0; i < njobs; i++)
    if (jobs[i].job == job) return &jobs[i];
  if (njobs == MAX_JOBS) return NULL;
  struct life *l = &jobs[njobs++];
  memset(l, 0, sizeof *l);
  l->job = job;
  l->ranks = json_array(); /* a job first seen in a pass */
  l->hosts = json_array();
  return l;
}

static void tally(struct det_rank *e, void *arg) {
  (void)arg;
  struct life *l = life_of(e->job);
  if (!l) return;
  if (e->lost) {
    l->lost++;
  } else if (e->ended) {
    l->clean++;
    /* in rank order, each host beside its rank ("ranks 1,0,3,2" read as noise); the lowest 64,
     * so that the event stays one readable line */
    size_t at = 0, n = json_array_size(l->ranks);
    while (at < n && json_integer_value(json_array_get(l->ranks, at)) < e->rank)
      at++;
    if (at < 64) {
      json_array_insert_new(l->ranks, at, json_integer(e->rank));
      json_array_insert_new(l->hosts, at, json_string(e->host));
      if (n + 1 > 64) {
        json_array_remove(l->ranks, 64);
        json_array_remove(l->hosts, 64);
      }
    }
  } else {
    l->alive++;
  }
}

static void job_end(struct life *l) {
  struct det_finding f = {.kind = "job_end",
                          .where = "job",
                          .job = l->job->name,
                          .ranks = json_incref(l->ranks),
                          .hosts = json_incref(l->hosts),
                          .confidence = 1,
                          .first_seen = ctx->now};
  snprintf(f.detail, sizeof f.detail, "%d rank%s said goodbye%s", l->clean,
           l->clean == 1 ? "" : "s",
           l->lost ? "; lost ranks keep their verdicts until the job is forgotten" : "");
  det_book_note(&f, ctx->now);
  det_book_clear_job(l->job->name, "rank_lost", "the job ended: its ranks said goodbye", ctx->now);
  l->ended = 1;
  l->ended_at = ctx->now;
}

/* One pass over every rank, with the liveness scan (every 500 ms of detection time), then each
 * job's state moves on. */
static void jobs_advance(void) {
  for (int i = 0; i < njobs; i++) {
    struct life *l = &jobs[i];
    l->alive = l->clean = l->lost = 0;
    l->ranks = json_array();
    l->hosts = json_array();
  }
  det_ranks_each(NULL, tally, NULL);
  for (int i = 0; i < njobs; i++) {
    struct life *l = &jobs[i];
    if (l->alive) { /* running, or running again */
      l->ended = l->gone = l->lost_cleared = 0;
      l->dead_at = 0;
    } else if (l->clean && !l->ended) {
      job_end(l);
    } else if (!l->clean && l->lost && !l->dead_at) {
      l->dead_at = ctx->now;
    }
    if ((l->ended && ctx->now - l->ended_at >= ctx->cfg.forget_ns) ||
        (!l->alive && !l->clean && l->dead_at && ctx->now - l->dead_at >= ctx->cfg.forget_ns))
      l->gone = 1;
    /* Lost ranks keep their verdicts while their job lives (it runs without them) and through
     * the forget period, so that an alert on them fires and is seen; then they close with the
     * job. Kept for good, a killed job's rank_lost verdicts stood until c4mon restarted. */
    if (l->gone && !l->lost_cleared) {
      l->lost_cleared = 1;
      det_book_clear_job(l->job->name, NULL,
                         l->ended ? "the job ended and was forgotten; the rank never came back"
                                  : "every rank of the job was lost, and none streamed again "
                                    "for the forget period",
                         ctx->now);
    }
    json_decref(l->ranks);
    json_decref(l->hosts);
    l->ranks = l->hosts = NULL;
  }
}

uint64_t det_ranks_twins(void) { return twins; }

int det_ranks_job_gone(const char *job) {
  for (int i = 0; job && i < njobs; i++)
    if (!strcmp(jobs[i].job->name, job)) return jobs[i].gone;
  return 0;
}

json_t *det_ranks_gone_json(void) {
  json_t *a = json_array();
  for (int i = 0; i < njobs; i++)
    if (jobs[i].gone) json_array_append_new(a, json_string(jobs[i].job->name));
  return a;
}

/* Liveness is checked every 500 ms of detection time: a full scan of 16,384 ranks is cheap at
 * that rate and the lost threshold is seconds. Not while c4mon catches up after a stall of its
 * own (det_ranks_stalled). */
void det_ranks_advance(void) {
  if (ctx->now < next_check) return;
  next_check = ctx->now + 500000000ull;
  if (ctx->now >= quiet_until) det_ranks_each(NULL, check_silence, NULL);
  jobs_advance();
}

void det_ranks_stalled(uint64_t now, uint64_t grace_ns) { quiet_until = now + grace_ns; }

int det_rank_quiet(const struct det_rank *e) {
  uint64_t interval = e->hb_interval ? e->hb_interval : 1000000000ull;
  return !e->lost && !e->ended && e->last_hb && ctx->now - e->last_hb > 2 * interval + interval / 2;
}

struct state_arg {
  json_t *ranks;
  int n;
};

static void rank_json(struct det_rank *e, void *arg) {
  struct state_arg *a = arg;
  if (det_ranks_job_gone(e->job->name)) return; /* its job ended and was forgotten */
  if (a->n++ >= 100000) return;                 /* the document stays bounded */
  json_array_append_new(a->ranks,
                        json_pack("{s:s, s:i, s:s, s:f, s:I, s:I, s:I, s:b, s:b}", "job",
                                  e->job->name, "rank", e->rank, "host", e->host, "slowdown",
                                  det_coll_slowdown(e->job, e->rank), "last_hb_ns",
                                  (json_int_t)e->last_hb, "entered", (json_int_t)e->entered, "done",
                                  (json_int_t)e->done, "lost", e->lost, "ended", e->ended));
}

json_t *det_ranks_state(void) {
  struct state_arg a = {.ranks = json_array()};
  det_ranks_each(NULL, rank_json, &a);
  return a.ranks;
}

void det_ranks_init(const struct det_ctx *c) { ctx = c; }

void det_ranks_reset(void) {
  det_index_reset(&ranks);
  next_check = quiet_until = 0;
  njobs = 0;
  twins = 0;
}
