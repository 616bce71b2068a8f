/* det_ident.c -- the rank index: (host, pid) -> launcher rank, with a cache in front for the
 * per-transfer path. */
#include "det_ident.h"

#include <stdio.h>
#include <string.h>

#include "c4_hash.h"
#include "c4_record.h"

struct ident {
  char host[C4_HOST_MAX];
  uint32_t pid;
  int rank;
};
struct ident_key {
  const char *host;
  uint32_t pid;
};

#define IDENT_SLOTS (1 << 19) /* 2^18 processes */

static uint64_t ident_hash(const char *host, uint32_t pid) {
  return c4_fnv1a_str(C4_FNV_BASIS_OLD ^ pid, host);
}

static int ident_match(const void *item, const void *key) {
  const struct ident *e = item;
  const struct ident_key *k = key;
  return e->pid == k->pid && !strcmp(e->host, k->host);
}

static struct ident *ident_slot(struct det_idents *x, const char *host, uint32_t pid, int insert) {
  if (!x->index.nslots)
    x->index =
        (struct det_index){.item_size = sizeof(struct ident), .nslots = IDENT_SLOTS, .probes = 64};
  struct ident_key k = {host, pid};
  int added;
  struct ident *e =
      det_index_get(&x->index, ident_hash(host, pid), ident_match, &k, insert, &added);
  if (e && added) {
    e->pid = pid;
    snprintf(e->host, sizeof e->host, "%s", host);
    e->rank = -1;
  }
  return e;
}

/* Called for every transfer: a cache in front keeps the identity table (a hash of the whole host,
 * a probe, a string compare) out of the common case, the same process seen again. An entry (half
 * a cache line) holds the pid, the rank, the host's first 16 bytes and its identity; the caller's
 * host is a record's C4_HOST_MAX field, NUL-padded as the decoders leave it, so comparing 16 bytes
 * is exact for a shorter host, and a longer one is compared with its identity's. A process has
 * two places, sets of two entries in one cache line each, from two hashes of its pid and its
 * host's first 16 bytes: in containers every rank's process can have the same pid on every host,
 * and host names share their first letters, so with one place keyed by the pid and the host's
 * first letter ranks evicted each other on every transfer. A process goes to its first set while
 * that has room, so a look nearly always reads one line (it was two: both places, each a line
 * of its own), and the second only when the first does not hold it. */
struct seen_entry {
  uint32_t pid;
  int32_t rank;
  char host[16];
  const struct ident *id;
};
struct seen_set {
  _Alignas(64) struct seen_entry e[2];
};
#define SEEN_SETS (1 << 15)
struct det_ident_seen {
  struct seen_set set[SEEN_SETS];
};

static uint64_t seen_hash(const char *host, uint32_t pid) {
  uint64_t a, b;
  memcpy(&a, host, 8);
  memcpy(&b, host + 8, 8);
  return (a ^ (b << 29 | b >> 35) ^ pid) * 0x9e3779b97f4a7c15ull;
}

static struct seen_set *seen_place(const struct det_idents *x, uint64_t h, int which) {
  return &x->seen->set[(which ? h >> 24 : h >> 44) & (SEEN_SETS - 1)];
}

static int seen_is(const struct seen_entry *e, const char *host, uint32_t pid, int rank) {
  return e->id && e->pid == pid && e->rank == rank && !memcmp(e->host, host, 16) &&
         (!host[15] || !strcmp(e->id->host, host));
}

static int seen_in(const struct seen_set *set, const char *host, uint32_t pid, int rank) {
  return seen_is(&set->e[0], host, pid, rank) || seen_is(&set->e[1], host, pid, rank);
}

/* The entry e's process takes: its own (one at most: a rank it had before must not answer), else
 * a free one in its first set, then in its second, else one of the first set's. */
static struct seen_entry *seen_room(struct seen_set *a, struct seen_set *b, const struct ident *e,
                                    uint64_t h) {
  struct seen_entry *all[4] = {&a->e[0], &a->e[1], &b->e[0], &b->e[1]};
  for (int i = 0; i < 4; i++)
    if (all[i]->id == e) return all[i];
  for (int i = 0; i < 4; i++)
    if (!all[i]->id) return all[i];
  return all[h & 1];
}

void det_ident_learn(struct det_idents *x, const char *host, uint32_t pid, int rank) {
  if (rank < 0) return;
  if (!x->seen && !(x->seen = det_table_alloc(sizeof *x->seen))) return;
  uint64_t h = seen_hash(host, pid);
  struct seen_set *a = seen_place(x, h, 0);
  if (seen_in(a, host, pid, rank)) return;
  struct seen_set *b = seen_place(x, h, 1);
  if (seen_in(b, host, pid, rank)) return;
  struct ident *e = ident_slot(x, host, pid, 1);
  if (!e) return;
  e->rank = rank;
  struct seen_entry *to = seen_room(a, b, e, h);
  *to = (struct seen_entry){.pid = pid, .rank = rank, .id = e};
  memcpy(to->host, host, sizeof to->host);
}

int det_ident_rank(struct det_idents *x, const char *host, uint32_t pid) {
  struct ident *e = ident_slot(x, host, pid, 0);
  return e ? e->rank : -1;
}

void det_ident_prefetch(const struct det_idents *x, const char *host, uint32_t pid) {
  if (!x->seen) return;
  __builtin_prefetch(seen_place(x, seen_hash(host, pid), 0)); /* the second set: rarely read */
}

void det_ident_reset(struct det_idents *x) {
  det_index_reset(&x->index);
  det_table_free(x->seen, sizeof *x->seen);
  x->seen = NULL;
}
