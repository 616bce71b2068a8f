/* net_config.h -- the transports' tunables, read once from C4_* environment variables. */
#ifndef C4_NET_CONFIG_H
#define C4_NET_CONFIG_H

#include <stddef.h>

#define C4_MAX_REQUESTS 32 /* NCCL_NET_MAX_REQUESTS */

/* Tunables, read once from the environment by c4_transport_config_load(). */
struct c4_transport_config {
  int nsocks;               /* C4_NSOCKS: data sockets per comm */
  int nthreads;             /* C4_NTHREADS: helper threads per comm (<= nsocks); 0: the caller's
                             * thread moves the data inside isend/test */
  size_t inline_bytes;      /* C4_INLINE_BYTES: messages up to this go on the control socket */
  size_t chunk_bytes;       /* C4_CHUNK_BYTES: minimum chunk on a data socket */
  int handshake_timeout_ms; /* C4_HANDSHAKE_TIMEOUT_MS */
  int connect_timeout_ms;   /* C4_CONNECT_TIMEOUT_MS: how long refused connects are retried */
  int timing;               /* C4_TIMING: 0 disables per-request timing */
  int stuck_ms;             /* C4_STUCK_MS: a request outstanding this long is reported */
  int path_weights;         /* C4_PATH_WEIGHTS: chunks sized by each data socket's measured rate */
  int listen_port_lo;       /* C4_LISTEN_PORTS=LO-HI: listeners take the first free port of the
                             * range (0: the kernel's choice) */
  int listen_port_hi;
  int path_probe_ms;   /* C4_PATH_PROBE_MS: without a plan, how long a connect may spend finding
                        * distinct paths for its data sockets (0: not at all) */
  int notsent_lowat;   /* C4_NOTSENT_LOWAT: unsent bytes a sending data socket may queue
                        * (multipath comms; 0: the kernel's default) */
  char congestion[16]; /* C4_TCP_CONGESTION: the sending data sockets' congestion control
                        * (TCP_CONGESTION; "": the system's, net.ipv4.tcp_congestion_control) */
};

/* Reads the C4_* tunables (warning on bad values) into cfg. */
void c4_transport_config_load(struct c4_transport_config *cfg);

#endif
