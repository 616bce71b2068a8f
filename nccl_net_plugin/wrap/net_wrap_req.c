/* net_wrap_req.c -- wrap mode's data path: every isend/irecv the wrapped plugin takes gets a
 * timing slot, and test reports it with the socket transport's xfer record. Slots live in one
 * pool allocated at setup, a block of C4_WRAP_SLOTS per comm, so test can tell c4's requests from
 * the wrapped plugin's own (iflush) by address, and nothing on the data path allocates or locks.
 * The pool's lock is taken when a comm is made or closed and by the stuck watch, never by
 * isend/irecv/test. */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_log.h"
#include "c4_telemetry.h"
#include "net_wire.h"
#include "net_wrap_comm.h"

static struct {
  pthread_mutex_t lock;
  struct c4_wrap_req *slots; /* C4_WRAP_MAX_COMMS * C4_WRAP_SLOTS */
  struct c4_wrap_comm *owner[C4_WRAP_MAX_COMMS];
  int free_list[C4_WRAP_MAX_COMMS];
  int nfree;
} pool = {.lock = PTHREAD_MUTEX_INITIALIZER};

int c4_wrap_pool_init(void) {
  pthread_mutex_lock(&pool.lock);
  if (!pool.slots) {
    /* Large enough that calloc maps fresh zero pages: only blocks in use are ever touched. */
    pool.slots = calloc((size_t)C4_WRAP_MAX_COMMS * C4_WRAP_SLOTS, sizeof *pool.slots);
    for (int i = 0; i < C4_WRAP_MAX_COMMS && pool.slots; i++)
      pool.free_list[pool.nfree++] = C4_WRAP_MAX_COMMS - 1 - i;
  }
  int rc = pool.slots ? 0 : C4_ENOMEM;
  pthread_mutex_unlock(&pool.lock);
  return rc;
}

/* The slot a request pointer names, or NULL when it is not one of c4's (the wrapped plugin's own
 * request, as iflush's). */
static struct c4_wrap_req *slot_of(void *request) {
  uintptr_t p = (uintptr_t)request, base = (uintptr_t)pool.slots;
  size_t span = (size_t)C4_WRAP_MAX_COMMS * C4_WRAP_SLOTS * sizeof *pool.slots;
  if (!base || p < base || p - base >= span || (p - base) % sizeof *pool.slots) return NULL;
  return (struct c4_wrap_req *)request;
}

struct c4_wrap_comm *c4_wrap_comm_new(void *inner, int is_send, int dev, uint64_t nccl_comm,
                                      uint64_t conn_id, const struct c4_identity *peer) {
  struct c4_wrap_comm *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->magic = C4_WRAP_COMM_MAGIC;
  c->inner = inner;
  c->is_send = is_send;
  c->nccl_comm = nccl_comm;
  c->conn_id = conn_id;
  c->peer = *peer;
  c4_wire_self_identity(&c->self, dev);
  c->consume = !is_send && c4_wrap_inner_has(&c4_wrap_lib, C4_WI_IRECV_CONSUMED);
  c->link = (struct c4_link_info){.magic = C4_LINK_MAGIC,
                                  .conn_id = conn_id,
                                  .dir = (uint8_t)(is_send ? C4_DIR_SEND : C4_DIR_RECV)};
  c->block = -1;
  if (!c4_wrap_timing(&c->stuck_ms)) return c;
  pthread_mutex_lock(&pool.lock);
  if (pool.nfree > 0) {
    c->block = pool.free_list[--pool.nfree];
    pool.owner[c->block] = c;
  }
  pthread_mutex_unlock(&pool.lock);
  if (c->block < 0) {
    if (atomic_fetch_add(&c4_wrap_stats.untimed_comms, 1) == 0)
      C4_WARN("wrap: more than %d comms at once; the ones beyond are forwarded untimed",
              C4_WRAP_MAX_COMMS);
    return c;
  }
  c->slots = pool.slots + (size_t)c->block * C4_WRAP_SLOTS;
  for (int i = 0; i < C4_WRAP_SLOTS; i++) {
    c->slots[i].comm = c;
    atomic_store(&c->slots[i].state, C4_WSLOT_FREE);
    atomic_store(&c->slots[i].seq, UINT64_MAX);
    atomic_store(&c->slots[i].stuck_reported, 0);
  }
  c->timing = 1;
  return c;
}

void c4_wrap_comm_free(struct c4_wrap_comm *c) {
  if (c->block >= 0) {
    pthread_mutex_lock(&pool.lock); /* the watch reads the block under this lock */
    for (int i = 0; i < C4_WRAP_SLOTS; i++)
      atomic_store(&c->slots[i].state, C4_WSLOT_FREE);
    pool.owner[c->block] = NULL;
    pool.free_list[pool.nfree++] = c->block;
    pthread_mutex_unlock(&pool.lock);
  }
  c->magic = 0;
  free(c);
}

