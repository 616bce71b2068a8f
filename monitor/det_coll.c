/* det_coll.c -- the straggler detector: per communicator, each rank's compute time between
 * collectives (its arrival at s minus its completion of s-1) over the median rank's. The median
 * of the last K such ratios, against the rank's own ratio after warm-up (so steady unevenness, a
 * pipeline's last stage say, is its baseline), names a compute straggler; a single slow
 * collective (a blip) moves the median of K not at all. Also keeps who each communicator rank is
 * (its comm record's host and pid), for events in launcher ranks. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "det_internal.h"
#include "mon_windows.h"

#define K 8              /* ratios per rank the verdict looks at */
#define WARMUP 16        /* complete collectives ignored at the start of a communicator */
#define HOT 1.10         /* a ratio this far over the rank's baseline is hot */
#define CALM 1.05        /* under this for K collectives in a row: recovered */
#define MAX_TRACKED 1024 /* communicators with identity or straggler state */

struct comm_state {
  const struct c4_det_job *job;
  uint64_t comm;
  int nranks;
  long completed;   /* collectives every rank entered, with a previous one in the window */
  double med_ewma;  /* typical median compute gap */
  double dur_ewma;  /* typical collective time (last arrival to completion) */
  float *ratio;     /* [nranks][K] */
  float *baseline;  /* [nranks]; 0 until warm-up ends */
  uint8_t *hot;     /* hot ratios in the ring */
  uint8_t *flagged; /* a straggler verdict is up */
  uint8_t *calm;    /* collectives in a row under CALM while flagged */
  uint8_t *last;    /* times last to arrive in the last K */
  uint64_t *hot_since;
  int last_ring[K]; /* who arrived last, per ring slot */
  double *gaps, *scratch;
  char (*host)[C4_HOST_MAX]; /* from comm records; "" when none came */
  uint32_t *pid;
  int linked; /* 1 when the windows hold this as their user pointer */
  int nflagged;
  int flagged_list[64]; /* the flagged ranks, for the state document */
};

static const struct det_ctx *ctx;
static struct comm_state *tracked[MAX_TRACKED];
static int ntracked;

static void state_free(struct comm_state *s) {
  free(s->ratio);
  free(s->baseline);
  free(s->hot);
  free(s->flagged);
  free(s->calm);
  free(s->last);
  free(s->hot_since);
  free(s->gaps);
  free(s->scratch);
  free(s->host);
  free(s->pid);
  free(s);
}

static void untrack(struct comm_state *s) {
  for (int i = 0; i < ntracked; i++)
    if (tracked[i] == s) {
      tracked[i] = tracked[--ntracked];
      return;
    }
}

static void forget(void *user) {
  untrack(user);
  state_free(user);
}

static struct comm_state *state_find(const struct c4_det_job *job, uint64_t comm) {
  for (int i = 0; i < ntracked; i++)
    if (tracked[i]->comm == comm && tracked[i]->job == job) return tracked[i];
  return NULL;
}

static struct comm_state *state_new(const struct c4_det_job *job, uint64_t comm, int nranks) {
  if (nranks <= 0 || nranks > C4MON_MAX_RANKS) return NULL;
  if (ntracked == MAX_TRACKED) { /* drop one that the windows do not hold */
    for (int i = 0; i < ntracked; i++)
      if (!tracked[i]->linked) {
        struct comm_state *old = tracked[i];
        untrack(old);
        state_free(old);
        break;
      }
    if (ntracked == MAX_TRACKED) return NULL;
  }
  struct comm_state *s = calloc(1, sizeof *s);
  if (!s) return NULL;
  size_t n = (size_t)nranks;
  s->ratio = calloc(n * K, sizeof *s->ratio);
  s->baseline = calloc(n, sizeof *s->baseline);
  s->hot = calloc(n, 1);
  s->flagged = calloc(n, 1);
  s->calm = calloc(n, 1);
  s->last = calloc(n, 1);
  s->hot_since = calloc(n, sizeof *s->hot_since);
  s->gaps = calloc(n, sizeof *s->gaps);
  s->scratch = calloc(n, sizeof *s->scratch);
  s->host = calloc(n, sizeof *s->host);
  s->pid = calloc(n, sizeof *s->pid);
  if (!s->ratio || !s->baseline || !s->hot || !s->flagged || !s->calm || !s->last ||
      !s->hot_since || !s->gaps || !s->scratch || !s->host || !s->pid) {
    state_free(s);
    return NULL;
  }
  s->job = job;
  s->comm = comm;
  s->nranks = nranks;
  for (int i = 0; i < K; i++)
    s->last_ring[i] = -1;
  tracked[ntracked++] = s;
  return s;
}

