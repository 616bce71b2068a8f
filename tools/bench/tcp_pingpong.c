/* tcp_pingpong.c -- the bench's reference round trip: plain blocking TCP with TCP_NODELAY, one
 * process per side. `c4-tcp-pingpong [--spin] server PORT` / `c4-tcp-pingpong [--spin] client HOST
 * PORT [SIZE] [ITERS]`; the client prints the median round trip in microseconds. --spin polls with
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

static int spin; /* busy-poll receives (MSG_DONTWAIT), as NCCL's proxy and c4 do */
static int two;  /* one connection per direction, the shape of NCCL's send and receive comms */

static int full(int fd, char *p, size_t n, int sending) {
  while (n) {
    ssize_t k = sending ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, spin ? MSG_DONTWAIT : 0);
    if (k < 0 && !sending && spin && (errno == EAGAIN || errno == EWOULDBLOCK)) continue;
    if (k <= 0) return -1;
    p += k;
    n -= (size_t)k;
  }
  return 0;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

int main(int argc, char **argv) {
  int one = 1;
  while (argc > 1 && (!strcmp(argv[1], "--spin") || !strcmp(argv[1], "--two"))) {
    if (!strcmp(argv[1], "--spin"))
      spin = 1;
    else
      two = 1;
    argc--;
    argv++;
  }
  if (argc >= 3 && !strcmp(argv[1], "server")) {
    int l = socket(AF_INET6, SOCK_STREAM, 0);
    int zero = 0;
    setsockopt(l, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    setsockopt(l, IPPROTO_IPV6, IPV6_V6ONLY, &zero, sizeof zero);
    struct sockaddr_in6 a = {.sin6_family = AF_INET6,
                             .sin6_port = htons((uint16_t)atoi(argv[2])),
                             .sin6_addr = in6addr_any};
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
  if (argc >= 4 && !strcmp(argv[1], "client")) {
    size_t size = argc > 4 ? (size_t)atol(argv[4]) : 8;
    int iters = argc > 5 ? atoi(argv[5]) : 20000;
    struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *res;
    if (getaddrinfo(argv[2], argv[3], &hints, &res)) return 1;
    int fd = -1, back;
    for (int t = 0; t < 200; t++) {
      fd = socket(res->ai_family, SOCK_STREAM, 0);
      if (connect(fd, res->ai_addr, res->ai_addrlen) == 0) break;
      close(fd);
      fd = -1;
      usleep(10000);
    }
    if (fd < 0) {
      perror("c4-tcp-pingpong: connect");
      return 1;
    }
    back = fd;
    if (two) {
      back = socket(res->ai_family, SOCK_STREAM, 0);
      if (connect(back, res->ai_addr, res->ai_addrlen) != 0) return 1;
    }
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
  fprintf(stderr, "usage: c4-tcp-pingpong [--spin] [--two] server PORT | [--spin] [--two] client "
                  "HOST PORT [SIZE] [ITERS]\n");
  return 2;
}
