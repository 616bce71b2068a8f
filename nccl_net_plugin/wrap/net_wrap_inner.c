/* net_wrap_inner.c -- loads the plugin C4_WRAP names and calls whichever ncclNet version (v11..v8)
 * it exports through one v11-shaped convention, translating arguments the way NCCL's own
 * compatibility layers do (src/plugin/net/net_v*.cc). */
#include "net_wrap_inner.h"

#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "c4_err.h"
#include "c4_netapi.h"
#include "net_result.h"

#define V11(in) ((const ncclNet_v11_t *)(in)->table)
#define V10(in) ((const ncclNet_v10_t *)(in)->table)
#define V9(in) ((const ncclNet_v9_t *)(in)->table)
#define V8(in) ((const ncclNet_v8_t *)(in)->table)
#define V8_MAX_BYTES (1ull << 30) /* NCCL's MAX_NET_SIZE for plugins with int sizes */

int c4_wrap_inner_load(struct c4_wrap_inner *in, const char *path, char *err, size_t errlen) {
  memset(in, 0, sizeof *in);
  dlerror();
  in->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!in->dl) {
    const char *why = dlerror();
    snprintf(err, errlen, "cannot load %s: %s", path, why ? why : "unknown dlopen error");
    return C4_ENOTFOUND;
  }
  in->table = c4_netapi_find_table(in->dl, 0, &in->version);
  if (!in->table) {
    const char *why = dlerror();
    snprintf(err, errlen, "%s exports none of ncclNetPlugin_v11, v10, v9, v8 (%s)", path,
             why ? why : "no such symbol");
    dlclose(in->dl);
    memset(in, 0, sizeof *in);
    return C4_ENOTFOUND;
  }
  /* dlopen of this plugin's own file returns this plugin: wrapping it would recurse forever. */
  Dl_info mine, theirs;
  if (dladdr((void *)c4_wrap_inner_load, &mine) && dladdr(in->table, &theirs) &&
      mine.dli_fbase == theirs.dli_fbase) {
    snprintf(err, errlen,
             "%s is this c4 plugin itself; to wrap c4's own transport, copy the .so to another "
             "file and name that",
             path);
    dlclose(in->dl);
    memset(in, 0, sizeof *in);
    return C4_EINVAL;
  }
  in->name = V8(in)->name; /* the first field in every version */
  int (*set_inner)(void) = (int (*)(void))dlsym(in->dl, C4_WRAP_INNER_SYMBOL);
  if (set_inner && set_inner() == 0) in->is_c4 = 1;
  return 0;
}

int c4_wrap_inner_has(const struct c4_wrap_inner *in, int op) {
  switch (op) {
  case C4_WI_GET_DEVICE_MR: return V8(in)->getDeviceMr != NULL; /* same slot in v8..v11 */
  case C4_WI_IRECV_CONSUMED: return V8(in)->irecvConsumed != NULL;
  case C4_WI_MAKE_VDEVICE:
    if (in->version == 11) return V11(in)->makeVDevice != NULL;
    if (in->version == 10) return V10(in)->makeVDevice != NULL;
    return in->version == 9 && V9(in)->makeVDevice != NULL;
  case C4_WI_SET_NET_ATTR: return in->version == 11 && V11(in)->setNetAttr != NULL;
  default: return 0;
  }
}

/* Pre-v11 plugins are initialized once per process; later calls get the first result. */
static pthread_mutex_t once_lock = PTHREAD_MUTEX_INITIALIZER;
static int once_done;
static ncclResult_t once_rc;

int c4_wrap_inner_init(struct c4_wrap_inner *in, void **ctx, uint64_t comm_id,
                       ncclNetCommConfig_t *config, ncclDebugLogger_t logger,
                       ncclProfilerCallback_t prof) {
  *ctx = NULL;
  if (in->version == 11) {
    ncclNetCommConfig_t none = {.trafficClass = -1};
    return c4_net_from_nccl(V11(in)->init(ctx, comm_id, config ? config : &none, logger, prof));
  }
  pthread_mutex_lock(&once_lock);
  if (!once_done) {
    once_rc = in->version == 10  ? V10(in)->init(logger, prof)
              : in->version == 9 ? V9(in)->init(logger)
                                 : V8(in)->init(logger);
    once_done = 1;
  }
  ncclResult_t rc = once_rc;
  pthread_mutex_unlock(&once_lock);
  return c4_net_from_nccl(rc);
}

