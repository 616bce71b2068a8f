/* c4_rxtime.c -- reads that say when their bytes arrived (SO_TIMESTAMPNS on TCP). */
#include "c4_rxtime.h"

#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "c4_clock.h"

void c4_rxtime_enable(int fd) {
  int on = 1;
  (void)setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);
}

/* The stamp is wall-clock time (CLOCK_REALTIME): its age is taken against the wall clock and
 * subtracted from the monotonic one, so a wall-clock step between arrival and read can only
 * make the stamp look in the future (then ignored) or old by the step (one bad sample, which a
 * clock exchange's round trip reveals). */
ssize_t c4_rxtime_recv(int fd, void *buf, size_t len, int flags, uint64_t *arrived) {
  union {
    char bytes[CMSG_SPACE(sizeof(struct timespec))];
    struct cmsghdr align;
  } control;
  struct iovec io = {.iov_base = buf, .iov_len = len};
  struct msghdr m = {.msg_iov = &io,
                     .msg_iovlen = 1,
                     .msg_control = control.bytes,
                     .msg_controllen = sizeof control.bytes};
  ssize_t k = recvmsg(fd, &m, flags);
  if (k <= 0) return k;
  uint64_t now = c4_now_ns(), wall = c4_wall_ns();
  *arrived = now;
  for (struct cmsghdr *h = CMSG_FIRSTHDR(&m); h; h = CMSG_NXTHDR(&m, h)) {
    if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_TIMESTAMPNS ||
        h->cmsg_len < CMSG_LEN(sizeof(struct timespec)))
      continue;
    struct timespec ts;
    memcpy(&ts, CMSG_DATA(h), sizeof ts);
    uint64_t stamp = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    if (stamp && stamp <= wall && wall - stamp < now) *arrived = now - (wall - stamp);
  }
  return k;
}
