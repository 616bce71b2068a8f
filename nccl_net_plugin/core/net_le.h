/* net_le.h -- little-endian byte helpers for the plugin's wire formats (socket handshake, verbs QP
 * info, wrap handle trailer): put writes v at p, get reads it back; no alignment needed. */
#ifndef C4_NET_LE_H
#define C4_NET_LE_H

#include <stddef.h>
#include <stdint.h>

static inline void c4_le_put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)v;
  p[1] = (uint8_t)(v >> 8);
}

static inline void c4_le_put32(uint8_t *p, uint32_t v) {
  for (int i = 0; i < 4; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static inline void c4_le_put64(uint8_t *p, uint64_t v) {
  for (int i = 0; i < 8; i++)
    p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint16_t c4_le_get16(const uint8_t *p) { return (uint16_t)(p[0] | (p[1] << 8)); }

static inline uint32_t c4_le_get32(const uint8_t *p) {
  uint32_t v = 0;
  for (int i = 3; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

static inline uint64_t c4_le_get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

/* 1 when the n bytes at p are all 0 (reserved and padding fields a decoder insists on). */
static inline int c4_le_all_zero(const uint8_t *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i]) return 0;
  return 1;
}

#endif
