/* c4_random.h -- random 64-bit values for nonces, connection ids and queue-pair numbers. */
#ifndef C4_RANDOM_H
#define C4_RANDOM_H

#include <stdint.h>

/* A random value from the kernel's pool without blocking; when the pool is not ready yet, the
 * clock mixed with the process id (unique enough for ids, never used as a secret key). */
uint64_t c4_random_u64(void);

#endif