int c4_wrap_inner_devices(struct c4_wrap_inner *in, int *ndev) {
  return c4_net_from_nccl(V8(in)->devices(ndev));
}

int c4_wrap_inner_properties(struct c4_wrap_inner *in, int dev, ncclNetProperties_v11_t *p) {
  memset(p, 0, sizeof *p);
  if (in->version == 11) return c4_net_from_nccl(V11(in)->getProperties(dev, p));
  ncclResult_t rc;
  if (in->version >= 9) {
    ncclNetProperties_v9_t q;
    memset(&q, 0, sizeof q);
    rc = in->version == 10 ? V10(in)->getProperties(dev, &q) : V9(in)->getProperties(dev, &q);
    memcpy(p, &q, sizeof q); /* v11 is v9 plus maxMultiRequestSize */
    p->maxMultiRequestSize = 1;
    return c4_net_from_nccl(rc);
  }
  ncclNetProperties_v8_t q;
  memset(&q, 0, sizeof q);
  rc = V8(in)->getProperties(dev, &q);
  c4_netapi_props_from_v8(&q, p);
  p->forceFlush = 0;
  p->vProps.ndevs = 1;
  p->vProps.devs[0] = dev;
  p->maxP2pBytes = V8_MAX_BYTES;
  p->maxCollBytes = V8_MAX_BYTES;
  p->maxMultiRequestSize = 1;
  return c4_net_from_nccl(rc);
}

int c4_wrap_inner_listen(struct c4_wrap_inner *in, void *ctx, int dev, void *handle,
                         void **listen_comm) {
  if (in->version == 11) return c4_net_from_nccl(V11(in)->listen(ctx, dev, handle, listen_comm));
  return c4_net_from_nccl(
      V8(in)->listen(dev, handle, listen_comm)); /* v8..v10 share this signature */
}

int c4_wrap_inner_connect(struct c4_wrap_inner *in, void *ctx, int dev, ncclNetCommConfig_t *config,
                          void *handle, void **send_comm, ncclNetDeviceHandle_t **dev_comm) {
  ncclNetCommConfig_t none = {.trafficClass = -1};
  switch (in->version) {
  case 11: return c4_net_from_nccl(V11(in)->connect(ctx, dev, handle, send_comm, dev_comm));
  case 10:
    return c4_net_from_nccl(
        V10(in)->connect(dev, config ? config : &none, handle, send_comm, dev_comm));
  case 9: return c4_net_from_nccl(V9(in)->connect(dev, handle, send_comm, dev_comm));
  default: return c4_net_from_nccl(V8(in)->connect(dev, handle, send_comm, dev_comm));
  }
}

int c4_wrap_inner_accept(struct c4_wrap_inner *in, void *listen_comm, void **recv_comm,
                         ncclNetDeviceHandle_t **dev_comm) {
  return c4_net_from_nccl(V8(in)->accept(listen_comm, recv_comm, dev_comm));
}

int c4_wrap_inner_reg_mr(struct c4_wrap_inner *in, void *comm, void *data, size_t size, int type,
                         void **mhandle) {
  return c4_net_from_nccl(V8(in)->regMr(comm, data, size, type, mhandle));
}

int c4_wrap_inner_reg_mr_dmabuf(struct c4_wrap_inner *in, void *comm, void *data, size_t size,
                                int type, uint64_t offset, int fd, void **mhandle) {
  if (!V8(in)->regMrDmaBuf) return C4_EINTERNAL; /* NCCL only asks when ptrSupport says so */
  return c4_net_from_nccl(V8(in)->regMrDmaBuf(comm, data, size, type, offset, fd, mhandle));
}

int c4_wrap_inner_dereg_mr(struct c4_wrap_inner *in, void *comm, void *mhandle) {
  return c4_net_from_nccl(V8(in)->deregMr(comm, mhandle));
}

