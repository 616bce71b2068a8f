/* preload_api.c -- the LD_PRELOAD shim's exported NCCL entry points. Each one stamps the arrival,
 * calls the real NCCL function (found with dlsym(RTLD_NEXT), else in an already loaded
 * libnccl.so.2) and returns its result unchanged; collectives and p2p calls are then handed to
 * preload_track.c, which learns their completion from a CUDA event. With C4_TIMING=0, or once
 * c4's profiler plugin records the process's collectives, each one only calls the real function.
 */
#include <dlfcn.h>
#include <stdatomic.h>
#include <string.h>

#include "c4_clock.h"
#include "c4_log.h"
#include "c4_telemetry.h"
#include "preload_track.h"

#define C4_EXPORT __attribute__((visibility("default")))

/* Finds the real NCCL function name; NULL if NCCL is not loaded at all. */
static void *real(const char *name) {
  void *f = dlsym(RTLD_NEXT, name);
  if (!f) {
    void *dl = dlopen("libnccl.so.2", RTLD_NOW | RTLD_NOLOAD);
    if (!dl) dl = dlopen("libnccl.so", RTLD_NOW | RTLD_NOLOAD);
    if (dl) f = dlsym(dl, name);
  }
  if (!f) C4_WARN("shim: %s not found in any loaded NCCL", name);
  return f;
}

/* Declares the cached pointer to the real `name` and loads it on first use. */
#define REAL(name, ...)                                                                            \
  typedef __typeof__((__VA_ARGS__)0) name##_fn;                                                    \
  static _Atomic(name##_fn) real_##name;                                                           \
  name##_fn fn = atomic_load_explicit(&real_##name, memory_order_relaxed);                         \
  if (!fn) {                                                                                       \
    fn = (name##_fn)real(#name);                                                                   \
    if (!fn) return ncclInternalError;                                                             \
    atomic_store(&real_##name, fn);                                                                \
  }

/* With C4_TIMING=0 the call goes straight to NCCL: no clock read, no record, no thread. */
#define UNTIMED(...)                                                                               \
  do {                                                                                             \
    if (!c4_telemetry_enabled()) return fn(__VA_ARGS__);                                           \
  } while (0)

/* The same, and also once the profiler plugin records this process's collectives. */
#define UNTRACKED(...)                                                                             \
  do {                                                                                             \
    if (!c4_shim_active()) return fn(__VA_ARGS__);                                                 \
  } while (0)

/* The same id on every rank of a communicator: a hash of the unique id they all share. */
static uint64_t id_of(const ncclUniqueId *uid) { return c4_shim_hash(uid, sizeof *uid, 0); }

/* Asks again after the real call: NCCL loads the profiler plugin inside the first init. */
static void learn(ncclComm_t comm, uint64_t id, int rank, int nranks) {
  if (comm && c4_shim_active()) c4_shim_comm_add(comm, id, rank, nranks);
}

/* The profiler plugin calls this (C4_SHIM_STAND_DOWN) when NCCL loads it into this process. */
C4_EXPORT void c4_preload_stand_down(void) { c4_shim_stand_down(); }

C4_EXPORT ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
  REAL(ncclCommInitRank, ncclResult_t(*)(ncclComm_t *, int, ncclUniqueId, int));
  UNTRACKED(comm, nranks, id, rank);
  ncclResult_t rc = fn(comm, nranks, id, rank);
  if (rc == ncclSuccess || rc == ncclInProgress) learn(*comm, id_of(&id), rank, nranks);
  return rc;
}

C4_EXPORT ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id,
                                              int rank, ncclConfig_t *config) {
  REAL(ncclCommInitRankConfig,
       ncclResult_t(*)(ncclComm_t *, int, ncclUniqueId, int, ncclConfig_t *));
  UNTRACKED(comm, nranks, id, rank, config);
  ncclResult_t rc = fn(comm, nranks, id, rank, config);
  if (rc == ncclSuccess || rc == ncclInProgress) learn(*comm, id_of(&id), rank, nranks);
  return rc;
}

/* NCCL >= 2.23. Every rank passes the same nId unique ids in the same order, so their hash is the
 * communicator's id (with one id, the id ncclCommInitRank would give). An NCCL without the
 * function gets ncclInternalError from REAL, as for any function it lacks. */
C4_EXPORT ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nId,
                                                ncclUniqueId *ids, ncclConfig_t *config) {
  REAL(ncclCommInitRankScalable,
       ncclResult_t(*)(ncclComm_t *, int, int, int, ncclUniqueId *, ncclConfig_t *));
  UNTRACKED(comm, nranks, rank, nId, ids, config);
  ncclResult_t rc = fn(comm, nranks, rank, nId, ids, config);
  if ((rc == ncclSuccess || rc == ncclInProgress) && ids && nId > 0)
    learn(*comm, c4_shim_hash(ids, (size_t)nId * sizeof *ids, 0), rank, nranks);
  return rc;
}

