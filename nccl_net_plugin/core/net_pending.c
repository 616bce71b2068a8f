/* net_pending.c -- a listener's unfinished handshakes, as both transports keep them. */
#include "net_pending.h"

#include <stdatomic.h>
#include <string.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_log.h"
#include "net_admit.h"
#include "net_handshake.h"
#include "net_stats.h"

int c4_pending_listen(struct c4_pending_table *t, const struct c4_transport_config *cfg, int dev,
                      const struct sockaddr_storage *addr, void *handle, struct c4_identity *self) {
  int fd = c4_handshake_listen(cfg, dev, addr, handle, &t->nonce, self);
  if (fd < 0) return fd;
  t->lfd = fd;
  t->dev = dev;
  t->npend = t->nunproven = 0;
  return 0;
}

void c4_pending_forget(struct c4_pending_table *t, int i) {
  if (i != --t->npend) memcpy(c4_pending_at(t, i), c4_pending_at(t, t->npend), t->item_size);
}

static void remove_at(struct c4_pending_table *t, int i) {
  if (t->drop) t->drop(c4_pending_at(t, i));
  close(c4_pending_at(t, i)->fd);
  c4_pending_forget(t, i);
}

void c4_pending_reject(struct c4_pending_table *t, int i, const char *why) {
  struct c4_pending *p = c4_pending_at(t, i);
  if (p->proven) {
    C4_WARN("%s %d rejected a connection from %s: %s", t->what, t->dev, p->from, why);
    atomic_fetch_add(&c4_transport_stats.rejected_peers, 1);
  } else {
    c4_admit_closed(t->what, t->dev, p->from, why);
    if (p->slot) c4_admit_release();
    t->nunproven--;
  }
  remove_at(t, i);
}

int c4_pending_judge(struct c4_pending_table *t, int i, const uint8_t *buf, size_t got) {
  struct c4_pending *p = c4_pending_at(t, i);
  if (p->proven) return 0;
  int judged = c4_admit_judge(buf, got, t->nonce);
  if (judged == C4_ADMIT_BAD) {
    c4_pending_reject(t, i, "its first bytes are not a hello for us");
    return C4_EPROTO;
  }
  if (judged == C4_ADMIT_PROVEN) {
    p->proven = 1;
    t->nunproven--;
    if (p->slot) c4_admit_release();
    p->slot = 0;
  }
  return 0;
}

/* Evicts the oldest unproven entry other than *keep (whose index is updated if the removal moved
 * it; keep may be NULL). Returns 0, or -1 when there is none. */
static int evict_unproven_except(struct c4_pending_table *t, int *keep) {
  int oldest = -1;
  for (int i = 0; i < t->npend; i++)
    if (!c4_pending_at(t, i)->proven && (!keep || i != *keep) &&
        (oldest < 0 || c4_pending_at(t, i)->t_open < c4_pending_at(t, oldest)->t_open))
      oldest = i;
  if (oldest < 0) return C4_NONE;
  c4_pending_reject(t, oldest, "evicted unproven: newer connections needed its slot");
  if (keep && *keep == t->npend) *keep = oldest; /* the last entry moved into the hole */
  return 0;
}

int c4_pending_take_new(struct c4_pending_table *t, int (*advance)(void *ctx, int i, uint64_t now),
                        void *ctx) {
  char from[sizeof((struct c4_pending *)0)->from];
  for (int n = 0; n < C4_ADMIT_ACCEPTS_PER_CALL; n++) {
    int fd = c4_handshake_accept(t->lfd, t->accept_what, t->dev, from, sizeof from);
    if (fd < 0) return 0;
    if (t->npend == t->max && evict_unproven_except(t, NULL) != 0) {
      C4_WARN("%s %d refused a connection from %s: %d handshakes that know our handle are "
              "unfinished",
              t->what, t->dev, from, t->npend);
      atomic_fetch_add(&c4_transport_stats.rejected_peers, 1);
      close(fd);
      continue;
    }
    int i = t->npend++;
    struct c4_pending *p = c4_pending_at(t, i);
    memset(p, 0, t->item_size);
    p->fd = fd;
    p->t_open = c4_now_ns();
    memcpy(p->from, from, sizeof p->from);
    t->nunproven++;
    int rc = advance(ctx, i, p->t_open);
    if (rc == 1) return 1;
    if (rc != 0 || c4_pending_at(t, i)->proven) continue;
    /* still unproven: it needs a process slot and a place within this listener's share */
    while (!(c4_pending_at(t, i)->slot = c4_admit_take()) && t->nunproven > 1)
      evict_unproven_except(t, &i);
    if (!c4_pending_at(t, i)->slot) {
      c4_pending_reject(t, i, "the process holds its limit of unproven connections");
      continue;
    }
    if (t->nunproven > C4_ADMIT_UNPROVEN_MAX) evict_unproven_except(t, &i);
  }
  return 0;
}

void c4_pending_close_all(struct c4_pending_table *t) {
  for (int i = 0; i < t->npend; i++) {
    struct c4_pending *p = c4_pending_at(t, i);
    if (t->drop) t->drop(p);
    close(p->fd);
    if (p->slot) c4_admit_release();
  }
  t->npend = 0;
  close(t->lfd);
}
