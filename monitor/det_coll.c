/* det_coll.c -- the straggler detector: per communicator, each rank's compute time between
 * collectives (its arrival at s minus its completion of s-1) over the median rank's, as a log
 * ratio. The median of its last K ratios (a blip moves it not at all) is the rank's statistic;
 * the rank's own healthy history of that statistic (det_noise: median and MAD over a sliding
 * window) is its baseline and spread, so steady unevenness (a pipeline's last stage) and a
 * machine's usual jitter are learned, not alarmed. A verdict needs the statistic past the
 * baseline by z spreads and by the minimum effect (docs/events.md), for long enough that its
 * excess over that threshold, counted in thresholds and summed, reaches EVIDENCE: a burst of a
 * shared machine's noise is short, a straggler lasts. Until a rank has a baseline
 * it is compared with the median rank, and only a rank at least UNEVEN times the median counts,
 * and only when the collective waits for it (waited_on: among the last to arrive in half of the
 * last K, the very last at least once, and the collective waiting on a slow rank's compute):
 * that names a rank slow from the very start, as soon as EARLY ratios are in (two statistics in a
 * row past it suffice: being 1.3x the median rank is not a burst). Ranks that do different work
 * by design, a pipeline's stages, differ from the median rank from the start (the last stage
 * computes the head: 1.3-1.9x the median stage under load) and hold nobody up at the collective
 * (last to arrive 0 to 2 of 12, by a hair; the first stage, which ends the backward passes, is
 * last), so that share is learned as their baseline and they are judged against it (a stage slow
 * from its first step too: the collective does not wait on its compute). Also keeps who
 * each communicator rank is (its comm record's host and pid), for events in launcher ranks. The
 * time a rank spent blocked in receives between two collectives (det_waits: a pipeline stage
 * waiting for its neighbour stage) is not its compute: a slow stage's neighbours are not named with
 * it. */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "det_internal.h"
#include "det_waits.h"
#include "mon_windows.h"

#define K 12       /* ratios per rank in the statistic */
#define SKIP 2     /* a communicator's first collectives: start-up, not judged */
#define EARLY 6    /* ratios the statistic needs before a rank is judged at all */
#define EVERY 4    /* a healthy statistic joins the baseline every EVERY collectives */
#define UNEVEN 1.3 /* without a baseline, a rank this far over the median rank is slow */
/* Of two ranks neither is a majority: each is read against the other, and a shared machine's
 * bursts make either one a while slower. Healthy 2-rank c4train jobs over c4mon (3 runs of 1,500
 * steps, loopback, 2 cores) read up to 1.33x: a verdict needs 1.5x over the rank's usual. */
#define TWO_RANKS_EFFECT 1.5
#define WAITED_ON (K / 2) /* last arrivals in the last K: the collective waits for this rank */
#define NEAR_LAST 0.25    /* an arrival this share of the last one's gap from it counts as last */
#define HOT_RUN 2         /* statistics of a run past the threshold before a verdict */
#define EVIDENCE 4.0      /* and their excess over it, in margins, summed: severity x duration */
#define CALM_RUN (3 * K)  /* statistics back under it in a row before a verdict clears */
#define MAX_TRACKED 1024  /* communicators with identity or straggler state */

/* What every collective reads of each rank (its newest ratio, threshold and state) is in its
 * first cache line, and the noise windows, read at every EVERY-th, last: at 16,384 ranks a look at
 * three lines per rank per collective, 11 MB apart in all, was a third of the detector's time. */
