/* net_host.c -- the process-wide setup the socket and verbs transports share. */
#include "net_host.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "c4_env.h"
#include "c4_err.h"
#include "c4_log.h"
#include "c4_reporter.h"
#include "c4_telemetry.h"
#include "net_fault.h"
#include "net_inner.h"
#include "net_plan.h"

static struct c4_net_host host;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int setup_rc;

static void setup_once(void) {
  c4_transport_config_load(&host.cfg);
  if (c4_net_is_inner()) host.cfg.timing = 0; /* an outer c4 times and reports */
  c4_fault_load(); /* before any comm: comms read the faults without locks */
  setup_rc = c4_iface_discover(host.dev, C4_NET_MAX_DEVS, &host.ndev);
  if (setup_rc == 0 && host.ndev == 0) setup_rc = C4_ENOTFOUND;
  if (setup_rc != 0) {
    C4_WARN("no usable network interface (C4_SOCKET_IFNAME / NCCL_SOCKET_IFNAME); NCCL will fall "
            "back to its own transports");
    return;
  }
  for (int i = 0; i < host.ndev; i++)
    C4_INFO("device %d: %s, %d Mbps", i, host.dev[i].name, host.dev[i].speed_mbps);
}

int c4_net_host_setup(void) {
  pthread_once(&once, setup_once);
  return setup_rc;
}

const struct c4_net_host *c4_net_host(void) { return &host; }

void c4_net_host_start(void (*scan)(void)) {
  if (c4_net_is_inner()) return;
  c4_reporter_on_plan(c4_netplan_push); /* plans c4mon pushes (docs/plan-format.md) */
  if (scan) c4_telemetry_add_periodic(scan);
  c4_telemetry_start();
  /* A plan c4mon pushes should pin the first connections too: wait for it, briefly (the
   * handshake takes a round trip or two; a c4mon that is not there ends the wait at once). */
  const char *file = getenv("C4_PLAN");
  if (!file || !*file) c4_reporter_await_plan((int)c4_env_long("C4_PLAN_WAIT_MS", 1000, 0, 60000));
}

struct host_ctx {
  uint64_t nccl_comm;
};

int c4_net_host_init(void **ctx, uint64_t comm_id, ncclNetCommConfig_t *config,
                     ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  (void)config, (void)logger, (void)prof;
  if (!ctx) return 0;
  struct host_ctx *c = calloc(1, sizeof *c);
  if (!c) return C4_ENOMEM;
  c->nccl_comm = comm_id;
  *ctx = c;
  return 0;
}

int c4_net_host_finalize(void *ctx) {
  free(ctx);
  return 0;
}

uint64_t c4_net_host_comm(void *ctx) { return ctx ? ((struct host_ctx *)ctx)->nccl_comm : 0; }

int c4_net_host_check_dev(int dev, int ndev) {
  if (dev < 0 || dev >= ndev) {
    C4_WARN("device %d does not exist (c4 has %d)", dev, ndev);
    return C4_EINVAL;
  }
  return 0;
}

void c4_net_host_props(int dev, ncclNetProperties_v11_t *p) {
  memset(p, 0, sizeof *p);
  const struct c4_iface *d = &host.dev[dev];
  p->name = (char *)d->name;
  p->pciPath = d->pci_path[0] ? (char *)d->pci_path : NULL;
  p->guid = d->guid;
  p->ptrSupport = NCCL_PTR_HOST;
  p->regIsGlobal = 0;
  p->forceFlush = 0;
  p->speed = d->speed_mbps;
  p->port = 0;
  p->latency = 0;
  p->maxComms = 65536;
  p->maxRecvs = 1;
  p->netDeviceType = NCCL_NET_DEVICE_HOST;
  p->netDeviceVersion = 0;
  p->vProps.ndevs = 1;
  p->vProps.devs[0] = dev;
  p->maxP2pBytes = C4_NET_MAX_MSG;
  p->maxCollBytes = C4_NET_MAX_MSG;
  p->maxMultiRequestSize = 1;
}

int c4_net_host_check_send(size_t size) {
  if (size <= C4_NET_MAX_MSG) return 0;
  C4_WARN("isend of %zu bytes exceeds maxP2pBytes (%llu)", size,
          (unsigned long long)C4_NET_MAX_MSG);
  return C4_EINVAL;
}

int c4_net_host_check_recv(int n) {
  if (n == 1) return 0;
  C4_WARN("irecv with %d receives: c4 offers maxRecvs = 1", n);
  return C4_EINVAL;
}
