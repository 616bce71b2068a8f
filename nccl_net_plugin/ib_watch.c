/* ib_watch.c -- the verbs transport's records: one per request, with the fields the socket
 * transport fills (c4_request_record), and the watch that reports requests outstanding longer
 * than C4_STUCK_MS while they are stuck. The watch's lock is taken by the telemetry thread and
 * when a comm is connected or freed, never on the data path. */
#include <pthread.h>

#include "c4_clock.h"
#include "c4_telemetry.h"
#include "ib_comm.h"

#define WATCH_MAX 4096
static struct {
  pthread_mutex_t lock;
  int n;
  struct c4_ib_comm *comm[WATCH_MAX];
} watch = {.lock = PTHREAD_MUTEX_INITIALIZER};

void c4_ib_watch_add(struct c4_ib_comm *c) {
  pthread_mutex_lock(&watch.lock);
  if (watch.n < WATCH_MAX) watch.comm[watch.n++] = c;
  pthread_mutex_unlock(&watch.lock);
}

void c4_ib_watch_remove(struct c4_ib_comm *c) {
  pthread_mutex_lock(&watch.lock);
  for (int i = 0; i < watch.n; i++)
    if (watch.comm[i] == c) {
      watch.comm[i] = watch.comm[--watch.n];
      break;
    }
  pthread_mutex_unlock(&watch.lock);
}

void c4_ib_request_record(const struct c4_ib_comm *c, struct c4_ib_request *r, int status,
                          uint64_t bytes, uint64_t t_done, struct c4_xfer_record *rec) {
  *rec = (struct c4_xfer_record){
      .version = C4_RECORD_VERSION,
      .dir = c->is_send ? C4_DIR_SEND : C4_DIR_RECV,
      .status = (uint8_t)status,
      .tag = r->tag,
      .conn_id = c->conn_id,
      .nccl_comm = c->nccl_comm,
      .seq = atomic_load_explicit(&r->seq, memory_order_relaxed),
      .bytes = bytes,
      .t_posted = atomic_load_explicit(&r->t_posted, memory_order_relaxed),
      .t_first_byte = atomic_load_explicit(&r->t_first_byte, memory_order_relaxed),
      .t_done = t_done,
      .self = c->self,
      .peer = c->peer,
  };
}

void c4_ib_watch_scan(void) {
  uint64_t now = c4_now_ns();
  pthread_mutex_lock(&watch.lock);
  for (int k = 0; k < watch.n; k++) {
    struct c4_ib_comm *c = watch.comm[k];
    uint64_t limit = (uint64_t)c->cfg.stuck_ms * 1000000ull;
    for (int i = 0; c->cfg.timing && i < C4_IB_SLOTS; i++) {
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
  pthread_mutex_unlock(&watch.lock);
}
