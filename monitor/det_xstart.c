/* det_xstart.c -- start times for transfers whose records lack t_first. A transfer cannot move
 * bytes before both its ends have posted; how much later it starts depends on how its
 * communicator's transfers go:
 * - in a collective (a ring, a tree) every rank waits for the last one to arrive: the start is
 *   the latest post seen on the communicator up to the transfer's completion (its own at least);
 * - in pairwise exchanges (all-to-all, p2p: a pair goes as soon as both are in) it is the later
 *   of its own post and its peer's latest post before its completion. There the communicator's
 *   latest post often comes after the pair started (another rank arriving late), and a start
 *   taken from it left a transfer's time mostly noise: hand-written 8-rank minimal traces whose
 *   pairs went as both arrived raised nothing for a NIC sending or receiving 2.5x slower or a
 *   link at 3x;
 * - in a call of chained steps (a ring allreduce's 2(N - 1) steps, each posted when the step
 *   before it arrived, each traced as its own transfer) it is the later of its own post and its
 *   peer's post of the same step: the peer's post whose place among the peer's posts is this
 *   one's among its own rank's (every rank posts once a step). The communicator's latest post
 *   before the completion is there another rank's next step, and the time from it the gap
 *   between two ranks' completions, noise: healthy hand-written 4- and 8-rank rings of receive
 *   records raised link verdicts at 1.3-9.75x with it, and the peer's latest post is as often
 *   its next step's. Its own post alone is no better: under one slow hop every rank steps at
 *   that hop's pace, and every cell read 3x for one link at 3x.
 * Each communicator is told which from its first DECIDE comparisons: the estimate whose
 * successive times on each cell vary least (pairwise or by step only when steadier than the
 * collective's by a fifth, and only when it could be made in 7 of 8 of them). Until it is told,
 * the collective's start is used, and a cell then given another way's starts learns its usual
 * afresh. Told pairwise or by step, a transfer whose estimate cannot be made is left out, not
 * given the collective's noise; when a quarter of a window of them cannot (a rank's posts
 * numbered apart from its peer's after a lost record, a tree whose ranks post unlike numbers of
 * times), the communicator is told again from scratch. A tree's ranks post unlike numbers of
 * times a call: told by step on a few aligned comparisons, its cells fell back to the
 * collective's start for most transfers and raised false link verdicts at 8-17x. Records are held
 * HOLD_NS past their completion, so the posts of every rank of that call are in before the estimate
 * is made; a post later than the transfer's completion belongs to a later call and is not used. */
#include "det_xstart.h"
#include "c4_err.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define HOLD_NS 50000000ull /* 50 ms: a collective's transfers complete within a few ms */
#define COMMS 1024          /* communicators tracked (open addressing; more share slot 0) */
#define QUEUE (1 << 18)
#define CELLS (1 << 18) /* the matrix's cell table */
#define USUAL_CLASSES 4
#define WARM 8    /* transfers a cell's usual is learned from before it is used */
#define STEP 0.1f /* the most one transfer moves it (log): a slowdown moves it slowly */
#define RATE 0.02f
/* a cell this much slower than its size class's fastest (log 1.5) waits behind another phase */
#define LATER 0.405f
#define EPOCH_NS 2000000000ull /* how often a size class's fastest is read afresh */

/* A communicator's latest posts, ascending: the RECENT largest seen (a collective's last
 * arrivals; a later call's posts push them out only when that call's records come within the
 * hold). */
#define RECENT 64
#define DECIDE 64  /* comparisons of the estimates before a communicator's way is told */
#define RECHECK 64 /* transfers a told way's misses are counted over */
enum { WAY_UNTOLD = 0, WAY_COLLECTIVE, WAY_PAIRWISE, WAY_STEP, WAY_NONE };
enum { EST_COLLECTIVE, EST_PAIRWISE, EST_STEP, ESTIMATES }; /* the estimates compared */
struct comm_posts {
  uint64_t comm;
  uint64_t latest; /* the latest post seen on it; 0: the slot is free */
  int n;
  int way;                   /* WAY_*: which start estimate its transfers follow */
  int compared;              /* comparisons made towards telling it */
  int with[ESTIMATES];       /* of which each estimate had a value in (peer's posts known) */
  int seen, missed;          /* told: transfers of this window, and those without its way's */
  int retelling;             /* sent back to be told: its cells' usuals are of another way */
  float unsteady[ESTIMATES]; /* summed change between a cell's successive times, by EST_* */
  uint64_t recent[RECENT];
};

