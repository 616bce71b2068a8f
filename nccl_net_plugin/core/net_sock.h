/* net_sock.h -- small non-blocking TCP helpers used by the socket transport. */
#ifndef C4_NET_SOCK_H
#define C4_NET_SOCK_H

#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>

/* Opens a non-blocking listening socket on addr (its port is ignored) at the first free port of
 * port_lo..port_hi, or (port_lo 0, or none free: logged) at one the kernel picks, and writes the
 * bound address, port included, to bound. Returns the fd or a negative C4_E* code. */
int c4_sock_listen(const struct sockaddr_storage *addr, int port_lo, int port_hi,
                   struct sockaddr_storage *bound);

/* Starts a non-blocking connect to addr. Returns the fd (connection in progress or done) or a
 * negative C4_E* code. */
int c4_sock_connect_start(const struct sockaddr_storage *addr);

/* As c4_sock_connect_start, but first binds the socket to local (SO_REUSEADDR set) when local is
 * not NULL. A bind that fails leaves the socket unbound (the kernel then picks the address and
 * port) and sets *bind_errno; it is 0 otherwise. */
int c4_sock_connect_from(const struct sockaddr_storage *addr, const struct sockaddr_storage *local,
                         int *bind_errno);

/* Checks a connect started above without blocking: 1 connected, 0 still in progress, or a
 * negative C4_E* code (errno_out receives the socket error, e.g. ECONNREFUSED). */
int c4_sock_connect_check(int fd, int *errno_out);

/* Sets TCP_NODELAY and O_NONBLOCK. Returns 0 or C4_ESYS. */
int c4_sock_tune(int fd);

/* Non-blocking send of up to len bytes (MSG_NOSIGNAL). Returns bytes sent (0 when the socket
 * is full) or C4_EREMOTE when the peer is gone. */
ssize_t c4_sock_send_some(int fd, const void *buf, size_t len);

/* Non-blocking receive of up to len bytes. Returns bytes received (0 when nothing is there)
 * or C4_EREMOTE when the peer closed or the connection failed. */
ssize_t c4_sock_recv_some(int fd, void *buf, size_t len);

/* Formats addr as "host:port" into out. Returns out. */
const char *c4_sock_addr_str(const struct sockaddr_storage *addr, char *out, size_t len);

#endif
