/* c4_idle.h -- what a polling loop does when a pass made no progress: yield at first (as NCCL's
 * proxy does), then sleep briefly, so ranks that share cores (more ranks than cores) let each
 * other run instead of burning their time slices on sched_yield. */
#ifndef C4_IDLE_H
#define C4_IDLE_H

#include <sched.h>
#include <stdint.h>
#include <time.h>

#define C4_IDLE_YIELD_NS 50000 /* a reply within this long is caught by yielding alone */
#define C4_IDLE_SLEEP_NS 20000

/* idle_ns: how long the loop has gone without progress. */
static inline void c4_idle(uint64_t idle_ns) {
  if (idle_ns < C4_IDLE_YIELD_NS) {
    sched_yield();
    return;
  }
  struct timespec ts = {0, C4_IDLE_SLEEP_NS};
  nanosleep(&ts, NULL);
}

#endif
