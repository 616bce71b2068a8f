/* net_path_report.c -- each data socket's measured rate as a path record for c4mon: the plugin's
 * weights move bytes off a congested path, so the connection's own timing hardly slows, and
 * only the rate each socket's path gave its bytes still shows where the congestion is. */
#include "net_path_report.h"

#include "c4_clock.h"
#include "c4_telemetry.h"

void c4_path_report(const struct c4_comm *c, int sock, double bytes, double busy_ns) {
  if (!c->cfg.timing || sock < 0 || sock >= c->nsocks || bytes < 1 || busy_ns < 1) return;
  struct c4_record r = {.kind = C4_REC_PATH};
  r.path = (struct c4_path_record){.conn_id = c->conn_id,
                                   .nccl_comm = c->nccl_comm,
                                   .sock = (uint8_t)sock,
                                   .nsocks = (uint8_t)c->nsocks,
                                   .src_port = c->data_port[sock],
                                   .bytes = (uint64_t)(bytes + 0.5),
                                   .busy_ns = (uint64_t)(busy_ns + 0.5),
                                   .t = c4_now_ns(),
                                   .self = c->self,
                                   .peer = c->peer};
  c4_telemetry_emit(&r);
}
