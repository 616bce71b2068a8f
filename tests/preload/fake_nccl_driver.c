/* fake_nccl_driver.c -- a "training job" for the shim test: linked against the NCCL test double,
 * run with LD_PRELOAD=libc4-preload.so. Prints each call's return code, one per line. */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nccl_calls.h"

int main(void) {
  ncclUniqueId id;
  memset(&id, 7, sizeof id);
  ncclUniqueId ids[3];
  memset(ids, 9, sizeof ids);
  ncclComm_t comm, sub, wide[2];
  printf("init %d\n", ncclCommInitRank(&comm, 4, id, 2));
  printf("init-bad %d\n", ncclCommInitRank(&sub, 0, id, 0));
  for (int i = 0; i < 3; i++)
    printf("allreduce %d\n", ncclAllReduce(NULL, NULL, 1024, 7, 0, comm, NULL));
  printf("allreduce-13 %d\n", ncclAllReduce(NULL, NULL, 13, 7, 0, comm, NULL));
  printf("group %d\n", ncclGroupStart());
  printf("send %d\n", ncclSend(NULL, 100, 0, 1, comm, NULL));
  printf("recv %d\n", ncclRecv(NULL, 100, 0, 3, comm, NULL));
  printf("groupend %d\n", ncclGroupEnd());
  printf("split %d\n", ncclCommSplit(comm, 1, 0, &sub, NULL));
  printf("allreduce-sub %d\n", ncclAllReduce(NULL, NULL, 8, 9, 0, sub, NULL));
  for (int r = 0; r < 2; r++) { /* two ranks of one communicator, as two processes would be */
    printf("init-scalable %d\n", ncclCommInitRankScalable(&wide[r], 8, 5 + r, 3, ids, NULL));
    printf("allreduce-scalable %d\n", ncclAllReduce(NULL, NULL, 16, 7, 0, wide[r], NULL));
  }
  fflush(stdout);
  usleep(300000); /* let the shim's poller see the (fake) CUDA events complete */
  printf("destroy %d\n", ncclCommDestroy(wide[0]) | ncclCommDestroy(wide[1]) |
                             ncclCommDestroy(sub) | ncclCommDestroy(comm));
  return 0;
}
