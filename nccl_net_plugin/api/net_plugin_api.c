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
#include "ib_transport.h"
#include "nccl_net_abi.h"
#include "net_comm.h"
#include "net_fault.h"
#include "net_iface.h"
#include "net_plan.h"
#include "net_transport.h"
#include "net_wrap.h"

#define C4_EXPORT __attribute__((visibility("default")))
#define C4_MAX_DEVS 32
#define C4_MAX_MSG (1ull << 30) /* test() reports sizes as int: stay well inside it */

static struct {
  pthread_once_t once;
  int rc;
  int ndev;
  struct c4_iface dev[C4_MAX_DEVS];
  struct c4_transport_config cfg;
  int wrap; /* C4_WRAP: every entry point forwards to net_wrap.c */
  int nib;  /* verbs ports (ib_*.c): when there are any, they are the devices instead of sockets */
} plugin = {.once = PTHREAD_ONCE_INIT};

/* Verbs comms, listeners and requests reach NCCL with bit 0 set (they are 8-byte aligned), so each
 * entry point tells them from socket ones without looking inside. */
static void *ib_tag(void *p) { return p ? (void *)((uintptr_t)p | 1) : NULL; }
static int ib_tagged(const void *p) { return ((uintptr_t)p & 1) != 0; }
static void *ib_untag(void *p) { return (void *)((uintptr_t)p & ~(uintptr_t)1); }

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
  struct c4_link_info *link = plugin.wrap       ? c4_wrap_link_once(comm)
                              : ib_tagged(comm) ? c4_ib_link_once(ib_untag(comm))
                                                : c4_transport_link_once(comm);
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

static void wrap_fill_tables(void);

static void plugin_setup(void) {
  /* ---- wrap mode (net_wrap.c, docs/wrap.md) ---- */
  if (c4_wrap_setup()) {
    plugin.wrap = 1;
    wrap_fill_tables();
    c4_telemetry_add_periodic(c4_wrap_watch_scan);
    c4_telemetry_start();
    return;
  }
  c4_transport_config_load(&plugin.cfg);
  if (c4_wrap_is_inner()) plugin.cfg.timing = 0; /* an outer c4 times and reports */
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
  plugin.nib = c4_ib_setup(); /* its handshake listens on the first socket interface */
  if (plugin.nib) c4_telemetry_add_periodic(c4_ib_watch_scan);
  if (c4_wrap_is_inner()) return;
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
  int n = plugin.nib ? plugin.nib : plugin.ndev;
  if (dev < 0 || dev >= n) {
    C4_WARN("device %d does not exist (c4 has %d)", dev, n);
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
  if (!plugin.nib) return;
  struct c4_ib_props ib;
  c4_ib_get_props(dev, &ib);
  p->name = (char *)ib.name;
  p->pciPath = (char *)ib.pci_path;
  p->guid = ib.guid;
  p->ptrSupport = ib.ptr_support;
  p->speed = ib.speed_mbps;
  p->port = ib.port;
}

/* ---- the core calls, one per NCCL entry point ---------------------------------------------- */

static ncclResult_t c4_devices(int *ndev) {
  if (plugin.wrap) return c4_wrap_devices(ndev);
  *ndev = plugin.nib ? plugin.nib : plugin.ndev;
  return ncclSuccess;
}

static ncclResult_t core_listen(uint64_t nccl_comm, int dev, void *handle, void **listen_comm) {
  int rc = check_dev(dev);
  if (rc == 0 && plugin.nib) {
    rc = c4_ib_listen(&plugin.cfg, dev, nccl_comm, &plugin.dev[0].addr, handle,
                      (struct c4_ib_listen **)listen_comm);
    if (rc == 0) *listen_comm = ib_tag(*listen_comm);
  } else if (rc == 0)
    rc = c4_transport_listen(&plugin.cfg, dev, nccl_comm, &plugin.dev[dev].addr, handle,
                             (struct c4_listen_comm **)listen_comm);
  return to_nccl(rc);
}

static ncclResult_t core_connect(uint64_t nccl_comm, int dev, void *handle, void **send_comm,
                                 ncclNetDeviceHandle_t **dev_comm) {
  (void)dev_comm; /* host-only plugin: NCCL's devComm request is left untouched */
  int rc = check_dev(dev);
  if (rc == 0 && plugin.nib) {
    rc = c4_ib_connect(&plugin.cfg, dev, nccl_comm, handle, (struct c4_ib_comm **)send_comm);
    if (rc == 0) *send_comm = ib_tag(*send_comm);
  } else if (rc == 0)
    rc = c4_transport_connect(&plugin.cfg, dev, nccl_comm, handle, (struct c4_comm **)send_comm);
  return to_nccl(rc);
}

static ncclResult_t c4_accept(void *listen_comm, void **recv_comm, ncclNetDeviceHandle_t **dev) {
  if (plugin.wrap) return c4_wrap_accept(listen_comm, recv_comm, dev);
  (void)dev;
  if (ib_tagged(listen_comm)) {
    int rc = c4_ib_accept(ib_untag(listen_comm), (struct c4_ib_comm **)recv_comm);
    *recv_comm = ib_tag(*recv_comm);
    return to_nccl(rc);
  }
  return to_nccl(c4_transport_accept(listen_comm, (struct c4_comm **)recv_comm));
}

static ncclResult_t c4_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle) {
  if (plugin.wrap) return c4_wrap_reg_mr(comm, data, size, type, mhandle);
  if (ib_tagged(comm))
    return to_nccl(c4_ib_reg_mr(ib_untag(comm), data, size, type, -1, 0, mhandle));
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
  if (plugin.wrap) return c4_wrap_reg_mr_dmabuf(comm, data, size, type, offset, fd, mhandle);
  if (ib_tagged(comm))
    return to_nccl(c4_ib_reg_mr(ib_untag(comm), data, size, type, fd, offset, mhandle));
  (void)offset, (void)fd;
  return c4_reg_mr(comm, data, size, type, mhandle);
}

