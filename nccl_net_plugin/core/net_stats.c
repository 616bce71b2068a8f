/* net_stats.c -- the transports' failure counters and the first-failure-wins rule. */
#include "net_stats.h"

#include <stdio.h>

struct c4_transport_stats c4_transport_stats;

int c4_comm_fail_first(atomic_int *failed, char *failure, size_t len, int code, const char *fmt,
                       va_list ap) {
  int expected = 0;
  if (!atomic_compare_exchange_strong(failed, &expected, code)) return 0;
  vsnprintf(failure, len, fmt, ap);
  atomic_fetch_add(&c4_transport_stats.failed_comms, 1);
  return 1;
}
