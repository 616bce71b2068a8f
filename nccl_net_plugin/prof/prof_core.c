/* prof_core.c -- collective timing from NCCL's profiler events.
 *
 * A rank's arrival at a collective is its Coll (or P2p) start; NCCL's Coll stop only says the
 * collective was enqueued. Completion is the last stop among the network operations (ProxyOp)
 * and kernel channel events NCCL starts for it, which come later and from the proxy thread, with
 * no count announced in advance. So a collective is reported once it is enqueued and all the
 * operations started for it have stopped and none has started for C4_PROF_SETTLE_MS; until then
 * it is "entered" but not "done", which is what a hang looks like. Events live in fixed pools per
 * communicator (no allocation on NCCL's threads); handles stay valid until the scan frees them. */
#include "prof_core.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_env.h"
#include "c4_err.h"
#include "c4_log.h"
#include "c4_telemetry.h"

#define COLL_POOL 1024
#define OP_POOL 8192
#define MAX_CTX 1024

enum { SLOT_FREE = 0, SLOT_ACTIVE, SLOT_ENQUEUED };

struct coll_ev {
  uint8_t kind; /* C4_PEV_COLL or C4_PEV_P2P: first field of every handle */
  atomic_int state;
  struct c4_prof_ctx *ctx;
  struct c4_coll_record rec;
  atomic_int ops_started, ops_done;
  _Atomic uint64_t t_last_stop, t_last_start;
};

struct op_ev {
  uint8_t kind; /* C4_PEV_OP or C4_PEV_STEP */
  atomic_int busy;
  struct coll_ev *coll; /* NULL for a PXN op whose parent lives in another process */
  struct op_ev *op;     /* steps: their proxy op */
  int peer, is_send;    /* ops: the peer's communicator rank, direction */
};

#define LINKS_SEEN 256

struct c4_prof_ctx {
  uint64_t comm;
  int rank, nranks;
  uint64_t settle_ns;
  _Atomic uint64_t next_coll; /* NCCL starts a communicator's Coll/P2p events from one thread */
  uint64_t emit_cursor;       /* scan thread only */
  uint64_t p2p_count;
  _Atomic uint64_t next_op, next_step;
  struct coll_ev coll[COLL_POOL];
  struct op_ev op[OP_POOL];
  struct op_ev step[OP_POOL];
  pthread_mutex_t link_lock; /* once per connection, never per transfer */
  uint64_t link_seen[LINKS_SEEN];
  int nlinks;
};

static struct {
  pthread_mutex_t lock; /* context list: init, finalize and the scan; not NCCL's event path */
  int n;
  struct c4_prof_ctx *ctx[MAX_CTX];
  atomic_ulong entered, done, dropped;
} prof = {.lock = PTHREAD_MUTEX_INITIALIZER};

static void copy_name(char *dst, const char *src) {
  size_t n = src ? strnlen(src, C4_NAME_MAX - 1) : 0;
  memcpy(dst, src ? src : "", n);
  dst[n] = 0;
}

static size_t dtype_size(const char *t) {
  if (!t) return 0;
  static const struct {
    const char *name;
    size_t size;
  } sizes[] = {{"ncclInt8", 1},   {"ncclUint8", 1},   {"ncclFloat8e4m3", 1}, {"ncclFloat8e5m2", 1},
               {"ncclInt32", 4},  {"ncclUint32", 4},  {"ncclFloat32", 4},    {"ncclInt64", 8},
               {"ncclUint64", 8}, {"ncclFloat64", 8}, {"ncclFloat16", 2},    {"ncclBfloat16", 2}};
  for (unsigned i = 0; i < sizeof sizes / sizeof *sizes; i++)
    if (!strcmp(t, sizes[i].name)) return sizes[i].size;
  return 0;
}

int c4_prof_init(struct c4_prof_ctx **out, uint64_t comm, const char *name, int nnodes, int nranks,
                 int rank) {
  struct c4_prof_ctx *ctx = calloc(1, sizeof *ctx);
  if (!ctx) return C4_ENOMEM;
  ctx->comm = comm;
  ctx->rank = rank;
  ctx->nranks = nranks;
  ctx->settle_ns = (uint64_t)c4_env_long("C4_PROF_SETTLE_MS", 50, 1, 600000) * 1000000ull;
  pthread_mutex_init(&ctx->link_lock, NULL);
  struct c4_record r = {.kind = C4_REC_COMM};
  r.comm.comm = comm;
  snprintf(r.comm.name, sizeof r.comm.name, "%s", name ? name : "");
  r.comm.rank = rank;
  r.comm.nranks = nranks;
  r.comm.nnodes = nnodes;
  r.comm.pid = (uint32_t)getpid();
  c4_host_name(r.comm.host, sizeof r.comm.host);
  r.comm.t = c4_now_ns();
  c4_telemetry_emit(&r);
  pthread_mutex_lock(&prof.lock);
  int ok = prof.n < MAX_CTX;
  if (ok) prof.ctx[prof.n++] = ctx;
  pthread_mutex_unlock(&prof.lock);
  if (!ok)
    C4_WARN("profiler: more than %d communicators; collectives of comm %016llx not timed", MAX_CTX,
            (unsigned long long)comm);
  *out = ctx;
  return 0;
}

