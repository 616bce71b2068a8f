/* net_config.c -- the transports' tunables, read from C4_* environment variables. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_env.h"
#include "c4_log.h"
#include "net_config.h"
#include "net_wire.h"

/* Defaults measured with `make bench` on loopback and veth (see README, "Tuning"). */
#define DEFAULT_NSOCKS 2
#define DEFAULT_NTHREADS 0
#define DEFAULT_INLINE (64 << 10)
#define DEFAULT_CHUNK (512 << 10)
#define DEFAULT_PATH_PROBE_MS 200 /* bounds a connect's delay where routers do not answer */
#define DEFAULT_NOTSENT_LOWAT 0   /* off: on loopback it cost 15% of a single comm's rate */

/* A port of 1 to 5 decimal digits at *p, moved past; -1 where there is none. sscanf's %d took
 * C4_LISTEN_PORTS=4294967297 as port 1, against what the docs promise (never truncated). */
static long port_at(const char **p) {
  long x = 0;
  int digits = 0;
  for (; **p >= '0' && **p <= '9' && digits < 6; (*p)++, digits++)
    x = x * 10 + (**p - '0');
  return digits && digits <= 5 ? x : -1;
}

/* C4_LISTEN_PORTS: "LO-HI" or "PORT", 1..65535; anything else is warned about and ignored. */
static void parse_port_range(const char *v, int *lo, int *hi) {
  *lo = *hi = 0;
  if (!v || !*v) return;
  const char *p = v;
  long a = port_at(&p), b = a;
  if (*p == '-') {
    p++;
    b = port_at(&p);
  }
  if (!*p && a >= 1 && b >= a && b <= 65535) {
    *lo = (int)a;
    *hi = (int)b;
    return;
  }
  C4_WARN_SETTING("C4_LISTEN_PORTS=\"%s\" is not PORT or LO-HI within 1-65535; listeners take "
                  "ports the kernel picks",
                  v);
}

/* C4_TCP_CONGESTION: a kernel congestion control's name (lower-case letters, digits, '_'; at
 * most 15 characters, the kernel's TCP_CA_NAME_MAX); anything else is warned about and ignored.
 * Whether the kernel has it is learned when a socket asks for it (net_comm.c). */
static void parse_congestion(const char *v, char *out, size_t len) {
  out[0] = 0;
  if (!v || !*v) return;
  size_t n = strlen(v);
  int ok = n < len;
  for (size_t i = 0; ok && i < n; i++)
    ok = (v[i] >= 'a' && v[i] <= 'z') || (v[i] >= '0' && v[i] <= '9') || v[i] == '_';
  if (!ok) {
    C4_WARN_SETTING(
        "C4_TCP_CONGESTION=\"%s\" is not a congestion control's name (a-z, 0-9, _; at most "
        "%zu characters); data sockets keep the system's",
        v, len - 1);
    return;
  }
  memcpy(out, v, n + 1);
}

void c4_transport_config_load(struct c4_transport_config *cfg) {
  cfg->nsocks = (int)c4_env_long("C4_NSOCKS", DEFAULT_NSOCKS, 1, C4_MAX_NSOCKS);
  cfg->nthreads = (int)c4_env_long("C4_NTHREADS", DEFAULT_NTHREADS, 0, C4_MAX_NSOCKS);
  if (cfg->nthreads > cfg->nsocks) cfg->nthreads = cfg->nsocks;
  cfg->inline_bytes = (size_t)c4_env_long("C4_INLINE_BYTES", DEFAULT_INLINE, 0, 1 << 20);
  cfg->chunk_bytes = (size_t)c4_env_long("C4_CHUNK_BYTES", DEFAULT_CHUNK, 16 << 10, 64 << 20);
  cfg->handshake_timeout_ms = (int)c4_env_long("C4_HANDSHAKE_TIMEOUT_MS", 5000, 10, 600000);
  cfg->connect_timeout_ms = (int)c4_env_long("C4_CONNECT_TIMEOUT_MS", 30000, 0, 3600000);
  cfg->timing = (int)c4_env_long("C4_TIMING", 1, 0, 1);
  cfg->stuck_ms = (int)c4_env_long("C4_STUCK_MS", 2000, 1, 3600000);
  parse_port_range(getenv("C4_LISTEN_PORTS"), &cfg->listen_port_lo, &cfg->listen_port_hi);
  cfg->path_weights = (int)c4_env_long("C4_PATH_WEIGHTS", 1, 0, 1);
  cfg->path_probe_ms = (int)c4_env_long("C4_PATH_PROBE_MS", DEFAULT_PATH_PROBE_MS, 0, 10000);
  cfg->notsent_lowat = (int)c4_env_long("C4_NOTSENT_LOWAT", DEFAULT_NOTSENT_LOWAT, 0, 1 << 30);
  parse_congestion(getenv("C4_TCP_CONGESTION"), cfg->congestion, sizeof cfg->congestion);
}
