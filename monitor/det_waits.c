/* det_waits.c -- per process, its recent receive intervals (det_waits.h), in a hash table that
 * grows with the job. */
#include "det_waits.h"

#include <endian.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "c4_hash.h"
#include "det_index.h"

#define WAITS_KEPT 64 /* merged receive intervals kept per process */

#define WAITS_BLOCK 8 /* places summed up together, so that a look skips what it cannot use */
#define WAITS_BLOCKS (WAITS_KEPT / WAITS_BLOCK)

/* A process's intervals. Its first cache line holds what each receive reads (the key, the newest
 * interval, the latest end), so that the per-record path touches one line of it: the newest
 * interval lives here while receives merge into it, and its place in t0/t1 is written when the
 * next one starts (or before t0/t1 are read). Per block of places, the latest end of any interval
 * ever written there (at least that of those it holds): a look at a time span reads the blocks
 * that reach into it, not all 64 places, and writing a place reads none. */
struct waits {
  _Alignas(64) const struct c4_det_job *job;
  uint32_t pid;
  unsigned next;       /* intervals taken so far; the newest is cur, its place (next - 1) % KEPT */
  int placed;          /* cur is at its place */
  uint64_t t1_max;     /* the latest end of any interval taken */
  uint64_t cur0, cur1; /* the newest interval */
  char host[C4_HOST_MAX];
  _Alignas(64) uint64_t block_t1[WAITS_BLOCKS];
  uint64_t t0[WAITS_KEPT], t1[WAITS_KEPT];
};

/* Processes in arrival order, in chunks mapped as the job grows (a handle is a position, and
 * never moves): a 16,384-rank job has 16,384 of them, a 16-rank one one chunk's first pages. */
#define CHUNK_BITS 12
#define CHUNK (1 << CHUNK_BITS)
static struct waits *chunks[DET_WAITS_MAX / CHUNK];
static int nitems;

static struct waits *item(int at) { return &chunks[at >> CHUNK_BITS][at & (CHUNK - 1)]; }

/* The index: a slot holds an item's position + 1 (0: empty) and 32 bits of its hash, so that a
 * probe run is walked without reading the items it passes (a kilobyte each, apart). At most half
 * full, so that a process not in it is known after a short run; it doubles (and is filled again
 * from the items) when it would be more: a fixed 8,192 processes left half of a 16,384-rank job's
 * waits uncounted, its pipeline stages' receive time read as their compute. */
struct waits_slot {
  uint32_t tag;
  int32_t pos;
};
#define FIRST_SLOTS 1024
static struct waits_slot *slots; /* nslots (a power of two), mapped on first use */
static size_t nslots;
static uint64_t untracked; /* receives of processes not kept */
static unsigned epoch;

/* Per job, its processes by launcher rank (at: handle + 1, 0: none; grown by doubling, up to
 * DET_WAITS_MAX): a trace whose communicator records name no host (the minimal schema) ties a
 * communicator's ranks to processes only through their rank numbers. */
static struct per_job {
  int *at;
  int cap;
  int ranks;    /* the highest launcher rank that reported a receive, + 1 */
  int receives; /* the job has reported receive records */
  unsigned gen; /* changes when a rank is bound to another process */
} per_job[C4_DET_MAX_JOBS];

/* A process's host is its first C4_HOST_MAX - 1 bytes up to a NUL: a record's field need not
 * hold one. */
#define HOST_LEN (C4_HOST_MAX - 1)

/* The hash of (host, pid), a word of the host at a time (a byte at a time was a tenth of a
 * replay's instructions): the bytes from its first NUL on, and byte HOST_LEN, are masked out.
 * host: a C4_HOST_MAX buffer, readable whole. */
