/* mon_addr.h -- ADDR:PORT as c4mon's options take it ("0.0.0.0:7400", "[::1]:9464", port 0 for
 * any free one), for the ports it opens besides the main one. */
#ifndef C4_MON_ADDR_H
#define C4_MON_ADDR_H

#include <sys/socket.h>

/* Resolves s (numeric port from 0 to 65535) into *sa. Returns 0 or C4_EINVAL. */
int c4_mon_parse_addr(const char *s, struct sockaddr_storage *sa, socklen_t *len);

/* The port the listening socket fd is bound to, or 0 when it cannot be read. */
int c4_mon_bound_port(int fd);

/* A nonblocking TCP socket listening on s; *port receives the port bound. Returns the fd or a
 * negative C4_E* code (logged, naming the address). */
int c4_mon_listen(const char *s, int *port);

#endif