void det_coll_take_comm(const struct c4_det_job *job, const struct c4_comm_record *c) {
  struct comm_state *s = state_find(job, c->comm);
  if (!s) s = state_new(job, c->comm, c->nranks);
  if (!s || c->rank < 0 || c->rank >= s->nranks) return;
  snprintf(s->host[c->rank], C4_HOST_MAX, "%s", c->host);
  s->pid[c->rank] = c->pid;
}

int det_coll_identity(const struct c4_det_job *job, uint64_t comm, int comm_rank,
                      const char **host) {
  struct comm_state *s = state_find(job, comm);
  *host = "";
  if (!s || comm_rank < 0 || comm_rank >= s->nranks || !s->host[comm_rank][0]) return comm_rank;
  *host = s->host[comm_rank];
  int r = det_ident_rank(ctx->idents, s->host[comm_rank], s->pid[comm_rank]);
  return r >= 0 ? r : comm_rank;
}

/* Quickselect: the k-th smallest of a[0..n) (reorders a). */
static double select_kth(double *a, int n, int k) {
  int lo = 0, hi = n - 1;
  while (lo < hi) {
    double pivot = a[(lo + hi) / 2];
    int i = lo, j = hi;
    while (i <= j) {
      while (a[i] < pivot)
        i++;
      while (a[j] > pivot)
        j--;
      if (i <= j) {
        double t = a[i];
        a[i] = a[j];
        a[j] = t;
        i++;
        j--;
      }
    }
    if (k <= j)
      hi = j;
    else if (k >= i)
      lo = i;
    else
      return a[k];
  }
  return a[k];
}

static double ring_median(const float *ring) {
  double v[K];
  for (int i = 0; i < K; i++)
    v[i] = ring[i];
  return (select_kth(v, K, K / 2 - 1) + select_kth(v, K, K / 2)) / 2;
}

/* Added to both sides of a ratio: a compute gap small next to the collective itself (back-to-back
 * collectives, a benchmark loop) makes nobody wait, and its jitter must not look like a factor. */
static double ratio_floor(const struct comm_state *s) {
  return 0.05 * (s->med_ewma + s->dur_ewma) + 1000;
}

/* The slowdown a ratio median m stands for, with the floor taken back out. */
static double factor_of(const struct comm_state *s, double m, double baseline) {
  double e = ratio_floor(s), med = s->med_ewma > 1 ? s->med_ewma : 1;
  double gap = m * (med + e) - e, base = baseline * (med + e) - e;
  return base > 0 ? gap / base : m / baseline;
}

static void raise_straggler(struct comm_state *s, int r, double factor) {
  const char *host;
  int rank = det_coll_identity(s->job, s->comm, r, &host);
  char key[320];
  snprintf(key, sizeof key, "straggler/%s/%s/%d", s->job->name, host, rank);
  struct det_finding f = {.kind = "straggler",
                          .where = "gpu",
                          .job = s->job->name,
                          .ranks = json_pack("[i]", rank),
                          .hosts = host[0] ? json_pack("[s]", host) : json_array(),
                          .factor = factor,
                          .confidence = fmin(1.0, (factor - 1.0) / (2 * (HOT - 1.0))),
                          .comm = s->comm,
                          .first_seen = s->hot_since[r]};
  snprintf(f.detail, sizeof f.detail,
           "compute between collectives %.2fx its usual share; last to arrive %d of the last %d",
           factor, s->last[r], K);
  det_book_raise(key, &f, ctx->now);
  s->flagged[r] = 1;
  s->calm[r] = 0;
  if (s->nflagged < 64) s->flagged_list[s->nflagged++] = r;
}

static void clear_straggler(struct comm_state *s, int r) {
  const char *host;
  int rank = det_coll_identity(s->job, s->comm, r, &host);
  char key[320];
  snprintf(key, sizeof key, "straggler/%s/%s/%d", s->job->name, host, rank);
  det_book_clear(key, "compute time between collectives back to its usual share", ctx->now);
  s->flagged[r] = 0;
  for (int i = 0; i < s->nflagged; i++)
    if (s->flagged_list[i] == r) s->flagged_list[i] = s->flagged_list[--s->nflagged];
}

/* Puts ratio x into rank r's ring at slot, keeping the hot count right. */
static void push_ratio(struct comm_state *s, int r, int slot, float x, uint64_t t) {
  float *ring = s->ratio + (size_t)r * K;
  float b = s->baseline[r];
  if (b > 0 && ring[slot] >= HOT * b && s->hot[r]) s->hot[r]--;
  ring[slot] = x;
  if (b > 0 && x >= HOT * b) {
    if (!s->hot[r]) s->hot_since[r] = t;
    s->hot[r]++;
  }
}

