/* net_wrap_state.c -- wrap mode's process-wide state: the wrapped plugin, the counters and the
 * timing settings, which the setup (net_wrap.c) fills and the request path (net_wrap_req.c)
 * reads. Apart from both so that neither calls into the other. */
#include "c4_telemetry.h"
#include "net_config.h"
#include "net_wrap_comm.h"

struct c4_wrap_inner c4_wrap_lib;
struct c4_wrap_stats c4_wrap_stats;

static struct c4_transport_config cfg; /* C4_TIMING, C4_STUCK_MS */

const struct c4_transport_config *c4_wrap_config_load(void) {
  c4_transport_config_load(&cfg);
  return &cfg;
}

int c4_wrap_timing(int *stuck_ms) {
  *stuck_ms = cfg.stuck_ms;
  return cfg.timing && c4_telemetry_enabled();
}
