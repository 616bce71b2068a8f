/* fake_netv10.c -- TEST DOUBLE of another vendor's NCCL net plugin that exports only
 * ncclNetPlugin_v10 (size_t sizes, profiler handles, a config at connect, virtual devices), for
 * wrap mode's tests; the inside is fake_net_core.h. fake_netv10_seen says what reached it. */
#include "fake_net_core.h"

enum { SEEN_PROFILER, SEEN_TRAFFIC_CLASS, SEEN_PHANDLES, SEEN_VDEVICES, SEEN_N };
static int seen[SEEN_N];

/* For tests: whether init got a profiler callback, the trafficClass of the last connect, how
 * many non-NULL profiler handles isend/irecv got, how many makeVDevice calls came. */
int fake_netv10_seen(int what) { return what >= 0 && what < SEEN_N ? seen[what] : -1; }

static ncclResult_t v10_init(ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  (void)logger;
  seen[SEEN_PROFILER] = prof != NULL;
  return ncclSuccess;
}

static ncclResult_t v10_properties(int dev, ncclNetProperties_v10_t *p) {
  if (dev != 0) return ncclInvalidArgument;
  memset(p, 0, sizeof *p);
  p->name = "fake-v10";
  p->guid = 0x1010;
  p->ptrSupport = NCCL_PTR_HOST;
  p->speed = 200000;
  p->maxComms = FAKE_MAX_CONNS;
  p->maxRecvs = 16; /* more than c4 forwards: c4 offers 8 */
  p->vProps.ndevs = 1;
  p->maxP2pBytes = 1ull << 33;
  p->maxCollBytes = 1ull << 33;
  return ncclSuccess;
}

static ncclResult_t v10_connect(int dev, ncclNetCommConfig_t *config, void *handle,
                                void **send_comm, ncclNetDeviceHandle_t **dev_comm) {
  (void)dev, (void)dev_comm;
  seen[SEEN_TRAFFIC_CLASS] = config ? config->trafficClass : -2;
  return fake_connect(handle, send_comm);
}

static ncclResult_t v10_isend(void *send_comm, void *data, size_t size, int tag, void *mhandle,
                              void *phandle, void **request) {
  (void)mhandle;
  seen[SEEN_PHANDLES] += phandle != NULL;
  return fake_isend(send_comm, data, size, tag, request);
}

static ncclResult_t v10_irecv(void *recv_comm, int n, void **data, size_t *sizes, int *tags,
                              void **mhandles, void **phandles, void **request) {
  (void)mhandles;
  seen[SEEN_PHANDLES] += phandles && phandles[0];
  return fake_irecv(recv_comm, n, data, sizes, tags, request);
}

static ncclResult_t v10_make_vdevice(int *d, ncclNetVDeviceProps_t *props) {
  if (props->ndevs < 1) return ncclInvalidUsage;
  seen[SEEN_VDEVICES]++;
  *d = 7;
  return ncclSuccess;
}

const ncclNet_v10_t ncclNetPlugin_v10 = {
    .name = "fake-v10",
    .init = v10_init,
    .devices = fake_devices,
    .getProperties = v10_properties,
    .listen = fake_listen,
    .connect = v10_connect,
    .accept = fake_accept,
    .regMr = fake_reg_mr,
    .regMrDmaBuf = fake_reg_mr_dmabuf,
    .deregMr = fake_dereg_mr,
    .isend = v10_isend,
    .irecv = v10_irecv,
    .iflush = fake_iflush,
    .test = fake_test,
    .closeSend = fake_close,
    .closeRecv = fake_close,
    .closeListen = fake_close,
    .getDeviceMr = NULL,
    .irecvConsumed = NULL,
    .makeVDevice = v10_make_vdevice,
};
