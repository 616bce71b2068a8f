/* real_nccl_driver.c -- calls the real libnccl.so in ways that need no GPU (the version, and
 * error paths) and prints each return code; the shim test runs it with and without the shim and
 * expects the same output. */
#include <stdio.h>

#include "preload_abi.h"

ncclResult_t ncclGetVersion(int *version);
ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank);
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

int main(void) {
  int v = 0;
  ncclResult_t rc = ncclGetVersion(&v);
  printf("version %d %d\n", rc, v);
  printf("allreduce-null %d\n", ncclAllReduce(NULL, NULL, 8, 7, 0, NULL, NULL));
  printf("broadcast-null %d\n", ncclBroadcast(NULL, NULL, 8, 7, 0, NULL, NULL));
  printf("send-null %d\n", ncclSend(NULL, 8, 7, 0, NULL, NULL));
  printf("recv-null %d\n", ncclRecv(NULL, 8, 7, 0, NULL, NULL));
  ncclResult_t g = ncclGroupStart();
  printf("group %d %d\n", g, ncclGroupEnd());
  printf("groupend-unmatched %d\n", ncclGroupEnd());
  printf("destroy-null %d\n", ncclCommDestroy(NULL));
  ncclComm_t c;
  ncclUniqueId id = {{0}};
  printf("init-zero-ranks %d\n", ncclCommInitRank(&c, 0, id, 0));
  return 0;
}