C4_EXPORT ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist) {
  REAL(ncclCommInitAll, ncclResult_t(*)(ncclComm_t *, int, const int *));
  UNTRACKED(comms, ndev, devlist);
  ncclResult_t rc = fn(comms, ndev, devlist);
  if (rc == ncclSuccess) {
    uint64_t t = c4_now_ns(); /* one communicator, all ranks in this process */
    uint64_t id = c4_shim_hash(&t, sizeof t, (uint64_t)(uintptr_t)comms);
    for (int i = 0; i < ndev; i++)
      learn(comms[i], id, i, ndev);
  }
  return rc;
}

C4_EXPORT ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                                     ncclConfig_t *config) {
  REAL(ncclCommSplit, ncclResult_t(*)(ncclComm_t, int, int, ncclComm_t *, ncclConfig_t *));
  UNTRACKED(comm, color, key, newcomm, config);
  ncclResult_t rc = fn(comm, color, key, newcomm, config);
  if ((rc == ncclSuccess || rc == ncclInProgress) && *newcomm) {
    /* every member of the new communicator has the same parent and color */
    uint64_t parent = c4_shim_comm_id(comm);
    uint64_t id = c4_shim_hash(&color, sizeof color, parent);
    int rank = -1, n = -1;
    static _Atomic(ncclResult_t(*)(ncclComm_t, int *)) count_fn, rank_fn;
    if (!atomic_load(&count_fn))
      atomic_store(&count_fn, (ncclResult_t(*)(ncclComm_t, int *))real("ncclCommCount"));
    if (!atomic_load(&rank_fn))
      atomic_store(&rank_fn, (ncclResult_t(*)(ncclComm_t, int *))real("ncclCommUserRank"));
    if (atomic_load(&count_fn)) atomic_load (&count_fn)(*newcomm, &n);
    if (atomic_load(&rank_fn)) atomic_load (&rank_fn)(*newcomm, &rank);
    learn(*newcomm, id, rank, n);
  }
  return rc;
}

C4_EXPORT ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  REAL(ncclCommDestroy, ncclResult_t(*)(ncclComm_t));
  UNTRACKED(comm);
  c4_shim_comm_remove(comm);
  return fn(comm);
}

C4_EXPORT ncclResult_t ncclCommAbort(ncclComm_t comm) {
  REAL(ncclCommAbort, ncclResult_t(*)(ncclComm_t));
  UNTRACKED(comm);
  c4_shim_comm_remove(comm);
  return fn(comm);
}

/* Groups are followed after the shim stands down too: a group begun before ends, and the calls
 * it holds are recorded. */
C4_EXPORT ncclResult_t ncclGroupStart(void) {
  REAL(ncclGroupStart, ncclResult_t(*)(void));
  UNTIMED();
  ncclResult_t rc = fn();
  if (rc == ncclSuccess) c4_shim_group_start();
  return rc;
}

C4_EXPORT ncclResult_t ncclGroupEnd(void) {
  REAL(ncclGroupEnd, ncclResult_t(*)(void));
  UNTIMED();
  ncclResult_t rc = fn();
  c4_shim_group_end(rc);
  return rc;
}

/* ---- collectives and p2p: arrival, the real call, then tracking -------------------------- */

C4_EXPORT ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, ncclDataType_t t,
                                     ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  REAL(ncclAllReduce, ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                      ncclComm_t, cudaStream_t));
  UNTRACKED(s, r, count, t, op, comm, stream);
  uint64_t t0 = c4_now_ns();
  ncclResult_t rc = fn(s, r, count, t, op, comm, stream);
  c4_shim_call(comm, "AllReduce", 0, count, t, -1, stream, t0, rc);
  return rc;
}

C4_EXPORT ncclResult_t ncclReduce(const void *s, void *r, size_t count, ncclDataType_t t,
                                  ncclRedOp_t op, int root, ncclComm_t comm, cudaStream_t stream) {
  REAL(ncclReduce, ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, int,
                                   ncclComm_t, cudaStream_t));
  UNTRACKED(s, r, count, t, op, root, comm, stream);
  uint64_t t0 = c4_now_ns();
  ncclResult_t rc = fn(s, r, count, t, op, root, comm, stream);
  c4_shim_call(comm, "Reduce", 0, count, t, root, stream, t0, rc);
  return rc;
}

