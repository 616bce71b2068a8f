/* net_watch.c -- reports requests that stay outstanding longer than C4_STUCK_MS, while they are
 * stuck, so a stalled connection shows before it fails (or never does). The scan runs on the
 * telemetry writer thread every few milliseconds; the lock below is taken only there and when a
 * comm is created or closed, never on the data path. */
#include <pthread.h>
#include <stdlib.h>

#include "c4_clock.h"
#include "c4_telemetry.h"
#include "net_comm.h"

#define WATCH_MAX 4096 /* comms watched at once; more are served, just not watched */

static struct {
  pthread_mutex_t lock;
  int n;
  struct c4_comm *comm[WATCH_MAX];
} watch = {.lock = PTHREAD_MUTEX_INITIALIZER};

void c4_watch_add(struct c4_comm *c) {
  pthread_mutex_lock(&watch.lock);
  if (watch.n < WATCH_MAX) watch.comm[watch.n++] = c;
  pthread_mutex_unlock(&watch.lock);
}

void c4_watch_remove(struct c4_comm *c) {
  pthread_mutex_lock(&watch.lock);
  for (int i = 0; i < watch.n; i++)
    if (watch.comm[i] == c) {
      watch.comm[i] = watch.comm[--watch.n];
      break;
    }
  pthread_mutex_unlock(&watch.lock);
}

/* A request is read through its atomics and kept only if its seq did not change meanwhile. */
static void scan_comm(struct c4_comm *c, uint64_t now, uint64_t limit) {
  for (int i = 0; i < C4_MAX_REQUESTS; i++) {
    struct c4_request *r = &c->reqs[i];
    uint64_t seq = atomic_load_explicit(&r->seq, memory_order_acquire);
    uint64_t posted = atomic_load_explicit(&r->t_posted, memory_order_relaxed);
    if (atomic_load_explicit(&r->state, memory_order_acquire) != C4_REQ_POSTED || !posted ||
        now - posted < limit || atomic_load(&r->stuck_reported) == seq + 1)
      continue;
    struct c4_xfer_record rec;
    c4_request_record(c, r, C4_XFER_PENDING, atomic_load(&r->done_bytes), 0, &rec);
    if (atomic_load_explicit(&r->seq, memory_order_acquire) != seq) continue;
    atomic_store(&r->stuck_reported, seq + 1);
    c4_telemetry_emit_xfer(&rec);
  }
}

void c4_watch_scan(void) {
  uint64_t now = c4_now_ns();
  pthread_mutex_lock(&watch.lock);
  for (int i = 0; i < watch.n; i++)
    if (watch.comm[i]->cfg.timing)
      scan_comm(watch.comm[i], now, (uint64_t)watch.comm[i]->cfg.stuck_ms * 1000000ull);
  pthread_mutex_unlock(&watch.lock);
}
