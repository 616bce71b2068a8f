/* c4_rxtime.h -- when bytes read from a TCP socket arrived: the kernel's receive stamp
 * (SO_TIMESTAMPNS), moved to c4's monotonic clock. A reader that runs on a timer (the reporter,
 * every 10 ms) or after other work (c4mon decoding a frame) sees bytes late, and a clock exchange
 * must count when its answer came, not when it was read. */
#ifndef C4_RXTIME_H
#define C4_RXTIME_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Asks the kernel to stamp the bytes fd receives. Best effort: without stamps, reads are dated
 * by the time of the read. */
void c4_rxtime_enable(int fd);

/* recv(fd, buf, len, flags); when it returns bytes, *arrived is when the last of them reached
 * the host, in c4_now_ns() time: the kernel's stamp when there is one that is not in the future,
 * else the time of the read. */
ssize_t c4_rxtime_recv(int fd, void *buf, size_t len, int flags, uint64_t *arrived);

#endif
