/* net_stats.h -- the counters every transport keeps of bad peers and failed comms, and the
 * first-failure-wins rule that marks a comm broken. */
#ifndef C4_NET_STATS_H
#define C4_NET_STATS_H

#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>

/* Counters for bad peers and failures, for logs and tests. */
struct c4_transport_stats {
  atomic_ulong rejected_peers;  /* every connection a listener closed before its comm existed */
  atomic_ulong unproven_closed; /* ... of which had not proven they hold the handle (net_admit.h) */
  atomic_ulong failed_comms;
  atomic_ulong congestion_refused; /* data sockets that kept the system's congestion control
                                    * because the kernel refused C4_TCP_CONGESTION's */
};
extern struct c4_transport_stats c4_transport_stats;

/* The first-failure-wins core of c4_comm_fail and c4_ib_comm_fail: when *failed is still 0,
 * stores code there and the formatted message in failure (len bytes), counts the comm in
 * c4_transport_stats.failed_comms and returns 1 (the caller then logs it); returns 0 and changes
 * nothing when the comm had already failed. */
int c4_comm_fail_first(atomic_int *failed, char *failure, size_t len, int code, const char *fmt,
                       va_list ap) __attribute__((format(printf, 5, 0)));

#endif