static ncclResult_t c4_dereg_mr(void *comm, void *mhandle) {
  if (plugin.wrap) return c4_wrap_dereg_mr(comm, mhandle);
  if (ib_tagged(comm)) return to_nccl(c4_ib_dereg_mr(ib_untag(comm), mhandle));
  (void)comm, (void)mhandle;
  return ncclSuccess;
}

static ncclResult_t c4_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                             void *phandle, void **request) {
  if (plugin.wrap) {
    ncclResult_t rc = c4_wrap_isend(send_comm, data, size, tag, mhandle, phandle, request);
    if (rc == ncclSuccess && *request) report_link(send_comm, phandle);
    return rc;
  }
  (void)mhandle, (void)phandle;
  if (size > C4_MAX_MSG) {
    C4_WARN("isend of %zu bytes exceeds maxP2pBytes (%llu)", size, (unsigned long long)C4_MAX_MSG);
    return ncclInvalidArgument;
  }
  ncclResult_t rc =
      ib_tagged(send_comm)
          ? to_nccl(c4_ib_isend(ib_untag(send_comm), data, size, tag, mhandle,
                                (struct c4_ib_request **)request))
          : to_nccl(c4_transport_isend(send_comm, data, size, tag, (struct c4_request **)request));
  if (ib_tagged(send_comm)) *request = ib_tag(*request);
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
  if (plugin.wrap) {
    ncclResult_t rc = c4_wrap_irecv(recv_comm, n, data, sizes, tags, mhandles, phandles, request);
    if (rc == ncclSuccess && *request && phandles) report_link(recv_comm, phandles[0]);
    return rc;
  }
  (void)mhandles, (void)phandles;
  if (n != 1) {
    C4_WARN("irecv with %d receives: c4 offers maxRecvs = 1", n);
    return ncclInvalidArgument;
  }
  ncclResult_t rc = ib_tagged(recv_comm)
                        ? to_nccl(c4_ib_irecv(ib_untag(recv_comm), data[0], sizes[0], tags[0],
                                              mhandles[0], (struct c4_ib_request **)request))
                        : to_nccl(c4_transport_irecv(recv_comm, data[0], sizes[0], tags[0],
                                                     (struct c4_request **)request));
  if (ib_tagged(recv_comm)) *request = ib_tag(*request);
  if (rc == ncclSuccess && *request && phandles) report_link(recv_comm, phandles[0]);
  return rc;
}

static ncclResult_t c4_irecv_v9(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                                void **mhandles, void **request) {
  return c4_irecv(recv_comm, n, data, sizes, tags, mhandles, NULL, request);
}