/* ---- records ------------------------------------------------------------------------------ */

static void record(const struct c4_wrap_comm *c, const struct c4_wrap_req *r, int i, int status,
                   uint64_t bytes, uint64_t t_done, struct c4_xfer_record *rec) {
  *rec = (struct c4_xfer_record){
      .version = C4_RECORD_VERSION,
      .dir = c->is_send ? C4_DIR_SEND : C4_DIR_RECV,
      .status = (uint8_t)status,
      .tag = r->tags[i],
      .conn_id = c->conn_id,
      .nccl_comm = c->nccl_comm,
      .seq = atomic_load_explicit(&r->seq, memory_order_relaxed) + (uint64_t)i,
      .bytes = bytes,
      .t_posted = atomic_load_explicit(&r->t_posted, memory_order_relaxed),
      .t_first_byte = 0, /* the wrapped plugin does not say when its first byte moved */
      .t_done = t_done,
      .self = c->self,
      .peer = c->peer,
  };
}

static void emit(const struct c4_wrap_comm *c, const struct c4_wrap_req *r, int status,
                 const int *sizes, uint64_t t_done) {
  for (int i = 0; i < r->n; i++) {
    struct c4_xfer_record rec;
    uint64_t bytes = c->is_send ? r->size : sizes && sizes[i] > 0 ? (uint64_t)sizes[i] : 0;
    record(c, r, i, status, bytes, t_done, &rec);
    c4_telemetry_emit_xfer(&rec);
  }
}

/* ---- posting ------------------------------------------------------------------------------ */

/* A free slot of c (caller thread), or NULL when all are busy. */
static struct c4_wrap_req *slot_take(struct c4_wrap_comm *c) {
  for (unsigned k = 0; k < C4_WRAP_SLOTS; k++) {
    struct c4_wrap_req *r = &c->slots[(c->hint + k) % C4_WRAP_SLOTS];
    int expect = C4_WSLOT_FREE;
    if (atomic_load_explicit(&r->state, memory_order_relaxed) == C4_WSLOT_FREE &&
        atomic_compare_exchange_strong(&r->state, &expect, C4_WSLOT_POSTED)) {
      c->hint = (c->hint + k + 1) % C4_WRAP_SLOTS;
      return r;
    }
  }
  return NULL;
}

/* Wraps a request the inner plugin just took (posted at t0) into a slot, or hands the inner
 * request back untimed when the comm has no free slot. */
static void *track(struct c4_wrap_comm *c, void *inner, int n, const int *tags, uint64_t size,
                   uint64_t t0) {
  uint64_t seq = c->next_seq;
  c->next_seq += (uint64_t)n;
  if (!c->timing) return inner;
  struct c4_wrap_req *r = slot_take(c);
  if (!r) {
    if (atomic_fetch_add(&c4_wrap_stats.untimed_requests, 1) == 0)
      C4_WARN("wrap: comm %016llx has %d requests in flight; further ones go untimed",
              (unsigned long long)c->conn_id, C4_WRAP_SLOTS);
    return inner;
  }
  r->inner = inner;
  r->n = n;
  memcpy(r->tags, tags, sizeof(int) * (size_t)n);
  r->size = size;
  atomic_store_explicit(&r->t_posted, t0, memory_order_relaxed);
  atomic_store_explicit(&r->seq, seq, memory_order_release);
  return r;
}

int c4_wrap_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle, void *phandle,
                  void **request) {
  struct c4_wrap_comm *c = send_comm;
  uint64_t t0 = c->timing ? c4_now_ns() : 0;
  void *inner = NULL;
  int rc = c4_wrap_inner_isend(&c4_wrap_lib, c->inner, data, size, tag, mhandle, phandle, &inner);
  *request = rc == 0 && inner ? track(c, inner, 1, &tag, size, t0) : NULL;
  return rc;
}

int c4_wrap_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                  void **phandles, void **request) {
  struct c4_wrap_comm *c = recv_comm;
  if (n < 1 || n > C4_WRAP_MAX_RECVS) {
    C4_WARN("wrap: irecv of %d receives; c4 forwards 1 to %d (its maxRecvs)", n, C4_WRAP_MAX_RECVS);
    return C4_EINVAL;
  }
  uint64_t t0 = c->timing ? c4_now_ns() : 0;
  void *inner = *request; /* NCCL may pass a hint in (NCCL_NET_OPTIONAL_RECV_COMPLETION) */
  int rc =
      c4_wrap_inner_irecv(&c4_wrap_lib, c->inner, n, data, sizes, tags, mhandles, phandles, &inner);
  *request = rc == 0 && inner ? track(c, inner, n, tags, 0, t0) : NULL;
  return rc;
}

