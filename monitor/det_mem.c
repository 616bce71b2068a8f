/* det_mem.c -- the detectors' large tables (cells, connections, ranks: tens of MB at 16,384
 * ranks, read at random once per record). They are mapped with transparent huge pages asked for:
 * with 4 KiB pages nearly every record cost a TLB miss, and under a VM's nested paging a TLB
 * miss costs more than the lookup itself. Mapped memory reads as zero, like calloc's, and only
 * the pages touched are ever backed. */
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>

#include "det_index.h"

void *det_table_alloc(size_t bytes) {
  void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) return NULL;
#ifdef MADV_HUGEPAGE
  (void)madvise(p, bytes, MADV_HUGEPAGE); /* a hint: without THP the table works as it is */
#endif
  return p;
}

void det_table_free(void *p, size_t bytes) {
  if (p) munmap(p, bytes);
}

void *det_index_get(struct det_index *x, uint64_t slot,
                    int (*match)(const void *item, const void *key), const void *key, int insert,
                    int *added) {
  if (added) *added = 0;
  if (!x->slots) {
    x->slots = det_table_alloc(x->nslots * sizeof *x->slots);
    x->items = det_table_alloc(x->nslots / 2 * x->item_size);
    if (!x->slots || !x->items) {
      det_index_reset(x);
      return NULL;
    }
  }
  for (uint64_t i = slot & (x->nslots - 1), n = 0; n < (uint64_t)x->probes;
       i = (i + 1) & (x->nslots - 1), n++) {
    if (!x->slots[i]) {
      if (!insert || x->n >= (long)(x->nslots / 2)) return NULL;
      void *e = det_index_at(x, x->n);
      x->slots[i] = (int32_t)++x->n;
      if (added) *added = 1;
      return e;
    }
    void *e = det_index_at(x, x->slots[i] - 1);
    if (match(e, key)) return e;
  }
  return NULL;
}

void det_index_reset(struct det_index *x) {
  det_table_free(x->slots, x->nslots * sizeof *x->slots);
  det_table_free(x->items, x->nslots / 2 * x->item_size);
  x->slots = NULL;
  x->items = NULL;
  x->n = 0;
}