static ncclResult_t c4_irecv_v8(void *recv_comm, int n, void **data, int *sizes, int *tags,
                                void **mhandles, void **request) {
  if (n < 1 || n > C4_WRAP_MAX_RECVS)
    return c4_irecv(recv_comm, n, data, NULL, tags, mhandles, NULL, request);
  size_t size[C4_WRAP_MAX_RECVS];
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 0) return ncclInvalidArgument;
    size[i] = (size_t)sizes[i];
  }
  return c4_irecv(recv_comm, n, data, size, tags, mhandles, NULL, request);
}

static ncclResult_t c4_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles,
                              void **request) {
  if (plugin.wrap) return c4_wrap_iflush(recv_comm, n, data, sizes, mhandles, request);
  if (ib_tagged(recv_comm) && n == 1) {
    int rc =
        c4_ib_iflush(ib_untag(recv_comm), data[0], mhandles[0], (struct c4_ib_request **)request);
    *request = ib_tag(*request);
    return to_nccl(rc);
  }
  (void)recv_comm, (void)n, (void)data, (void)sizes, (void)mhandles;
  *request = NULL; /* host memory: nothing to flush */
  return ncclSuccess;
}

static ncclResult_t c4_test(void *request, int *done, int *sizes) {
  if (plugin.wrap) return c4_wrap_test(request, done, sizes);
  size_t size = 0;
  int rc = ib_tagged(request) ? c4_ib_test(ib_untag(request), done, &size)
                              : c4_transport_test(request, done, &size);
  if (rc == 0 && *done && sizes) sizes[0] = (int)size;
  return to_nccl(rc);
}

static ncclResult_t c4_close_comm(void *comm) {
  if (plugin.wrap) return c4_wrap_close(comm);
  if (ib_tagged(comm)) return to_nccl(c4_ib_close(ib_untag(comm)));
  return to_nccl(c4_transport_close(comm));
}

static ncclResult_t c4_close_listen(void *listen_comm) {
  if (plugin.wrap) return c4_wrap_close_listen(listen_comm);
  if (ib_tagged(listen_comm)) return to_nccl(c4_ib_close_listen(ib_untag(listen_comm)));
  return to_nccl(c4_transport_close_listen(listen_comm));
}

/* ---- v11 ---------------------------------------------------------------------------------- */

static ncclResult_t c4_init_v11(void **ctx, uint64_t comm_id, ncclNetCommConfig_t *config,
                                ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  (void)config;
  if (prof) atomic_store(&profiler_callback, prof);
  int rc = core_init(logger);
  if (rc != 0) return to_nccl(rc);
  if (plugin.wrap) return c4_wrap_init(ctx, comm_id, config, logger, prof);
  struct net_ctx *c = calloc(1, sizeof *c);
  if (!c) return ncclSystemError;
  c->nccl_comm = comm_id;
  *ctx = c;
  return ncclSuccess;
}

static ncclResult_t c4_get_properties_v11(int dev, ncclNetProperties_v11_t *props) {
  if (plugin.wrap) return c4_wrap_properties(dev, props);
  if (check_dev(dev)) return ncclInvalidArgument;
  ncclNetProperties_v9_t p;
  fill_props_common(dev, &p);
  memset(props, 0, sizeof *props);
  memcpy(props, &p, sizeof p); /* v11 is v9 plus one trailing field */
  props->maxMultiRequestSize = 1;
  return ncclSuccess;
}

static ncclResult_t c4_listen_v11(void *ctx, int dev, void *handle, void **listen_comm) {
  if (plugin.wrap) return c4_wrap_listen(ctx, dev, handle, listen_comm);
  return core_listen(ctx ? ((struct net_ctx *)ctx)->nccl_comm : 0, dev, handle, listen_comm);
}

static ncclResult_t c4_connect_v11(void *ctx, int dev, void *handle, void **send_comm,
                                   ncclNetDeviceHandle_t **dev_comm) {
  if (plugin.wrap) return c4_wrap_connect(ctx, dev, NULL, handle, send_comm, dev_comm);
  return core_connect(ctx ? ((struct net_ctx *)ctx)->nccl_comm : 0, dev, handle, send_comm,
                      dev_comm);
}

static ncclResult_t c4_finalize_v11(void *ctx) {
  if (plugin.wrap) return c4_wrap_finalize(ctx);
  free(ctx);
  return ncclSuccess;
}

/* Not const: wrap mode fills in the optional entries in init (wrap_fill_tables). */
C4_EXPORT ncclNet_v11_t ncclNetPlugin_v11 = {
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
  int rc = core_init(logger);
  if (rc == 0 && plugin.wrap) return c4_wrap_init(NULL, 0, NULL, logger, prof);
  return to_nccl(rc);
}

