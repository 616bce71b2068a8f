/* c4_ring.c -- bounded MPMC ring: each slot carries a sequence number that says whose turn it
 * is (Vyukov's scheme), so producers and consumers claim positions with one CAS and never wait
 * on each other beyond it. */
#include "c4_ring.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"

struct c4_ring_slot {
  atomic_size_t seq;
  unsigned char data[];
};

static struct c4_ring_slot *slot_at(const struct c4_ring *r, size_t pos) {
  return (struct c4_ring_slot *)(r->slots + (pos & r->mask) * r->slot_size);
}

int c4_ring_init(struct c4_ring *r, size_t capacity, size_t elem_size) {
  memset(r, 0, sizeof *r);
  if (capacity < 2 || (capacity & (capacity - 1)) || elem_size == 0) return C4_EINVAL;
  if (elem_size > SIZE_MAX / 2 || capacity > SIZE_MAX / (elem_size + 128)) return C4_ENOMEM;
  r->mask = capacity - 1;
  r->elem_size = elem_size;
  r->slot_size = (sizeof(struct c4_ring_slot) + elem_size + 63) & ~(size_t)63;
  r->slots = aligned_alloc(64, capacity * r->slot_size);
  if (!r->slots) return C4_ENOMEM;
  for (size_t i = 0; i < capacity; i++)
    atomic_init(&slot_at(r, i)->seq, i);
  atomic_init(&r->head, 0);
  atomic_init(&r->tail, 0);
  atomic_init(&r->dropped, 0);
  return 0;
}

void c4_ring_clear(struct c4_ring *r) {
  for (size_t i = 0; i <= r->mask; i++)
    atomic_store_explicit(&slot_at(r, i)->seq, i, memory_order_relaxed);
  atomic_store_explicit(&r->head, 0, memory_order_relaxed);
  atomic_store_explicit(&r->tail, 0, memory_order_relaxed);
  atomic_store_explicit(&r->dropped, 0, memory_order_release);
}

bool c4_ring_push(struct c4_ring *r, const void *elem) {
  size_t pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
  for (;;) {
    struct c4_ring_slot *s = slot_at(r, pos);
    size_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
    intptr_t diff = (intptr_t)seq - (intptr_t)pos;
    if (diff == 0) {
      if (atomic_compare_exchange_weak_explicit(&r->tail, &pos, pos + 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
        memcpy(s->data, elem, r->elem_size);
        atomic_store_explicit(&s->seq, pos + 1, memory_order_release);
        return true;
      }
    } else if (diff < 0) {
      atomic_fetch_add_explicit(&r->dropped, 1, memory_order_relaxed);
      return false;
    } else {
      pos = atomic_load_explicit(&r->tail, memory_order_relaxed);
    }
  }
}

bool c4_ring_pop(struct c4_ring *r, void *out) {
  size_t pos = atomic_load_explicit(&r->head, memory_order_relaxed);
  for (;;) {
    struct c4_ring_slot *s = slot_at(r, pos);
    size_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
    intptr_t diff = (intptr_t)seq - (intptr_t)(pos + 1);
    if (diff == 0) {
      if (atomic_compare_exchange_weak_explicit(&r->head, &pos, pos + 1, memory_order_relaxed,
                                                memory_order_relaxed)) {
        memcpy(out, s->data, r->elem_size);
        atomic_store_explicit(&s->seq, pos + r->mask + 1, memory_order_release);
        return true;
      }
    } else if (diff < 0) {
      return false;
    } else {
      pos = atomic_load_explicit(&r->head, memory_order_relaxed);
    }
  }
}

uint64_t c4_ring_dropped(const struct c4_ring *r) {
  return atomic_load_explicit(&((struct c4_ring *)r)->dropped, memory_order_relaxed);
}

void c4_ring_free(struct c4_ring *r) {
  free(r->slots);
  r->slots = NULL;
}
