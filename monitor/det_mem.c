/* det_mem.c -- the detectors' large tables (cells, connections, ranks: tens of MB at 16,384
 * ranks, read at random once per record). They are mapped with transparent huge pages asked for:
 * with 4 KiB pages nearly every record cost a TLB miss, and under a VM's nested paging a TLB
 * miss costs more than the lookup itself. Mapped memory reads as zero, like calloc's, and only
 * the pages touched are ever backed. */
#include <stddef.h>
#include <sys/mman.h>

#include "det_internal.h"

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
