/* ib_transport.h -- the verbs (InfiniBand / RoCE) transport's core, as net_plugin_api.c calls it:
 * device discovery and properties, listen / connect / accept through the same handle and
 * handshake as the socket transport, memory registration, isend / irecv / iflush / test / close.
 * Every request is timed into the same records as the socket transport's (docs/rdma.md). */
#ifndef C4_IB_TRANSPORT_H
#define C4_IB_TRANSPORT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "net_config.h"
#include "net_stats.h"

struct c4_ib_listen;
struct c4_ib_comm;
struct c4_ib_request;

/* A verbs device (one active port) as NCCL's getProperties wants it. Strings live as long as the
 * plugin. */
struct c4_ib_props {
  const char *name; /* the RDMA device, e.g. "mlx5_0" */
  const char *pci_path;
  uint64_t guid;
  int ptr_support; /* NCCL_PTR_* */
  int speed_mbps;
  int port;
};

/* Loads libibverbs and finds the usable ports (C4_IB, C4_IB_HCA / NCCL_IB_HCA, ...): call once.
 * Returns how many there are; 0, with the reason logged once, when verbs are unavailable, there
 * is no device or none passes the selection. Never fails otherwise. */
int c4_ib_setup(void);

/* Fills p for device dev (0 .. c4_ib_setup() - 1). */
void c4_ib_get_props(int dev, struct c4_ib_props *p);

/* Opens a TCP listener on addr (the address the socket transport uses; its port is chosen here)
 * for verbs device dev and writes the 128-byte handle (socket-transport layout, marked as a verbs
 * handle). *out is the caller's until c4_ib_close_listen. */
int c4_ib_listen(const struct c4_transport_config *cfg, int dev, uint64_t nccl_comm,
                 const struct sockaddr_storage *addr, void *handle, struct c4_ib_listen **out);

/* Polled like c4_transport_connect: *out stays NULL until the QPs are connected. Keeps its
 * progress in the handle's scratch bytes (pass the same buffer each time). Returns 0 or a
 * negative C4_E* code (the connection failed for good). */
int c4_ib_connect(const struct c4_transport_config *cfg, int dev, uint64_t nccl_comm, void *handle,
                  struct c4_ib_comm **out);

/* Polled: sets *out to a receive comm once a connector has finished the handshake. Bad peers
 * are closed, counted (c4_transport_stats.rejected_peers) and logged. */
int c4_ib_accept(struct c4_ib_listen *l, struct c4_ib_comm **out);

int c4_ib_close_listen(struct c4_ib_listen *l);

/* Registers [data, data + size) of memory type (NCCL_PTR_*) for comm c; fd >= 0: a dma-buf at
 * offset. *mhandle is released with c4_ib_dereg_mr. */
int c4_ib_reg_mr(struct c4_ib_comm *c, void *data, size_t size, int type, int fd, uint64_t offset,
                 void **mhandle);
int c4_ib_dereg_mr(struct c4_ib_comm *c, void *mhandle);

/* Posts a send; *req stays NULL until the receiver has posted the matching receive (its
 * clear-to-send has arrived). */
int c4_ib_isend(struct c4_ib_comm *c, void *data, size_t size, int tag, void *mhandle,
                struct c4_ib_request **req);

/* Posts one receive and tells the sender where it is; *req stays NULL when all slots are busy. */
int c4_ib_irecv(struct c4_ib_comm *c, void *data, size_t size, int tag, void *mhandle,
                struct c4_ib_request **req);

/* GPU memory received by RDMA: makes the data visible to the GPU (an RDMA read through a
 * loopback QP). *req is NULL when nothing needs flushing (host memory, or no GPUDirect). */
int c4_ib_iflush(struct c4_ib_comm *c, void *data, void *mhandle, struct c4_ib_request **req);

/* As c4_transport_test. */
int c4_ib_test(struct c4_ib_request *req, int *done, size_t *size);

/* Destroys the comm's QPs and CQ and frees it; requests in flight are abandoned. */
int c4_ib_close(struct c4_ib_comm *c);

/* Reports verbs requests outstanding longer than C4_STUCK_MS as pending records, as the socket
 * transport's watch does (register it with c4_telemetry_add_periodic). */
void c4_ib_watch_scan(void);

/* As c4_transport_link_once. */
struct c4_link_info *c4_ib_link_once(struct c4_ib_comm *c);

#endif
