/* net_watchlist.c -- the locked list of live comms a stuck-request watch scans, and the check
 * of one request that both transports' scans make. */
#include "net_watchlist.h"

#include "c4_clock.h"
#include "c4_telemetry.h"

void c4_watchlist_add(struct c4_watchlist *w, void *comm) {
  pthread_mutex_lock(&w->lock);
  if (w->n < C4_WATCH_MAX) w->comm[w->n++] = comm;
  pthread_mutex_unlock(&w->lock);
}

void c4_watchlist_remove(struct c4_watchlist *w, void *comm) {
  pthread_mutex_lock(&w->lock);
  for (int i = 0; i < w->n; i++)
    if (w->comm[i] == comm) {
      w->comm[i] = w->comm[--w->n];
      break;
    }
  pthread_mutex_unlock(&w->lock);
}

void c4_watchlist_scan(struct c4_watchlist *w, void (*scan)(void *comm, uint64_t now)) {
  uint64_t now = c4_now_ns();
  pthread_mutex_lock(&w->lock);
  for (int i = 0; i < w->n; i++)
    scan(w->comm[i], now);
  pthread_mutex_unlock(&w->lock);
}

/* The request is read through its atomics while the transport may complete or reuse it, so the
 * record is kept only if its seq did not change meanwhile. */
void c4_req_report_stuck(const void *comm, struct c4_req_head *h, int posted_state, uint64_t now,
                         uint64_t limit_ns, c4_req_pending_fn pending) {
  uint64_t seq = atomic_load_explicit(&h->seq, memory_order_acquire);
  uint64_t posted = atomic_load_explicit(&h->t_posted, memory_order_relaxed);
  if (atomic_load_explicit(&h->state, memory_order_acquire) != posted_state || !posted ||
      now - posted < limit_ns || atomic_load(&h->stuck_reported) == seq + 1)
    return;
  struct c4_xfer_record rec;
  pending(comm, h, &rec);
  if (atomic_load_explicit(&h->seq, memory_order_acquire) != seq) return;
  atomic_store(&h->stuck_reported, seq + 1);
  c4_telemetry_emit_xfer(&rec);
}
