/* net_pending.h -- a listener's table of accepted connections that have not finished their
 * handshake, kept the same way by the socket and the verbs transport: taking connections from
 * the kernel without blocking, the unproven ones' slots and evictions (net_admit.h), judging the
 * first hello bytes, rejecting with a log line and a count, and closing them all. Each transport
 * keeps its own entries, which begin with struct c4_pending, and reads the rest of its handshake
 * in its own advance function. */
#ifndef C4_NET_PENDING_H
#define C4_NET_PENDING_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "c4_record.h"
#include "net_config.h"

/* The head of every pending entry. */
struct c4_pending {
  int fd;
  uint64_t t_open;
  int proven; /* its first C4_ADMIT_PROOF_BYTES carried this listener's nonce */
  int slot;   /* holds one of the process's unproven slots (c4_admit_take) */
  char from[96];
};

struct c4_pending_table {
  const char *what;        /* in log lines: "listener on device" */
  const char *accept_what; /* in accept failures: "device" */
  int dev;
  int lfd; /* the listening socket */
  uint64_t nonce;
  int npend, nunproven, max;
  size_t item_size; /* of one entry, which begins with struct c4_pending */
  void *items;      /* max entries */
  /* Frees what the transport added to entry i (NULL: nothing to free); runs before the entry is
   * closed and removed. */
  void (*drop)(void *entry);
};

/* Opens the listening socket on addr for device dev through the handshake (c4_handshake_listen:
 * it writes the 128-byte handle and this process's identity into *self) and makes t empty. The
 * caller has set what, accept_what, max, item_size, items and drop. Returns 0 or a negative C4_E*
 * code. */
int c4_pending_listen(struct c4_pending_table *t, const struct c4_transport_config *cfg, int dev,
                      const struct sockaddr_storage *addr, void *handle, struct c4_identity *self);

/* Entry i (0 <= i < npend). */
static inline struct c4_pending *c4_pending_at(const struct c4_pending_table *t, int i) {
  return (struct c4_pending *)((char *)t->items + (size_t)i * t->item_size);
}

/* Closes and removes entry i (the last entry moves into its place): a proven one is logged each
 * time and counted (its peer holds our handle, so this is a real misconfiguration), an unproven
 * one counted and logged in the flood summary (c4_admit_closed). */
void c4_pending_reject(struct c4_pending_table *t, int i, const char *why);

/* Removes entry i without closing it or dropping anything: the caller took its fd (and what the
 * transport added). The last entry moves into its place. */
void c4_pending_forget(struct c4_pending_table *t, int i);

/* Judges the got bytes received so far on unproven entry i (c4_admit_judge) and marks it proven
 * once they show our nonce. Returns 0, or C4_EPROTO when it was rejected (and removed). */
int c4_pending_judge(struct c4_pending_table *t, int i, const uint8_t *buf, size_t got);

/* Takes at most C4_ADMIT_ACCEPTS_PER_CALL waiting connections and runs advance on each at once,
 * so that a real connector (whose first bytes are already in the socket) proves itself before
 * any eviction; unproven newcomers over this listener's or the process's share evict the oldest
 * unproven entry, never a proven one. advance(ctx, i, now) returns 0 when entry i stays, -1 when
 * it rejected it, 1 when the entry finished and was removed (then taking stops). Returns 1 when
 * an advance returned 1, else 0. */
int c4_pending_take_new(struct c4_pending_table *t, int (*advance)(void *ctx, int i, uint64_t now),
                        void *ctx);

/* Closes every entry (drop first), gives back their slots and closes the listening socket. */
void c4_pending_close_all(struct c4_pending_table *t);

#endif
