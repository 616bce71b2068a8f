/* preload_track.c -- the shim's state. Communicators sit in a lock-free open-addressing table
 * keyed by the ncclComm_t pointer; collectives waiting for their CUDA event sit in a fixed table
 * that one poller thread queries. Calls inside a group wait, per thread, for the outermost
 * ncclGroupEnd: only then has NCCL put their work on the stream. */
#include "preload_track.h"
#include "c4_env.h"
#include "c4_thread.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_hash.h"
#include "c4_log.h"
#include "c4_record.h"
#include "c4_reporter.h"
#include "c4_telemetry.h"
#include "preload_cuda.h"

#define COMM_SLOTS 4096
#define PENDING 4096
#define GROUP_MAX 256
#define TOMBSTONE ((uintptr_t)1)

struct comm_slot {
  _Atomic uintptr_t key;
  uint64_t id;
  int rank, nranks;
  _Atomic uint64_t coll_seq, p2p_seq; /* call order: the same on every rank for collectives */
};

struct pending {
  atomic_int busy; /* 0 free, 1 being filled, 2 waiting for its event */
  c4_cuda_event ev;
  struct c4_coll_record rec;
};

static struct comm_slot comms[COMM_SLOTS];
static struct pending pend[PENDING];
static pthread_once_t poller_once = PTHREAD_ONCE_INIT;
static atomic_ulong lost;                   /* calls whose completion could not be tracked */
static _Atomic uint64_t entered, completed; /* for the heartbeat */

static atomic_int stood_down; /* the profiler plugin records this process's collectives */

bool c4_shim_active(void) {
  return c4_telemetry_enabled() && !atomic_load_explicit(&stood_down, memory_order_relaxed);
}

void c4_shim_stand_down(void) {
  if (!atomic_exchange(&stood_down, 1))
    C4_WARN("shim: the c4 profiler plugin records this process's collectives; the LD_PRELOAD "
            "shim stands down and passes every call straight to NCCL");
}

static void progress(uint64_t *e, uint64_t *d) {
  *e = atomic_load(&entered);
  *d = atomic_load(&completed);
}

/* A thread's calls inside a group, waiting for its outermost ncclGroupEnd. Allocated at the
 * thread's first call inside a group and freed when it exits (group_key's destructor): static
 * TLS is carved out of every thread's stack in the process, and 45 KB of it there made threads
 * with small stacks (Python's threading.stack_size(32768)) fail to start. */
struct group {
  int n;
  struct {
    struct c4_coll_record rec;
    cudaStream_t stream;
  } calls[GROUP_MAX];
};

static __thread int group_depth;
static __thread struct group *group;
static pthread_once_t group_once = PTHREAD_ONCE_INIT;
static pthread_key_t group_key;
static int group_key_ok;

uint64_t c4_shim_hash(const void *p, size_t n, uint64_t seed) {
  uint64_t h = c4_fnv1a(C4_FNV_OFFSET ^ seed, p, n);
  return h ? h : 1;
}

static size_t slot_of(uintptr_t key) {
  return (size_t)(c4_shim_hash(&key, sizeof key, 0) % COMM_SLOTS);
}

void c4_shim_comm_add(ncclComm_t comm, uint64_t id, int rank, int nranks) {
  uintptr_t key = (uintptr_t)comm;
  for (size_t i = 0, s = slot_of(key); i < COMM_SLOTS; i++, s = (s + 1) % COMM_SLOTS) {
    uintptr_t cur = atomic_load(&comms[s].key);
    if (cur == key || ((cur == 0 || cur == TOMBSTONE) &&
                       atomic_compare_exchange_strong(&comms[s].key, &cur, key))) {
      comms[s].id = id;
      comms[s].rank = rank;
      comms[s].nranks = nranks;
      atomic_store(&comms[s].coll_seq, 0);
      atomic_store(&comms[s].p2p_seq, 0);
      break;
    }
  }
  struct c4_record r = {.kind = C4_REC_COMM};
  r.comm.comm = id;
  r.comm.rank = rank;
  r.comm.nranks = nranks;
  r.comm.nnodes = -1; /* the public API does not say */
  r.comm.pid = (uint32_t)getpid();
  c4_host_name(r.comm.host, sizeof r.comm.host);
  r.comm.t = c4_now_ns();
  c4_reporter_set_progress(progress);
  c4_telemetry_start();
  c4_telemetry_emit(&r);
}

