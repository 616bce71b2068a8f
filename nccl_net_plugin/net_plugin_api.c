/* net_plugin_api.c -- the exported NCCL net plugin tables (v11, v10, v9, v8): thin shims over the
 * socket transport, with every C4_E* code turned into an ncclResult_t here and nowhere else. */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "c4_env.h"
#include "c4_err.h"
#include "c4_log.h"
#include "c4_reporter.h"
#include "c4_telemetry.h"
#include "nccl_net_abi.h"
#include "net_comm.h"
#include "net_fault.h"
#include "net_iface.h"
#include "net_plan.h"
#include "net_transport.h"

#define C4_EXPORT __attribute__((visibility("default")))
#define C4_MAX_DEVS 32
#define C4_MAX_MSG (1ull << 30) /* test() reports sizes as int: stay well inside it */

static struct {
  pthread_once_t once;
  int rc;
  int ndev;
  struct c4_iface dev[C4_MAX_DEVS];
  struct c4_transport_config cfg;
} plugin = {.once = PTHREAD_ONCE_INIT};

struct net_ctx {
  uint64_t nccl_comm;
};

static const char memory_handle_marker = 0;
static _Atomic(ncclProfilerCallback_t) profiler_callback; /* NCCL's, from init (v10, v11) */

/* Tells NCCL's profiler, once per connection and only when NCCL gave a phandle, which c4
 * connection a proxy operation uses (a NetPlugin event; c4's profiler turns it into a link
 * record). Costs nothing after the first request of a comm. */
static void report_link(void *comm, void *phandle) {
  ncclProfilerCallback_t cb = atomic_load_explicit(&profiler_callback, memory_order_relaxed);
  if (!cb || !phandle) return;
  struct c4_link_info *link = c4_transport_link_once(comm);
  if (!link) return;
  void *event = NULL;
  cb(&event, 0 /* start */, phandle, C4_PROFILER_PLUGIN_ID, link);
  if (event) cb(&event, 1 /* stop */, phandle, C4_PROFILER_PLUGIN_ID, NULL);
}

static ncclResult_t to_nccl(int rc) {
  switch (rc) {
  case C4_OK: return ncclSuccess;
  case C4_EINVAL: return ncclInvalidArgument;
  case C4_ETRUNC: return ncclInvalidUsage;
  case C4_EPROTO:
  case C4_EREMOTE: return ncclRemoteError;
  case C4_ENOMEM:
  case C4_ESYS: return ncclSystemError;
  default: return ncclInternalError;
  }
}

static void plugin_setup(void) {
  c4_transport_config_load(&plugin.cfg);
  c4_fault_load(); /* before any comm: comms read the faults without locks */
  plugin.rc = c4_iface_discover(plugin.dev, C4_MAX_DEVS, &plugin.ndev);
  if (plugin.rc == 0 && plugin.ndev == 0) plugin.rc = C4_ENOTFOUND;
  if (plugin.rc != 0) {
    C4_WARN("no usable network interface (C4_SOCKET_IFNAME / NCCL_SOCKET_IFNAME); NCCL will fall "
            "back to its own transports");
    return;
  }
  for (int i = 0; i < plugin.ndev; i++)
    C4_INFO("device %d: %s, %d Mbps", i, plugin.dev[i].name, plugin.dev[i].speed_mbps);
  c4_reporter_on_plan(c4_netplan_push); /* plans c4mon pushes (docs/plan-format.md) */
  c4_telemetry_add_periodic(c4_watch_scan);
  c4_telemetry_start();
  /* A plan c4mon pushes should pin the first connections too: wait for it, briefly (the
   * handshake takes a round trip or two; a c4mon that is not there ends the wait at once). */
  const char *file = getenv("C4_PLAN");
  if (!file || !*file) c4_reporter_await_plan((int)c4_env_long("C4_PLAN_WAIT_MS", 1000, 0, 60000));
}

static int core_init(ncclDebugLogger_t logger) {
  if (logger) c4_log_set_logger((c4_logger_fn)logger);
  pthread_once(&plugin.once, plugin_setup);
  return plugin.rc;
}

