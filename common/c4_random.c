/* c4_random.c -- random 64-bit values for nonces, connection ids and queue-pair numbers. */
#include "c4_random.h"

#include <sys/random.h>
#include <unistd.h>

#include "c4_clock.h"

uint64_t c4_random_u64(void) {
  uint64_t v = 0;
  if (getrandom(&v, sizeof v, GRND_NONBLOCK) != sizeof v)
    v = c4_now_ns() ^ ((uint64_t)getpid() << 32);
  return v;
}