int c4_wrap_inner_isend(struct c4_wrap_inner *in, void *send_comm, void *data, size_t size, int tag,
                        void *mhandle, void *phandle, void **request) {
  switch (in->version) {
  case 11:
    return c4_net_from_nccl(V11(in)->isend(send_comm, data, size, tag, mhandle, phandle, request));
  case 10:
    return c4_net_from_nccl(V10(in)->isend(send_comm, data, size, tag, mhandle, phandle, request));
  case 9: return c4_net_from_nccl(V9(in)->isend(send_comm, data, size, tag, mhandle, request));
  default:
    if (size > INT_MAX) return C4_EINVAL;
    return c4_net_from_nccl(V8(in)->isend(send_comm, data, (int)size, tag, mhandle, request));
  }
}

int c4_wrap_inner_irecv(struct c4_wrap_inner *in, void *recv_comm, int n, void **data,
                        size_t *sizes, int *tags, void **mhandles, void **phandles,
                        void **request) {
  switch (in->version) {
  case 11:
    return c4_net_from_nccl(
        V11(in)->irecv(recv_comm, n, data, sizes, tags, mhandles, phandles, request));
  case 10:
    return c4_net_from_nccl(
        V10(in)->irecv(recv_comm, n, data, sizes, tags, mhandles, phandles, request));
  case 9:
    return c4_net_from_nccl(V9(in)->irecv(recv_comm, n, data, sizes, tags, mhandles, request));
  default: {
    int isizes[C4_WRAP_MAX_RECVS];
    if (n < 1 || n > C4_WRAP_MAX_RECVS) return C4_EINVAL;
    for (int i = 0; i < n; i++) {
      if (sizes[i] > INT_MAX) return C4_EINVAL;
      isizes[i] = (int)sizes[i];
    }
    return c4_net_from_nccl(V8(in)->irecv(recv_comm, n, data, isizes, tags, mhandles, request));
  }
  }
}

int c4_wrap_inner_iflush(struct c4_wrap_inner *in, void *recv_comm, int n, void **data, int *sizes,
                         void **mhandles, void **request) {
  return c4_net_from_nccl(V8(in)->iflush(recv_comm, n, data, sizes, mhandles, request));
}

int c4_wrap_inner_test(struct c4_wrap_inner *in, void *request, int *done, int *sizes) {
  return c4_net_from_nccl(V8(in)->test(request, done, sizes));
}

int c4_wrap_inner_close_send(struct c4_wrap_inner *in, void *comm) {
  return c4_net_from_nccl(V8(in)->closeSend(comm));
}

int c4_wrap_inner_close_recv(struct c4_wrap_inner *in, void *comm) {
  return c4_net_from_nccl(V8(in)->closeRecv(comm));
}

int c4_wrap_inner_close_listen(struct c4_wrap_inner *in, void *comm) {
  return c4_net_from_nccl(V8(in)->closeListen(comm));
}

int c4_wrap_inner_get_device_mr(struct c4_wrap_inner *in, void *comm, void *mhandle,
                                void **dptr_mhandle) {
  if (!V8(in)->getDeviceMr) return C4_EINTERNAL;
  return c4_net_from_nccl(V8(in)->getDeviceMr(comm, mhandle, dptr_mhandle));
}

int c4_wrap_inner_irecv_consumed(struct c4_wrap_inner *in, void *recv_comm, int n, void *request) {
  if (!V8(in)->irecvConsumed) return 0;
  return c4_net_from_nccl(V8(in)->irecvConsumed(recv_comm, n, request));
}

int c4_wrap_inner_make_vdevice(struct c4_wrap_inner *in, int *d, ncclNetVDeviceProps_t *props) {
  if (!c4_wrap_inner_has(in, C4_WI_MAKE_VDEVICE)) return C4_EUSAGE;
  if (in->version == 11) return c4_net_from_nccl(V11(in)->makeVDevice(d, props));
  if (in->version == 10) return c4_net_from_nccl(V10(in)->makeVDevice(d, props));
  return c4_net_from_nccl(V9(in)->makeVDevice(d, props));
}

int c4_wrap_inner_finalize(struct c4_wrap_inner *in, void *ctx) {
  if (in->version != 11 || !V11(in)->finalize) return 0;
  return c4_net_from_nccl(V11(in)->finalize(ctx));
}

int c4_wrap_inner_set_net_attr(struct c4_wrap_inner *in, void *ctx, ncclNetAttr_v11_t *attr) {
  if (!c4_wrap_inner_has(in, C4_WI_SET_NET_ATTR)) return 0;
  return c4_net_from_nccl(V11(in)->setNetAttr(ctx, attr));
}
