/* net_plugin_api.c -- the exported NCCL net plugin tables (v11, v10, v9, v8): thin shims over
 * the one backend table that serves the process (core/backend.h: wrap mode, verbs or sockets),
 * with every C4_E* code turned into an ncclResult_t here and nowhere else. */
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>

#include "backend.h"
#include "c4_err.h"
#include "c4_log.h"
#include "net_inner.h"
#include "net_result.h"

#define C4_EXPORT __attribute__((visibility("default")))

/* Offered the process in this order; the first whose setup answers serves it. */
static const struct c4_net_backend *const backends[] = {&c4_net_backend_wrap, &c4_net_backend_ib,
                                                        &c4_net_backend_sock};

static struct {
  pthread_once_t once;
  int rc;
  const struct c4_net_backend *be; /* set once, by the first init */
} plugin = {.once = PTHREAD_ONCE_INIT, .be = &c4_net_backend_sock};

static _Atomic(ncclProfilerCallback_t) profiler_callback; /* NCCL's, from init (v10, v11) */

/* Tells NCCL's profiler, once per connection and only when NCCL gave a phandle, which c4
 * connection a proxy operation uses (a NetPlugin event; c4's profiler turns it into a link
 * record). Costs nothing after the first request of a comm. */
static void report_link(void *comm, void *phandle) {
  ncclProfilerCallback_t cb = atomic_load_explicit(&profiler_callback, memory_order_relaxed);
  if (!cb || !phandle) return;
  struct c4_link_info *link = plugin.be->link_once(comm);
  if (!link) return;
  void *event = NULL;
  cb(&event, 0 /* start */, phandle, C4_PROFILER_PLUGIN_ID, link);
  if (event) cb(&event, 1 /* stop */, phandle, C4_PROFILER_PLUGIN_ID, NULL);
}

static void fill_optional_entries(void);

/* The first backend whose setup answers serves the process; a failed setup fails init (NCCL
 * then falls back to its own transports) and leaves the socket table, which has no devices. */
static void plugin_setup(void) {
  plugin.rc = C4_ENOTFOUND;
  for (size_t i = 0; i < sizeof backends / sizeof backends[0]; i++) {
    int rc = backends[i]->setup();
    if (rc == 0) continue;
    if (rc > 0) plugin.be = backends[i];
    plugin.rc = rc > 0 ? 0 : rc;
    break;
  }
  if (plugin.rc == 0) fill_optional_entries();
}

static int core_init(ncclDebugLogger_t logger) {
  if (logger) c4_log_set_logger((c4_logger_fn)logger);
  pthread_once(&plugin.once, plugin_setup);
  return plugin.rc;
}

/* ---- the core calls, one per NCCL entry point ---------------------------------------------- */

static ncclResult_t c4_devices(int *ndev) { return c4_net_to_nccl(plugin.be->devices(ndev)); }

static ncclResult_t c4_accept(void *listen_comm, void **recv_comm, ncclNetDeviceHandle_t **dev) {
  return c4_net_to_nccl(plugin.be->accept(listen_comm, recv_comm, dev));
}

static ncclResult_t c4_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle) {
  return c4_net_to_nccl(plugin.be->reg_mr(comm, data, size, type, mhandle));
}

static ncclResult_t c4_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset,
                                     int fd, void **mhandle) {
  return c4_net_to_nccl(plugin.be->reg_mr_dmabuf(comm, data, size, type, offset, fd, mhandle));
}

static ncclResult_t c4_dereg_mr(void *comm, void *mhandle) {
  return c4_net_to_nccl(plugin.be->dereg_mr(comm, mhandle));
}

static ncclResult_t c4_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                             void *phandle, void **request) {
  int rc = plugin.be->isend(send_comm, data, size, tag, mhandle, phandle, request);
  if (rc == 0 && *request) report_link(send_comm, phandle);
  return c4_net_to_nccl(rc);
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
  int rc = plugin.be->irecv(recv_comm, n, data, sizes, tags, mhandles, phandles, request);
  if (rc == 0 && *request && phandles) report_link(recv_comm, phandles[0]);
  return c4_net_to_nccl(rc);
}

static ncclResult_t c4_irecv_v9(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                                void **mhandles, void **request) {
  return c4_irecv(recv_comm, n, data, sizes, tags, mhandles, NULL, request);
}

static ncclResult_t c4_irecv_v8(void *recv_comm, int n, void **data, int *sizes, int *tags,
                                void **mhandles, void **request) {
  if (n < 1 || n > C4_NET_MAX_RECVS)
    return c4_irecv(recv_comm, n, data, NULL, tags, mhandles, NULL, request);
  size_t size[C4_NET_MAX_RECVS];
  for (int i = 0; i < n; i++) {
    if (sizes[i] < 0) return ncclInvalidArgument;
    size[i] = (size_t)sizes[i];
  }
  return c4_irecv(recv_comm, n, data, size, tags, mhandles, NULL, request);
}

static ncclResult_t c4_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles,
                              void **request) {
  return c4_net_to_nccl(plugin.be->iflush(recv_comm, n, data, sizes, mhandles, request));
}

static ncclResult_t c4_test(void *request, int *done, int *sizes) {
  return c4_net_to_nccl(plugin.be->test(request, done, sizes));
}

static ncclResult_t c4_close_comm(void *comm) { return c4_net_to_nccl(plugin.be->close(comm)); }

static ncclResult_t c4_close_listen(void *listen_comm) {
  return c4_net_to_nccl(plugin.be->close_listen(listen_comm));
}

