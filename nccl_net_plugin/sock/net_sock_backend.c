/* net_sock_backend.c -- the socket transport's backend table: the API layer's calls onto
 * net_transport.h, over the socket interfaces net_host.c found. */
#include "backend.h"
#include "c4_err.h"
#include "c4_log.h"
#include "net_comm.h"
#include "net_host.h"
#include "net_transport.h"

static const char memory_handle_marker = 0;

static int sock_setup(void) {
  int rc = c4_net_host_setup();
  if (rc != 0) return rc;
  c4_net_host_start(c4_watch_scan);
  return 1;
}

static int sock_devices(int *ndev) {
  *ndev = c4_net_host()->ndev;
  return 0;
}

static int sock_properties(int dev, ncclNetProperties_v11_t *props) {
  int rc = c4_net_host_check_dev(dev, c4_net_host()->ndev);
  if (rc == 0) c4_net_host_props(dev, props);
  return rc;
}

static int sock_listen(void *ctx, int dev, void *handle, void **listen_comm) {
  const struct c4_net_host *h = c4_net_host();
  int rc = c4_net_host_check_dev(dev, h->ndev);
  if (rc != 0) return rc;
  return c4_transport_listen(&h->cfg, dev, c4_net_host_comm(ctx), &h->dev[dev].addr, handle,
                             (struct c4_listen_comm **)listen_comm);
}

static int sock_connect(void *ctx, int dev, ncclNetCommConfig_t *config, void *handle,
                        void **send_comm, ncclNetDeviceHandle_t **dev_comm) {
  (void)config, (void)dev_comm; /* host-only transport: NCCL's devComm request is left untouched */
  const struct c4_net_host *h = c4_net_host();
  int rc = c4_net_host_check_dev(dev, h->ndev);
  if (rc != 0) return rc;
  return c4_transport_connect(&h->cfg, dev, c4_net_host_comm(ctx), handle,
                              (struct c4_comm **)send_comm);
}

static int sock_accept(void *listen_comm, void **recv_comm, ncclNetDeviceHandle_t **dev_comm) {
  (void)dev_comm;
  return c4_transport_accept(listen_comm, (struct c4_comm **)recv_comm);
}

/* Sockets move host memory from wherever it is: registration only checks the memory type. */
static int sock_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle) {
  (void)comm, (void)data, (void)size;
  if (type != NCCL_PTR_HOST) {
    C4_WARN("regMr of memory type %d: the c4 socket transport moves host memory only", type);
    return C4_EINTERNAL;
  }
  *mhandle = (void *)&memory_handle_marker;
  return 0;
}

static int sock_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset,
                              int fd, void **mhandle) {
  (void)offset, (void)fd;
  return sock_reg_mr(comm, data, size, type, mhandle);
}

static int sock_dereg_mr(void *comm, void *mhandle) {
  (void)comm, (void)mhandle;
  return 0;
}

static int sock_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                      void *phandle, void **request) {
  (void)mhandle, (void)phandle;
  int rc = c4_net_host_check_send(size);
  if (rc != 0) return rc;
  return c4_transport_isend(send_comm, data, size, tag, (struct c4_request **)request);
}

static int sock_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                      void **mhandles, void **phandles, void **request) {
  (void)mhandles, (void)phandles;
  int rc = c4_net_host_check_recv(n);
  if (rc != 0) return rc;
  return c4_transport_irecv(recv_comm, data[0], sizes[0], tags[0], (struct c4_request **)request);
}

static int sock_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles,
                       void **request) {
  (void)recv_comm, (void)n, (void)data, (void)sizes, (void)mhandles;
  *request = NULL; /* host memory: nothing to flush */
  return 0;
}

static int sock_test(void *request, int *done, int *sizes) {
  size_t size = 0;
  int rc = c4_transport_test(request, done, &size);
  if (rc == 0 && *done && sizes) sizes[0] = (int)size;
  return rc;
}

static int sock_close(void *comm) { return c4_transport_close(comm); }
static int sock_close_listen(void *listen_comm) { return c4_transport_close_listen(listen_comm); }
static struct c4_link_info *sock_link_once(void *comm) { return c4_transport_link_once(comm); }

const struct c4_net_backend c4_net_backend_sock = {
    .name = "socket",
    .setup = sock_setup,
    .init = c4_net_host_init,
    .finalize = c4_net_host_finalize,
    .devices = sock_devices,
    .properties = sock_properties,
    .listen = sock_listen,
    .connect = sock_connect,
    .accept = sock_accept,
    .reg_mr = sock_reg_mr,
    .reg_mr_dmabuf = sock_reg_mr_dmabuf,
    .dereg_mr = sock_dereg_mr,
    .isend = sock_isend,
    .irecv = sock_irecv,
    .iflush = sock_iflush,
    .test = sock_test,
    .close = sock_close,
    .close_listen = sock_close_listen,
    .link_once = sock_link_once,
};
