/* fake_cudart.c -- TEST DOUBLE of the four CUDA runtime event calls the LD_PRELOAD shim uses,
 * because this machine has no GPU: an event completes C4_FAKE_CUDA_DELAY_MS (default 20) after it
 * was recorded, whatever the stream. With C4_FAKE_CUDA_QUERIES=FILE the number of
 * cudaEventQuery calls (how often the shim looked) is written to FILE at exit. Loaded by the
 * shim through C4_CUDART in tests only. */
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "c4_clock.h"

struct fake_event {
  uint64_t ready_at;
};

int cudaEventCreateWithFlags(void **ev, unsigned flags) {
  (void)flags;
  *ev = calloc(1, sizeof(struct fake_event));
  return *ev ? 0 : 2; /* cudaErrorMemoryAllocation */
}

int cudaEventRecord(void *ev, void *stream) {
  (void)stream;
  const char *d = getenv("C4_FAKE_CUDA_DELAY_MS");
  ((struct fake_event *)ev)->ready_at = c4_now_ns() + (uint64_t)(d ? atol(d) : 20) * 1000000ull;
  return 0;
}

static atomic_ulong queries;

__attribute__((destructor)) static void write_queries(void) {
  const char *path = getenv("C4_FAKE_CUDA_QUERIES");
  FILE *f = path ? fopen(path, "w") : NULL;
  if (!f) return;
  fprintf(f, "%lu\n", atomic_load(&queries));
  fclose(f);
}

int cudaEventQuery(void *ev) {
  atomic_fetch_add(&queries, 1);
  return c4_now_ns() >= ((struct fake_event *)ev)->ready_at ? 0 : 600;
}

int cudaEventDestroy(void *ev) {
  free(ev);
  return 0;
}