/* A rank's latest posts on a communicator, ascending (pairwise starts and steps). A chained
 * step's peer post is found while the transfer is held (HOLD_NS, 50 ms): a ring of 3 ms steps
 * posts 17 in that time, or 34 with its sends and receives posted apart. */
#define RANK_SLOTS (1 << 16) /* open addressing; a rank not placed within PROBE has none */
#define RANK_RECENT 64
#define PROBE 64
struct rank_posts {
  uint64_t comm;
  int32_t rank; /* + 1; 0: the slot is free */
  int32_t n;
  uint64_t total; /* posts ever kept: recent[0] is post number total - n of the rank's */
  uint64_t recent[RANK_RECENT];
};

struct held {
  uint64_t comm, bytes, t_post, t_done;
  uint64_t latest_then; /* the communicator's latest post when it was held */
  int cell;
  int order; /* transfers of the cell with the same post before it */
  int rank;  /* the rank that recorded it, -1: not known */
  int peer;  /* the rank at its other end, -1: not known */
};

/* A cell's usual log time per byte, per size class and order within a call (a cell can carry
 * two transfers of one call: a tree's reduce one way and the other tree's broadcast). */
struct usual {
  int16_t key[USUAL_CLASSES]; /* size class + 64 x order; -1: unused */
  uint8_t n[USUAL_CLASSES];
  float v[USUAL_CLASSES];
  uint64_t last_post; /* the post of the cell's last transfer, and how many shared it */
  uint8_t same_post;
  uint8_t frozen;        /* a verdict stands on the cell: its usual is not learned */
  uint8_t way;           /* WAY_* its usual was learned under (untold: the collective's) */
  int16_t last_key;      /* size class + 64 x order of its last transfer compared, -1 */
  float last[ESTIMATES]; /* that transfer's log time per byte, by each estimate (NAN: none) */
  uint64_t last_done;    /* and its completion (its other end's record is the same transfer) */
};

static struct {
  struct comm_posts comm[COMMS];
  struct rank_posts *ranks; /* [RANK_SLOTS], made on the first post that names its rank */
  struct usual *usual;      /* [CELLS], made on first use */
  float fastest[64];        /* per size class, the least usual of its last epoch or since */
  float epoch_least[64];    /* the least of this epoch's */
  uint64_t epoch_end[64];   /* when this epoch ends (trace time); 0: none begun */
  struct held *q;           /* a ring, [head, tail) */
  size_t head, tail;
  uint64_t untracked; /* records whose post was not kept as their own (det_xstart_untracked) */
  uint64_t left_out;  /* transfers no start could be estimated for (det_xstart_left_out) */
} xs;

static uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

/* The slot of comm: its own, a free one it takes, or slot 0 when the table is full. */
static struct comm_posts *slot(uint64_t comm) {
  size_t i = mix(comm) & (COMMS - 1);
  for (int n = 0; n < COMMS; n++, i = (i + 1) & (COMMS - 1)) {
    if (xs.comm[i].comm == comm) return &xs.comm[i];
    if (!xs.comm[i].latest) {
      xs.comm[i].comm = comm;
      return &xs.comm[i];
    }
  }
  return &xs.comm[0];
}

