/* fake_nccl.c -- TEST DOUBLE of the NCCL calls the shim wraps, for the behaviour that needs a GPU
 * (communicators that work, collectives that succeed), which this machine cannot run. Each call
 * returns a code the test can predict: a collective of exactly 13 elements is refused with
 * ncclInvalidUsage (5); everything else succeeds. The real libnccl.so is tested separately. */
#include <stdlib.h>

#include "preload_abi.h"

struct ncclComm {
  int nranks, rank;
};

static _Thread_local int group_depth; /* per thread, as NCCL's group state is */

/* Not the exported name: inside this library a call to ncclCommInitRank would reach the shim. */
static ncclResult_t make_comm(ncclComm_t *comm, int nranks, int rank) {
  if (nranks <= 0 || rank < 0 || rank >= nranks) return ncclInvalidArgument;
  *comm = malloc(sizeof **comm);
  (*comm)->nranks = nranks;
  (*comm)->rank = rank;
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
  (void)s, (void)r, (void)t, (void)op, (void)stream;
  if (!comm) return ncclInvalidArgument;
  return count == 13 ? ncclInvalidUsage : ncclSuccess;
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