C4_EXPORT ncclResult_t ncclBcast(void *b, size_t count, ncclDataType_t t, int root, ncclComm_t comm,
                                 cudaStream_t stream) {
  REAL(ncclBcast, ncclResult_t(*)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t));
  UNTRACKED(b, count, t, root, comm, stream);
  uint64_t t0 = c4_now_ns();
  ncclResult_t rc = fn(b, count, t, root, comm, stream);
  c4_shim_call(comm, "Broadcast", 0, count, t, root, stream, t0, rc);
  return rc;
}

C4_EXPORT ncclResult_t ncclBroadcast(const void *s, void *r, size_t count, ncclDataType_t t,
                                     int root, ncclComm_t comm, cudaStream_t stream) {
  REAL(ncclBroadcast, ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                                      cudaStream_t));
  UNTRACKED(s, r, count, t, root, comm, stream);
  uint64_t t0 = c4_now_ns();
  ncclResult_t rc = fn(s, r, count, t, root, comm, stream);
  c4_shim_call(comm, "Broadcast", 0, count, t, root, stream, t0, rc);
  return rc;
}

/* The five calls of shape (send, recv, count, type, [root,] comm, stream). */
#define PLAIN_COLL(api, label)                                                                     \
  C4_EXPORT ncclResult_t api(const void *s, void *r, size_t count, ncclDataType_t t,               \
                             ncclComm_t comm, cudaStream_t stream) {                               \
    REAL(api, ncclResult_t (*)(const void *, void *, size_t, ncclDataType_t, ncclComm_t,           \
                               cudaStream_t));                                                     \
    UNTRACKED(s, r, count, t, comm, stream);                                                       \
    uint64_t t0 = c4_now_ns();                                                                     \
    ncclResult_t rc = fn(s, r, count, t, comm, stream);                                            \
    c4_shim_call(comm, label, 0, count, t, -1, stream, t0, rc);                                    \
    return rc;                                                                                     \
  }

PLAIN_COLL(ncclAllGather, "AllGather")
PLAIN_COLL(ncclAlltoAll, "AlltoAll")

C4_EXPORT ncclResult_t ncclReduceScatter(const void *s, void *r, size_t count, ncclDataType_t t,
                                         ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream) {
  REAL(ncclReduceScatter, ncclResult_t(*)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                          ncclComm_t, cudaStream_t));
  UNTRACKED(s, r, count, t, op, comm, stream);
  uint64_t t0 = c4_now_ns();
  ncclResult_t rc = fn(s, r, count, t, op, comm, stream);
  c4_shim_call(comm, "ReduceScatter", 0, count, t, -1, stream, t0, rc);
  return rc;
}

#define ROOTED_COLL(api, label)                                                                    \
  C4_EXPORT ncclResult_t api(const void *s, void *r, size_t count, ncclDataType_t t, int root,     \
                             ncclComm_t comm, cudaStream_t stream) {                               \
    REAL(api, ncclResult_t (*)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,      \
                               cudaStream_t));                                                     \
    UNTRACKED(s, r, count, t, root, comm, stream);                                                 \
    uint64_t t0 = c4_now_ns();                                                                     \
    ncclResult_t rc = fn(s, r, count, t, root, comm, stream);                                      \
    c4_shim_call(comm, label, 0, count, t, root, stream, t0, rc);                                  \
    return rc;                                                                                     \
  }

ROOTED_COLL(ncclGather, "Gather")
ROOTED_COLL(ncclScatter, "Scatter")

C4_EXPORT ncclResult_t ncclSend(const void *s, size_t count, ncclDataType_t t, int peer,
                                ncclComm_t comm, cudaStream_t stream) {
  REAL(ncclSend,
       ncclResult_t(*)(const void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t));
  UNTRACKED(s, count, t, peer, comm, stream);
  uint64_t t0 = c4_now_ns();
  ncclResult_t rc = fn(s, count, t, peer, comm, stream);
  c4_shim_call(comm, "Send", 1, count, t, peer, stream, t0, rc);
  return rc;
}

C4_EXPORT ncclResult_t ncclRecv(void *r, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                                cudaStream_t stream) {
  REAL(ncclRecv, ncclResult_t(*)(void *, size_t, ncclDataType_t, int, ncclComm_t, cudaStream_t));
  UNTRACKED(r, count, t, peer, comm, stream);
  uint64_t t0 = c4_now_ns();
  ncclResult_t rc = fn(r, count, t, peer, comm, stream);
  c4_shim_call(comm, "Recv", 1, count, t, peer, stream, t0, rc);
  return rc;
}
