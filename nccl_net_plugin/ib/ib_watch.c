/* ib_watch.c -- the verbs transport's records: one per request, with the fields the socket
 * transport fills (c4_request_record), and the watch that reports requests outstanding longer
 * than C4_STUCK_MS while they are stuck. The watch's lock is taken by the telemetry thread and
 * when a comm is connected or freed, never on the data path. */
#include "c4_telemetry.h"
#include "ib_comm.h"
#include "net_watchlist.h"
#include "net_xfer_record.h"

static struct c4_watchlist watch = C4_WATCHLIST_INIT;

void c4_ib_watch_add(struct c4_ib_comm *c) { c4_watchlist_add(&watch, c); }

void c4_ib_watch_remove(struct c4_ib_comm *c) { c4_watchlist_remove(&watch, c); }

void c4_ib_request_record(const struct c4_ib_comm *c, struct c4_ib_request *r, int status,
                          uint64_t bytes, uint64_t t_done, struct c4_xfer_record *rec) {
  C4_XFER_RECORD_FILL(rec, c, r, status, bytes, t_done);
}

/* As net_watch.c: a request is read through its atomics and kept only if its seq did not change
 * meanwhile. */
static void scan_comm(void *comm, uint64_t now) {
  struct c4_ib_comm *c = comm;
  if (!c->cfg.timing) return;
  uint64_t limit = (uint64_t)c->cfg.stuck_ms * 1000000ull;
  for (int i = 0; i < C4_IB_SLOTS; i++) {
    struct c4_ib_request *r = &c->reqs[i];
    uint64_t seq = atomic_load_explicit(&r->seq, memory_order_acquire);
    uint64_t posted = atomic_load_explicit(&r->t_posted, memory_order_relaxed);
    if (atomic_load_explicit(&r->state, memory_order_acquire) != C4_IB_REQ_POSTED || !posted ||
        now - posted < limit || atomic_load(&r->stuck_reported) == seq + 1)
      continue;
    struct c4_xfer_record rec;
    c4_ib_request_record(c, r, C4_XFER_PENDING, atomic_load(&r->done_bytes), 0, &rec);
    if (atomic_load_explicit(&r->seq, memory_order_acquire) != seq) continue;
    atomic_store(&r->stuck_reported, seq + 1);
    c4_telemetry_emit_xfer(&rec);
  }
}

void c4_ib_watch_scan(void) { c4_watchlist_scan(&watch, scan_comm); }
