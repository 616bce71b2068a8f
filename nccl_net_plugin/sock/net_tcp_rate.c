/* net_tcp_rate.c -- TCP_INFO's bytes acknowledged and busy time. Kept apart because the kernel's
 * <linux/tcp.h> (which has tcpi_busy_time, Linux 4.10+) cannot be included beside glibc's
 * <netinet/tcp.h>, whose struct tcp_info stops short of it. */
#include "net_tcp_rate.h"

#include <linux/tcp.h>
#include <netinet/in.h> /* IPPROTO_TCP; <linux/tcp.h> has the rest */
#include <stddef.h>

#include "c4_err.h"
#include <sys/socket.h>

int c4_tcp_progress(int fd, uint64_t *bytes_acked, uint64_t *busy_us) {
  struct tcp_info ti;
  socklen_t len = sizeof ti;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
      len < offsetof(struct tcp_info, tcpi_busy_time) + sizeof ti.tcpi_busy_time)
    return C4_ENOTFOUND;
  *bytes_acked = ti.tcpi_bytes_acked;
  *busy_us = ti.tcpi_busy_time;
  /* the kernel's busy time includes the time the peer's receive window held the data back: a
   * stopped or slow reader, not the path (a SIGSTOPped rank's 3.5 s made its path read 12x slow
   * in make drill, and c4mon named the path) */
  if (len >= offsetof(struct tcp_info, tcpi_rwnd_limited) + sizeof ti.tcpi_rwnd_limited)
    *busy_us -= ti.tcpi_rwnd_limited < *busy_us ? ti.tcpi_rwnd_limited : *busy_us;
  return 0;
}
