/* net_sock.c -- non-blocking TCP helpers: listen, connect, tune, send/recv without blocking. */
#include "net_sock.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "c4_err.h"
#include "c4_log.h"

static socklen_t addr_len(const struct sockaddr_storage *a) {
  return a->ss_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
}

int c4_sock_tune(int fd) {
  int one = 1;
  if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one) != 0) return C4_ESYS;
  int fl = fcntl(fd, F_GETFL);
  if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) != 0) return C4_ESYS;
  return 0;
}

/* Binds fd to addr at port (0: the kernel's choice) and listens; 0 or errno. */
static int bind_listen(int fd, const struct sockaddr_storage *addr, int port) {
  struct sockaddr_storage a = *addr;
  if (a.ss_family == AF_INET)
    ((struct sockaddr_in *)&a)->sin_port = htons((uint16_t)port);
  else
    ((struct sockaddr_in6 *)&a)->sin6_port = htons((uint16_t)port);
  int one = 1; /* a fixed port must be taken again while its last connections sit in TIME_WAIT */
  if (port) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  if (bind(fd, (struct sockaddr *)&a, addr_len(&a)) != 0 || listen(fd, 1024) != 0) return errno;
  return 0;
}

int c4_sock_listen(const struct sockaddr_storage *addr, int port_lo, int port_hi,
                   struct sockaddr_storage *bound) {
  char name[96];
  int fd = -1, err = 0;
  /* The first free port of the range: ECMP hashes the destination port too, so a traffic plan's
   * source ports only hold for the port its probes went to. */
  for (int p = port_lo; port_lo > 0 && p <= port_hi; p++) {
    fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) break;
    if ((err = bind_listen(fd, addr, p)) == 0) break;
    close(fd);
    fd = -1;
  }
  if (port_lo > 0 && fd < 0)
    C4_WARN("no free port in C4_LISTEN_PORTS %d-%d on %s (%s); listening on one the kernel picks",
            port_lo, port_hi, c4_sock_addr_str(addr, name, sizeof name), strerror(err));
  if (fd < 0) {
    fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
      C4_WARN("socket() for listening failed: %s", strerror(errno));
      return C4_ESYS;
    }
    if ((err = bind_listen(fd, addr, 0)) != 0) {
      C4_WARN("cannot listen on %s: %s", c4_sock_addr_str(addr, name, sizeof name), strerror(err));
      close(fd);
      return C4_ESYS;
    }
  }
  socklen_t len = sizeof *bound;
  if (getsockname(fd, (struct sockaddr *)bound, &len) != 0) {
    close(fd);
    return C4_ESYS;
  }
  return fd;
}

int c4_sock_connect_start(const struct sockaddr_storage *addr) {
  int unused;
  return c4_sock_connect_from(addr, NULL, &unused);
}

int c4_sock_connect_from(const struct sockaddr_storage *addr, const struct sockaddr_storage *local,
                         int *bind_errno) {
  *bind_errno = 0;
  int fd = socket(addr->ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return C4_ESYS;
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  if (local) {
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, (const struct sockaddr *)local, addr_len(local)) != 0) *bind_errno = errno;
  }
  if (connect(fd, (const struct sockaddr *)addr, addr_len(addr)) != 0 && errno != EINPROGRESS) {
    int e = errno;
    close(fd);
    errno = e;
    return C4_ESYS;
  }
  return fd;
}

int c4_sock_connect_check(int fd, int *errno_out) {
  *errno_out = 0;
  int err = 0;
  socklen_t len = sizeof err;
  if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &len) != 0) err = errno;
  if (err) {
    *errno_out = err;
    return C4_ESYS;
  }
  struct sockaddr_storage peer;
  len = sizeof peer;
  if (getpeername(fd, (struct sockaddr *)&peer, &len) == 0) return 1;
  if (errno == ENOTCONN) return 0;
  *errno_out = errno;
  return C4_ESYS;
}

ssize_t c4_sock_send_some(int fd, const void *buf, size_t len) {
  ssize_t n = send(fd, buf, len, MSG_NOSIGNAL | MSG_DONTWAIT);
  if (n >= 0) return n;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
  return C4_EREMOTE;
}

ssize_t c4_sock_recv_some(int fd, void *buf, size_t len) {
  if (len == 0) return 0;
  ssize_t n = recv(fd, buf, len, MSG_DONTWAIT);
  if (n > 0) return n;
  if (n == 0) return C4_EREMOTE;
  if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) return 0;
  return C4_EREMOTE;
}

const char *c4_sock_addr_str(const struct sockaddr_storage *addr, char *out, size_t len) {
  char host[INET6_ADDRSTRLEN] = "?";
  int port = 0;
  if (addr->ss_family == AF_INET) {
    const struct sockaddr_in *s = (const struct sockaddr_in *)addr;
    inet_ntop(AF_INET, &s->sin_addr, host, sizeof host);
    port = ntohs(s->sin_port);
    snprintf(out, len, "%s:%d", host, port);
  } else {
    const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)addr;
    inet_ntop(AF_INET6, &s->sin6_addr, host, sizeof host);
    port = ntohs(s->sin6_port);
    snprintf(out, len, "[%s]:%d", host, port);
  }
  return out;
}