int c4_wrap_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles,
                   void **request) {
  struct c4_wrap_comm *c = recv_comm; /* flushes are not transfers: forwarded, not timed */
  return c4_wrap_inner_iflush(&c4_wrap_lib, c->inner, n, data, sizes, mhandles, request);
}

/* ---- completion --------------------------------------------------------------------------- */

static void slot_release(struct c4_wrap_req *r) {
  atomic_store_explicit(&r->seq, UINT64_MAX, memory_order_relaxed);
  atomic_store_explicit(&r->state, C4_WSLOT_FREE, memory_order_release);
}

int c4_wrap_test(void *request, int *done, int *sizes) {
  struct c4_wrap_req *r = slot_of(request);
  if (!r) return c4_wrap_inner_test(&c4_wrap_lib, request, done, sizes);
  struct c4_wrap_comm *c = r->comm;
  int local[C4_WRAP_MAX_RECVS] = {0};
  int *got = sizes ? sizes : local;
  *done = 0;
  int rc = c4_wrap_inner_test(&c4_wrap_lib, r->inner, done, got);
  if (rc != 0) {
    emit(c, r, C4_XFER_ERROR, NULL, c4_now_ns());
    slot_release(r);
    return rc;
  }
  if (!*done) return 0;
  emit(c, r, C4_XFER_OK, got, c4_now_ns());
  if (c->consume)
    atomic_store_explicit(&r->state, C4_WSLOT_CONSUME, memory_order_release);
  else
    slot_release(r);
  return 0;
}

int c4_wrap_irecv_consumed(void *recv_comm, int n, void *request) {
  struct c4_wrap_comm *c = recv_comm;
  struct c4_wrap_req *r = slot_of(request);
  void *inner = r ? r->inner : request;
  if (r && atomic_load_explicit(&r->state, memory_order_acquire) == C4_WSLOT_CONSUME)
    slot_release(r);
  return c4_wrap_inner_irecv_consumed(&c4_wrap_lib, c->inner, n, inner);
}

struct c4_link_info *c4_wrap_link_once(void *comm) {
  struct c4_wrap_comm *c = comm;
  if (!c || c->magic != C4_WRAP_COMM_MAGIC || c->link_given) return NULL;
  c->link_given = 1;
  return &c->link;
}

/* ---- the stuck watch ---------------------------------------------------------------------- */

/* Like net_watch.c: a slot is read through its atomics and kept only if its seq did not change
 * meanwhile; the pool lock keeps the comm alive during the scan. */
static void scan_comm(struct c4_wrap_comm *c, uint64_t now) {
  uint64_t limit = (uint64_t)c->stuck_ms * 1000000ull;
  for (int i = 0; i < C4_WRAP_SLOTS; i++) {
    struct c4_wrap_req *r = &c->slots[i];
    uint64_t seq = atomic_load_explicit(&r->seq, memory_order_acquire);
    uint64_t posted = atomic_load_explicit(&r->t_posted, memory_order_relaxed);
    if (seq == UINT64_MAX || atomic_load(&r->state) != C4_WSLOT_POSTED || !posted ||
        now - posted < limit || atomic_load(&r->stuck_reported) == seq + 1)
      continue;
    struct c4_wrap_req copy = {.n = r->n, .size = r->size};
    memcpy(copy.tags, r->tags, sizeof copy.tags);
    atomic_store(&copy.seq, seq);
    atomic_store(&copy.t_posted, posted);
    if (atomic_load_explicit(&r->seq, memory_order_acquire) != seq || copy.n < 1 ||
        copy.n > C4_WRAP_MAX_RECVS)
      continue;
    atomic_store(&r->stuck_reported, seq + 1);
    for (int k = 0; k < copy.n; k++) {
      struct c4_xfer_record rec;
      record(c, &copy, k, C4_XFER_PENDING, 0, 0, &rec);
      c4_telemetry_emit_xfer(&rec);
    }
  }
}

void c4_wrap_watch_scan(void) {
  if (!pool.slots) return;
  uint64_t now = c4_now_ns();
  pthread_mutex_lock(&pool.lock);
  for (int b = 0; b < C4_WRAP_MAX_COMMS; b++)
    if (pool.owner[b]) scan_comm(pool.owner[b], now);
  pthread_mutex_unlock(&pool.lock);
}