struct rank_state {
  _Alignas(64) float ring[K]; /* the last K log ratios */
  float ref, thr;             /* the baseline and threshold it is judged (or was raised) against */
  uint8_t flagged, calm, hot_run;
  uint8_t to_peers;   /* judged against its peers (no baseline yet), not against its own share */
  uint16_t last;      /* bit i: it arrived last i collectives ago */
  uint16_t near_last; /* bit i: it arrived last, or within NEAR_LAST of the last one's gap of
                         it, i collectives ago */
  float gap_ring[K];  /* and the compute gaps they came from, in ns */
  float evidence;     /* excess over the threshold, in margins, summed over this run past it,
                         less the shortfalls of its dips under it */
  uint64_t hot_since;
  long hot_from; /* the comm's completed count when this run past the threshold began */
  struct det_noise_hold hot_stat, hot_raw; /* this hot run's samples of each, held back */
  struct det_noise noise;                  /* the statistic's */
  struct det_noise raw; /* the ratios' own: a rank that is often the median rank has a
                           statistic that sits still, though its ratios do not */
};

_Static_assert(offsetof(struct rank_state, gap_ring) <= 64,
               "what every collective reads of a rank fits its first cache line");

struct comm_state {
  const struct c4_det_job *job;
  uint64_t comm;
  int nranks;
  long completed;  /* collectives every rank entered, with a previous one in the window */
  double med_ewma; /* typical median compute gap */
  double dur_ewma; /* typical collective time (last arrival to completion) */
  struct rank_state *rank;
  double med_ring[K];      /* per ring slot, the median rank's compute gap */
  double slow_ref_ring[K]; /* and the other ranks' median for a rank above the median */
  double *gaps, *scratch;
  char (*host)[C4_HOST_MAX]; /* from comm records; "" when none came */
  uint32_t *pid;
  /* each rank's handle in det_waits (-1: none), looked up once rather than per collective; the
   * ranks without one are looked up again when det_waits keeps more processes */
  int *waits_at;
  int waits_count;
  unsigned waits_epoch;
  /* whether its host-less ranks were tied by number, and det_waits' rank bindings then: when
   * either changes (the job proved wider, a rank's process was replaced) those handles go */
  int by_number;
  unsigned rank_gen;
  int linked;         /* 1 when the windows hold this as their user pointer */
  uint16_t slow_last; /* bit i: the rank that arrived last i collectives ago had computed at
                         least UNEVEN times the median rank (the collective waited on compute) */
  int nflagged;
  int flagged_list[64]; /* the flagged ranks, for the state document */
};

static const struct det_ctx *ctx;
static struct comm_state *tracked[MAX_TRACKED];
static int ntracked;
static int job_linked[C4_DET_MAX_JOBS]; /* per job, its communicators the windows hold state of */
static int job_widest[C4_DET_MAX_JOBS]; /* per job, the most ranks of any of its communicators */
static unsigned tracked_gen;            /* changes whenever a state is made or forgotten */
#define P2P_CACHE 1024

static void state_free(struct comm_state *s) {
  det_table_free(s->rank, (size_t)s->nranks * sizeof *s->rank);
  free(s->gaps);
  free(s->scratch);
  free(s->host);
  free(s->pid);
  free(s->waits_at);
  free(s);
}

static void untrack(struct comm_state *s) {
  tracked_gen++;
  for (int i = 0; i < ntracked; i++)
    if (tracked[i] == s) {
      tracked[i] = tracked[--ntracked];
      return;
    }
}

static void forget(void *user) {
  struct comm_state *s = user;
  if (s->linked) job_linked[s->job->id]--;
  untrack(s);
  state_free(s);
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
  s->nranks = nranks; /* state_free's size of rank */
  /* mapped zeroed, in huge pages: zeroed by hand, 16,384 ranks' states were 6,700 page faults */
  s->rank = det_table_alloc(n * sizeof *s->rank);
  s->gaps = calloc(n, sizeof *s->gaps);
  s->scratch = calloc(n, sizeof *s->scratch);
  s->host = calloc(n, sizeof *s->host);
  s->pid = calloc(n, sizeof *s->pid);
  s->waits_at = malloc(n * sizeof *s->waits_at);
  if (!s->rank || !s->gaps || !s->scratch || !s->host || !s->pid || !s->waits_at) {
    state_free(s);
    return NULL;
  }
  s->job = job;
  s->comm = comm;
  s->nranks = nranks;
  if (nranks > job_widest[job->id]) job_widest[job->id] = nranks;
  for (int r = 0; r < nranks; r++) {
    s->waits_at[r] = -1;
    det_noise_for_median(&s->rank[r].raw);
  }
  s->waits_count = -1;
  s->by_number = -1; /* not yet decided */
  tracked_gen++;
  tracked[ntracked++] = s;
  return s;
}