static void judge_rank(struct comm_state *s, int r, float x) {
  float b = s->baseline[r];
  if (!s->flagged[r]) {
    if (s->hot[r] > K / 2) {
      double m = ring_median(s->ratio + (size_t)r * K);
      if (m >= HOT * b) raise_straggler(s, r, factor_of(s, m, b));
    } else if (!s->hot[r] && x < HOT * b) {
      s->baseline[r] = 0.98f * b + 0.02f * x; /* follow slow drift while healthy */
    }
    return;
  }
  double m = ring_median(s->ratio + (size_t)r * K);
  s->calm[r] = m < CALM * b ? (uint8_t)(s->calm[r] + 1) : 0;
  if (s->calm[r] >= K) clear_straggler(s, r);
}

static void end_warmup(struct comm_state *s) {
  for (int r = 0; r < s->nranks; r++) {
    float *ring = s->ratio + (size_t)r * K;
    s->baseline[r] = (float)ring_median(ring);
    if (s->baseline[r] <= 0) s->baseline[r] = 1;
    s->hot[r] = 0;
    for (int i = 0; i < K; i++)
      if (ring[i] >= HOT * s->baseline[r]) s->hot[r]++;
  }
}

static void arrived(const struct c4_det_job *job, uint64_t comm, int nranks, void **user,
                    const struct c4_win_slot *cur, const struct c4_win_slot *prev) {
  if (nranks < 2 || !prev) return;
  struct comm_state *s = *user;
  if (!s) {
    s = state_find(job, comm);
    if (s && s->nranks != nranks) {
      untrack(s);
      state_free(s);
      s = NULL;
    }
    if (!s && !(s = state_new(job, comm, nranks))) return;
    s->linked = 1;
    *user = s;
  }
  uint64_t fallback = 0, latest = 0, prev_done = 0;
  int last = 0;
  for (int r = 0; r < nranks; r++) {
    if (prev->t_arrive[r] > fallback) fallback = prev->t_arrive[r];
    if (prev->t_done[r] > prev_done) prev_done = prev->t_done[r];
    if (cur->t_arrive[r] > latest) latest = cur->t_arrive[r], last = r;
  }
  double dur = prev_done > fallback ? (double)(prev_done - fallback) : 0;
  for (int r = 0; r < nranks; r++) {
    uint64_t end = prev->t_done[r] ? prev->t_done[r] : fallback;
    s->gaps[r] = cur->t_arrive[r] > end ? (double)(cur->t_arrive[r] - end) : 0;
    s->scratch[r] = s->gaps[r];
  }
  double med = select_kth(s->scratch, nranks, nranks / 2);
  s->med_ewma = s->completed ? 0.9 * s->med_ewma + 0.1 * med : med;
  s->dur_ewma = s->completed ? 0.9 * s->dur_ewma + 0.1 * dur : dur;
  double eps = ratio_floor(s);
  int slot = (int)(s->completed % K);
  if (s->last_ring[slot] >= 0 && s->last[s->last_ring[slot]]) s->last[s->last_ring[slot]]--;
  s->last_ring[slot] = last;
  s->last[last]++;
  s->completed++;
  for (int r = 0; r < nranks; r++) {
    float x = (float)((s->gaps[r] + eps) / (med + eps));
    push_ratio(s, r, slot, x, cur->t_arrive[r]);
    if (s->completed > WARMUP + K) judge_rank(s, r, x);
  }
  if (s->completed == WARMUP + K) end_warmup(s);
}

double det_coll_slowdown(const struct c4_det_job *job, int rank) {
  for (int i = 0; i < ntracked; i++) {
    struct comm_state *s = tracked[i];
    if (!s->nflagged || s->job != job) continue;
    for (int i = 0; i < s->nflagged; i++) {
      int r = s->flagged_list[i];
      const char *host;
      if (det_coll_identity(s->job, s->comm, r, &host) == rank)
        return factor_of(s, ring_median(s->ratio + (size_t)r * K), s->baseline[r]);
    }
  }
  return 1.0;
}

void det_coll_init(const struct det_ctx *c) {
  ctx = c;
  static const struct c4_win_hooks h = {.arrived = arrived, .forget = forget};
  c4_mon_windows_set_hooks(&h);
}

void det_coll_reset(void) {
  while (ntracked) {
    struct comm_state *s = tracked[0];
    untrack(s);
    state_free(s);
  }
}