static void start_coll(struct c4_prof_ctx *ctx, void **handle, const struct c4_prof_event *e) {
  uint64_t idx = atomic_load_explicit(&ctx->next_coll, memory_order_relaxed);
  struct coll_ev *c = &ctx->coll[idx % COLL_POOL];
  if (atomic_load_explicit(&c->state, memory_order_acquire) != SLOT_FREE) {
    atomic_fetch_add(&prof.dropped, 1); /* more than COLL_POOL unsettled collectives */
    return;
  }
  c->kind = (uint8_t)e->type;
  c->ctx = ctx;
  struct c4_coll_record *r = &c->rec;
  memset(r, 0, sizeof *r);
  r->comm = ctx->comm;
  r->rank = ctx->rank;
  r->nranks = ctx->nranks;
  r->is_p2p = e->type == C4_PEV_P2P;
  r->seq = r->is_p2p ? ctx->p2p_count++ : e->seq;
  r->count = e->count;
  r->bytes = e->count * dtype_size(e->datatype);
  r->root = e->root_or_peer;
  r->nchannels = (uint8_t)e->nchannels;
  copy_name(r->func, e->func);
  copy_name(r->dtype, e->datatype);
  copy_name(r->algo, e->algo);
  copy_name(r->proto, e->proto);
  r->t_arrive = c4_now_ns();
  atomic_store(&c->ops_started, 0);
  atomic_store(&c->ops_done, 0);
  atomic_store(&c->t_last_stop, 0);
  atomic_store(&c->t_last_start, 0);
  atomic_store_explicit(&c->state, SLOT_ACTIVE, memory_order_release);
  atomic_store_explicit(&ctx->next_coll, idx + 1, memory_order_release);
  atomic_fetch_add(&prof.entered, 1);
  *handle = c;
}

/* Is p one of ctx's collective handles? Compared as an address only: a PXN parent may point
 * into another process and must never be read. */
static struct coll_ev *own_coll(struct c4_prof_ctx *ctx, void *p) {
  uintptr_t a = (uintptr_t)p, lo = (uintptr_t)ctx->coll, hi = (uintptr_t)(ctx->coll + COLL_POOL);
  if (a < lo || a >= hi || (a - lo) % sizeof(struct coll_ev)) return NULL;
  return p;
}

static void start_op(struct c4_prof_ctx *ctx, void **handle, const struct c4_prof_event *e) {
  struct coll_ev *c = e->pid == getpid() ? own_coll(ctx, e->parent) : NULL;
  if (c && atomic_load_explicit(&c->state, memory_order_acquire) == SLOT_FREE) c = NULL;
  uint64_t i = atomic_fetch_add(&ctx->next_op, 1);
  struct op_ev *op = &ctx->op[i % OP_POOL];
  int idle = 0;
  if (!atomic_compare_exchange_strong(&op->busy, &idle, 1)) {
    atomic_fetch_add(&prof.dropped, 1);
    return;
  }
  op->kind = C4_PEV_OP;
  op->coll = c;
  op->op = NULL;
  op->peer = e->root_or_peer;
  op->is_send = e->is_send;
  if (c) {
    atomic_fetch_add(&c->ops_started, 1);
    atomic_store(&c->t_last_start, c4_now_ns());
  }
  *handle = op;
}

/* Is p one of ctx's pool entries? By address only, like own_coll. */
static struct op_ev *own_in(struct op_ev *pool, void *p) {
  uintptr_t a = (uintptr_t)p, lo = (uintptr_t)pool, hi = (uintptr_t)(pool + OP_POOL);
  if (a < lo || a >= hi || (a - lo) % sizeof(struct op_ev)) return NULL;
  return p;
}

/* A proxy step: kept only as the link between a NetPlugin event and its proxy op. */
static void start_step(struct c4_prof_ctx *ctx, void **handle, const struct c4_prof_event *e) {
  struct op_ev *op = own_in(ctx->op, e->parent);
  if (!op || op->kind != C4_PEV_OP) return;
  struct op_ev *st = &ctx->step[atomic_fetch_add(&ctx->next_step, 1) % OP_POOL];
  int idle = 0;
  if (!atomic_compare_exchange_strong(&st->busy, &idle, 1)) {
    atomic_fetch_add(&prof.dropped, 1);
    return;
  }
  st->kind = C4_PEV_STEP;
  st->op = op;
  *handle = st;
}

/* The net plugin reported a connection under a proxy step: write, once per connection, which
 * communicator ranks it joins. Data from other net plugins is left alone. */
