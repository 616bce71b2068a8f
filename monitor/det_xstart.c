/* det_xstart.c -- start times for transfers whose records lack t_first. A transfer cannot move
 * bytes before every rank it waits on has posted; in a collective every rank waits for the last
 * one to arrive, so the start is taken as the latest post seen on the transfer's communicator up
 * to its completion (its own post at least). Records are held HOLD_NS past their completion, so
 * the posts of every rank of that collective are in before the estimate is made; a post later
 * than the transfer's completion belongs to a later call and is not used. */
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

/* A communicator's latest posts, ascending: the RECENT largest seen (a collective's last
 * arrivals; a later call's posts push them out only when that call's records come within the
 * hold). */
#define RECENT 64
struct comm_posts {
  uint64_t comm;
  uint64_t latest; /* the latest post seen on it; 0: the slot is free */
  int n;
  uint64_t recent[RECENT];
};

struct held {
  uint64_t comm, bytes, t_post, t_done;
  uint64_t latest_then; /* the communicator's latest post when it was held */
  int cell;
  int order; /* transfers of the cell with the same post before it */
};

/* A cell's usual log time per byte, per size class and order within a call (a cell can carry
 * two transfers of one call: a tree's reduce one way and the other tree's broadcast). */
struct usual {
  int16_t key[USUAL_CLASSES]; /* size class + 64 x order; -1: unused */
  uint8_t n[USUAL_CLASSES];
  float v[USUAL_CLASSES];
  uint64_t last_post; /* the post of the cell's last transfer, and how many shared it */
  uint8_t same_post;
  uint8_t frozen; /* a verdict stands on the cell: its usual is not learned */
};

static struct {
  struct comm_posts comm[COMMS];
  struct usual *usual;  /* [CELLS], made on first use */
  float fastest[64];    /* per size class, the least usual of any cell (as last updated) */
  int fastest_cell[64]; /* the cell that holds it */
  struct held *q;       /* a ring, [head, tail) */
  size_t head, tail;
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

/* The first index of c->recent holding a post later than t (c->n if none). */
static int after(const struct comm_posts *c, uint64_t t) {
  int lo = 0, hi = c->n;
  while (lo < hi) {
    int mid = (lo + hi) / 2;
    if (c->recent[mid] <= t)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

/* The latest post on c not after t, 0 if none is kept. */
static uint64_t latest_by(const struct comm_posts *c, uint64_t t) {
  int i = after(c, t);
  return i ? c->recent[i - 1] : 0;
}

void det_xstart_post(uint64_t comm, uint64_t t_post) {
  struct comm_posts *c = slot(comm);
  if (!t_post) return;
  if (t_post > c->latest) c->latest = t_post;
  int i = after(c, t_post);
  if (i > 0 && c->recent[i - 1] == t_post) return; /* kept already (a rank posts many) */
  if (c->n == RECENT) {
    if (i == 0) return; /* older than every one kept */
    memmove(c->recent, c->recent + 1, (size_t)(i - 1) * sizeof *c->recent);
    c->recent[i - 1] = t_post;
    return;
  }
  memmove(c->recent + i + 1, c->recent + i, (size_t)(c->n - i) * sizeof *c->recent);
  c->recent[i] = t_post;
  c->n++;
}

static int make_usual(void) {
  if (xs.usual) return 0;
  if (!(xs.usual = malloc(CELLS * sizeof *xs.usual))) return C4_ENOMEM;
  memset(xs.usual, 0xff, CELLS * sizeof *xs.usual); /* key -1 */
  for (int c = 0; c < CELLS; c++) {
    xs.usual[c].last_post = 0;
    xs.usual[c].same_post = 0;
    xs.usual[c].frozen = 0;
  }
  for (int c = 0; c < 64; c++) {
    xs.fastest[c] = INFINITY;
    xs.fastest_cell[c] = -1;
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

int det_xstart_hold(uint64_t comm, int cell, uint64_t bytes, uint64_t t_post, uint64_t t_done) {
  if (!xs.q && !(xs.q = malloc(QUEUE * sizeof *xs.q))) return C4_ENOMEM;
  if (cell < 0 || cell >= CELLS || make_usual() != 0) return C4_EINVAL;
  if (xs.tail - xs.head == QUEUE) return C4_EAGAIN;
  xs.q[xs.tail++ & (QUEUE - 1)] = (struct held){.comm = comm,
                                                .bytes = bytes,
                                                .t_post = t_post,
                                                .t_done = t_done,
                                                .latest_then = slot(comm)->latest,
                                                .cell = cell,
                                                .order = order_in_call(cell, t_post)};
  return 0;
}

int det_xstart_release(uint64_t now, struct det_xs_sample *out) {
  while (xs.head != xs.tail) {
    struct held *h = &xs.q[xs.head & (QUEUE - 1)];
    if (h->t_done + HOLD_NS > now) return 0;
    xs.head++;
    uint64_t start = h->t_post, latest = latest_by(slot(h->comm), h->t_done - 1);
    if (h->latest_then > start && h->latest_then < h->t_done) start = h->latest_then;
    if (latest > start) start = latest;
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

/* Which phase a cell's usual puts it in: 0 near the fastest cells of its size class, 1 well
 * above them (it waits behind another phase of the call, as a tree's broadcast behind its
 * reduce). */
static int phase_of(int cell, int cls, float usual) {
  if (usual < xs.fastest[cls] || cell == xs.fastest_cell[cls]) {
    xs.fastest[cls] = usual;
    xs.fastest_cell[cls] = cell;
  }
  return usual - xs.fastest[cls] > LATER ? 1 : 0;
}

float det_xstart_usual(int cell, int order, int cls, float v, int *phase) {
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
  *phase = phase_of(cell, cls, u->v[a]);
  return dev;
}

void det_xstart_freeze(int cell, int frozen) {
  if (xs.usual && cell >= 0 && cell < CELLS) xs.usual[cell].frozen = (uint8_t)frozen;
}

void det_xstart_reset(void) {
  free(xs.q);
  free(xs.usual);
  memset(&xs, 0, sizeof xs);
}
