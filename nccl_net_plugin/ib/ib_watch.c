/* ib_watch.c -- the verbs transport's records: one per request, with the fields the socket
 * transport fills (c4_request_record), and the watch that reports requests outstanding longer
 * than C4_STUCK_MS while they are stuck. The watch's lock is taken by the telemetry thread and
 * when a comm is connected or freed, never on the data path. */
#include <stddef.h>

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

_Static_assert(offsetof(struct c4_ib_request, head) == 0,
               "pending_record casts a head to its request");

/* The transport's own record of a request still outstanding. */
static void pending_record(const void *comm, struct c4_req_head *h, struct c4_xfer_record *rec) {
  struct c4_ib_request *r = (struct c4_ib_request *)h; /* the head is its first member */
  c4_ib_request_record(comm, r, C4_XFER_PENDING, atomic_load(&h->done_bytes), 0, rec);
}

static void scan_comm(void *comm, uint64_t now) {
  struct c4_ib_comm *c = comm;
  if (!c->cfg.timing) return;
  for (int i = 0; i < C4_IB_SLOTS; i++)
    c4_req_report_stuck(c, &c->reqs[i].head, C4_IB_REQ_POSTED, now,
                        (uint64_t)c->cfg.stuck_ms * 1000000ull, pending_record);
}

void c4_ib_watch_scan(void) { c4_watchlist_scan(&watch, scan_comm); }
