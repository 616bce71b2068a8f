/* nccl_calls.h -- the NCCL functions the shim's test drivers call, declared once: the drivers
 * link against the NCCL test double or the real libnccl, and have no nccl.h. */
#ifndef C4_TEST_NCCL_CALLS_H
#define C4_TEST_NCCL_CALLS_H

#include "preload_abi.h"

ncclResult_t ncclGetVersion(int *version);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nId,
                                      ncclUniqueId *ids, ncclConfig_t *config);
ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                           ncclConfig_t *config);
ncclResult_t ncclCommDestroy(ncclComm_t comm);
ncclResult_t ncclGroupStart(void);
ncclResult_t ncclGroupEnd(void);
ncclResult_t ncclAllReduce(const void *s, void *r, size_t count, ncclDataType_t t, ncclRedOp_t op,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclBroadcast(const void *s, void *r, size_t count, ncclDataType_t t, int root,
                           ncclComm_t comm, cudaStream_t stream);
ncclResult_t ncclSend(const void *s, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t stream);
ncclResult_t ncclRecv(void *r, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t stream);

#endif
