/* c4_clock.h -- the one clock c4 times with: CLOCK_MONOTONIC in nanoseconds. */
#ifndef C4_CLOCK_H
#define C4_CLOCK_H

#include <stdint.h>
#include <time.h>

/* Monotonic nanoseconds; vDSO-backed, no system call on Linux x86_64/arm64. */
static inline uint64_t c4_now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* CPU time of the calling thread in nanoseconds: what it computed, without the time other
 * processes held its core (c4train's pipeline stages time their work by it). */
static inline uint64_t c4_thread_cpu_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* Wall-clock (CLOCK_REALTIME) nanoseconds, for anchoring monotonic times in traces. */
static inline uint64_t c4_wall_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

#endif
