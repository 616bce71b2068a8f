/* mon_addr.c -- parses ADDR:PORT and opens c4mon's listening sockets (ranks, subscribers). */
#include "mon_addr.h"

#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4_err.h"
#include "c4_log.h"

int c4_mon_parse_addr(const char *s, struct sockaddr_storage *sa, socklen_t *len) {
  const char *colon = s ? strrchr(s, ':') : NULL;
  if (!colon || colon == s || !colon[1] || (size_t)(colon - s) >= 256) return C4_EINVAL;
  char *end = NULL;
  long port = strtol(colon + 1, &end, 10); /* getaddrinfo would take 99999 as 34463 */
  if (*end || port < 0 || port > 65535) return C4_EINVAL;
  char host[256];
  memcpy(host, s, (size_t)(colon - s));
  host[colon - s] = 0;
  if (host[0] == '[' && host[strlen(host) - 1] == ']') { /* [v6]:port */
    memmove(host, host + 1, strlen(host));
    host[strlen(host) - 1] = 0;
  }
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE | AI_NUMERICSERV},
                  *res = NULL;
  if (getaddrinfo(host, colon + 1, &hints, &res) != 0 || !res) return C4_ENOTFOUND;
  memcpy(sa, res->ai_addr, res->ai_addrlen);
  *len = res->ai_addrlen;
  freeaddrinfo(res);
  return 0;
}

int c4_mon_listen(const char *flag, const char *s, int backlog, int *port) {
  struct sockaddr_storage sa;
  socklen_t len;
  int rc = c4_mon_parse_addr(s, &sa, &len);
  if (rc == C4_ENOTFOUND) {
    C4_WARN("c4mon: %s %s: cannot resolve its address", flag, s);
    return C4_EINVAL;
  }
  if (rc != 0) {
    C4_WARN("c4mon: %s %s is not ADDR:PORT", flag, s ? s : "(none)");
    return C4_EINVAL;
  }
  int fd = socket(sa.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0), one = 1;
  if (fd < 0) {
    C4_WARN("c4mon: %s %s: socket: %s", flag, s, strerror(errno));
    return C4_ESYS;
  }
  setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&sa, len) != 0 || listen(fd, backlog) != 0) {
    C4_WARN("c4mon: cannot listen on %s: %s", s, strerror(errno));
    close(fd);
    return C4_ESYS;
  }
  *port = c4_mon_bound_port(fd);
  return fd;
}

int c4_mon_bound_port(int fd) {
  struct sockaddr_storage sa;
  socklen_t len = sizeof sa;
  if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0) return 0;
  return ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                        : ((struct sockaddr_in *)&sa)->sin_port);
}
