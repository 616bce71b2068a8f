/* net_wrap_inner.h -- the NCCL net plugin that wrap mode loads (C4_WRAP): dlopen, the newest
 * table it exports (v11..v8), and one v11-shaped calling convention over whichever it is. */
#ifndef C4_NET_WRAP_INNER_H
#define C4_NET_WRAP_INNER_H

#include <stddef.h>
#include <stdint.h>

#include "backend.h"
#include "nccl_net_abi.h"
#include "net_inner.h"

#define C4_WRAP_MAX_RECVS C4_NET_MAX_RECVS /* receives per irecv c4 forwards */

struct c4_wrap_inner {
  void *dl;
  int version; /* 11, 10, 9 or 8 */
  const void *table;
  const char *name;
  int is_c4; /* the inner exports C4_WRAP_INNER_SYMBOL and was switched into inner mode */
};

/* dlopens path (a path, or a name the dynamic loader finds), takes the newest table it exports
 * and, when it is a c4, switches it into inner mode. Refuses this very plugin (same file).
 * Returns 0, or C4_ENOTFOUND / C4_EINVAL with a message naming the file (and dlerror's text)
 * in err; the library is then closed again. */
int c4_wrap_inner_load(struct c4_wrap_inner *in, const char *path, char *err, size_t errlen);

/* Which optional entry points the inner table has (non-NULL in its version). */
enum { C4_WI_GET_DEVICE_MR, C4_WI_IRECV_CONSUMED, C4_WI_MAKE_VDEVICE, C4_WI_SET_NET_ATTR };
int c4_wrap_inner_has(const struct c4_wrap_inner *in, int op);

/* v11-shaped calls, each returning 0 or the C4_E* code for the wrapped plugin's ncclResult_t
 * (c4_net_from_nccl: the API layer gives NCCL the same result back). init: a v11 inner is
 * initialized per call (*ctx is its context); an older one once per process, its result kept (*ctx
 * NULL). config may be NULL. */
int c4_wrap_inner_init(struct c4_wrap_inner *in, void **ctx, uint64_t comm_id,
                       ncclNetCommConfig_t *config, ncclDebugLogger_t logger,
                       ncclProfilerCallback_t prof);
int c4_wrap_inner_devices(struct c4_wrap_inner *in, int *ndev);
/* Fills every v11 field; fields older versions lack get NCCL's defaults for them. */
int c4_wrap_inner_properties(struct c4_wrap_inner *in, int dev, ncclNetProperties_v11_t *p);
int c4_wrap_inner_listen(struct c4_wrap_inner *in, void *ctx, int dev, void *handle,
                         void **listen_comm);
int c4_wrap_inner_connect(struct c4_wrap_inner *in, void *ctx, int dev, ncclNetCommConfig_t *config,
                          void *handle, void **send_comm, ncclNetDeviceHandle_t **dev_comm);
int c4_wrap_inner_accept(struct c4_wrap_inner *in, void *listen_comm, void **recv_comm,
                         ncclNetDeviceHandle_t **dev_comm);
int c4_wrap_inner_reg_mr(struct c4_wrap_inner *in, void *comm, void *data, size_t size, int type,
                         void **mhandle);
int c4_wrap_inner_reg_mr_dmabuf(struct c4_wrap_inner *in, void *comm, void *data, size_t size,
                                int type, uint64_t offset, int fd, void **mhandle);
int c4_wrap_inner_dereg_mr(struct c4_wrap_inner *in, void *comm, void *mhandle);
/* v8 inner: a size above INT_MAX is refused with C4_EINVAL. */
int c4_wrap_inner_isend(struct c4_wrap_inner *in, void *send_comm, void *data, size_t size, int tag,
                        void *mhandle, void *phandle, void **request);
/* n <= C4_WRAP_MAX_RECVS. */
int c4_wrap_inner_irecv(struct c4_wrap_inner *in, void *recv_comm, int n, void **data,
                        size_t *sizes, int *tags, void **mhandles, void **phandles, void **request);
int c4_wrap_inner_iflush(struct c4_wrap_inner *in, void *recv_comm, int n, void **data, int *sizes,
                         void **mhandles, void **request);
int c4_wrap_inner_test(struct c4_wrap_inner *in, void *request, int *done, int *sizes);
int c4_wrap_inner_close_send(struct c4_wrap_inner *in, void *comm);
int c4_wrap_inner_close_recv(struct c4_wrap_inner *in, void *comm);
int c4_wrap_inner_close_listen(struct c4_wrap_inner *in, void *comm);
int c4_wrap_inner_get_device_mr(struct c4_wrap_inner *in, void *comm, void *mhandle,
                                void **dptr_mhandle);
int c4_wrap_inner_irecv_consumed(struct c4_wrap_inner *in, void *recv_comm, int n, void *request);
int c4_wrap_inner_make_vdevice(struct c4_wrap_inner *in, int *d, ncclNetVDeviceProps_t *props);
/* v11 inner only; older versions: 0, nothing to do. */
int c4_wrap_inner_finalize(struct c4_wrap_inner *in, void *ctx);
int c4_wrap_inner_set_net_attr(struct c4_wrap_inner *in, void *ctx, ncclNetAttr_v11_t *attr);

#endif
