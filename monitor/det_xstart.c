/* det_xstart.c -- start times for transfers whose records lack t_first. A transfer cannot move
 * bytes before every rank it waits on has posted; in a collective every rank waits for the last
 * one to arrive, so the start is taken as the latest post seen on the transfer's communicator by
 * its completion (its own post at least). Records are held HOLD_NS past their completion, so the
 * posts of every rank of that collective are in before the estimate is made; a post later than
 * the transfer's completion belongs to a later call and is not used. */
#include "det_xstart.h"

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

struct comm_posts {
  uint64_t comm;
  uint64_t latest; /* the latest post seen on it */
};

struct held {
  uint64_t comm, bytes, t_post, t_done;
  uint64_t latest_then; /* the communicator's latest post when it was held */
  int cell;
};

/* A cell's usual log time per byte, per size class. */
struct usual {
  int8_t cls[USUAL_CLASSES]; /* -1: unused */
  uint8_t n[USUAL_CLASSES];
  float v[USUAL_CLASSES];
};

static struct {
  struct comm_posts comm[COMMS];
  struct usual *usual; /* [CELLS], made on first use */
  float fastest[64];   /* per size class, the least usual of any cell */
  struct held *q;      /* a ring, [head, tail) */
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

void det_xstart_post(uint64_t comm, uint64_t t_post) {
  struct comm_posts *c = slot(comm);
  if (t_post > c->latest) c->latest = t_post;
}

int det_xstart_hold(uint64_t comm, int cell, uint64_t bytes, uint64_t t_post, uint64_t t_done) {
  if (!xs.q && !(xs.q = malloc(QUEUE * sizeof *xs.q))) return -1;
  if (xs.tail - xs.head == QUEUE) return -1;
  xs.q[xs.tail++ & (QUEUE - 1)] = (struct held){.comm = comm,
                                                .bytes = bytes,
                                                .t_post = t_post,
                                                .t_done = t_done,
                                                .latest_then = slot(comm)->latest,
                                                .cell = cell};
  return 0;
}

int det_xstart_release(uint64_t now, struct det_xs_sample *out) {
  while (xs.head != xs.tail) {
    struct held *h = &xs.q[xs.head & (QUEUE - 1)];
    if (h->t_done + HOLD_NS > now) return 0;
    xs.head++;
    uint64_t start = h->t_post, latest = slot(h->comm)->latest;
    if (h->latest_then > start && h->latest_then < h->t_done) start = h->latest_then;
    if (latest > start && latest < h->t_done) start = latest;
    *out = (struct det_xs_sample){
        .cell = h->cell, .bytes = h->bytes, .t_start = start, .t_done = h->t_done};
    return 1;
  }
  return 0;
}

static float clampf(float x, float lim) { return x > lim ? lim : x < -lim ? -lim : x; }

/* Which phase a cell's usual puts it in: 0 near the fastest cells of its size class, 1 well
 * above them (it waits behind another phase of the call, as a tree's broadcast behind its
 * reduce). */
static int phase_of(int cls, float usual) {
  if (usual < xs.fastest[cls]) xs.fastest[cls] = usual;
  return usual - xs.fastest[cls] > LATER ? 1 : 0;
}

float det_xstart_usual(int cell, int cls, float v, int *phase) {
  if (cell < 0 || cell >= CELLS || cls < 0 || cls >= 64) return NAN;
  if (!xs.usual) {
    for (int c = 0; c < 64; c++)
      xs.fastest[c] = INFINITY;
    if (!(xs.usual = malloc(CELLS * sizeof *xs.usual))) return NAN;
    memset(xs.usual, 0xff, CELLS * sizeof *xs.usual); /* cls -1 */
  }
  struct usual *u = &xs.usual[cell];
  int a = 0;
  while (a < USUAL_CLASSES && u->cls[a] != cls && u->cls[a] != -1)
    a++;
  if (a == USUAL_CLASSES) return NAN;
  if (u->cls[a] == -1) { /* the first one */
    u->cls[a] = (int8_t)cls;
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
  u->v[a] += RATE * clampf(dev, STEP);
  *phase = phase_of(cls, u->v[a]);
  return dev;
}

void det_xstart_reset(void) {
  free(xs.q);
  free(xs.usual);
  memset(&xs, 0, sizeof xs);
}