void det_coll_take_comm(const struct c4_det_job *job, const struct c4_comm_record *c) {
  struct comm_state *s = state_find(job, c->comm);
  if (!s) s = state_new(job, c->comm, c->nranks);
  if (!s || c->rank < 0 || c->rank >= s->nranks) return;
  snprintf(s->host[c->rank], C4_HOST_MAX, "%s", c->host);
  s->pid[c->rank] = c->pid;
  s->waits_at[c->rank] = -1; /* a new identity: looked up again */
  s->waits_count = -1;
}

/* Whether a communicator's ranks are the job's launcher ranks, for one whose comm records named no
 * host (the minimal schema): it is as wide as the job, which is as many launcher ranks as
 * reported receives, or, with no receive records, the widest communicator. In a narrower one they
 * are not, and its ranks' waits cannot be told. */
static int ranks_by_number(const struct comm_state *s) {
  int job = det_waits_job_ranks(s->job);
  return s->nranks == (job ? job : job_widest[s->job->id]);
}

#define WAITS_NONE (-2) /* a rank's handle looked for and not had: looked for again on a change */

/* Every rank's det_waits handle dropped when det_waits has forgotten them; the host-less ranks'
 * when the job's width says otherwise than when they were tied by number (a group's 4 ranks
 * looked like the whole job until the world communicator's first collective), or a launcher
 * rank's process changed. */
static void waits_epoch(struct comm_state *s) {
  int epoch = s->waits_epoch != det_waits_epoch(), by_number = ranks_by_number(s);
  unsigned gen = det_waits_rank_gen(s->job);
  if (!epoch && by_number == s->by_number && gen == s->rank_gen) return;
  for (int r = 0; r < s->nranks; r++)
    if (epoch || !s->host[r][0]) s->waits_at[r] = -1;
  s->waits_epoch = det_waits_epoch();
  s->by_number = by_number;
  s->rank_gen = gen;
  s->waits_count = -1;
}

/* Each rank's det_waits handle, current: the ranks without one looked up when det_waits has
 * taken in processes since the last look, every rank when it has forgotten them. */
static void waits_handles(struct comm_state *s) {
  waits_epoch(s);
  if (s->waits_count == det_waits_count()) return;
  s->waits_count = det_waits_count();
  /* a rank whose comm record named no host is found by its number, as det_coll_identity names
   * it */
  for (int r = 0; r < s->nranks; r++)
    if (s->waits_at[r] < 0)
      s->waits_at[r] = s->host[r][0]  ? det_waits_find(s->job, s->host[r], s->pid[r])
                       : s->by_number ? det_waits_find_rank(s->job, r)
                                      : C4_NONE;
}

/* A rank's time inside a collective or a receive goes to det_waits: it is not compute on the
 * communicators whose gaps it falls in. */
static void span(struct comm_state *s, const struct c4_coll_record *r) {
  if (r->rank < 0 || r->rank >= s->nranks || r->t_done <= r->t_arrive || !r->t_arrive) return;
  waits_epoch(s);
  int at = s->waits_at[r->rank];
  if (at == WAITS_NONE) return; /* not per record: once per change */
  if (at < 0) {
    at = s->host[r->rank][0] ? det_waits_add(s->job, s->host[r->rank], s->pid[r->rank])
         : s->by_number      ? det_waits_add_rank(s->job, r->rank)
                             : C4_NONE;
    s->waits_at[r->rank] = at < 0 ? WAITS_NONE : at;
    if (at < 0) return;
  }
  det_waits_take_span(at, r->t_arrive, r->t_done);
}

