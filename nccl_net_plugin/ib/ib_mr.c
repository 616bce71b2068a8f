/* ib_mr.c -- the registration cache: page-aligned ranges, reference counts, bounded, LRU. */
#include "ib_mr.h"

#include <stdlib.h>
#include <string.h>

#include "c4_err.h"

int c4_ib_mr_cache_init(struct c4_ib_mr_cache *c, const struct c4_ib_mr_ops *ops, size_t page,
                        int max, int keep_unused) {
  memset(c, 0, sizeof *c);
  if (page == 0 || (page & (page - 1)) || max < 1 || keep_unused < 0) return C4_EINVAL;
  c->e = calloc((size_t)max, sizeof *c->e);
  if (!c->e) return C4_ENOMEM;
  pthread_mutex_init(&c->lock, NULL);
  c->ops = *ops;
  c->page = page;
  c->max = max;
  c->keep_unused = keep_unused < max ? keep_unused : max;
  return 0;
}

static void drop(struct c4_ib_mr_cache *c, int i) {
  struct c4_ib_mr *m = c->e[i];
  c->ops.dereg(c->ops.ctx, m->mr);
  free(m);
  c->e[i] = c->e[--c->n];
}

/* The least recently used unused entry, or -1. */
static int lru_unused(const struct c4_ib_mr_cache *c) {
  int best = -1;
  for (int i = 0; i < c->n; i++)
    if (c->e[i]->refs == 0 && (best < 0 || c->e[i]->last_use < c->e[best]->last_use)) best = i;
  return best;
}

static int count_unused(const struct c4_ib_mr_cache *c) {
  int k = 0;
  for (int i = 0; i < c->n; i++)
    k += c->e[i]->refs == 0;
  return k;
}

int c4_ib_mr_get(struct c4_ib_mr_cache *c, void *addr, size_t size, int type, int dmabuf_fd,
                 uint64_t offset, struct c4_ib_mr **out) {
  uintptr_t a = (uintptr_t)addr, mask = (uintptr_t)c->page - 1;
  size_t span = size ? size : 1;
  if (span > UINTPTR_MAX - a - mask) return C4_EINVAL;
  uintptr_t start = a & ~mask, end = (a + span + mask) & ~mask;
  pthread_mutex_lock(&c->lock);
  c->clock++;
  if (dmabuf_fd < 0)
    for (int i = 0; i < c->n; i++) {
      struct c4_ib_mr *m = c->e[i];
      if (!m->dmabuf && m->type == type && m->start <= start && m->end >= end) {
        m->refs++;
        m->last_use = c->clock;
        *out = m;
        pthread_mutex_unlock(&c->lock);
        return 0;
      }
    }
  int rc = 0;
  if (c->n == c->max) {
    int victim = lru_unused(c);
    if (victim < 0) {
      rc = C4_ENOMEM;
      goto out;
    }
    drop(c, victim);
  }
  struct c4_ib_mr *m = calloc(1, sizeof *m);
  if (!m) {
    rc = C4_ENOMEM;
    goto out;
  }
  /* a dma-buf registration is its own: its pages are the buffer's, not the address range's */
  if (dmabuf_fd >= 0) start = a, end = a + span;
  rc = c->ops.reg(c->ops.ctx, (void *)start, end - start, type, dmabuf_fd, offset, &m->mr, &m->lkey,
                  &m->rkey);
  if (rc != 0) {
    free(m);
    goto out;
  }
  m->start = start;
  m->end = end;
  m->type = type;
  m->refs = 1;
  m->last_use = c->clock;
  m->dmabuf = dmabuf_fd >= 0; /* never matched by address, dropped when unused */
  c->e[c->n++] = m;
  *out = m;
out:
  pthread_mutex_unlock(&c->lock);
  return rc;
}

void c4_ib_mr_put(struct c4_ib_mr_cache *c, struct c4_ib_mr *m) {
  if (!m) return;
  pthread_mutex_lock(&c->lock);
  c->clock++;
  m->last_use = c->clock;
  if (m->refs > 0) m->refs--;
  if (m->refs == 0 && m->dmabuf) {
    for (int i = 0; i < c->n; i++)
      if (c->e[i] == m) {
        drop(c, i);
        break;
      }
  }
  while (count_unused(c) > c->keep_unused)
    drop(c, lru_unused(c));
  pthread_mutex_unlock(&c->lock);
}

void c4_ib_mr_cache_destroy(struct c4_ib_mr_cache *c) {
  if (!c->e) return;
  while (c->n > 0)
    drop(c, c->n - 1);
  free(c->e);
  c->e = NULL;
  pthread_mutex_destroy(&c->lock);
}
