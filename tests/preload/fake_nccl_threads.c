/* fake_nccl_threads.c -- threads for the shim test: linked against the NCCL test double, run with
 * LD_PRELOAD=libc4-preload.so. Each of THREADS threads, started with a 32 KB stack (Python's
 * threading.stack_size(32768)), makes group calls on a communicator of its own, nested groups
 * included. Prints whether each thread started and the first failing code each one saw. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "nccl_calls.h"

#define THREADS 4
#define ROUNDS 10
#define STACK 32768

static ncclComm_t comm[THREADS];

/* Rank i sends to i + 1 and receives from i - 1, ROUNDS times, the receive in a nested group. */
static void *worker(void *arg) {
  int i = (int)(intptr_t)arg;
  ncclResult_t bad = ncclSuccess;
  for (int r = 0; r < ROUNDS && !bad; r++) {
    bad = ncclGroupStart();
    if (!bad) bad = ncclSend(NULL, 10, 0, (i + 1) % THREADS, comm[i], NULL);
    if (!bad) bad = ncclGroupStart();
    if (!bad) bad = ncclRecv(NULL, 10, 0, (i + THREADS - 1) % THREADS, comm[i], NULL);
    if (!bad) bad = ncclGroupEnd();
    if (!bad) bad = ncclGroupEnd();
  }
  return (void *)(intptr_t)bad;
}

int main(void) {
  ncclUniqueId id;
  for (int i = 0; i < THREADS; i++) {
    memset(&id, i + 1, sizeof id);
    printf("init %d\n", ncclCommInitRank(&comm[i], THREADS, id, i));
  }
  /* the shim loads CUDA and starts its poller here, on the main thread's stack */
  printf("allreduce %d\n", ncclAllReduce(NULL, NULL, 4, 7, 0, comm[0], NULL));
  pthread_attr_t a;
  pthread_attr_init(&a);
  pthread_attr_setstacksize(&a, STACK);
  pthread_t t[THREADS];
  int started[THREADS];
  for (int i = 0; i < THREADS; i++) {
    int rc = pthread_create(&t[i], &a, worker, (void *)(intptr_t)i);
    started[i] = rc == 0;
    printf("create %d\n", rc);
  }
  for (int i = 0; i < THREADS; i++) {
    void *bad = NULL;
    if (started[i]) pthread_join(t[i], &bad);
    printf("thread %d %d\n", i, (int)(intptr_t)bad);
  }
  fflush(stdout);
  usleep(300000); /* let the shim's poller see the (fake) CUDA events complete */
  for (int i = 0; i < THREADS; i++)
    ncclCommDestroy(comm[i]);
  return 0;
}