/* A collective's span is not compute on the job's other communicators: the ranks of a tensor-
 * or pipeline-parallel group waiting there for a straggler read, on the data-parallel
 * communicator, as computing as long as it does. A job with one communicator has no other gaps
 * for it to fall in. */
static void took(void *user, const struct c4_coll_record *r) {
  struct comm_state *s = user;
  if (job_linked[s->job->id] >= 2) span(s, r);
}

/* A p2p call holds its stream until its peer has matched it, a send as much as a receive: a
 * blocked send counted as compute named the healthy stage after a slow one (a hand-written
 * 2 x 4 pipeline whose sends wait for the receiver: rank 3 at 1.27x beside rank 2). Only where
 * no receive records come: those hold the receives' waits, in pieces (a 16,384-rank trace's p2p
 * spans cost its replay 5% more time, for nothing), and the plugin's sends return when queued. */
void det_coll_take_p2p(const struct c4_det_job *job, const struct c4_coll_record *r) {
  if (!r->is_p2p || det_waits_job_has_receives(job)) return;
  /* the state by (job, communicator), and that there is none, cached: a pipeline of thousands
   * of communicators would scan them all per record */
  static struct {
    const struct c4_det_job *job;
    uint64_t comm;
    unsigned gen;
    struct comm_state *s;
  } cache[P2P_CACHE];
  size_t k =
      (size_t)((r->comm ^ (uint64_t)job->id * 0x9e3779b97f4a7c15ull) * 0xff51afd7ed558ccdull >>
               54) &
      (P2P_CACHE - 1);
  if (cache[k].job != job || cache[k].comm != r->comm || cache[k].gen != tracked_gen + 1) {
    cache[k].job = job;
    cache[k].comm = r->comm;
    cache[k].gen = tracked_gen + 1; /* 0: never filled */
    cache[k].s = state_find(job, r->comm);
  }
  if (cache[k].s) span(cache[k].s, r);
}

