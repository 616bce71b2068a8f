/* net_tcp_rate.c -- TCP_INFO's bytes acknowledged, busy time and receive-window-limited time. Kept
 * apart because the kernel's
 * <linux/tcp.h> (which has tcpi_busy_time, Linux 4.10+) cannot be included beside glibc's
 * <netinet/tcp.h>, whose struct tcp_info stops short of it. */
#include "net_tcp_rate.h"

#include <linux/tcp.h>
#include <netinet/in.h> /* IPPROTO_TCP; <linux/tcp.h> has the rest */
#include <stddef.h>

#include "c4_err.h"
#include <sys/socket.h>

int c4_tcp_progress(int fd, struct c4_tcp_counts *out) {
  struct tcp_info ti;
  socklen_t len = sizeof ti;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
      len < offsetof(struct tcp_info, tcpi_busy_time) + sizeof ti.tcpi_busy_time)
    return C4_ENOTFOUND;
  out->acked = ti.tcpi_bytes_acked;
  out->busy_us = ti.tcpi_busy_time;
  out->held_us = len >= offsetof(struct tcp_info, tcpi_rwnd_limited) + sizeof ti.tcpi_rwnd_limited
                     ? ti.tcpi_rwnd_limited
                     : 0;
  return 0;
}