static struct comm_slot *find(ncclComm_t comm) {
  uintptr_t key = (uintptr_t)comm;
  for (size_t i = 0, s = slot_of(key); i < COMM_SLOTS; i++, s = (s + 1) % COMM_SLOTS) {
    uintptr_t cur = atomic_load(&comms[s].key);
    if (cur == key) return &comms[s];
    if (cur == 0) return NULL;
  }
  return NULL;
}

void c4_shim_comm_remove(ncclComm_t comm) {
  struct comm_slot *s = find(comm);
  if (s) atomic_store(&s->key, TOMBSTONE);
}

uint64_t c4_shim_comm_id(ncclComm_t comm) {
  struct comm_slot *s = find(comm);
  return s ? s->id : 0;
}

static void emit(const struct c4_coll_record *rec) {
  if (rec->t_done) atomic_fetch_add(&completed, 1);
  struct c4_record r = {.kind = C4_REC_COLL, .coll = *rec};
  c4_telemetry_emit(&r);
}

/* One thread polls every waiting event. While any waits, it sleeps POLL_MIN_NS after a pass that
 * saw one complete and twice as long after each pass that saw none, up to POLL_MAX_NS; with none
 * waiting, POLL_IDLE_NS. t_done is late by at most the sleep in use (plus scheduling): 100 us
 * while calls keep completing, 1 ms once the GPU has gone 1.5 ms without completing one (a long
 * collective), 10 ms for a call made while none waited (the poller was idle). Polling every
 * 100 us while any waited cost 12-16% of a core in a process that always had a collective in
 * flight (one every 20 ms, each done 50 ms later); backing off, 2-4%. */
#define POLL_MIN_NS 100000L
#define POLL_MAX_NS 1000000L
#define POLL_IDLE_NS 10000000L

/* Queries every waiting event once; emits those done. Sets *waiting to the number still waiting
 * and returns how many completed. */
static int poll_pass(int *waiting) {
  int completions = 0;
  *waiting = 0;
  for (int i = 0; i < PENDING; i++) {
    struct pending *p = &pend[i];
    if (atomic_load_explicit(&p->busy, memory_order_acquire) != 2) continue;
    int done = c4_cuda_event_done(p->ev);
    if (done == 0) {
      (*waiting)++;
      continue;
    }
    p->rec.t_done = done > 0 ? c4_now_ns() : 0;
    emit(&p->rec);
    c4_cuda_event_free(p->ev);
    atomic_store_explicit(&p->busy, 0, memory_order_release);
    completions++;
  }
  return completions;
}

static void *poller(void *arg) {
  (void)arg;
  long period = POLL_MIN_NS;
  for (;;) {
    int waiting;
    int completions = poll_pass(&waiting);
    if (completions || !waiting)
      period = POLL_MIN_NS;
    else
      period = period * 2 < POLL_MAX_NS ? period * 2 : POLL_MAX_NS;
    struct timespec ts = {0, waiting ? period : POLL_IDLE_NS};
    nanosleep(&ts, NULL);
  }
  return NULL;
}

/* Set when the poller could not start: calls are then recorded with an unknown completion, not
 * parked for a thread that will never read them. */
static atomic_int no_poller;

static void start_poller(void) {
  pthread_t t;
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
  if (c4_thread_start(&t, &a, poller, NULL) != 0) atomic_store(&no_poller, 1);
  pthread_attr_destroy(&a);
}

/* Records an event after the call's work and hands it to the poller, or emits the record with
 * an unknown completion when that cannot be done. */