const char *det_coll_host(const struct c4_det_job *job, uint64_t comm, int comm_rank) {
  const char *host;
  int rank = det_coll_identity(job, comm, comm_rank, &host);
  struct comm_state *s = host[0] ? NULL : state_find(job, comm);
  return s && ranks_by_number(s) ? det_waits_host(det_waits_find_rank(job, rank)) : host;
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

/* The median of the other ranks' gaps for a rank above the median (for the median rank itself
 * of an odd n, half a step low), given a quickselected for its k = n/2-th smallest, mid: the
 * factor's reference for a rank judged against its peers. The median of all has the slow rank in
 * its own reference: of 4 ranks with one 3x slow, that was the slowest healthy rank, and the
 * factor read 10-17% under the slowdown c4train measured over the same steps (train_straggler,
 * 2 cores). The statistic keeps the median of all: its noise and false-alarm rate were measured
 * for it (docs/events.md), and against its peers a rank crossing the middle of 4 jumps between
 * two references (replayed, a healthy 600-step job under load then raised a straggler). */
static double slow_peers_median(const double *a, int n, double mid) {
  int k = n / 2;
  double below = a[0];
  for (int i = 1; i < k; i++) /* quickselect left a[0..k) at or under a[k] */
    if (a[i] > below) below = a[i];
  return n % 2 ? (below + mid) / 2 : below;
}

/* The statistic: the median of the ring's newest n ratios (n <= K; the newest is at slot
 * (completed - 1) % K). */
static double ring_median(const float *ring, long completed, int n) {
  float v[K]; /* insertion sort of a dozen values; a full ring in any order */
  for (int i = 0; i < n; i++) {
    float x = n == K ? ring[i] : ring[(completed - 1 - i) % K];
    int j = i;
    for (; j > 0 && v[j - 1] > x; j--)
      v[j] = v[j - 1];
    v[j] = x;
  }
  return ((double)v[(n - 1) / 2] + (double)v[n / 2]) / 2;
}

/* How many ratios the statistic has: all K once the ring is full of judged collectives; fewer
 * at the start, so a rank slow from its first collectives is named against its peers early. */
static int stat_len(const struct comm_state *s) {
  long n = s->completed - SKIP;
  return n < K ? (int)n : K;
}

/* Added to both sides of a ratio: a compute gap small next to the collective itself (back-to-back
 * collectives, a benchmark loop) makes nobody wait, and its jitter must not look like a factor. */
static double ratio_floor(const struct comm_state *s) {
  return 0.05 * (s->med_ewma + s->dur_ewma) + 1000;
}

/* The slowdown over the newest n collectives, weighted by time: the rank's compute gaps summed
 * over the median rank's, against its baseline share ref; a rank judged against its peers (no
 * baseline: ref 0) over its peers' median's instead, as for a rank above the median (its share
 * of the median of all was learned with itself in that median, so that median stays its
 * reference once it has one: against its peers' instead, a rank heavier by design read 3.6x
 * where it was 2x slow). A step with several collectives has gaps of nothing between them for every
 * rank; a median of the ratios counts those as "even" and put a 3x rank at 2.2-2.6x of its peers
 * where its compute over the run was 2.8-3.0x theirs. */
static double window_factor(const struct comm_state *s, const struct rank_state *rs, int n,
                            double ref) {
  double g = 0, m = 0;
  for (int i = 0; i < n; i++) {
    int slot = (int)((s->completed - 1 - i) % K);
    g += rs->gap_ring[slot];
    m += rs->to_peers ? s->slow_ref_ring[slot] : s->med_ring[slot];
  }
  if (n <= 0) return 1;
  double e = ratio_floor(s), b = exp(ref), base = b * (m / n + e) - e;
  return base > 0 ? g / n / base : (g / n + e) / (m / n + e) / b;
}

/* The share of the communicator's cycle (compute gap plus collective) the others lose waiting
 * for a rank that computes factor times its usual gap. */
static double cost_of(const struct comm_state *s, double factor, double ref) {
  double g = s->med_ewma * exp(ref), d = s->dur_ewma;
  return factor > 1 && g > 0 ? (factor - 1) * g / (factor * g + d) : 0;
}

/* 0.5 at the threshold, 1 at twice its distance from the baseline: how far outside the noise. */
static double confidence_of(double stat, double ref, double thr) {
  double c = thr > ref ? 0.5 * (stat - ref) / (thr - ref) : 1;
  return c < 0 ? 0 : c > 1 ? 1 : c;
}

static void straggler_key(const struct comm_state *s, int r, char *key, size_t n) {
  const char *host;
  int rank = det_coll_identity(s->job, s->comm, r, &host);
  snprintf(key, n, "straggler/%s/%s/%d", s->job->name, host, rank);
}

static void raise_straggler(struct comm_state *s, int r, double stat) {
  struct rank_state *rs = &s->rank[r];
  const char *host;
  int rank = det_coll_identity(s->job, s->comm, r, &host);
  const char *named = det_coll_host(s->job, s->comm, r); /* for people: the key keeps host */
  /* The factor from the collectives slow in this run: the statistic, a median of K, crossed the
   * threshold with half its ratios slow, so the run began K/2 collectives before it did (a
   * window of K would put the slowdown between the old gap and the new; the run alone, three
   * collectives at first, gave 2.2-3.2 for a rank 3x slow). */
  long since = s->completed - rs->hot_from + K / 2;
  int len = stat_len(s), n = since < 3 ? 3 : since > len ? len : (int)since;
  if (n > len) n = len;
  double factor = window_factor(s, rs, n, rs->ref);
  char key[320];
  straggler_key(s, r, key, sizeof key);
  struct det_finding f = {.kind = "straggler",
                          .where = "gpu",
                          .job = s->job->name,
                          .ranks = json_pack("[i]", rank),
                          .hosts = named[0] ? json_pack("[s]", named) : json_array(),
                          .factor = factor,
                          .confidence = confidence_of(stat, rs->ref, rs->thr),
                          .cost = cost_of(s, factor, rs->ref),
                          .comm = s->comm,
                          .first_seen = rs->hot_since};
  snprintf(
      f.detail, sizeof f.detail,
      "compute between collectives %.2fx its %s; last to arrive %d of the last %d (or nearly: %d)",
      factor, det_noise_ready(&rs->noise) ? "usual share" : "peers'", __builtin_popcount(rs->last),
      K, __builtin_popcount(rs->near_last));
  det_book_raise(key, &f, ctx->now);
  rs->flagged = 1;
  rs->calm = 0;
  if (s->nflagged < 64) s->flagged_list[s->nflagged++] = r;
}

static void clear_straggler(struct comm_state *s, int r) {
  char key[320];
  straggler_key(s, r, key, sizeof key);
  /* what c4mon sees is the rank's time, not its device: a straggler planner that took its work
   * away clears it as well as a heal does (the demo's rank 3 at step 95, slow until 100) */
  det_book_clear(key,
                 "compute time between collectives back to its usual share: healed, or given "
                 "less work (a straggler planner's re-split)",
                 ctx->now);
  s->rank[r].flagged = 0;
  s->rank[r].hot_run = 0;
  s->rank[r].hot_since = 0;
  for (int i = 0; i < s->nflagged; i++)
    if (s->flagged_list[i] == r) s->flagged_list[i] = s->flagged_list[--s->nflagged];
}

/* A flagged rank: recovered after CALM_RUN statistics in a row under the middle of its baseline
 * and threshold (a slow rank on a shared machine has calm moments; one verdict with updates, not
 * a new one after each); meanwhile its verdict's factor follows it, every K collectives. */
static void judge_flagged(struct comm_state *s, int r, double stat) {
  struct rank_state *rs = &s->rank[r];
  rs->calm = stat < rs->ref + 0.5 * (rs->thr - rs->ref) ? (uint8_t)(rs->calm + 1) : 0;
  if (rs->calm >= CALM_RUN) {
    clear_straggler(s, r);
    return;
  }
  if (s->completed % K) return;
  char key[320];
  straggler_key(s, r, key, sizeof key);
  double factor = window_factor(s, rs, stat_len(s), rs->ref);
  det_book_update(key, factor, confidence_of(stat, rs->ref, rs->thr), cost_of(s, factor, rs->ref));
}

/* Whether the collective waits for a rank with no baseline: among the last to arrive in half of
 * the last K collectives, the very last in one at least, and the collective waiting on compute
 * (its last arrival computed UNEVEN times the median rank) in half of them. Several ranks slow
 * together (two slow ranks, a slow host's) take turns at the very last, so nearly last counts; a
 * rank heavier by design that is not the one waited for does not: a pipeline's last stage, which
 * computes the head, is nearly last every time, and last now and then by a hair, while the
 * collective waits on the first stage, which ends the backward passes and computes no longer
 * than the median stage (healthy 4-stage pipelines under load: the last stage last 2 times of
 * 12 at collective 40, named, before this last condition). */
static int waited_on(const struct comm_state *s, const struct rank_state *rs) {
  return __builtin_popcount(rs->near_last) >= WAITED_ON && rs->last &&
         __builtin_popcount(s->slow_last) >= WAITED_ON;
}

static void learn(struct rank_state *rs, float stat, float raw) {
  det_noise_add(&rs->noise, stat);
  det_noise_add(&rs->raw, raw);
}

/* A sample of a hot run (statistic past the threshold, or dipping under it with evidence left;
 * no verdict yet) waits for the run's end (det_noise_hold). Learned as it came, a stage 3x slow in
 * pp_straggler had its threshold rise from 0.98 to 3.8 in log units in a young window, and was
 * never named. */
static void hold_hot(struct rank_state *rs, float stat, float raw) {
  det_noise_hold(&rs->hot_stat, &rs->noise, stat);
  det_noise_hold(&rs->hot_raw, &rs->raw, raw);
}

static void learn_hot_run(struct rank_state *rs) {
  det_noise_release(&rs->hot_stat, &rs->noise);
  det_noise_release(&rs->hot_raw, &rs->raw);
}

/* Whether a statistic under the threshold leaves a run against the rank's baseline going: its
 * shortfall, in margins, is taken from the run's evidence, and the run goes on while some is left
 * (a CUSUM). Ended at the first statistic under the threshold, a 3x pipeline stage whose
 * statistic hovered at its young threshold (0.75 against 0.76, ASan beside two busy loops) had
 * its run end by a hair, its slow samples learned, the threshold lifted to 2.5, and was never
 * named. A run against the rank's peers (no baseline) has no evidence and ends at once. */
static int dips_within_run(struct rank_state *rs, double stat) {
  if (!rs->hot_run || rs->to_peers) return 0;
  rs->evidence += (float)((stat - rs->ref) / (rs->thr - rs->ref) - 1);
  if (rs->evidence > 0) return 1;
  rs->evidence = 0;
  return 0;
}

static void judge_rank(struct comm_state *s, int r, uint64_t t) {
  struct rank_state *rs = &s->rank[r];
  int sample = s->completed % EVERY == (unsigned)r % EVERY;
  /* the statistic only moves past the threshold when ratios past it come in: a rank that is
   * not flagged, not running hot and got a ratio under its threshold is looked at again when
   * its next sample is due (at 16,384 ranks a median per rank per collective costs) */
  if (!rs->flagged && !rs->hot_run && !sample && rs->ring[(s->completed - 1) % K] < rs->thr) return;
  double stat = ring_median(rs->ring, s->completed, stat_len(s));
  if (rs->flagged) {
    judge_flagged(s, r, stat);
    return;
  }
  if (det_noise_ready(&rs->noise)) {
    float margin = det_noise_margin(&rs->noise, &ctx->noise),
          of_raw = det_noise_margin_scaled(&rs->raw, &ctx->noise, 1.25f / sqrtf(K));
    rs->ref = rs->noise.base;
    rs->thr = rs->ref + (margin > of_raw ? margin : of_raw);
    if (rs->to_peers) rs->hot_run = 0; /* a run against its peers is no evidence against itself */
    rs->to_peers = 0;
  } else {
    rs->ref = 0;
    rs->thr = (float)fmax(log(UNEVEN), ctx->noise.min_log);
    rs->to_peers = 1;
  }
  if (s->nranks == 2) rs->thr = fmaxf(rs->thr, rs->ref + (float)log(TWO_RANKS_EFFECT));
  if (stat >= rs->thr) {
    if (!rs->hot_run) rs->hot_since = t, rs->hot_from = s->completed, rs->evidence = 0;
    if (rs->hot_run < UINT8_MAX) rs->hot_run++;
    rs->evidence += (float)((stat - rs->ref) / (rs->thr - rs->ref) - 1);
    /* against its peers (no baseline yet), being 1.3x the median rank twice in a row while the
     * collective waits for it is no burst: no evidence summed */
    int ready = det_noise_ready(&rs->noise);
    if (rs->hot_run >= HOT_RUN && (ready ? rs->evidence >= EVIDENCE : waited_on(s, rs))) {
      raise_straggler(s, r, stat);
      det_noise_hold_drop(&rs->hot_stat, &rs->noise);
      det_noise_hold_drop(&rs->hot_raw, &rs->raw);
      return;
    }
  } else if (!dips_within_run(rs, stat)) {
    if (rs->hot_run) learn_hot_run(rs); /* it ended short of a verdict: a burst, so noise */
    rs->hot_run = 0;
  }
  if (!sample) return;
  float raw = rs->ring[(s->completed - 1) % K];
  if (!rs->hot_run)
    learn(rs, (float)stat, raw);
  else if (det_noise_ready(&rs->noise))
    hold_hot(rs, (float)stat, raw);
  else if (!waited_on(s, rs))
    learn(rs, (float)stat, raw);
  /* A rank with no baseline far over its peers is learned when the collective does not wait for
   * it: that is its share by design (a pipeline's last stage, 1.3-1.9x the median stage), which
   * it is judged against once learned. Kept from its baseline, such a stage was judged against
   * its peers for the whole job and named the first time it arrived last (3 of 12 healthy
   * pipeline jobs on a loaded 2-core machine). One the collective waits for is a straggler from
   * the start: not learned, and named. */
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
    job_linked[job->id]++;
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
  waits_handles(s);
  for (int r = 0; r < nranks;
       r++) { /* blocked in a receive (a pipeline's neighbour) is no compute */
    if (r + 16 < nranks) det_waits_prefetch_at(s->waits_at[r + 16], 0);
    if (r + 8 < nranks) det_waits_prefetch_at(s->waits_at[r + 8], 1);
    uint64_t end = prev->t_done[r] ? prev->t_done[r] : fallback, t = cur->t_arrive[r];
    uint64_t waited = det_waits_blocked(s->waits_at[r], end, t);
    s->gaps[r] = t > end + waited ? (double)(t - end - waited) : 0;
    s->scratch[r] = s->gaps[r];
  }
  /* the median rank's gap: the upper of two middle values, but of two ranks the lower (the upper
   * is the slow one itself: a 2-rank job's 3x straggler read 1x, and was never named) */
  double med = select_kth(s->scratch, nranks, nranks == 2 ? 0 : nranks / 2);
  s->med_ewma = s->completed ? 0.9 * s->med_ewma + 0.1 * med : med;
  s->dur_ewma = s->completed ? 0.9 * s->dur_ewma + 0.1 * dur : dur;
  double eps = ratio_floor(s);
  int slot = (int)(s->completed % K);
  s->completed++;
  double near = NEAR_LAST * s->gaps[last];
  int slow = s->gaps[last] + eps >= UNEVEN * (med + eps);
  s->slow_last = (uint16_t)(((unsigned)s->slow_last << 1 | (unsigned)slow) & ((1u << K) - 1));
  s->med_ring[slot] = med;
  s->slow_ref_ring[slot] = slow_peers_median(s->scratch, nranks, med);
  for (int r = 0; r < nranks; r++) {
    struct rank_state *rs = &s->rank[r];
    unsigned keep = (1u << K) - 1, is_last = r == last,
             near_last = (double)(latest - cur->t_arrive[r]) <= near;
    rs->last = (uint16_t)(((unsigned)rs->last << 1 | is_last) & keep);
    rs->near_last = (uint16_t)(((unsigned)rs->near_last << 1 | near_last) & keep);
    rs->ring[slot] = (float)log((s->gaps[r] + eps) / (med + eps));
    rs->gap_ring[slot] = (float)s->gaps[r];
    if (s->completed >= SKIP + EARLY) judge_rank(s, r, cur->t_arrive[r]);
  }
}

double det_coll_slowdown(const struct c4_det_job *job, int rank) {
  for (int i = 0; i < ntracked; i++) {
    struct comm_state *s = tracked[i];
    if (!s->nflagged || s->job != job) continue;
    for (int i = 0; i < s->nflagged; i++) {
      int r = s->flagged_list[i];
      const char *host;
      if (det_coll_identity(s->job, s->comm, r, &host) == rank)
        return window_factor(s, &s->rank[r], stat_len(s), s->rank[r].ref);
    }
  }
  return 1.0;
}

void det_coll_init(const struct det_ctx *c) {
  ctx = c;
  static const struct c4_win_hooks h = {.arrived = arrived, .forget = forget, .took = took};
  c4_mon_windows_set_hooks(&h);
}

void det_coll_reset(void) {
  while (ntracked) {
    struct comm_state *s = tracked[0];
    untrack(s);
    state_free(s);
  }
  memset(job_linked, 0, sizeof job_linked);
  memset(job_widest, 0, sizeof job_widest);
}
