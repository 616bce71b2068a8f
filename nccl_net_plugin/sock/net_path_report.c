/* net_path_report.c -- each data socket's measured rate as a path record for c4mon: the plugin's
 * weights move bytes off a congested path, so the connection's own timing hardly slows, and
 * only the rate each socket's path gave its bytes still shows where the congestion is. */
#include "net_path_report.h"

#include <netinet/in.h>
#include <sys/socket.h>

#include "c4_clock.h"
#include "c4_telemetry.h"

/* The socket's local port in host order, 0 when the kernel does not say. */
static uint16_t local_port(int fd) {
  struct sockaddr_storage sa;
  socklen_t len = sizeof sa;
  if (getsockname(fd, (struct sockaddr *)&sa, &len) != 0) return 0;
  if (sa.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&sa)->sin_port);
  if (sa.ss_family == AF_INET6) return ntohs(((struct sockaddr_in6 *)&sa)->sin6_port);
  return 0;
}

void c4_path_report(const struct c4_comm *c, int sock, double bytes, double busy_ns) {
  if (!c->cfg.timing || sock < 0 || sock >= c->nsocks || bytes < 1 || busy_ns < 1) return;
  struct c4_record r = {.kind = C4_REC_PATH};
  r.path = (struct c4_path_record){.conn_id = c->conn_id,
                                   .nccl_comm = c->nccl_comm,
                                   .sock = (uint8_t)sock,
                                   .nsocks = (uint8_t)c->nsocks,
                                   .src_port = local_port(c->data_fd[sock]),
                                   .bytes = (uint64_t)(bytes + 0.5),
                                   .busy_ns = (uint64_t)(busy_ns + 0.5),
                                   .t = c4_now_ns(),
                                   .self = c->self,
                                   .peer = c->peer};
  c4_telemetry_emit(&r);
}
