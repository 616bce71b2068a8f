/* backend.h -- the one table a transport fills for the API layer (api/net_plugin_api.c): the
 * socket transport (sock/), verbs (ib/) and wrap mode (wrap/) each offer one, and a new transport
 * is a folder and a table. Calls are in NCCL's v11 shape with c4's error convention: 0 or a
 * negative C4_E* code; the API layer turns it into an ncclResult_t and adapts the older versions.
 */
#ifndef C4_NET_BACKEND_H
#define C4_NET_BACKEND_H

#include <stddef.h>
#include <stdint.h>

#include "c4_record.h"
#include "nccl_net_abi.h"

/* The most receives one irecv hands a backend (NCCL's own IB uses 8; sock and ib take 1). */
#define C4_NET_MAX_RECVS 8

struct c4_net_backend {
  const char *name;
  /* Called once, in the order of c4_net_backends, until one answers: 1 when this backend serves
   * the process (it is set up then), 0 when it does not apply here, a C4_E* code when setup failed
   * and no backend can serve (the plugin's init then fails with it). */
  int (*setup)(void);
  /* ctx is NULL for NCCLs older than v11 (one process-wide context then). */
  int (*init)(void **ctx, uint64_t comm_id, ncclNetCommConfig_t *config, ncclDebugLogger_t logger,
              ncclProfilerCallback_t prof);
  int (*finalize)(void *ctx);
  int (*devices)(int *ndev);
  int (*properties)(int dev, ncclNetProperties_v11_t *props);
  int (*listen)(void *ctx, int dev, void *handle, void **listen_comm);
  /* Polled: *send_comm stays NULL until the connection is ready. config may be NULL. */
  int (*connect)(void *ctx, int dev, ncclNetCommConfig_t *config, void *handle, void **send_comm,
                 ncclNetDeviceHandle_t **dev_comm);
  int (*accept)(void *listen_comm, void **recv_comm, ncclNetDeviceHandle_t **dev_comm);
  int (*reg_mr)(void *comm, void *data, size_t size, int type, void **mhandle);
  int (*reg_mr_dmabuf)(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
                       void **mhandle);
  int (*dereg_mr)(void *comm, void *mhandle);
  /* *request stays NULL when the request cannot be posted yet (call again). */
  int (*isend)(void *send_comm, void *data, size_t size, int tag, void *mhandle, void *phandle,
               void **request);
  /* 1 <= n <= C4_NET_MAX_RECVS is not checked by the caller: the backend refuses what it cannot do.
   */
  int (*irecv)(void *recv_comm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
               void **phandles, void **request);
  int (*iflush)(void *recv_comm, int n, void **data, int *sizes, void **mhandles, void **request);
  int (*test)(void *request, int *done, int *sizes);
  int (*close)(void *comm); /* send and receive comms alike */
  int (*close_listen)(void *listen_comm);
  /* The connection's link info for NCCL's profiler the first time it is asked for, NULL after. */
  struct c4_link_info *(*link_once)(void *comm);
  /* Optional entry points: NULL when the backend does not offer them (wrap mode offers them when
   * the wrapped plugin does, known once setup has run). */
  int (*get_device_mr)(void *comm, void *mhandle, void **dptr_mhandle);
  int (*irecv_consumed)(void *recv_comm, int n, void *request);
  int (*make_vdevice)(int *d, ncclNetVDeviceProps_t *props);
  int (*set_net_attr)(void *ctx, ncclNetAttr_v11_t *attr);
};

/* The tables, one per transport folder; api/net_plugin_api.c offers them the process in this
 * order: wrap mode when C4_WRAP names a usable plugin, verbs when there is a usable RDMA port, else
 * sockets. Wrap's is filled in by its setup (the optional entries). */
extern struct c4_net_backend c4_net_backend_wrap;       /* wrap/net_wrap_backend.c */
extern const struct c4_net_backend c4_net_backend_ib;   /* ib/ib_backend.c */
extern const struct c4_net_backend c4_net_backend_sock; /* sock/net_sock_backend.c */

#endif