static int check_dev(int dev) {
  if (dev < 0 || dev >= plugin.ndev) {
    C4_WARN("device %d does not exist (c4 has %d)", dev, plugin.ndev);
    return C4_EINVAL;
  }
  return 0;
}

static void fill_props_common(int dev, ncclNetProperties_v9_t *p) {
  memset(p, 0, sizeof *p);
  struct c4_iface *d = &plugin.dev[dev];
  p->name = d->name;
  p->pciPath = d->pci_path[0] ? d->pci_path : NULL;
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
  p->maxP2pBytes = C4_MAX_MSG;
  p->maxCollBytes = C4_MAX_MSG;
}

/* ---- the core calls, one per NCCL entry point ---------------------------------------------- */

static ncclResult_t c4_devices(int *ndev) {
  *ndev = plugin.ndev;
  return ncclSuccess;
}

static ncclResult_t core_listen(uint64_t nccl_comm, int dev, void *handle, void **listen_comm) {
  int rc = check_dev(dev);
  if (rc == 0)
    rc = c4_transport_listen(&plugin.cfg, dev, nccl_comm, &plugin.dev[dev].addr, handle,
                             (struct c4_listen_comm **)listen_comm);
  return to_nccl(rc);
}

static ncclResult_t core_connect(uint64_t nccl_comm, int dev, void *handle, void **send_comm,
                                 ncclNetDeviceHandle_t **dev_comm) {
  (void)dev_comm; /* host-only plugin: NCCL's devComm request is left untouched */
  int rc = check_dev(dev);
  if (rc == 0)
    rc = c4_transport_connect(&plugin.cfg, dev, nccl_comm, handle, (struct c4_comm **)send_comm);
  return to_nccl(rc);
}

static ncclResult_t c4_accept(void *listen_comm, void **recv_comm, ncclNetDeviceHandle_t **dev) {
  (void)dev;
  return to_nccl(c4_transport_accept(listen_comm, (struct c4_comm **)recv_comm));
}

static ncclResult_t c4_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle) {
  (void)comm, (void)data, (void)size;
  if (type != NCCL_PTR_HOST) {
    C4_WARN("regMr of memory type %d: the c4 socket transport moves host memory only", type);
    return ncclInternalError;
  }
  *mhandle = (void *)&memory_handle_marker;
  return ncclSuccess;
}

static ncclResult_t c4_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset,
                                     int fd, void **mhandle) {
  (void)offset, (void)fd;
  return c4_reg_mr(comm, data, size, type, mhandle);
}

static ncclResult_t c4_dereg_mr(void *comm, void *mhandle) {
  (void)comm, (void)mhandle;
  return ncclSuccess;
}

static ncclResult_t c4_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                             void *phandle, void **request) {
  (void)mhandle, (void)phandle;
  if (size > C4_MAX_MSG) {
    C4_WARN("isend of %zu bytes exceeds maxP2pBytes (%llu)", size, (unsigned long long)C4_MAX_MSG);
    return ncclInvalidArgument;
  }
  ncclResult_t rc =
      to_nccl(c4_transport_isend(send_comm, data, size, tag, (struct c4_request **)request));
  if (rc == ncclSuccess && *request) report_link(send_comm, phandle);
  return rc;
}

static ncclResult_t c4_isend_v9(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                                void **request) {
  return c4_isend(send_comm, data, size, tag, mhandle, NULL, request);
}

static ncclResult_t c4_isend_v8(void *send_comm, void *data, int size, int tag, void *mhandle,
                                void **request) {
  if (size < 0) return ncclInvalidArgument;
  return c4_isend(send_comm, data, (size_t)size, tag, mhandle, NULL, request);
}

static ncclResult_t c4_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                             void **mhandles, void **phandles, void **request) {
  (void)mhandles, (void)phandles;
  if (n != 1) {
    C4_WARN("irecv with %d receives: c4 offers maxRecvs = 1", n);
    return ncclInvalidArgument;
  }
  ncclResult_t rc = to_nccl(
      c4_transport_irecv(recv_comm, data[0], sizes[0], tags[0], (struct c4_request **)request));
  if (rc == ncclSuccess && *request && phandles) report_link(recv_comm, phandles[0]);
  return rc;
}

