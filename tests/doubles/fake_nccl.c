/* fake_nccl.c -- TEST DOUBLE of the NCCL calls the shim wraps, for the behaviour that needs a GPU
 * (communicators that work, collectives that succeed), which this machine cannot run. Each call
 * returns a code the test can predict: a collective of exactly 13 elements is refused with
 * ncclInvalidUsage (5); everything else succeeds. The real libnccl.so is tested separately.
 * With C4_FAKE_NCCL_PROFILER naming a profiler plugin it behaves as NCCL >= 2.23 does: loads the
 * plugin at the first communicator's init, gives each communicator a context inside its init
 * call, and reports each AllReduce it accepts as a Coll event with one ProxyOp under it. */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>
#include <unistd.h>

#include "nccl_profiler_abi.h"
#include "preload_abi.h"

struct ncclComm {
  int nranks, rank;
  void *prof_ctx;
  uint64_t seq;
};

static const ncclProfiler_v5_t *profiler;
static int prof_mask; /* process-wide in NCCL too: the last init sets it */

static void profiler_init(ncclComm_t comm) {
  const char *lib = getenv("C4_FAKE_NCCL_PROFILER");
  if (!lib) return;
  if (!profiler) {
    void *dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
    profiler = dl ? dlsym(dl, "ncclProfiler_v5") : NULL;
  }
  if (profiler)
    profiler->init(&comm->prof_ctx, (uint64_t)(uintptr_t)comm, &prof_mask, "fake", 1, comm->nranks,
                   comm->rank, NULL);
}

static void profile_allreduce(ncclComm_t comm, size_t count, ncclDataType_t t) {
  if (!profiler || !(prof_mask & ncclProfileColl)) return;
  ncclProfilerEventDescr_v5_t d = {.type = ncclProfileColl, .rank = comm->rank};
  d.coll.seqNumber = comm->seq++;
  d.coll.func = "AllReduce";
  d.coll.count = count;
  d.coll.root = -1;
  d.coll.datatype = c4_nccl_dtype_name(t);
  void *coll = NULL, *op = NULL;
  profiler->startEvent(comm->prof_ctx, &coll, &d);
  profiler->stopEvent(coll);
  ncclProfilerEventDescr_v5_t o = {.type = ncclProfileProxyOp, .parentObj = coll};
  o.proxyOp.pid = getpid();
  o.proxyOp.peer = (comm->rank + 1) % comm->nranks;
  o.proxyOp.isSend = 1;
  profiler->startEvent(comm->prof_ctx, &op, &o);
  profiler->stopEvent(op);
}

static _Thread_local int group_depth; /* per thread, as NCCL's group state is */

/* Not the exported name: inside this library a call to ncclCommInitRank would reach the shim. */
static ncclResult_t make_comm(ncclComm_t *comm, int nranks, int rank) {
  if (nranks <= 0 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  *comm = calloc(1, sizeof **comm);
  (*comm)->nranks = nranks;
  (*comm)->rank = rank;
  profiler_init(*comm);
  return ncclSuccess;
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank) {
  (void)id;
  return make_comm(comm, nranks, rank);
}

ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nId,
                                      ncclUniqueId *ids, ncclConfig_t *config) {
  (void)config;
  return ids && nId > 0 ? make_comm(comm, nranks, rank) : ncclInvalidArgument;
}

ncclResult_t ncclCommCount(ncclComm_t comm, int *n) {
  *n = comm->nranks;
  return ncclSuccess;
}

ncclResult_t ncclCommUserRank(ncclComm_t comm, int *r) {
  *r = comm->rank;
  return ncclSuccess;
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                           ncclConfig_t *config) {
  (void)color, (void)config;
  int n = comm->nranks / 2 ? comm->nranks / 2 : 1;
  return make_comm(newcomm, n, key % n);
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) {
  if (profiler && comm->prof_ctx) profiler->finalize(comm->prof_ctx);
  free(comm);
  return ncclSuccess;
}

ncclResult_t ncclGroupStart(void) {
  group_depth++;
  return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void) { return group_depth-- > 0 ? ncclSuccess : ncclInvalidUsage; }

ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream) {
  (void)s, (void)r, (void)op, (void)stream;
  if (!comm) return ncclInvalidArgument;
  if (count == 13) return ncclInvalidUsage;
  profile_allreduce(comm, count, t);
  return ncclSuccess;
}

ncclResult_t ncclSend(const void *s, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  (void)s, (void)count, (void)t, (void)stream;
  return comm && peer >= 0 && peer < comm->nranks ? ncclSuccess : ncclInvalidArgument;
}

ncclResult_t ncclRecv(void *r, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t stream) {
  (void)r, (void)count, (void)t, (void)stream;
  return comm && peer >= 0 && peer < comm->nranks ? ncclSuccess : ncclInvalidArgument;
}