static uint64_t hash_of(const char *host, uint32_t pid) {
  uint64_t h = (C4_FNV_BASIS_OLD ^ pid) * C4_FNV_PRIME;
  for (int i = 0; i < C4_HOST_MAX; i += 8) {
    uint64_t v;
    memcpy(&v, host + i, 8);
    v = le64toh(v); /* byte k of the host is bits 8k..8k+7 */
    if (i + 8 == C4_HOST_MAX) v &= 0x00ffffffffffffffull;
    /* the lowest byte flagged is the first zero byte (borrows only flag bytes above one) */
    uint64_t zero = (v - 0x0101010101010101ull) & ~v & 0x8080808080808080ull;
    if (zero) v &= ((zero & -zero) >> 7) - 1;
    h = (h ^ v) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 32;
    if (zero) break;
  }
  h *= 0xff51afd7ed558ccdull;
  return h ^ h >> 33;
}

static int same_host(const char *kept, const char *host) {
  for (int i = 0; i < HOST_LEN; i++) {
    if (kept[i] != host[i]) return 0;
    if (!host[i]) return 1;
  }
  return 1; /* kept ends at HOST_LEN */
}

/* The slot of (host, pid), walking from its hash's place: its own, else the empty one ending the
 * run (the index is never full). */
static struct waits_slot *slot_of(const struct c4_det_job *job, const char *host, uint32_t pid,
                                  uint64_t h) {
  uint32_t tag = (uint32_t)(h >> 32);
  for (uint64_t i = h & (nslots - 1);; i = (i + 1) & (nslots - 1)) {
    struct waits_slot *s = &slots[i];
    if (!s->pos) return s;
    const struct waits *w = item(s->pos - 1);
    if (s->tag == tag && w->job == job && w->pid == pid && same_host(w->host, host)) return s;
  }
}

/* An index of n slots holding every item. Returns 0, or C4_ENOMEM when it cannot be mapped (the
 * old one stays). */
static int index_of_size(size_t n) {
  struct waits_slot *t = det_table_alloc(n * sizeof *t);
  if (!t) return C4_ENOMEM;
  for (int at = 0; at < nitems; at++) {
    const struct waits *w = item(at);
    uint64_t h = hash_of(w->host, w->pid);
    uint64_t i = h & (n - 1);
    while (t[i].pos)
      i = (i + 1) & (n - 1);
    t[i] = (struct waits_slot){.tag = (uint32_t)(h >> 32), .pos = at + 1};
  }
  det_table_free(slots, nslots * sizeof *slots);
  slots = t;
  nslots = n;
  return 0;
}

/* Room for one more process: a chunk for it, and an index at most half full with it. Returns 0,
 * C4_ENOMEM, or C4_NONE when DET_WAITS_MAX processes are kept already. */
static int room_for_one(void) {
  if (nitems == DET_WAITS_MAX) return C4_NONE;
  if (!chunks[nitems >> CHUNK_BITS] &&
      !(chunks[nitems >> CHUNK_BITS] = det_table_alloc(CHUNK * sizeof(struct waits))))
    return C4_ENOMEM;
  return (size_t)(nitems + 1) * 2 > nslots ? index_of_size(2 * nslots) : 0;
}

/* Notes that launcher rank of job is the process at handle at (the newest such process wins:
 * a rank restarted is a new process). A rank that does not fit is not noted. */
static void note_rank(const struct c4_det_job *job, int rank, int at) {
  struct per_job *b = &per_job[job->id];
  if (rank < 0 || rank >= DET_WAITS_MAX) return;
  if (rank >= b->cap) {
    int cap = b->cap ? b->cap : 1024;
    while (cap <= rank)
      cap *= 2;
    int *t = realloc(b->at, (size_t)cap * sizeof *t);
    if (!t) return;
    memset(t + b->cap, 0, (size_t)(cap - b->cap) * sizeof *t);
    b->at = t;
    b->cap = cap;
  }
  if (b->at[rank]) b->gen++; /* a process replaced: handles taken by number are stale */
  b->at[rank] = at + 1;
}

/* The handle of (host, pid) of job, whose hash is h; with add, a new one when it has none and
 * there is room (noted as launcher rank rank's). C4_NONE otherwise. */