static ncclResult_t c4_irecv_v9(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                                void **mhandles, void **request) {
  return c4_irecv(recv_comm, n, data, sizes, tags, mhandles, NULL, request);
}

static ncclResult_t c4_irecv_v8(void *recv_comm, int n, void **data, int *sizes, int *tags,
                                void **mhandles, void **request) {
  if (n != 1) return c4_irecv(recv_comm, n, data, NULL, tags, mhandles, NULL, request);
  if (sizes[0] < 0) return ncclInvalidArgument;
  size_t size = (size_t)sizes[0];
  return c4_irecv(recv_comm, n, data, &size, tags, mhandles, NULL, request);
}

static ncclResult_t c4_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles,
                              void **request) {
  (void)recv_comm, (void)n, (void)data, (void)sizes, (void)mhandles;
  *request = NULL; /* host memory: nothing to flush */
  return ncclSuccess;
}

static ncclResult_t c4_test(void *request, int *done, int *sizes) {
  size_t size = 0;
  int rc = c4_transport_test(request, done, &size);
  if (rc == 0 && *done && sizes) sizes[0] = (int)size;
  return to_nccl(rc);
}

static ncclResult_t c4_close_comm(void *comm) { return to_nccl(c4_transport_close(comm)); }

static ncclResult_t c4_close_listen(void *listen_comm) {
  return to_nccl(c4_transport_close_listen(listen_comm));
}

/* ---- v11 ---------------------------------------------------------------------------------- */

static ncclResult_t c4_init_v11(void **ctx, uint64_t comm_id, ncclNetCommConfig_t *config,
                                ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  (void)config;
  if (prof) atomic_store(&profiler_callback, prof);
  int rc = core_init(logger);
  if (rc != 0) return to_nccl(rc);
  struct net_ctx *c = calloc(1, sizeof *c);
  if (!c) return ncclSystemError;
  c->nccl_comm = comm_id;
  *ctx = c;
  return ncclSuccess;
}

static ncclResult_t c4_get_properties_v11(int dev, ncclNetProperties_v11_t *props) {
  if (check_dev(dev)) return ncclInvalidArgument;
  ncclNetProperties_v9_t p;
  fill_props_common(dev, &p);
  memset(props, 0, sizeof *props);
  memcpy(props, &p, sizeof p); /* v11 is v9 plus one trailing field */
  props->maxMultiRequestSize = 1;
  return ncclSuccess;
}

static ncclResult_t c4_listen_v11(void *ctx, int dev, void *handle, void **listen_comm) {
  return core_listen(ctx ? ((struct net_ctx *)ctx)->nccl_comm : 0, dev, handle, listen_comm);
}

static ncclResult_t c4_connect_v11(void *ctx, int dev, void *handle, void **send_comm,
                                   ncclNetDeviceHandle_t **dev_comm) {
  return core_connect(ctx ? ((struct net_ctx *)ctx)->nccl_comm : 0, dev, handle, send_comm,
                      dev_comm);
}

static ncclResult_t c4_finalize_v11(void *ctx) {
  free(ctx);
  return ncclSuccess;
}

C4_EXPORT const ncclNet_v11_t ncclNetPlugin_v11 = {
    .name = "c4",
    .init = c4_init_v11,
    .devices = c4_devices,
    .getProperties = c4_get_properties_v11,
    .listen = c4_listen_v11,
    .connect = c4_connect_v11,
    .accept = c4_accept,
    .regMr = c4_reg_mr,
    .regMrDmaBuf = c4_reg_mr_dmabuf,
    .deregMr = c4_dereg_mr,
    .isend = c4_isend,
    .irecv = c4_irecv,
    .iflush = c4_iflush,
    .test = c4_test,
    .closeSend = c4_close_comm,
    .closeRecv = c4_close_comm,
    .closeListen = c4_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
    .finalize = c4_finalize_v11,
    .setNetAttr = NULL,
};

/* ---- v10 ---------------------------------------------------------------------------------- */

static ncclResult_t c4_init_v10(ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  if (prof) atomic_store(&profiler_callback, prof);
  return to_nccl(core_init(logger));
}

