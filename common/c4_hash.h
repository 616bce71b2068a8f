/* c4_hash.h -- the one FNV-1a (64-bit) every part hashes with: table slots, ids, identities. */
#ifndef C4_HASH_H
#define C4_HASH_H

#include <stddef.h>
#include <stdint.h>

#define C4_FNV_OFFSET 0xcbf29ce484222325ull /* FNV-1a's 64-bit offset basis */
#define C4_FNV_PRIME 0x100000001b3ull
/* The basis c4's older tables and ids start from (FNV's basis short of its last decimal digit):
 * kept, so that their slots and the ids they make (trace connection ids) do not move. */
#define C4_FNV_BASIS_OLD 1469598103934665603ull

/* FNV-1a of n bytes at p, going on from h: start with C4_FNV_OFFSET or C4_FNV_BASIS_OLD (mixed
 * with a seed where the caller wants one), or with a previous result to hash more bytes after it.
 * A hash is only compared with hashes made the same way, so each caller keeps its start. */
static inline uint64_t c4_fnv1a(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++)
    h = (h ^ b[i]) * C4_FNV_PRIME;
  return h;
}

/* c4_fnv1a over a NUL-terminated string, without the NUL. */
static inline uint64_t c4_fnv1a_str(uint64_t h, const char *s) {
  for (; *s; s++)
    h = (h ^ (unsigned char)*s) * C4_FNV_PRIME;
  return h;
}

#endif
