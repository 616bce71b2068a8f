/* mon_addr.h -- ADDR:PORT as c4mon's options take it ("0.0.0.0:7400", "[::1]:9464", port 0 for
 * any free one), and the one way c4mon opens a port to listen on (ranks, subscribers). */
#ifndef C4_MON_ADDR_H
#define C4_MON_ADDR_H

#include <sys/socket.h>

/* Resolves s (numeric port from 0 to 65535) into *sa. Returns 0, C4_EINVAL when s is not
 * ADDR:PORT, or C4_ENOTFOUND when ADDR does not resolve. */
int c4_mon_parse_addr(const char *s, struct sockaddr_storage *sa, socklen_t *len);

/* The port the listening socket fd is bound to, or 0 when it cannot be read. */
int c4_mon_bound_port(int fd);

/* A nonblocking TCP socket listening on s with room for backlog pending connections; *port
 * receives the port bound. Returns the fd, or C4_EINVAL (s is not ADDR:PORT or does not
 * resolve) or C4_ESYS (socket, bind or listen failed), logged with the option (flag) and s. */
int c4_mon_listen(const char *flag, const char *s, int backlog, int *port);

#endif
