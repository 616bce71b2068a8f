/* net_tcp_rate.c -- TCP_INFO's delivery rate. Kept apart because the kernel's <linux/tcp.h>
 * (which has tcpi_delivery_rate, Linux 4.18+) cannot be included beside glibc's <netinet/tcp.h>,
 * whose struct tcp_info stops short of it. */
#include "net_tcp_rate.h"

#include <linux/tcp.h>
#include <netinet/in.h> /* IPPROTO_TCP; <linux/tcp.h> has the rest */
#include <stddef.h>
#include <sys/socket.h>

int c4_tcp_delivery_rate(int fd, double *bytes_per_ns, int *app_limited) {
  struct tcp_info ti;
  socklen_t len = sizeof ti;
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &ti, &len) != 0 ||
      len < offsetof(struct tcp_info, tcpi_delivery_rate) + sizeof ti.tcpi_delivery_rate ||
      ti.tcpi_delivery_rate == 0)
    return -1;
  *bytes_per_ns = (double)ti.tcpi_delivery_rate / 1e9;
  *app_limited = ti.tcpi_delivery_rate_app_limited;
  return 0;
}
