/* ring_bench.c -- the hot-path cost of timing one request: the three clock reads, building the
 * record and pushing it into the process ring, with a consumer draining it concurrently. Prints
 * the median of 5 runs in ns per request (`timing_ns_per_request X`), and the same loop with only
 * the clock reads removed for reference. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_clock.h"
#include "c4_ring.h"
#include "c4_telemetry.h"

#define N 1000000

static atomic_int stop;

static void *drain(void *arg) {
  struct c4_ring *r = arg;
  struct c4_record rec;
  while (!atomic_load(&stop))
    while (c4_ring_pop(r, &rec)) {
    }
  return NULL;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static double run(int with_clock) {
  struct c4_xfer_record rec = {.version = C4_RECORD_VERSION, .bytes = 8};
  strcpy(rec.peer.host, "peer");
  uint64_t t0 = c4_now_ns();
  for (int i = 0; i < N; i++) {
    if (with_clock) {
      rec.t_posted = c4_now_ns();
      rec.t_first_byte = c4_now_ns();
      rec.t_done = c4_now_ns();
    }
    rec.seq = (uint64_t)i;
    c4_telemetry_emit_xfer(&rec);
  }
  return (double)(c4_now_ns() - t0) / N;
}

int main(void) {
  struct c4_ring *r = c4_telemetry_ring();
  if (!r) return 1;
  pthread_t th;
  pthread_create(&th, NULL, drain, r);
  double full[5], push[5];
  for (int k = 0; k < 5; k++) {
    full[k] = run(1);
    push[k] = run(0);
  }
  atomic_store(&stop, 1);
  pthread_join(th, NULL);
  qsort(full, 5, sizeof(double), cmp);
  qsort(push, 5, sizeof(double), cmp);
  uint64_t emitted, dropped;
  c4_telemetry_counters(&emitted, &dropped, NULL);
  printf("timing_ns_per_request %.1f\nring_push_ns %.1f\ndropped_while_draining %llu of %llu\n",
         full[2], push[2], (unsigned long long)dropped, (unsigned long long)emitted);
  return 0;
}
