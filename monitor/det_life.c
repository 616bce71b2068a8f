/* det_life.c -- a job's life as detection sees it: running while any of its ranks streams; ended
 * when none does and at least one said goodbye. At the end an event (`job_end`) says so and the
 * job's verdicts close, but for lost ranks, which keep theirs; once the forget period has passed
 * the job's ranks (lost ones excepted) and its matrix leave detection's state, and so status and
 * /metrics. A rank streaming again under the job's name starts it anew. */
#include <stdio.h>
#include <string.h>

#include "det_internal.h"
#include "det_ranks.h"

#define MAX_JOBS 256 /* jobs tracked at once; more are not ended (their verdicts stay) */

struct life {
  char job[64];
  int alive, clean, lost; /* ranks in this pass: streaming, said goodbye, lost */
  int ended, gone;        /* ended: job_end given; gone: past the forget period */
  uint64_t ended_at;
  json_t *ranks, *hosts; /* this pass's ranks that said goodbye, for the event */
};

static struct life jobs[MAX_JOBS];
static int njobs;
static uint64_t next_pass;

static struct life *life_of(const char *job) {
  for (int i = 0; i < njobs; i++)
    if (!strcmp(jobs[i].job, job)) return &jobs[i];
  if (njobs == MAX_JOBS) return NULL;
  struct life *l = &jobs[njobs++];
  memset(l, 0, sizeof *l);
  snprintf(l->job, sizeof l->job, "%s", job);
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
    if (json_array_size(l->ranks) < 64) { /* the event stays one readable line */
      json_array_append_new(l->ranks, json_integer(e->rank));
      json_array_append_new(l->hosts, json_string(e->host));
    }
  } else {
    l->alive++;
  }
}

static void job_end(struct life *l) {
  struct det_finding f = {.kind = "job_end",
                          .where = "job",
                          .job = l->job,
                          .ranks = json_incref(l->ranks),
                          .hosts = json_incref(l->hosts),
                          .confidence = 1,
                          .first_seen = c4_det_now};
  snprintf(f.detail, sizeof f.detail, "%d rank%s said goodbye%s", l->clean,
           l->clean == 1 ? "" : "s", l->lost ? "; lost ranks keep their verdicts" : "");
  det_note(&f);
  det_clear_job(l->job, "rank_lost", "the job ended: its ranks said goodbye");
  l->ended = 1;
  l->ended_at = c4_det_now;
}

/* One pass over every rank every 500 ms of detection time (the ranks' own liveness scan runs at
 * the same rate), then each job's state moves on. */
void det_life_advance(void) {
  if (c4_det_now < next_pass) return;
  next_pass = c4_det_now + 500000000ull;
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
      l->ended = l->gone = 0;
    } else if (l->clean && !l->ended) {
      job_end(l);
    }
    if (l->ended && c4_det_now - l->ended_at >= c4_det_cfg.forget_ns) l->gone = 1;
    json_decref(l->ranks);
    json_decref(l->hosts);
    l->ranks = l->hosts = NULL;
  }
}

int det_life_gone(const char *job) {
  for (int i = 0; job && i < njobs; i++)
    if (!strcmp(jobs[i].job, job)) return jobs[i].gone;
  return 0;
}

json_t *det_life_gone_json(void) {
  json_t *a = json_array();
  for (int i = 0; i < njobs; i++)
    if (jobs[i].gone) json_array_append_new(a, json_string(jobs[i].job));
  return a;
}

void det_life_reset(void) {
  njobs = 0;
  next_pass = 0;
}
