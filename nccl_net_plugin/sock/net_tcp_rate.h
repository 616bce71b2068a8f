/* net_tcp_rate.h -- what a TCP socket's path delivered while the socket had data on it, as the
 * kernel counts it (TCP_INFO): bytes acknowledged and the time spent with data unacknowledged.
 * Their ratio over an interval is the path's rate for this socket, idle gaps left out: neither a
 * send buffer that swallows a chunk nor a sender that leaves the socket idle between messages
 * makes it look faster or slower than it is. */
#ifndef C4_NET_TCP_RATE_H
#define C4_NET_TCP_RATE_H

#include <stdint.h>

/* Sets *bytes_acked to the data bytes fd's peer has acknowledged so far and *busy_us to the time
 * (us, counted in the kernel's ticks) fd has had data sent and not yet acknowledged. Returns 0, or
 * C4_ENOTFOUND when the kernel does not report them (Linux before 4.10; then the caller measures by
 * itself). */
int c4_tcp_progress(int fd, uint64_t *bytes_acked, uint64_t *busy_us);

#endif
