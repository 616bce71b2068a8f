/* net_watchlist.c -- the locked list of live comms a stuck-request watch scans. */
#include "net_watchlist.h"

#include "c4_clock.h"

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
