/* net_wrap.h -- wrap mode (C4_WRAP=libnccl-net-X.so): c4 loads another NCCL net plugin, offers
 * its devices and forwards every call, timing each request (posted -> tested done) and reporting
 * it with the socket transport's xfer records (docs/wrap.md). net_wrap_backend.c puts these calls
 * in wrap's backend table; every one returns 0 or a negative C4_E* code (the wrapped plugin's
 * ncclResult_t comes back unchanged through c4_net_from_nccl / c4_net_to_nccl). */
#ifndef C4_NET_WRAP_H
#define C4_NET_WRAP_H

#include <stdatomic.h>
#include <stdint.h>

#include "c4_record.h"
#include "nccl_net_abi.h"
#include "net_wrap_inner.h"

/* Reads C4_WRAP (ignored when this c4 is itself wrapped) and loads the plugin it names. Returns 1
 * when wrap mode is on; 0 when it is off: no C4_WRAP, or the plugin could not be used (then a
 * warning names the file and the reason, and says c4 goes on with its own socket transport).
 * Called once, from the plugin's first init. */
int c4_wrap_setup(void);

/* Whether the wrapped plugin has optional entry point op (C4_WI_*): the exported tables offer it
 * only then, so NCCL sees the same features it would see unwrapped. */
int c4_wrap_has(int op);

/* The forwarded calls, in v11 shape (the backend table's).
 * ctx is the one c4_wrap_init returned to a v11 NCCL, NULL for older NCCLs (a process-wide one is
 * used). Comms and requests handed to NCCL are c4's wrappers. */
int c4_wrap_init(void **ctx, uint64_t comm_id, ncclNetCommConfig_t *config,
                 ncclDebugLogger_t logger, ncclProfilerCallback_t prof);
int c4_wrap_finalize(void *ctx);
int c4_wrap_devices(int *ndev);
/* The wrapped device's properties, with maxRecvs capped at C4_WRAP_MAX_RECVS. */
int c4_wrap_properties(int dev, ncclNetProperties_v11_t *p);
/* Forwards, then appends c4's identity trailer where the wrapped handle left room. */
int c4_wrap_listen(void *ctx, int dev, void *handle, void **listen_comm);
/* Polled like any connect; reads (and clears) the listener's trailer on the first call for a
 * handle, before the wrapped connect sees it. */
int c4_wrap_connect(void *ctx, int dev, ncclNetCommConfig_t *config, void *handle, void **send_comm,
                    ncclNetDeviceHandle_t **dev_comm);
int c4_wrap_accept(void *listen_comm, void **recv_comm, ncclNetDeviceHandle_t **dev_comm);
int c4_wrap_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle);
int c4_wrap_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
                          void **mhandle);
int c4_wrap_dereg_mr(void *comm, void *mhandle);
int c4_wrap_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle, void *phandle,
                  void **request);
int c4_wrap_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                  void **phandles, void **request);
int c4_wrap_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles,
                   void **request);
int c4_wrap_test(void *request, int *done, int *sizes);
int c4_wrap_close(void *comm); /* closeSend and closeRecv */
int c4_wrap_close_listen(void *listen_comm);
int c4_wrap_get_device_mr(void *comm, void *mhandle, void **dptr_mhandle);
int c4_wrap_irecv_consumed(void *recv_comm, int n, void *request);
int c4_wrap_make_vdevice(int *d, ncclNetVDeviceProps_t *props);
int c4_wrap_set_net_attr(void *ctx, ncclNetAttr_v11_t *attr);

/* The wrapped connection's link info for NCCL's profiler the first time it is asked for, NULL
 * afterwards (and for a comm that is not c4's wrapper). Caller thread only. */
struct c4_link_info *c4_wrap_link_once(void *comm);

/* Reports wrapped requests outstanding longer than C4_STUCK_MS (a telemetry periodic hook). */
void c4_wrap_watch_scan(void);

/* What wrap mode could not do as asked; it went on without it. */
struct c4_wrap_stats {
  atomic_ulong untimed_requests; /* forwarded without a timing slot (comm's slots all busy) */
  atomic_ulong untimed_comms;    /* comms beyond the slot pool: forwarded, never timed */
  atomic_ulong unknown_peers;    /* send comms whose listener's handle carried no c4 trailer */
  atomic_ulong no_room_handles;  /* listen handles with no room left for the trailer */
};
extern struct c4_wrap_stats c4_wrap_stats;

#endif