/* The first index of the ascending recent[0..n) holding a post later than t (n if none). */
static int after(const uint64_t *recent, int n, uint64_t t) {
  int lo = 0, hi = n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (recent[mid] <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The latest of recent[0..n) not after t, 0 if none is kept. */
static uint64_t latest_by(const uint64_t *recent, int n, uint64_t t) {
  int i = after(recent, n, t);
  return i ? recent[i - 1] : 0;
}

/* t into the ascending recent[0..*n) of room cap: kept once, the oldest out when full. Returns 1
 * when t is new there. */
static int keep_post(uint64_t *recent, int *n, int cap, uint64_t t) {
  int i = after(recent, *n, t);
  if (i > 0 && recent[i - 1] == t) return 0; /* kept already (a rank posts many) */
  if (*n == cap) {
    if (i == 0) return 0; /* older than every one kept */
    memmove(recent, recent + 1, (size_t)(i - 1) * sizeof *recent);
    recent[i - 1] = t;
    return 1;
  }
  memmove(recent + i + 1, recent + i, (size_t)(*n - i) * sizeof *recent);
  recent[i] = t;
  (*n)++;
  return 1;
}

/* The number of post t among p's (from 0, in time order), or C4_NONE when t is not kept. */
static int64_t post_number(const struct rank_posts *p, uint64_t t) {
  int i = p ? after(p->recent, p->n, t) - 1 : C4_NONE;
  if (i < 0 || p->recent[i] != t) return C4_NONE;
  return (int64_t)(p->total - (uint64_t)p->n) + i;
}

/* p's post number k, 0 when it is not kept (or p is NULL). */
static uint64_t post_of_number(const struct rank_posts *p, int64_t k) {
  if (!p || k < 0) return 0;
  int64_t i = k - (int64_t)(p->total - (uint64_t)p->n);
  return i >= 0 && i < p->n ? p->recent[i] : 0;
}

/* The posts of rank on comm: its slot, a free one it takes (make: 1), or NULL. */
static struct rank_posts *rank_slot(uint64_t comm, int rank, int make) {
  if (rank < 0 || rank == INT32_MAX) return NULL;
  if (!xs.ranks && (!make || !(xs.ranks = calloc(RANK_SLOTS, sizeof *xs.ranks)))) return NULL;
  size_t i = mix(comm ^ (uint64_t)rank * 0x9e3779b97f4a7c15ull) & (RANK_SLOTS - 1);
  for (int n = 0; n < PROBE; n++, i = (i + 1) & (RANK_SLOTS - 1)) {
    struct rank_posts *p = &xs.ranks[i];
    if (p->rank == rank + 1 && p->comm == comm) return p;
    if (!p->rank) {
      if (!make) return NULL;
      *p = (struct rank_posts){.comm = comm, .rank = rank + 1};
      return p;
    }
  }
  return NULL;
}

void det_xstart_post(uint64_t comm, int rank, uint64_t t_post) {
  struct comm_posts *c = slot(comm);
  if (!t_post) return;
  int untracked = c->comm != comm; /* the communicators' table is full: it shares slot 0 */
  if (t_post > c->latest) c->latest = t_post;
  keep_post(c->recent, &c->n, RECENT, t_post);
  struct rank_posts *p = rank_slot(comm, rank, 1);
  if (p)
    p->total += (uint64_t)keep_post(p->recent, &p->n, RANK_RECENT, t_post);
  else if (rank >= 0 && rank != INT32_MAX)
    untracked = 1; /* its transfers start as its communicator's do */
  xs.untracked += (uint64_t)untracked;
}

uint64_t det_xstart_untracked(void) { return xs.untracked; }

uint64_t det_xstart_left_out(void) { return xs.left_out; }

static int make_usual(void) {
  if (xs.usual) return 0;
  if (!(xs.usual = malloc(CELLS * sizeof *xs.usual))) return C4_ENOMEM;
  memset(xs.usual, 0xff, CELLS * sizeof *xs.usual); /* key -1 */
  for (int c = 0; c < CELLS; c++) {
    xs.usual[c].last_post = 0;
    xs.usual[c].same_post = 0;
    xs.usual[c].frozen = 0;
    xs.usual[c].way = WAY_COLLECTIVE;
    xs.usual[c].last_done = 0;
  }
  for (int c = 0; c < 64; c++) {
    xs.fastest[c] = INFINITY;
    xs.epoch_least[c] = INFINITY;
    xs.epoch_end[c] = 0;
  }
  return 0;
}

/* The transfer's order among its cell's transfers posted at the same time (one call: records
 * come in completion order), 0..3. */
static int order_in_call(int cell, uint64_t t_post) {
  struct usual *u = &xs.usual[cell];
  if (u->last_post != t_post) {
    u->last_post = t_post;
    u->same_post = 0;
  }
  return u->same_post < 3 ? u->same_post++ : 3;
}

int det_xstart_hold(uint64_t comm, int cell, int rank, int peer, uint64_t bytes, uint64_t t_post,
                    uint64_t t_done) {
  if (!xs.q && !(xs.q = malloc(QUEUE * sizeof *xs.q))) return C4_ENOMEM;
  if (cell < 0 || cell >= CELLS || make_usual() != 0) return C4_EINVAL;
  if (xs.tail - xs.head == QUEUE) return C4_EAGAIN;
  xs.q[xs.tail++ & (QUEUE - 1)] = (struct held){.comm = comm,
                                                .bytes = bytes,
                                                .t_post = t_post,
                                                .t_done = t_done,
                                                .latest_then = slot(comm)->latest,
                                                .cell = cell,
                                                .order = order_in_call(cell, t_post),
                                                .rank = rank,
                                                .peer = peer};
  return 0;
}

/* A held transfer's start if it goes as its pair is in: the later of its post and its peer's
 * latest post before its completion; 0 when the peer's posts are not known. */
static uint64_t pairwise_start(const struct held *h) {
  const struct rank_posts *p = rank_slot(h->comm, h->peer, 0);
  uint64_t peer = p ? latest_by(p->recent, p->n, h->t_done - 1) : 0;
  if (!peer) return 0;
  return peer > h->t_post ? peer : h->t_post;
}

/* A held transfer's start if it is a step of a chained call: the later of its post and its
 * peer's post of the same step (its post's number among the peer's); 0 when that is not known,
 * or not before the transfer's completion. Numbered as it is released, not as it is held: an
 * earlier post of its rank may come in after it (records come in completion order). */
static uint64_t step_start(const struct held *h) {
  int64_t step = post_number(rank_slot(h->comm, h->rank, 0), h->t_post);
  uint64_t peer = post_of_number(rank_slot(h->comm, h->peer, 0), step);
  if (!peer || peer >= h->t_done) return 0;
  return peer > h->t_post ? peer : h->t_post;
}

/* A communicator's way once it has DECIDE comparisons: the collective's unless the pairwise or
 * the step estimate (each counted only when it had a value in 7 of 8 of them) varies less by a
 * fifth, then the steadier of those two, each by its mean change. */
static int told_way(const struct comm_posts *c) {
  float mean[ESTIMATES];
  for (int e = 0; e < ESTIMATES; e++)
    mean[e] = 8 * c->with[e] >= 7 * c->compared ? c->unsteady[e] / (float)c->with[e] : INFINITY;
  float coll = mean[EST_COLLECTIVE];
  if (!(mean[EST_PAIRWISE] < 0.8f * coll) && !(mean[EST_STEP] < 0.8f * coll)) return WAY_COLLECTIVE;
  return mean[EST_PAIRWISE] < mean[EST_STEP] ? WAY_PAIRWISE : WAY_STEP;
}

/* One more comparison of the estimates towards telling c's way: each one's change from the
 * cell's last transfer of the same size class and order, in log time per byte (an estimate
 * without a value, 0, is left out of this one). */
static void compare_ways(struct comm_posts *c, const struct held *h,
                         const uint64_t start[ESTIMATES]) {
  if (c->way != WAY_UNTOLD || !xs.usual || h->t_done <= start[EST_COLLECTIVE]) return;
  struct usual *u = &xs.usual[h->cell];
  int key = 63 - __builtin_clzll(h->bytes) + 64 * h->order;
  float v[ESTIMATES];
  for (int e = 0; e < ESTIMATES; e++)
    v[e] = start[e] && start[e] < h->t_done
               ? (float)log((double)(h->t_done - start[e]) / (double)h->bytes)
               : NAN;
  if (u->last_key == key && u->last_done != h->t_done) {
    for (int e = 0; e < ESTIMATES; e++)
      if (!isnan(v[e]) && !isnan(u->last[e])) {
        c->unsteady[e] += fabsf(v[e] - u->last[e]);
        c->with[e]++;
      }
    if (++c->compared >= DECIDE) c->way = told_way(c);
  }
  u->last_key = (int16_t)key;
  memcpy(u->last, v, sizeof v);
  u->last_done = h->t_done;
}

/* A cell given its communicator's way's starts: if its usual was learned under another way
 * (the collective's, while its communicator was untold), it learns it afresh. */
static void to_way(int cell, int way) {
  struct usual *u = &xs.usual[cell];
  if (u->way == way) return;
  for (int a = 0; a < USUAL_CLASSES; a++)
    u->key[a] = -1;
  u->way = (uint8_t)way;
}

/* Counts a transfer of a communicator told pairwise or by step, missed when its way's estimate
 * could not be made; a window of RECHECK with a quarter missed sends a pairwise communicator back
 * to be told again, and leaves a communicator of chained steps without estimates (WAY_NONE):
 * its ranks' posts are numbered apart for good (a lost record, a rank's stream joined late), and
 * the collective's start, all that is left, is noise there (healthy rings raised link verdicts
 * at up to 9.75x on it). */
static void still_told(struct comm_posts *c, int missed) {
  c->missed += missed;
  if (++c->seen < RECHECK) return;
  if (4 * c->missed >= c->seen && c->way == WAY_STEP) {
    c->way = WAY_NONE;
  } else if (4 * c->missed >= c->seen) {
    c->way = WAY_UNTOLD;
    c->retelling = 1;
    c->compared = 0;
    memset(c->with, 0, sizeof c->with);
    memset(c->unsteady, 0, sizeof c->unsteady);
  }
  c->seen = c->missed = 0;
}

int det_xstart_release(uint64_t now, struct det_xs_sample *out) {
  while (xs.head != xs.tail) {
    struct held *h = &xs.q[xs.head & (QUEUE - 1)];
    if (h->t_done + HOLD_NS > now) return 0;
    xs.head++;
    struct comm_posts *c = slot(h->comm);
    uint64_t start = h->t_post, latest = latest_by(c->recent, c->n, h->t_done - 1);
    if (h->latest_then > start && h->latest_then < h->t_done) start = h->latest_then;
    if (latest > start) start = latest;
    /* without the peer's posts (wrap mode's receives) the collective's is all there is */
    uint64_t est[ESTIMATES] = {
        [EST_COLLECTIVE] = start, [EST_PAIRWISE] = pairwise_start(h), [EST_STEP] = step_start(h)};
    compare_ways(c, h, est);
    int e = c->way == WAY_PAIRWISE ? EST_PAIRWISE : c->way == WAY_STEP ? EST_STEP : -1;
    if (e >= 0 && !est[e]) {
      still_told(c, 1);
      xs.left_out++;
      continue; /* left out: the collective's start would be noise on a cell of this way */
    }
    if (c->way == WAY_NONE || (c->way == WAY_UNTOLD && c->retelling)) {
      xs.left_out++;
      continue; /* no estimate to trust, or its cells' usuals are another way's */
    }
    c->retelling &= c->way == WAY_UNTOLD;
    if (e >= 0) {
      still_told(c, 0);
      to_way(h->cell, c->way);
      start = est[e];
    } else if (c->way == WAY_COLLECTIVE) {
      to_way(h->cell, WAY_COLLECTIVE);
    }
    *out = (struct det_xs_sample){.cell = h->cell,
                                  .order = h->order,
                                  .bytes = h->bytes,
                                  .t_start = start,
                                  .t_done = h->t_done};
    return 1;
  }
  return 0;
}

static float clampf(float x, float lim) { return x > lim ? lim : x < -lim ? -lim : x; }

/* Which phase a usual puts its cell in at time t: 0 near the fastest cells of its size class, 1
 * well above them (it waits behind another phase of the call, as a tree's broadcast behind its
 * reduce). The fastest goes down at once and up only when an epoch of EPOCH_NS ends, to that
 * epoch's least: a usual that comes up, or stops coming, does not hold it low for good (one cell
 * read fast once put every other cell of its class in a later phase, and a hand-written 4-rank
 * minimal trace's matrix stopped judging 5 s in), and a cell's own later transfer of a call (the
 * other tree's broadcast, twice as long) does not lift it (when it did, broadcast cells read as
 * the first phase, and under a slow spine five false verdicts followed the spine's in a 64-rank
 * minimal trace). An epoch is time, not a count of updates: at 4,096 ranks 256 updates were
 * often one phase's alone, the broadcast's least became the fastest, and minimal traces drew
 * 8,185 extra verdicts. */
static int phase_of(int cls, float usual, uint64_t t) {
  if (t >= xs.epoch_end[cls]) {
    if (xs.epoch_end[cls] && isfinite(xs.epoch_least[cls])) xs.fastest[cls] = xs.epoch_least[cls];
    xs.epoch_least[cls] = INFINITY;
    xs.epoch_end[cls] = t + EPOCH_NS;
  }
  if (usual < xs.fastest[cls]) xs.fastest[cls] = usual;
  if (usual < xs.epoch_least[cls]) xs.epoch_least[cls] = usual;
  return usual - xs.fastest[cls] > LATER ? 1 : 0;
}

float det_xstart_usual(int cell, int order, int cls, float v, uint64_t t, int *phase) {
  if (cell < 0 || cell >= CELLS || cls < 0 || cls >= 64 || make_usual() != 0) return NAN;
  struct usual *u = &xs.usual[cell];
  int key = cls + 64 * order, a = 0;
  while (a < USUAL_CLASSES && u->key[a] != key && u->key[a] != -1)
    a++;
  if (a == USUAL_CLASSES) return NAN;
  if (u->key[a] == -1) { /* the first one */
    u->key[a] = (int16_t)key;
    u->n[a] = 1;
    u->v[a] = v;
    return NAN;
  }
  float dev = v - u->v[a];
  if (u->n[a] < WARM) { /* learning: the least so far, which a blip (always slower) leaves be */
    if (dev < 0) u->v[a] = v;
    u->n[a]++;
    return NAN;
  }
  if (!u->frozen) u->v[a] += RATE * clampf(dev, STEP);
  *phase = phase_of(cls, u->v[a], t);
  return dev;
}

void det_xstart_freeze(int cell, int frozen) {
  if (xs.usual && cell >= 0 && cell < CELLS) xs.usual[cell].frozen = (uint8_t)frozen;
}

void det_xstart_reset(void) {
  free(xs.q);
  free(xs.usual);
  free(xs.ranks);
  memset(&xs, 0, sizeof xs);
}
