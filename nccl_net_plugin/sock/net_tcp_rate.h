/* net_tcp_rate.h -- what a TCP socket's path delivered while the socket had data on it, as the
 * kernel counts it (TCP_INFO): bytes acknowledged, the time spent with data unacknowledged, and
 * how much of that time the receiver's window held the data back. Bytes over busy time across an
 * interval is the path's rate for this socket, idle gaps left out: neither a send buffer that
 * swallows a chunk nor a sender that leaves the socket idle between messages makes it look faster
 * or slower than it is; an interval the receiver held back is not the path's (c4_paths_held,
 * net_paths.h).
 */
#ifndef C4_NET_TCP_RATE_H
#define C4_NET_TCP_RATE_H

#include <stdint.h>

/* A TCP socket's running counts: data bytes its peer has acknowledged, the time (us, counted in the
 * kernel's ticks) it has had data sent and not yet acknowledged, and the part of that time the
 * peer's receive window held the data back (0 when the kernel does not say). */
struct c4_tcp_counts {
  uint64_t acked, busy_us, held_us;
};

/* Reads fd's counts into *out. Returns 0, or C4_ENOTFOUND when the kernel does not report them
 * (Linux before 4.10; then the caller measures by itself). */
int c4_tcp_progress(int fd, struct c4_tcp_counts *out);

#endif
