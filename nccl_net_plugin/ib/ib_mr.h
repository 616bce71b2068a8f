/* ib_mr.h -- the verbs transport's memory registration cache, one per device (protection domain).
 * Registrations cover whole pages; a request inside a range already registered with the same
 * memory type shares it (reference counted). A registration nobody uses any more is kept for
 * reuse only up to `keep_unused` of them, the least recently used evicted first, because memory
 * freed and mapped again at the same address would leave a kept registration pinning the old
 * pages (NCCL deregisters at once; keep_unused 0 does the same). The registering itself goes
 * through ops, so tests run the cache on fakes. Thread-safe (a mutex; regMr is not on the data
 * path). */
#ifndef C4_IB_MR_H
#define C4_IB_MR_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

struct c4_ib_mr {
  uintptr_t start, end; /* page-aligned [start, end) */
  int type;             /* NCCL_PTR_* */
  int dmabuf;           /* a dma-buf registration: its own, never shared */
  void *mr;             /* the provider's registration (struct ibv_mr *) */
  uint32_t lkey, rkey;
  int refs;
  uint64_t last_use; /* the cache's clock when last handed out or released */
};

struct c4_ib_mr_ops {
  /* Registers [addr, addr + len) of memory type `type`; dmabuf_fd >= 0 registers that dma-buf at
   * offset. Fills *mr, *lkey, *rkey; returns 0 or a C4_E* code (and logs why). */
  int (*reg)(void *ctx, void *addr, size_t len, int type, int dmabuf_fd, uint64_t offset, void **mr,
             uint32_t *lkey, uint32_t *rkey);
  void (*dereg)(void *ctx, void *mr);
  void *ctx;
};

struct c4_ib_mr_cache {
  pthread_mutex_t lock;
  struct c4_ib_mr_ops ops;
  size_t page;
  int max;         /* registrations alive at once (used or kept) */
  int keep_unused; /* registrations kept with no user */
  int n;
  struct c4_ib_mr **e; /* n entries, max slots */
  uint64_t clock;
};

/* Sets up an empty cache. page must be a power of two. Returns 0 or C4_ENOMEM / C4_EINVAL. */
int c4_ib_mr_cache_init(struct c4_ib_mr_cache *c, const struct c4_ib_mr_ops *ops, size_t page,
                        int max, int keep_unused);

/* A registration covering [addr, addr + size) (size 0 counts as 1 byte) of memory `type`: a
 * cached one when one covers it, else a new one over the enclosing pages (dmabuf_fd >= 0: a
 * dma-buf registration of its own, never shared). Sets *out (owned by the cache; give it back
 * with c4_ib_mr_put). Returns 0; C4_ENOMEM when max registrations are in use; the ops' code when
 * registering fails. */
int c4_ib_mr_get(struct c4_ib_mr_cache *c, void *addr, size_t size, int type, int dmabuf_fd,
                 uint64_t offset, struct c4_ib_mr **out);

/* Releases one use of m; when unused, m is kept or deregistered as the cache's bounds say. */
void c4_ib_mr_put(struct c4_ib_mr_cache *c, struct c4_ib_mr *m);

/* Deregisters everything (used or not) and frees the cache's memory. */
void c4_ib_mr_cache_destroy(struct c4_ib_mr_cache *c);

#endif
