/* tcp_pingpong.c -- the bench's reference round trip: plain blocking TCP with TCP_NODELAY, one
 * process per side. `c4-tcp-pingpong server PORT` / `c4-tcp-pingpong client HOST PORT [--size 8]
 * [--iters N]`; the client prints the median and p99 round trip in microseconds. --spin polls with
 * non-blocking receives instead of sleeping in recv (as a busy-polling transport does); --two uses
 * one connection per direction, the shape NCCL's send and receive comms force on any plugin. */
#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_err.h"

static int spin; /* busy-poll receives (MSG_DONTWAIT), as NCCL's proxy and c4 do */
static int two;  /* one connection per direction, the shape of NCCL's send and receive comms */

static int full(int fd, char *p, size_t n, int sending) {
  while (n) {
    ssize_t k = sending ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, spin ? MSG_DONTWAIT : 0);
    if (k < 0 && !sending && spin && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (k <= 0) return C4_EREMOTE;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

static void usage(FILE *f) {
  fprintf(f,
          "usage: c4-tcp-pingpong [--spin] [--two] server PORT\n"
          "       c4-tcp-pingpong [--spin] [--two] client HOST PORT [--size BYTES] [--iters N]\n"
          "Plain TCP (TCP_NODELAY) ping-pong; the client prints the median and p99 round trip in\n"
          "microseconds. --spin busy-polls receives; --two uses one connection per direction.\n"
          "Defaults: 8 bytes, 20000 round trips (after 100 warm-up ones).\n");
}

/* Echoes each message back (on the second connection with --two) until the client goes. */
static int run_server(const char *port) {
  int one = 1, zero = 0;
  int l = socket(AF_INET6, SOCK_STREAM, 0);
  setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
  struct sockaddr_in6 a = {
      .sin6_family = AF_INET6, .sin6_port = htons((uint16_t)atoi(port)), .sin6_addr = in6addr_any};
  if (bind(l, (struct sockaddr *)&a, sizeof a) || listen(l, 1)) {
    perror("c4-tcp-pingpong: listen");
    return 1;
  }
  int fd = accept(l, NULL, NULL), back = two ? accept(l, NULL, NULL) : fd;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(back, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  size_t size;
  if (full(fd, (char *)&size, sizeof size, 0) || size > (64u << 20)) return 1;
  char *buf = malloc(size ? size : 1);
  while (full(fd, buf, size, 0) == 0 && full(back, buf, size, 1) == 0) {
  }
  return 0;
}

/* Connects to the server (retrying while it starts), the second connection too with --two.
 * Returns 0 with the sockets in *fd and *back, or 1. */
static int connect_server(const char *host, const char *port, int *fd, int *back) {
  struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
  if (getaddrinfo(host, port, &hints, &res)) return 1;
  *fd = -1;
  for (int t = 0; t < 200; t++) {
    *fd = socket(res->ai_family, SOCK_STREAM, 0);
    if (connect(*fd, res->ai_addr, res->ai_addrlen) == 0) break;
    close(*fd);
    *fd = -1;
    usleep(10000);
  }
  if (*fd < 0) {
    perror("c4-tcp-pingpong: connect");
    return 1;
  }
  *back = *fd;
  if (two) {
    *back = socket(res->ai_family, SOCK_STREAM, 0);
    if (connect(*back, res->ai_addr, res->ai_addrlen) != 0) return 1;
  }
  return 0;
}

/* Times iters round trips of size bytes (after 100 warm-up ones) and prints their median and
 * p99 in microseconds. */
static int run_client(const char *host, const char *port, size_t size, int iters) {
  int one = 1, fd, back;
  if (connect_server(host, port, &fd, &back)) return 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  setsockopt(back, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
  full(fd, (char *)&size, sizeof size, 1);
  char *buf = calloc(1, size ? size : 1);
  double *rtt = malloc(sizeof(double) * (size_t)iters);
  for (int i = 0; i < iters + 100; i++) {
    uint64_t t0 = c4_now_ns();
    if (full(fd, buf, size, 1) || full(back, buf, size, 0)) return 1;
    if (i >= 100) rtt[i - 100] = (double)(c4_now_ns() - t0) / 1e3;
  }
  qsort(rtt, (size_t)iters, sizeof *rtt, cmp);
  printf("rtt_us_median %.2f\nrtt_us_p99 %.2f\n", rtt[iters / 2], rtt[(int)(iters * 0.99)]);
  return 0;
}

/* Sorts argv into flags (--spin, --two, --size, --iters) and up to five positional words (pos,
 * *npos). Returns -1 to go on, or the exit code. */
static int parse_args(int argc, char **argv, char **pos, int *npos, long *opt_size,
                      long *opt_iters) {
  for (int i = 1; i < argc; i++) {
    char *end = NULL;
    if (!strcmp(argv[i], "--spin")) {
      spin = 1;
    } else if (!strcmp(argv[i], "--two")) {
      two = 1;
    } else if ((!strcmp(argv[i], "--size") || !strcmp(argv[i], "--iters")) && i + 1 < argc) {
      long v = strtol(argv[i + 1], &end, 10);
      if (*end || v < (argv[i][2] == 's' ? 0 : 1) ||
          v > (argv[i][2] == 's' ? (64l << 20) : 100000000)) {
        usage(stderr);
        return 2;
      }
      *(argv[i][2] == 's' ? opt_size : opt_iters) = v;
      i++;
    } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
      usage(stdout);
      return 0;
    } else if (argv[i][0] == '-' || *npos == 6) {
      usage(stderr);
      return 2;
    } else {
      pos[(*npos)++] = argv[i];
    }
  }
  /* the older positional form, client HOST PORT [SIZE] [ITERS], still works */
  if (*npos > 4 && *opt_size < 0) *opt_size = atol(pos[4]);
  if (*npos > 5 && *opt_iters < 0) *opt_iters = atol(pos[5]);
  if (*opt_size > (64l << 20) || *opt_iters > 100000000) {
    usage(stderr);
    return 2;
  }
  return C4_NONE;
}

int main(int argc, char **argv) {
  char *pos[6] = {argv[0]}; /* argv[0], then: server PORT | client HOST PORT [SIZE] [ITERS] */
  int npos = 1;
  long opt_size = -1, opt_iters = -1;
  int rc = parse_args(argc, argv, pos, &npos, &opt_size, &opt_iters);
  if (rc >= 0) return rc;
  if (npos >= 3 && !strcmp(pos[1], "server")) return run_server(pos[2]);
  if (npos >= 4 && !strcmp(pos[1], "client"))
    return run_client(pos[2], pos[3], opt_size >= 0 ? (size_t)opt_size : 8,
                      opt_iters > 0 ? (int)opt_iters : 20000);
  usage(stderr);
  return 2;
}