static void net_event(struct c4_prof_ctx *ctx, const struct c4_prof_event *e) {
  struct op_ev *st = own_in(ctx->step, e->parent);
  const struct c4_link_info *li = e->net_data;
  if (!st || st->kind != C4_PEV_STEP || e->net_plugin_id != C4_PROFILER_PLUGIN_ID || !li ||
      li->magic != C4_LINK_MAGIC)
    return;
  struct op_ev *op = st->op;
  struct coll_ev *c = op ? op->coll : NULL;
  pthread_mutex_lock(&ctx->link_lock);
  int seen = 0;
  for (int i = 0; i < ctx->nlinks && !seen; i++)
    seen = ctx->link_seen[i] == li->conn_id;
  if (!seen && ctx->nlinks < LINKS_SEEN) ctx->link_seen[ctx->nlinks++] = li->conn_id;
  pthread_mutex_unlock(&ctx->link_lock);
  if (seen || !op) return;
  struct c4_record r = {.kind = C4_REC_LINK};
  r.link = (struct c4_link_record){.comm = ctx->comm,
                                   .conn_id = li->conn_id,
                                   .rank = c ? c->rec.rank : ctx->rank,
                                   .peer = op->peer,
                                   .dir = li->dir,
                                   .t = c4_now_ns()};
  c4_telemetry_emit(&r);
}

void c4_prof_start(struct c4_prof_ctx *ctx, void **handle, const struct c4_prof_event *e) {
  *handle = NULL;
  if (!ctx) return;
  if (e->type == C4_PEV_COLL || e->type == C4_PEV_P2P)
    start_coll(ctx, handle, e);
  else if (e->type == C4_PEV_OP || e->type == C4_PEV_KERNEL)
    start_op(ctx, handle, e);
  else if (e->type == C4_PEV_STEP)
    start_step(ctx, handle, e);
  else if (e->type == C4_PEV_NET)
    net_event(ctx, e);
}

static void max_store(_Atomic uint64_t *a, uint64_t v) {
  uint64_t cur = atomic_load(a);
  while (cur < v && !atomic_compare_exchange_weak(a, &cur, v)) {
  }
}

void c4_prof_stop(void *handle) {
  if (!handle) return;
  uint8_t kind = *(uint8_t *)handle;
  if (kind == C4_PEV_STEP) {
    atomic_store(&((struct op_ev *)handle)->busy, 0);
  } else if (kind == C4_PEV_OP) {
    struct op_ev *op = handle;
    struct coll_ev *c = op->coll;
    if (c) {
      max_store(&c->t_last_stop, c4_now_ns());
      atomic_fetch_add(&c->ops_done, 1);
    }
    atomic_store(&op->busy, 0);
  } else {
    struct coll_ev *c = handle;
    c->rec.t_enqueued = c4_now_ns();
    atomic_store_explicit(&c->state, SLOT_ENQUEUED, memory_order_release);
  }
}

/* Emits the collectives of ctx that have settled, oldest first. force: all enqueued ones. */
static void scan_ctx(struct c4_prof_ctx *ctx, uint64_t now, int force) {
  while (ctx->emit_cursor < atomic_load_explicit(&ctx->next_coll, memory_order_acquire)) {
    struct coll_ev *c = &ctx->coll[ctx->emit_cursor % COLL_POOL];
    if (atomic_load_explicit(&c->state, memory_order_acquire) != SLOT_ENQUEUED) return;
    int started = atomic_load(&c->ops_started), done = atomic_load(&c->ops_done);
    uint64_t last = atomic_load(&c->t_last_start), stop = atomic_load(&c->t_last_stop);
    uint64_t quiet_since = last > c->rec.t_enqueued ? last : c->rec.t_enqueued;
    if (stop > quiet_since) quiet_since = stop;
    if (!force && (done < started || now - quiet_since < ctx->settle_ns)) return;
    struct c4_record r = {.kind = C4_REC_COLL, .coll = c->rec};
    r.coll.nops = (uint16_t)(started > 0xffff ? 0xffff : started);
    r.coll.t_done = done == started && started > 0 ? stop : 0;
    c4_telemetry_emit(&r);
    atomic_fetch_add(&prof.done, 1);
    atomic_store_explicit(&c->state, SLOT_FREE, memory_order_release);
    ctx->emit_cursor++;
  }
}

void c4_prof_scan(void) {
  uint64_t now = c4_now_ns();
  pthread_mutex_lock(&prof.lock);
  for (int i = 0; i < prof.n; i++)
    scan_ctx(prof.ctx[i], now, 0);
  pthread_mutex_unlock(&prof.lock);
}

int c4_prof_finalize(struct c4_prof_ctx *ctx) {
  if (!ctx) return 0;
  pthread_mutex_lock(&prof.lock);
  for (int i = 0; i < prof.n; i++)
    if (prof.ctx[i] == ctx) {
      prof.ctx[i] = prof.ctx[--prof.n];
      break;
    }
  pthread_mutex_unlock(&prof.lock);
  scan_ctx(ctx, c4_now_ns(), 1);
  pthread_mutex_destroy(&ctx->link_lock);
  free(ctx);
  return 0;
}

void c4_prof_counters(uint64_t *entered, uint64_t *done, uint64_t *dropped) {
  if (entered) *entered = atomic_load(&prof.entered);
  if (done) *done = atomic_load(&prof.done);
  if (dropped) *dropped = atomic_load(&prof.dropped);
}
