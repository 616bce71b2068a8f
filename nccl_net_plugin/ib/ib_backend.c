/* ib_backend.c -- the verbs transport's backend table: the API layer's calls onto
 * ib_transport.h. Serves the process when c4_ib_setup finds a usable RDMA port; the handshake
 * runs over the first socket interface net_host.c found. */
#include "backend.h"
#include "c4_err.h"
#include "c4_telemetry.h"
#include "ib_transport.h"
#include "net_host.h"

static int nib; /* verbs ports c4_ib_setup found */

static int ib_setup(void) {
  int rc = c4_net_host_setup();
  if (rc != 0) return rc;
  nib = c4_ib_setup();
  if (!nib) return 0;
  c4_telemetry_add_periodic(c4_ib_watch_scan);
  c4_net_host_start(NULL);
  return 1;
}

static int ib_devices(int *ndev) {
  *ndev = nib;
  return 0;
}

/* The socket interface's properties under the verbs port's name, address and speed. */
static int ib_properties(int dev, ncclNetProperties_v11_t *p) {
  int rc = c4_net_host_check_dev(dev, nib);
  if (rc != 0) return rc;
  c4_net_host_props(dev, p);
  struct c4_ib_props ib;
  c4_ib_get_props(dev, &ib);
  p->name = (char *)ib.name;
  p->pciPath = (char *)ib.pci_path;
  p->guid = ib.guid;
  p->ptrSupport = ib.ptr_support;
  p->speed = ib.speed_mbps;
  p->port = ib.port;
  return 0;
}

static int ib_listen(void *ctx, int dev, void *handle, void **listen_comm) {
  const struct c4_net_host *h = c4_net_host();
  int rc = c4_net_host_check_dev(dev, nib);
  if (rc != 0) return rc;
  return c4_ib_listen(&h->cfg, dev, c4_net_host_comm(ctx), &h->dev[0].addr, handle,
                      (struct c4_ib_listen **)listen_comm);
}

static int ib_connect(void *ctx, int dev, ncclNetCommConfig_t *config, void *handle,
                      void **send_comm, ncclNetDeviceHandle_t **dev_comm) {
  (void)config, (void)dev_comm; /* host-side transport: NCCL's devComm request is left untouched */
  int rc = c4_net_host_check_dev(dev, nib);
  if (rc != 0) return rc;
  return c4_ib_connect(&c4_net_host()->cfg, dev, c4_net_host_comm(ctx), handle,
                       (struct c4_ib_comm **)send_comm);
}

static int ib_accept(void *listen_comm, void **recv_comm, ncclNetDeviceHandle_t **dev_comm) {
  (void)dev_comm;
  return c4_ib_accept(listen_comm, (struct c4_ib_comm **)recv_comm);
}

static int ib_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle) {
  return c4_ib_reg_mr(comm, data, size, type, -1, 0, mhandle);
}

static int ib_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
                            void **mhandle) {
  return c4_ib_reg_mr(comm, data, size, type, fd, offset, mhandle);
}

static int ib_dereg_mr(void *comm, void *mhandle) { return c4_ib_dereg_mr(comm, mhandle); }

static int ib_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle, void *phandle,
                    void **request) {
  (void)phandle;
  int rc = c4_net_host_check_send(size);
  if (rc != 0) return rc;
  return c4_ib_isend(send_comm, data, size, tag, mhandle, (struct c4_ib_request **)request);
}

static int ib_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags, void **mhandles,
                    void **phandles, void **request) {
  (void)phandles;
  int rc = c4_net_host_check_recv(n);
  if (rc != 0) return rc;
  return c4_ib_irecv(recv_comm, data[0], sizes[0], tags[0], mhandles[0],
                     (struct c4_ib_request **)request);
}

static int ib_iflush(void *recv_comm, int n, void **data, int *sizes, void **mhandles,
                     void **request) {
  (void)sizes;
  if (n == 1)
    return c4_ib_iflush(recv_comm, data[0], mhandles[0], (struct c4_ib_request **)request);
  *request = NULL;
  return 0;
}

static int ib_test(void *request, int *done, int *sizes) {
  size_t size = 0;
  int rc = c4_ib_test(request, done, &size);
  if (rc == 0 && *done && sizes) sizes[0] = (int)size;
  return rc;
}

static int ib_close(void *comm) { return c4_ib_close(comm); }
static int ib_close_listen(void *listen_comm) { return c4_ib_close_listen(listen_comm); }
static struct c4_link_info *ib_link_once(void *comm) { return c4_ib_link_once(comm); }

const struct c4_net_backend c4_net_backend_ib = {
    .name = "verbs",
    .setup = ib_setup,
    .init = c4_net_host_init,
    .finalize = c4_net_host_finalize,
    .devices = ib_devices,
    .properties = ib_properties,
    .listen = ib_listen,
    .connect = ib_connect,
    .accept = ib_accept,
    .reg_mr = ib_reg_mr,
    .reg_mr_dmabuf = ib_reg_mr_dmabuf,
    .dereg_mr = ib_dereg_mr,
    .isend = ib_isend,
    .irecv = ib_irecv,
    .iflush = ib_iflush,
    .test = ib_test,
    .close = ib_close,
    .close_listen = ib_close_listen,
    .link_once = ib_link_once,
};