static void track(const struct c4_coll_record *rec, cudaStream_t stream) {
  c4_cuda_event ev = c4_cuda_event_record(stream);
  if (!ev) {
    emit(rec);
    return;
  }
  pthread_once(&poller_once, start_poller);
  for (int i = 0; i < PENDING && !atomic_load_explicit(&no_poller, memory_order_relaxed); i++) {
    int idle = 0;
    if (atomic_compare_exchange_strong(&pend[i].busy, &idle, 1)) {
      pend[i].ev = ev;
      pend[i].rec = *rec;
      atomic_store_explicit(&pend[i].busy, 2, memory_order_release);
      return;
    }
  }
  atomic_fetch_add(&lost, 1); /* more than PENDING calls in flight, or no poller */
  c4_cuda_event_free(ev);
  emit(rec);
}

static void group_free(void *g) {
  free(g);
  group = NULL; /* an NCCL call from a later destructor of this thread makes a new one */
}

static void group_key_make(void) { group_key_ok = pthread_key_create(&group_key, group_free) == 0; }

/* This thread's group, made on first use; NULL when it cannot be (no memory, or no key to free
 * it at the thread's exit: it is then not made at all, rather than leaked per thread). */
static struct group *group_get(void) {
  if (group) return group;
  pthread_once(&group_once, group_key_make);
  struct group *g = group_key_ok ? malloc(sizeof *g) : NULL;
  if (g && pthread_setspecific(group_key, g) != 0) {
    free(g);
    g = NULL;
  }
  if (g) g->n = 0;
  group = g;
  return g;
}

/* Keeps a call made inside a group for the outermost ncclGroupEnd. Without room (more than
 * GROUP_MAX calls, or no group) it is recorded now, its completion unknown, and counted: an
 * event recorded now would complete before NCCL has put the call's work on the stream. */
static void park(const struct c4_coll_record *rec, cudaStream_t stream) {
  struct group *g = group_get();
  if (!g || g->n >= GROUP_MAX) {
    atomic_fetch_add(&lost, 1);
    emit(rec);
    return;
  }
  g->calls[g->n].rec = *rec;
  g->calls[g->n++].stream = stream;
}

static void copy_name(char *dst, const char *src) {
  size_t n = strnlen(src, C4_NAME_MAX - 1);
  memcpy(dst, src, n);
  dst[n] = 0;
}

void c4_shim_call(ncclComm_t comm, const char *func, int is_p2p, size_t count, ncclDataType_t dtype,
                  int root_or_peer, cudaStream_t stream, uint64_t t_arrive, ncclResult_t rc) {
  atomic_fetch_add(&entered, 1);
  struct comm_slot *s = find(comm);
  struct c4_coll_record rec = {.comm = s ? s->id : 0,
                               .seq = !s       ? 0
                                      : is_p2p ? atomic_fetch_add(&s->p2p_seq, 1)
                                               : atomic_fetch_add(&s->coll_seq, 1),
                               .rank = s ? s->rank : -1,
                               .nranks = s ? s->nranks : -1,
                               .is_p2p = (uint8_t)is_p2p,
                               .root = root_or_peer,
                               .count = count,
                               .bytes = count * c4_nccl_dtype_size(dtype),
                               .t_arrive = t_arrive,
                               .t_enqueued = c4_now_ns()};
  copy_name(rec.func, func);
  copy_name(rec.dtype, c4_nccl_dtype_name(dtype));
  if (rc != ncclSuccess && rc != ncclInProgress) {
    emit(&rec); /* NCCL refused it: nothing will run */
    return;
  }
  if (group_depth > 0)
    park(&rec, stream);
  else
    track(&rec, stream);
}

void c4_shim_group_start(void) { group_depth++; }

void c4_shim_group_end(ncclResult_t rc) {
  if (group_depth > 0) group_depth--;
  struct group *g = group;
  if (group_depth > 0 || !g) return;
  for (int i = 0; i < g->n; i++) {
    g->calls[i].rec.t_enqueued = c4_now_ns();
    if (rc == ncclSuccess || rc == ncclInProgress)
      track(&g->calls[i].rec, g->calls[i].stream);
    else
      emit(&g->calls[i].rec);
  }
  g->n = 0;
}