/* Offered only when the backend has them (c4_net_backend: optional entry points). */
static ncclResult_t c4_get_device_mr(void *comm, void *mhandle, void **dptr_mhandle) {
  return c4_net_to_nccl(plugin.be->get_device_mr(comm, mhandle, dptr_mhandle));
}

static ncclResult_t c4_irecv_consumed(void *recv_comm, int n, void *request) {
  return c4_net_to_nccl(plugin.be->irecv_consumed(recv_comm, n, request));
}

static ncclResult_t c4_make_vdevice(int *d, ncclNetVDeviceProps_t *props) {
  return c4_net_to_nccl(plugin.be->make_vdevice(d, props));
}

static ncclResult_t c4_set_net_attr(void *ctx, ncclNetAttr_v11_t *attr) {
  return c4_net_to_nccl(plugin.be->set_net_attr(ctx, attr));
}

/* ---- v11 ---------------------------------------------------------------------------------- */

static ncclResult_t c4_init_v11(void **ctx, uint64_t comm_id, ncclNetCommConfig_t *config,
                                ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  if (prof) atomic_store(&profiler_callback, prof);
  int rc = core_init(logger);
  if (rc == 0) rc = plugin.be->init(ctx, comm_id, config, logger, prof);
  return c4_net_to_nccl(rc);
}

static ncclResult_t c4_get_properties_v11(int dev, ncclNetProperties_v11_t *props) {
  return c4_net_to_nccl(plugin.be->properties(dev, props));
}

static ncclResult_t c4_listen_v11(void *ctx, int dev, void *handle, void **listen_comm) {
  return c4_net_to_nccl(plugin.be->listen(ctx, dev, handle, listen_comm));
}

static ncclResult_t c4_connect_v11(void *ctx, int dev, void *handle, void **send_comm,
                                   ncclNetDeviceHandle_t **dev_comm) {
  return c4_net_to_nccl(plugin.be->connect(ctx, dev, NULL, handle, send_comm, dev_comm));
}

static ncclResult_t c4_finalize_v11(void *ctx) { return c4_net_to_nccl(plugin.be->finalize(ctx)); }

/* Not const: the first init fills in the optional entries the backend has (fill_optional_entries).
 */
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
  if (rc == 0) rc = plugin.be->init(NULL, 0, NULL, logger, prof);
  return c4_net_to_nccl(rc);
}

static ncclResult_t c4_get_properties_v9(int dev, ncclNetProperties_v9_t *props) {
  ncclNetProperties_v11_t p;
  int rc = plugin.be->properties(dev, &p);
  if (rc == 0) memcpy(props, &p, sizeof *props); /* v11 is v9 plus one trailing field */
  return c4_net_to_nccl(rc);
}

static ncclResult_t c4_listen_v8(int dev, void *handle, void **listen_comm) {
  return c4_net_to_nccl(plugin.be->listen(NULL, dev, handle, listen_comm));
}

static ncclResult_t c4_connect_v10(int dev, ncclNetCommConfig_t *config, void *handle,
                                   void **send_comm, ncclNetDeviceHandle_t **dev_comm) {
  return c4_net_to_nccl(plugin.be->connect(NULL, dev, config, handle, send_comm, dev_comm));
}

/* Not const: the first init fills in the optional entries the backend has (fill_optional_entries).
 */
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
  if (rc == 0) rc = plugin.be->init(NULL, 0, NULL, logger, NULL);
  return c4_net_to_nccl(rc);
}

static ncclResult_t c4_connect_v8(int dev, void *handle, void **send_comm,
                                  ncclNetDeviceHandle_t **dev_comm) {
  return c4_net_to_nccl(plugin.be->connect(NULL, dev, NULL, handle, send_comm, dev_comm));
}

/* Not const: the first init fills in the optional entries the backend has (fill_optional_entries).
 */
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
  ncclNetProperties_v11_t p;
  int rc = plugin.be->properties(dev, &p);
  if (rc != 0) return c4_net_to_nccl(rc);
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

/* Not const: the first init fills in the optional entries the backend has (fill_optional_entries).
 */
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

/* ---- the optional entries ----------------------------------------------------------------- */

/* Offers getDeviceMr, irecvConsumed, makeVDevice and setNetAttr exactly when the backend has them
 * (wrap mode: when the wrapped plugin has them, so NCCL sees its features). Runs inside the first
 * init, before NCCL copies the table (NCCL's compatibility layers copy it after init returns; a
 * v11 NCCL reads it at each call). */
static void fill_optional_entries(void) {
  if (plugin.be->get_device_mr) {
    ncclNetPlugin_v11.getDeviceMr = ncclNetPlugin_v10.getDeviceMr = c4_get_device_mr;
    ncclNetPlugin_v9.getDeviceMr = ncclNetPlugin_v8.getDeviceMr = c4_get_device_mr;
  }
  if (plugin.be->irecv_consumed) {
    ncclNetPlugin_v11.irecvConsumed = ncclNetPlugin_v10.irecvConsumed = c4_irecv_consumed;
    ncclNetPlugin_v9.irecvConsumed = ncclNetPlugin_v8.irecvConsumed = c4_irecv_consumed;
  }
  if (plugin.be->make_vdevice) {
    ncclNetPlugin_v11.makeVDevice = ncclNetPlugin_v10.makeVDevice = c4_make_vdevice;
    ncclNetPlugin_v9.makeVDevice = c4_make_vdevice;
  }
  if (plugin.be->set_net_attr) ncclNetPlugin_v11.setNetAttr = c4_set_net_attr;
}