static ncclResult_t c4_get_properties_v9(int dev, ncclNetProperties_v9_t *props) {
  if (check_dev(dev)) return ncclInvalidArgument;
  fill_props_common(dev, props);
  return ncclSuccess;
}

static ncclResult_t c4_listen_v8(int dev, void *handle, void **listen_comm) {
  return core_listen(0, dev, handle, listen_comm);
}

static ncclResult_t c4_connect_v10(int dev, ncclNetCommConfig_t *config, void *handle,
                                   void **send_comm, ncclNetDeviceHandle_t **dev_comm) {
  (void)config;
  return core_connect(0, dev, handle, send_comm, dev_comm);
}

C4_EXPORT const ncclNet_v10_t ncclNetPlugin_v10 = {
    .name = "c4",
    .init = c4_init_v10,
    .devices = c4_devices,
    .getProperties = c4_get_properties_v9,
    .listen = c4_listen_v8,
    .connect = c4_connect_v10,
    .accept = c4_accept,
    .regMr = c4_reg_mr,
    .regMrDmaBuf = c4_reg_mr_dmabuf,
    .deregMr = c4_dereg_mr,
    .isend = c4_isend,
    .irecv = c4_irecv,
    .iflush = c4_iflush,
    .test = c4_test,
    .closeSend = c4_close_comm,
    .closeRecv = c4_close_comm,
    .closeListen = c4_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
};

/* ---- v9 and v8 ---------------------------------------------------------------------------- */

static ncclResult_t c4_init_v8(ncclDebugLogger_t logger) { return to_nccl(core_init(logger)); }

static ncclResult_t c4_connect_v8(int dev, void *handle, void **send_comm,
                                  ncclNetDeviceHandle_t **dev_comm) {
  return core_connect(0, dev, handle, send_comm, dev_comm);
}

C4_EXPORT const ncclNet_v9_t ncclNetPlugin_v9 = {
    .name = "c4",
    .init = c4_init_v8,
    .devices = c4_devices,
    .getProperties = c4_get_properties_v9,
    .listen = c4_listen_v8,
    .connect = c4_connect_v8,
    .accept = c4_accept,
    .regMr = c4_reg_mr,
    .regMrDmaBuf = c4_reg_mr_dmabuf,
    .deregMr = c4_dereg_mr,
    .isend = c4_isend_v9,
    .irecv = c4_irecv_v9,
    .iflush = c4_iflush,
    .test = c4_test,
    .closeSend = c4_close_comm,
    .closeRecv = c4_close_comm,
    .closeListen = c4_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = NULL,
};

static ncclResult_t c4_get_properties_v8(int dev, ncclNetProperties_v8_t *props) {
  if (check_dev(dev)) return ncclInvalidArgument;
  ncclNetProperties_v9_t p;
  fill_props_common(dev, &p);
  *props = (ncclNetProperties_v8_t){.name = p.name,
                                    .pciPath = p.pciPath,
                                    .guid = p.guid,
                                    .ptrSupport = p.ptrSupport,
                                    .regIsGlobal = p.regIsGlobal,
                                    .speed = p.speed,
                                    .port = p.port,
                                    .latency = p.latency,
                                    .maxComms = p.maxComms,
                                    .maxRecvs = p.maxRecvs,
                                    .netDeviceType = p.netDeviceType,
                                    .netDeviceVersion = p.netDeviceVersion};
  return ncclSuccess;
}

C4_EXPORT const ncclNet_v8_t ncclNetPlugin_v8 = {
    .name = "c4",
    .init = c4_init_v8,
    .devices = c4_devices,
    .getProperties = c4_get_properties_v8,
    .listen = c4_listen_v8,
    .connect = c4_connect_v8,
    .accept = c4_accept,
    .regMr = c4_reg_mr,
    .regMrDmaBuf = c4_reg_mr_dmabuf,
    .deregMr = c4_dereg_mr,
    .isend = c4_isend_v8,
    .irecv = c4_irecv_v8,
    .iflush = c4_iflush,
    .test = c4_test,
    .closeSend = c4_close_comm,
    .closeRecv = c4_close_comm,
    .closeListen = c4_close_listen,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
};
