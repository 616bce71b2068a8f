/* det_index.h -- the detectors' large tables (det_mem.c): zeroed mappings on huge pages where the
 * kernel gives them, and an index of fixed-size items over them. */
#ifndef C4_DET_INDEX_H
#define C4_DET_INDEX_H

#include <stddef.h>
#include <stdint.h>

/* A zeroed table of bytes for a detector's random-access state, on huge pages where the kernel
 * gives them; NULL on failure. Freed with the same size. */
void *det_table_alloc(size_t bytes);
void det_table_free(void *p, size_t bytes);

/* Items of one size in arrival order (stable pointers, scans in that order) behind an
 * open-addressing index of 4-byte positions: hashing the items themselves would spread a few
 * thousand over every page of a large table, each page backed (and zeroed) on first touch.
 * Bounded: nslots slots (a power of two), at most half of them items. Zero-initialized. */
struct det_index {
  size_t item_size, nslots;
  int probes;     /* the longest probe run looked at */
  int32_t *slots; /* position in items + 1, 0: empty */
  char *items;
  long n;
};

/* The item whose probe run from slot (any 64-bit value; reduced to the table) matches key
 * (match(item, key) != 0); else, with insert and room, a new zeroed item at the run's first free
 * slot, with *added set. NULL otherwise (or when the tables cannot be mapped). */
void *det_index_get(struct det_index *x, uint64_t slot,
                    int (*match)(const void *item, const void *key), const void *key, int insert,
                    int *added);

/* Item i (0 <= i < x->n) in arrival order. */
static inline void *det_index_at(const struct det_index *x, long i) {
  return x->items + (size_t)i * x->item_size;
}

/* Frees the tables and forgets every item. */
void det_index_reset(struct det_index *x);

#endif
