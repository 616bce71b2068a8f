/* real_nccl_driver.c -- calls the real libnccl.so in ways that need no GPU (the version, and
 * error paths) and prints each return code; the shim test runs it with and without the shim and
 * expects the same output. */
#include <stdio.h>

#include "nccl_calls.h"

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
