/* c4_ring.h -- a bounded lock-free multi-producer multi-consumer ring of fixed-size elements.
 * Producers never wait: a push into a full ring fails and is counted. */
#ifndef C4_RING_H
#define C4_RING_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct c4_ring_slot;

/* head, tail and dropped each have a cache line of their own, so producers and consumers do not
 * false-share; the read-only geometry shares none of theirs. */
struct c4_ring {
  _Alignas(64) size_t mask; /* capacity - 1 */
  size_t elem_size;
  size_t slot_size; /* elem_size plus the sequence number, rounded up to 64 bytes */
  unsigned char *slots;
  _Alignas(64) atomic_size_t head; /* next position to pop */
  _Alignas(64) atomic_size_t tail; /* next position to push */
  _Alignas(64) atomic_uint_fast64_t dropped;
};

/* Allocates a ring of `capacity` elements (a power of two, >= 2) of elem_size bytes.
 * Returns 0, C4_EINVAL for a bad capacity, or C4_ENOMEM. */
int c4_ring_init(struct c4_ring *r, size_t capacity, size_t elem_size);

/* Copies elem in. Lock-free, no allocation, no system call. Returns false (and counts a drop)
 * when the ring is full. */
bool c4_ring_push(struct c4_ring *r, const void *elem);

/* Copies the oldest element out. Returns false when the ring is empty. */
bool c4_ring_pop(struct c4_ring *r, void *out);

/* Pushes that failed because the ring was full. */
uint64_t c4_ring_dropped(const struct c4_ring *r);

/* Empties the ring and zeroes its drop count, keeping its storage. Only for when no other thread
 * can touch it (the telemetry module calls it in a child after fork, where no other thread
 * exists): a position that a producer had claimed but not yet filled would otherwise stall every
 * consumer. */
void c4_ring_clear(struct c4_ring *r);

/* Frees the storage; the ring must no longer be used. */
void c4_ring_free(struct c4_ring *r);

#endif
