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
 * is exact for a shorter host, and a longer one is compared with its identity's. Each process has
 * two places, from two hashes of its pid and its host's first 16 bytes: in containers every
 * rank's process can have the same pid on every host, and host names share their first letters,
 * so with one place (as before: the pid and the host's first letter) ranks evicted each other on
 * every transfer. */
struct seen_entry {
  _Alignas(32) uint32_t pid;
  int32_t rank;
  char host[16];
  const struct ident *id;
};
#define SEEN_SLOTS (1 << 16)
struct det_ident_seen {
  struct seen_entry e[SEEN_SLOTS];
};

static uint64_t seen_hash(const char *host, uint32_t pid) {
  uint64_t a, b;
  memcpy(&a, host, 8);
  memcpy(&b, host + 8, 8);
  return (a ^ (b << 29 | b >> 35) ^ pid) * 0x9e3779b97f4a7c15ull;
}

static struct seen_entry *seen_place(const struct det_idents *x, uint64_t h, int which) {
  return &x->seen->e[(which ? h >> 32 : h >> 48) & (SEEN_SLOTS - 1)];
}

static int seen_is(const struct seen_entry *e, const char *host, uint32_t pid, int rank) {
  return e->id && e->pid == pid && e->rank == rank && !memcmp(e->host, host, 16) &&
         (!host[15] || !strcmp(e->id->host, host));
}

void det_ident_learn(struct det_idents *x, const char *host, uint32_t pid, int rank) {
  if (rank < 0) return;
  if (!x->seen && !(x->seen = det_table_alloc(sizeof *x->seen))) return;
  uint64_t h = seen_hash(host, pid);
  struct seen_entry *a = seen_place(x, h, 0), *b = seen_place(x, h, 1);
  if (seen_is(a, host, pid, rank) || seen_is(b, host, pid, rank)) return;
  struct ident *e = ident_slot(x, host, pid, 1);
  if (!e) return;
  e->rank = rank;
  /* the process's own entry (one at most: a rank it had before must not answer), else a free
   * place, else either */
  struct seen_entry *to = a->id == e ? a : b->id == e ? b : NULL;
  if (!to) to = !a->id ? a : !b->id ? b : h & 1 ? a : b;
  *to = (struct seen_entry){.pid = pid, .rank = rank, .id = e};
  memcpy(to->host, host, sizeof to->host);
}

int det_ident_rank(struct det_idents *x, const char *host, uint32_t pid) {
  struct ident *e = ident_slot(x, host, pid, 0);
  return e ? e->rank : -1;
}

void det_ident_prefetch(const struct det_idents *x, const char *host, uint32_t pid) {
  if (!x->seen) return;
  uint64_t h = seen_hash(host, pid);
  __builtin_prefetch(seen_place(x, h, 0));
  __builtin_prefetch(seen_place(x, h, 1));
}

void det_ident_reset(struct det_idents *x) {
  det_index_reset(&x->index);
  det_table_free(x->seen, sizeof *x->seen);
  x->seen = NULL;
}
