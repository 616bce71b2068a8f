/* net_watch.c -- reports requests that stay outstanding longer than C4_STUCK_MS, while they are
 * stuck, so a stalled connection shows before it fails (or never does). The scan runs on the
 * telemetry writer thread every few milliseconds; the list's lock (net_watchlist.h) is taken only
 * there and when a comm is created or closed, never on the data path. */
#include <stddef.h>

#include "net_comm.h"
#include "net_watchlist.h"

static struct c4_watchlist watch = C4_WATCHLIST_INIT;

void c4_watch_add(struct c4_comm *c) { c4_watchlist_add(&watch, c); }

void c4_watch_remove(struct c4_comm *c) { c4_watchlist_remove(&watch, c); }

_Static_assert(offsetof(struct c4_request, head) == 0,
               "pending_record casts a head to its request");

/* The transport's own record of a request still outstanding. */
static void pending_record(const void *comm, struct c4_req_head *h, struct c4_xfer_record *rec) {
  struct c4_request *r = (struct c4_request *)h; /* the head is its first member */
  c4_request_record(comm, r, C4_XFER_PENDING, atomic_load(&h->done_bytes), 0, rec);
}

static void scan_comm(void *comm, uint64_t now) {
  struct c4_comm *c = comm;
  if (!c->cfg.timing) return;
  for (int i = 0; i < C4_MAX_REQUESTS; i++)
    c4_req_report_stuck(c, &c->reqs[i].head, C4_REQ_POSTED, now,
                        (uint64_t)c->cfg.stuck_ms * 1000000ull, pending_record);
}

void c4_watch_scan(void) { c4_watchlist_scan(&watch, scan_comm); }