static int find_at(const struct c4_det_job *job, const char *host, uint32_t pid, uint64_t h,
                   int add, int rank) {
  if (!slots && (!add || index_of_size(FIRST_SLOTS) != 0)) return C4_NONE;
  struct waits_slot *s = slot_of(job, host, pid, h);
  if (s->pos) return s->pos - 1;
  if (!add || room_for_one() != 0) return C4_NONE;
  s = slot_of(job, host, pid, h); /* the index may have grown */
  struct waits *w = item(nitems);
  *s = (struct waits_slot){.tag = (uint32_t)(h >> 32), .pos = ++nitems};
  w->job = job;
  w->pid = pid;
  size_t len = strnlen(host, HOST_LEN);
  memcpy(w->host, host, len); /* the rest is zero: the chunk is mapped zeroed */
  note_rank(job, rank, nitems - 1);
  return nitems - 1;
}

int det_waits_find(const struct c4_det_job *job, const char *host, uint32_t pid) {
  return host[0] ? find_at(job, host, pid, hash_of(host, pid), 0, -1) : C4_NONE;
}

int det_waits_find_rank(const struct c4_det_job *job, int rank) {
  const struct per_job *b = &per_job[job->id];
  return rank >= 0 && rank < b->cap && b->at[rank] ? b->at[rank] - 1 : C4_NONE;
}

int det_waits_job_ranks(const struct c4_det_job *job) { return per_job[job->id].ranks; }

unsigned det_waits_rank_gen(const struct c4_det_job *job) { return per_job[job->id].gen; }

const char *det_waits_host(int at) { return at >= 0 && at < nitems ? item(at)->host : ""; }

int det_waits_count(void) { return nitems; }

unsigned det_waits_epoch(void) { return epoch; }

uint64_t det_waits_untracked(void) { return untracked; }

static int takes(const struct c4_xfer_record *x) {
  return x->dir == C4_DIR_RECV && x->status == C4_XFER_OK && x->t_done > x->t_posted;
}

void det_waits_prefetch(const struct c4_xfer_record *x, int stage) {
  if (!slots || !takes(x)) return;
  uint64_t h = hash_of(x->self.host, x->self.pid);
  const struct waits_slot *s = &slots[h & (nslots - 1)];
  if (stage == 0) {
    __builtin_prefetch(s);
    return;
  }
  for (int n = 0; n < 4 && s->pos; n++, s = &slots[(size_t)(s - slots + 1) & (nslots - 1)])
    if (s->tag == (uint32_t)(h >> 32)) { /* the run's first slots: the common case */
      __builtin_prefetch(item(s->pos - 1));
      return;
    }
}

/* Writes the newest interval at its place. */
static void place(struct waits *w) {
  unsigned i = (w->next - 1) % WAITS_KEPT;
  w->t0[i] = w->cur0;
  w->t1[i] = w->cur1;
  if (w->cur1 > w->block_t1[i / WAITS_BLOCK]) w->block_t1[i / WAITS_BLOCK] = w->cur1;
  w->placed = 1;
}

/* [t0, t1] joins the intervals of the process at handle at: merged into the newest one when
 * they overlap, else as the newest. */
static void add_interval(int at, uint64_t t0, uint64_t t1) {
  struct waits *w = item(at);
  if (t1 > w->t1_max) w->t1_max = t1;
  if (w->next && t0 <= w->cur1 && t1 >= w->cur0) {
    if (t0 < w->cur0) w->cur0 = t0, w->placed = 0;
    if (t1 > w->cur1) w->cur1 = t1, w->placed = 0;
    return;
  }
  if (w->next && !w->placed) place(w); /* the newest closes */
  w->placed = 0;
  w->cur0 = t0;
  w->cur1 = t1;
  w->next++;
}

