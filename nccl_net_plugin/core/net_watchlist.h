/* net_watchlist.h -- the list of live comms a stuck-request watch scans, one per transport
 * (net_watch.c, ib_watch.c). Comms join when they start and leave before they are freed; the
 * lock is taken there and by the scan (telemetry thread), never on the data path. */
#ifndef C4_NET_WATCHLIST_H
#define C4_NET_WATCHLIST_H

#include <pthread.h>
#include <stdint.h>

#include "c4_record.h"
#include "net_req_head.h"

#define C4_WATCH_MAX 4096 /* comms watched at once; more are served, just not watched */

struct c4_watchlist {
  pthread_mutex_t lock;
  int n;
  void *comm[C4_WATCH_MAX];
};
#define C4_WATCHLIST_INIT                                                                          \
  { .lock = PTHREAD_MUTEX_INITIALIZER }

/* Adds comm (the list does not own it); silently ignored once C4_WATCH_MAX are watched. */
void c4_watchlist_add(struct c4_watchlist *w, void *comm);
/* Removes comm if it is in the list. After it returns no scan is looking at comm. */
void c4_watchlist_remove(struct c4_watchlist *w, void *comm);
/* Calls scan(comm, now) for every comm in the list, under the lock, with one c4_now_ns(). */
void c4_watchlist_scan(struct c4_watchlist *w, void (*scan)(void *comm, uint64_t now));

/* Fills rec with a pending record of the request whose head is h (the transport's own fill). */
typedef void (*c4_req_pending_fn)(const void *comm, struct c4_req_head *h,
                                  struct c4_xfer_record *rec);
/* Emits one pending record for a request in state posted_state for limit_ns or longer at now,
 * once per request (a reused slot is a new request). For a scan callback. */
void c4_req_report_stuck(const void *comm, struct c4_req_head *h, int posted_state, uint64_t now,
                         uint64_t limit_ns, c4_req_pending_fn pending);

#endif
