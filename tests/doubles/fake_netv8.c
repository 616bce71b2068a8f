/* fake_netv8.c -- TEST DOUBLE of another vendor's NCCL net plugin that exports only
 * ncclNetPlugin_v8 (int sizes, no virtual devices), for wrap mode's tests; the inside is
 * fake_net_core.h. fake_netv8_consumed counts the receives handed back through irecvConsumed. */
#include "fake_net_core.h"

int fake_netv8_consumed(void) { return fake_nconsumed; }

static ncclResult_t v8_init(ncclDebugLogger_t logger) {
  (void)logger;
  return ncclSuccess;
}

static ncclResult_t v8_properties(int dev, ncclNetProperties_v8_t *p) {
  if (dev != 0) return ncclInvalidArgument;
  memset(p, 0, sizeof *p);
  p->name = "fake-v8";
  p->guid = 0x5678;
  p->ptrSupport = NCCL_PTR_HOST;
  p->speed = 100000;
  p->maxComms = FAKE_MAX_CONNS;
  p->maxRecvs = 8;
  return ncclSuccess;
}

static ncclResult_t v8_connect(int dev, void *handle, void **send_comm,
                               ncclNetDeviceHandle_t **dev_comm) {
  (void)dev, (void)dev_comm;
  return fake_connect(handle, send_comm);
}

static ncclResult_t v8_isend(void *send_comm, void *data, int size, int tag, void *mhandle,
                             void **request) {
  (void)mhandle;
  if (size < 0) return ncclInvalidArgument;
  return fake_isend(send_comm, data, (size_t)size, tag, request);
}

static ncclResult_t v8_irecv(void *recv_comm, int n, void **data, int *sizes, int *tags,
                             void **mhandles, void **request) {
  (void)mhandles;
  size_t s[8];
  for (int i = 0; i < n && i < 8; i++) {
    if (sizes[i] < 0) return ncclInvalidArgument;
    s[i] = (size_t)sizes[i];
  }
  return fake_irecv(recv_comm, n, data, s, tags, request);
}

const ncclNet_v8_t ncclNetPlugin_v8 = {
    .name = "fake-v8",
    .init = v8_init,
    .devices = fake_devices,
    .getProperties = v8_properties,
    .listen = fake_listen,
    .connect = v8_connect,
    .accept = fake_accept,
    .regMr = fake_reg_mr,
    .regMrDmaBuf = fake_reg_mr_dmabuf,
    .deregMr = fake_dereg_mr,
    .isend = v8_isend,
    .irecv = v8_irecv,
    .iflush = fake_iflush,
    .test = fake_test,
    .closeSend = fake_close,
    .closeRecv = fake_close,
    .closeListen = fake_close,
    .getDeviceMr = NULL,
    .irecvConsumed = fake_irecv_consumed,
};