static ncclResult_t c4_get_properties_v9(int dev, ncclNetProperties_v9_t *props) {
  if (plugin.wrap) {
    ncclNetProperties_v11_t p;
    ncclResult_t rc = c4_wrap_properties(dev, &p);
    memcpy(props, &p, sizeof *props); /* v11 is v9 plus one trailing field */
    return rc;
  }
  if (check_dev(dev)) return ncclInvalidArgument;
  fill_props_common(dev, props);
  return ncclSuccess;
}

static ncclResult_t c4_listen_v8(int dev, void *handle, void **listen_comm) {
  if (plugin.wrap) return c4_wrap_listen(NULL, dev, handle, listen_comm);
  return core_listen(0, dev, handle, listen_comm);
}

static ncclResult_t c4_connect_v10(int dev, ncclNetCommConfig_t *config, void *handle,
                                   void **send_comm, ncclNetDeviceHandle_t **dev_comm) {
  if (plugin.wrap) return c4_wrap_connect(NULL, dev, config, handle, send_comm, dev_comm);
  (void)config;
  return core_connect(0, dev, handle, send_comm, dev_comm);
}

/* Not const: wrap mode fills in the optional entries in init (wrap_fill_tables). */
C4_EXPORT ncclNet_v10_t ncclNetPlugin_v10 = {
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

static ncclResult_t c4_init_v8(ncclDebugLogger_t logger) {
  int rc = core_init(logger);
  if (rc == 0 && plugin.wrap) return c4_wrap_init(NULL, 0, NULL, logger, NULL);
  return to_nccl(rc);
}

static ncclResult_t c4_connect_v8(int dev, void *handle, void **send_comm,
                                  ncclNetDeviceHandle_t **dev_comm) {
  if (plugin.wrap) return c4_wrap_connect(NULL, dev, NULL, handle, send_comm, dev_comm);
  return core_connect(0, dev, handle, send_comm, dev_comm);
}

/* Not const: wrap mode fills in the optional entries in init (wrap_fill_tables). */
C4_EXPORT ncclNet_v9_t ncclNetPlugin_v9 = {
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
  ncclNetProperties_v9_t p;
  if (plugin.wrap) {
    ncclNetProperties_v11_t q;
    ncclResult_t rc = c4_wrap_properties(dev, &q);
    if (rc != ncclSuccess) return rc;
    memcpy(&p, &q, sizeof p);
  } else {
    if (check_dev(dev)) return ncclInvalidArgument;
    fill_props_common(dev, &p);
  }
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

/* Not const: wrap mode fills in the optional entries in init (wrap_fill_tables). */
C4_EXPORT ncclNet_v8_t ncclNetPlugin_v8 = {
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

/* ---- wrap mode: the optional entries ------------------------------------------------------- */

/* Offers getDeviceMr, irecvConsumed, makeVDevice and setNetAttr exactly when the wrapped plugin
 * has them, so NCCL sees its features. Runs inside the first init, before NCCL copies the table
 * (NCCL's compatibility layers copy it after init returns; a v11 NCCL reads it at each call). */
static void wrap_fill_tables(void) {
  if (c4_wrap_has(C4_WI_GET_DEVICE_MR)) {
    ncclNetPlugin_v11.getDeviceMr = ncclNetPlugin_v10.getDeviceMr = c4_wrap_get_device_mr;
    ncclNetPlugin_v9.getDeviceMr = ncclNetPlugin_v8.getDeviceMr = c4_wrap_get_device_mr;
  }
  if (c4_wrap_has(C4_WI_IRECV_CONSUMED)) {
    ncclNetPlugin_v11.irecvConsumed = ncclNetPlugin_v10.irecvConsumed = c4_wrap_irecv_consumed;
    ncclNetPlugin_v9.irecvConsumed = ncclNetPlugin_v8.irecvConsumed = c4_wrap_irecv_consumed;
  }
  if (c4_wrap_has(C4_WI_MAKE_VDEVICE)) {
    ncclNetPlugin_v11.makeVDevice = ncclNetPlugin_v10.makeVDevice = c4_wrap_make_vdevice;
    ncclNetPlugin_v9.makeVDevice = c4_wrap_make_vdevice;
  }
  if (c4_wrap_has(C4_WI_SET_NET_ATTR)) ncclNetPlugin_v11.setNetAttr = c4_wrap_set_net_attr;
}
