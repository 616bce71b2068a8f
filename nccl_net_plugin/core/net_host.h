/* net_host.h -- what the socket and verbs transports share in a process: the C4_* tunables, the
 * socket interfaces (the socket transport's devices, the verbs handshake's addresses), the faults
 * to inject, and starting the reporter that sends their records to c4mon. */
#ifndef C4_NET_HOST_H
#define C4_NET_HOST_H

#include <stddef.h>
#include <stdint.h>

#include "nccl_net_abi.h"
#include "net_config.h"
#include "net_iface.h"

#define C4_NET_MAX_DEVS 32
#define C4_NET_MAX_MSG (1ull << 30) /* test() reports sizes as int: stay well inside it */

struct c4_net_host {
  struct c4_transport_config cfg;
  int ndev;
  struct c4_iface dev[C4_NET_MAX_DEVS];
};

/* Loads the tunables and C4_FAULT and finds the interfaces, once per process; later calls return
 * the first call's result. C4_ENOTFOUND (with a warning) when no interface is usable. */
int c4_net_host_setup(void);

/* The host the setup filled in; read-only after setup. */
const struct c4_net_host *c4_net_host(void);

/* Unless this c4 is wrapped by another: registers scan (may be NULL) as a telemetry periodic
 * hook, takes plans c4mon pushes, starts the telemetry and waits briefly for a first plan. */
void c4_net_host_start(void (*scan)(void));

/* The v11 context of the socket and verbs backends (the table's init and finalize): it keeps the
 * NCCL communicator's id for the records. ctx NULL (NCCL before v11): nothing to keep. */
int c4_net_host_init(void **ctx, uint64_t comm_id, ncclNetCommConfig_t *config,
                     ncclDebugLogger_t logger, ncclProfilerCallback_t prof);
int c4_net_host_finalize(void *ctx);
/* The NCCL communicator id a context keeps; 0 for NULL. */
uint64_t c4_net_host_comm(void *ctx);

/* 0 when dev is one of ndev devices, else C4_EINVAL with a warning naming it. */
int c4_net_host_check_dev(int dev, int ndev);

/* Socket interface dev's properties as NCCL wants them (host memory, maxRecvs 1). */
void c4_net_host_props(int dev, ncclNetProperties_v11_t *p);

/* What the socket and verbs transports take in one isend / irecv: C4_EINVAL (with a warning)
 * for a message above C4_NET_MAX_MSG or more than one receive. */
int c4_net_host_check_send(size_t size);
int c4_net_host_check_recv(int n);

#endif
