/* net_inner.c -- the inner-mode switch an outer c4 flips in the c4 it wraps. */
#include "net_inner.h"

#include <stdatomic.h>

static atomic_int inner_mode;

/* Exported (the one symbol besides the plugin tables): an outer c4 calls it right after dlopen,
 * before init, so that this copy forwards without timing, reporting or wrapping again. A function
 * the outer calls, not an environment variable: setenv is not thread-safe inside a job. */
__attribute__((visibility("default"))) int c4_net_wrap_set_inner(void) {
  atomic_store(&inner_mode, 1);
  return 0;
}

int c4_net_is_inner(void) { return atomic_load(&inner_mode); }
