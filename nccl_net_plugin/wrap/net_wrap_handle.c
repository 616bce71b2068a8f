/* net_wrap_handle.c -- the identity trailer c4 appends to a wrapped plugin's listen handle.
 *
 * Layout (docs/wrap.md), at the end of the 128-byte handle, little-endian:
 *   full only:  40 host[64], 104 pid u32, 108 dev i32
 *   both:      112 conn_id u64, 120 rank i32, 124 check u16, 126 version u8, 127 kind u8
 * kind is 0xC4 (compact, 16 bytes) or 0xC5 (full, 88 bytes); check is FNV-1a over the trailer's
 * other bytes, folded to 16 bits. */
#include "net_wrap_handle.h"

#include <string.h>

#include "net_le.h"

#define H NCCL_NET_HANDLE_MAXSIZE
#define KIND_COMPACT 0xC4
#define KIND_FULL 0xC5
#define OFF_CHECK (H - 4)

/* FNV-1a over handle[start, 128) without the two check bytes. */
static uint16_t trailer_check(const uint8_t *handle, size_t start) {
  uint32_t h = 2166136261u;
  for (size_t i = start; i < H; i++) {
    if (i == OFF_CHECK || i == OFF_CHECK + 1) continue;
    h ^= handle[i];
    h *= 16777619u;
  }
  return (uint16_t)(h ^ (h >> 16));
}

void c4_wrap_canary(uint8_t canary[H], uint64_t seed) {
  uint64_t x = seed | 1;
  for (int i = 0; i < H; i++) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    canary[i] = (uint8_t)(1 + x % 255); /* never 0: zero is the other free case */
  }
}

size_t c4_wrap_handle_room(const uint8_t handle[H], const uint8_t canary[H]) {
  size_t kept = 0, zero = 0;
  while (kept < H && handle[H - 1 - kept] == canary[H - 1 - kept])
    kept++;
  while (zero < H && handle[H - 1 - zero] == 0)
    zero++;
  return kept > zero ? kept : zero;
}

size_t c4_wrap_put_trailer(uint8_t handle[H], size_t room, uint64_t conn_id,
                           const struct c4_identity *id) {
  size_t size = room >= C4_WRAP_TRAILER_FULL      ? C4_WRAP_TRAILER_FULL
                : room >= C4_WRAP_TRAILER_COMPACT ? C4_WRAP_TRAILER_COMPACT
                                                  : 0;
  if (!size) return 0;
  size_t start = H - size;
  memset(handle + start, 0, size);
  if (size == C4_WRAP_TRAILER_FULL) {
    memcpy(handle + start, id->host, C4_HOST_MAX);
    handle[start + C4_HOST_MAX - 1] = 0;
    c4_le_put32(handle + start + C4_HOST_MAX, id->pid);
    c4_le_put32(handle + start + C4_HOST_MAX + 4, (uint32_t)id->dev);
  }
  c4_le_put64(handle + H - 16, conn_id);
  c4_le_put32(handle + H - 8, (uint32_t)id->rank);
  handle[H - 2] = C4_WRAP_TRAILER_VERSION;
  handle[H - 1] = size == C4_WRAP_TRAILER_FULL ? KIND_FULL : KIND_COMPACT;
  uint16_t check = trailer_check(handle, start);
  handle[OFF_CHECK] = (uint8_t)check;
  handle[OFF_CHECK + 1] = (uint8_t)(check >> 8);
  return size;
}

size_t c4_wrap_get_trailer(const uint8_t handle[H], struct c4_wrap_trailer *t) {
  memset(t, 0, sizeof *t);
  t->id.rank = -1;
  t->id.dev = -1;
  uint8_t kind = handle[H - 1];
  if ((kind != KIND_COMPACT && kind != KIND_FULL) || handle[H - 2] != C4_WRAP_TRAILER_VERSION)
    return 0;
  size_t size = kind == KIND_FULL ? C4_WRAP_TRAILER_FULL : C4_WRAP_TRAILER_COMPACT;
  size_t start = H - size;
  uint16_t check = (uint16_t)(handle[OFF_CHECK] | handle[OFF_CHECK + 1] << 8);
  if (check != trailer_check(handle, start)) return 0;
  if (kind == KIND_FULL) {
    if (!memchr(handle + start, 0, C4_HOST_MAX)) return 0;
    memcpy(t->id.host, handle + start, C4_HOST_MAX);
    t->id.pid = c4_le_get32(handle + start + C4_HOST_MAX);
    t->id.dev = (int32_t)c4_le_get32(handle + start + C4_HOST_MAX + 4);
  }
  t->conn_id = c4_le_get64(handle + H - 16);
  t->id.rank = (int32_t)c4_le_get32(handle + H - 8);
  t->size = size;
  return size;
}