void det_waits_take(const struct c4_det_job *job, const struct c4_xfer_record *x) {
  if (!takes(x)) return;
  int at =
      find_at(job, x->self.host, x->self.pid, hash_of(x->self.host, x->self.pid), 1, x->self.rank);
  struct per_job *b = &per_job[job->id];
  b->receives = 1;
  if (x->self.rank >= b->ranks && x->self.rank < DET_WAITS_MAX) b->ranks = x->self.rank + 1;
  if (at < 0) {
    untracked++;
    return;
  }
  add_interval(at, x->t_posted, x->t_done);
}

int det_waits_job_has_receives(const struct c4_det_job *job) { return per_job[job->id].receives; }

int det_waits_add(const struct c4_det_job *job, const char *host, uint32_t pid) {
  if (!host[0]) return C4_NONE;
  int at = find_at(job, host, pid, hash_of(host, pid), 1, -1);
  if (at < 0) untracked++;
  return at;
}

int det_waits_add_rank(const struct c4_det_job *job, int rank) {
  int at = det_waits_find_rank(job, rank);
  if (at >= 0 || rank < 0) return at;
  static const char no_host[C4_HOST_MAX]; /* hash_of reads a whole host buffer */
  at = find_at(job, no_host, (uint32_t)rank, hash_of(no_host, (uint32_t)rank), 1, rank);
  if (at < 0) untracked++;
  return at;
}

void det_waits_take_span(int at, uint64_t t0, uint64_t t1) {
  if (at >= 0 && at < nitems && t1 > t0) add_interval(at, t0, t1);
}

void det_waits_prefetch_at(int at, int stage) {
  if (at < 0 || at >= nitems) return;
  const struct waits *w = item(at);
  if (stage == 0) {
    __builtin_prefetch(w);
    __builtin_prefetch(w->block_t1);
  } else if (w->next) { /* the newest block, which a look reads unless the process is idle */
    unsigned i = (w->next - 1) % WAITS_KEPT / WAITS_BLOCK * WAITS_BLOCK;
    __builtin_prefetch(&w->t0[i]);
    __builtin_prefetch(&w->t1[i]);
  }
}

uint64_t det_waits_blocked(int at, uint64_t t0, uint64_t t1) {
  if (at < 0 || at >= nitems) return 0;
  struct waits *w = item(at);
  if (t1 <= t0 || t0 >= w->t1_max) return 0; /* no interval reaches past t0 */
  if (!w->placed) place(w);
  uint64_t sum = 0, covered = t0; /* newest first is not start order: sum the clipped union */
  unsigned n = w->next < WAITS_KEPT ? w->next : WAITS_KEPT;
  for (;;) { /* intervals are few and nearly sorted: take the earliest start past covered */
    uint64_t best0 = UINT64_MAX, best1 = 0;
    for (unsigned k = 0; k * WAITS_BLOCK < n; k++) {
      if (w->block_t1[k] <= covered) continue; /* none of it reaches past covered */
      unsigned end = (k + 1) * WAITS_BLOCK < n ? (k + 1) * WAITS_BLOCK : n;
      for (unsigned i = k * WAITS_BLOCK; i < end; i++) {
        uint64_t a = w->t0[i] > covered ? w->t0[i] : covered, b = w->t1[i] < t1 ? w->t1[i] : t1;
        if (b > a && a < best0) best0 = a, best1 = b;
      }
    }
    if (best0 == UINT64_MAX) return sum;
    sum += best1 - best0;
    covered = best1;
  }
}

void det_waits_reset(void) {
  det_table_free(slots, nslots * sizeof *slots);
  for (size_t c = 0; c < sizeof chunks / sizeof *chunks; c++) {
    det_table_free(chunks[c], CHUNK * sizeof(struct waits));
    chunks[c] = NULL;
  }
  for (int j = 0; j < C4_DET_MAX_JOBS; j++) {
    free(per_job[j].at);
    per_job[j] = (struct per_job){0};
  }
  slots = NULL;
  nslots = 0;
  nitems = 0;
  untracked = 0;
  epoch++;
}
