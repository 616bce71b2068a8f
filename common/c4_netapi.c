/* c4_netapi.c -- one calling convention over the v11/v10/v9/v8 NCCL net plugin tables. */
#include "c4_netapi.h"

#include <dlfcn.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "c4_err.h"
#include "c4_log.h"

#define V11(api) ((const ncclNet_v11_t *)(api)->table)
#define V10(api) ((const ncclNet_v10_t *)(api)->table)
#define V9(api) ((const ncclNet_v9_t *)(api)->table)
#define V8(api) ((const ncclNet_v8_t *)(api)->table)

/* NCCL's logger as a program that loads the plugin itself (c4train, c4perf) gives it: the
 * plugin's messages at C4_DEBUG's level, as they are ("c4: ..."), without NCCL's source places,
 * which a user's message does not carry (docs/cli.md). */
static void quiet_logger(int level, unsigned long flags, const char *file, int line,
                         const char *fmt, ...) {
  (void)file;
  (void)line;
  if (flags & C4_LOG_ON_STDERR) return; /* the plugin said it on stderr already */
  const char *dbg = getenv("C4_DEBUG"); /* stands in for NCCL_DEBUG: WARN unless told otherwise */
  int max = dbg && !strcasecmp(dbg, "NONE") ? 0 : dbg && !strcasecmp(dbg, "INFO") ? 3 : 2;
  if (level > max) return;
  va_list ap;
  va_start(ap, fmt);
  vfprintf(stderr, fmt, ap);
  fputc('\n', stderr);
  va_end(ap);
}

const void *c4_netapi_find_table(void *dl, int version, int *found) {
  static const int versions[] = {11, 10, 9, 8};
  for (unsigned i = 0; i < sizeof versions / sizeof *versions; i++) {
    if (version > 0 && versions[i] != version) continue;
    char sym[32];
    snprintf(sym, sizeof sym, "ncclNetPlugin_v%d", versions[i]);
    const void *table = dlsym(dl, sym);
    if (table) {
      *found = versions[i];
      return table;
    }
  }
  return NULL;
}

void c4_netapi_props_from_v8(const ncclNetProperties_v8_t *q, ncclNetProperties_v11_t *p) {
  p->name = q->name;
  p->pciPath = q->pciPath;
  p->guid = q->guid;
  p->ptrSupport = q->ptrSupport;
  p->regIsGlobal = q->regIsGlobal;
  p->speed = q->speed;
  p->port = q->port;
  p->latency = q->latency;
  p->maxComms = q->maxComms;
  p->maxRecvs = q->maxRecvs;
  p->netDeviceType = q->netDeviceType;
  p->netDeviceVersion = q->netDeviceVersion;
}

int c4_netapi_open(struct c4_netapi *api, const char *path, int version) {
  memset(api, 0, sizeof *api);
  const char *lib = path ? path : "libnccl-net-c4.so";
  api->dl = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
  if (!api->dl) {
    const char *why = dlerror();
    snprintf(api->err, sizeof api->err, "cannot load net plugin %s: %s", lib,
             why ? why : "unknown dlopen error");
    C4_WARN("%s", api->err);
    return C4_ENOTFOUND;
  }
  api->table = c4_netapi_find_table(api->dl, version, &api->version);
  if (!api->table) {
    if (version > 0)
      snprintf(api->err, sizeof api->err, "%s exports no ncclNetPlugin_v%d table", lib, version);
    else
      snprintf(api->err, sizeof api->err, "%s exports none of ncclNetPlugin_v11, v10, v9, v8", lib);
    C4_WARN("%s", api->err);
    dlclose(api->dl);
    api->dl = NULL;
    return C4_ENOTFOUND;
  }
  ncclResult_t rc;
  ncclDebugLogger_t logger = (ncclDebugLogger_t)quiet_logger;
  ncclNetCommConfig_t cfg = {.trafficClass = -1}; /* what NCCL passes when none is set */
  switch (api->version) {
  case 11: rc = V11(api)->init(&api->ctx, 0, &cfg, logger, NULL); break;
  case 10: rc = V10(api)->init(logger, NULL); break;
  case 9: rc = V9(api)->init(logger); break;
  default: rc = V8(api)->init(logger); break;
  }
  api->name = V8(api)->name; /* name is the first field in every version */
  if (rc != ncclSuccess) {
    snprintf(api->err, sizeof api->err, "%s: ncclNet v%d init failed (ncclResult %d)", lib,
             api->version, rc);
    C4_WARN("%s", api->err);
    dlclose(api->dl);
    api->dl = NULL;
    return C4_EREMOTE;
  }
  return 0;
}

int c4_netapi_open_version(struct c4_netapi *api, const char *path, int version) {
  if (version < 8 || version > 11) {
    memset(api, 0, sizeof *api);
    snprintf(api->err, sizeof api->err, "ncclNet version %d is not one of 8, 9, 10, 11", version);
    return C4_EINVAL;
  }
  return c4_netapi_open(api, path, version);
}

void c4_netapi_close(struct c4_netapi *api) {
  if (!api->dl) return;
  if (api->version == 11 && V11(api)->finalize) V11(api)->finalize(api->ctx);
  /* The plugin may still have threads or atexit handlers registered: keep it mapped. */
  api->dl = NULL;
}

ncclResult_t c4_netapi_devices(struct c4_netapi *api, int *ndev) {
  return V8(api)->devices(ndev); /* same slot and signature in every version */
}

ncclResult_t c4_netapi_properties(struct c4_netapi *api, int dev, ncclNetProperties_v11_t *p) {
  memset(p, 0, sizeof *p);
  ncclResult_t rc;
  if (api->version == 11) return V11(api)->getProperties(dev, p);
  if (api->version >= 9) {
    ncclNetProperties_v9_t q;
    rc = api->version == 10 ? V10(api)->getProperties(dev, &q) : V9(api)->getProperties(dev, &q);
    memcpy(p, &q, sizeof q);
    return rc;
  }
  ncclNetProperties_v8_t q;
  rc = V8(api)->getProperties(dev, &q);
  c4_netapi_props_from_v8(&q, p);
  return rc;
}

ncclResult_t c4_netapi_listen(struct c4_netapi *api, int dev, void *handle, void **listen_comm) {
  if (api->version == 11) return V11(api)->listen(api->ctx, dev, handle, listen_comm);
  return V8(api)->listen(dev, handle, listen_comm); /* v8..v10 share this signature */
}

ncclResult_t c4_netapi_connect(struct c4_netapi *api, int dev, void *handle, void **send_comm) {
  ncclNetDeviceHandle_t *dev_comm = NULL;
  switch (api->version) {
  case 11: return V11(api)->connect(api->ctx, dev, handle, send_comm, &dev_comm);
  case 10: {
    ncclNetCommConfig_t cfg = {.trafficClass = -1};
    return V10(api)->connect(dev, &cfg, handle, send_comm, &dev_comm);
  }
  case 9: return V9(api)->connect(dev, handle, send_comm, &dev_comm);
  default: return V8(api)->connect(dev, handle, send_comm, &dev_comm);
  }
}

ncclResult_t c4_netapi_accept(struct c4_netapi *api, void *listen_comm, void **recv_comm) {
  ncclNetDeviceHandle_t *dev_comm = NULL;
  return V8(api)->accept(listen_comm, recv_comm, &dev_comm);
}

ncclResult_t c4_netapi_reg_mr(struct c4_netapi *api, void *comm, void *data, size_t size,
                              void **mhandle) {
  return V8(api)->regMr(comm, data, size, NCCL_PTR_HOST, mhandle);
}

ncclResult_t c4_netapi_dereg_mr(struct c4_netapi *api, void *comm, void *mhandle) {
  return V8(api)->deregMr(comm, mhandle);
}

ncclResult_t c4_netapi_isend(struct c4_netapi *api, void *send_comm, void *data, size_t size,
                             int tag, void *mhandle, void **request) {
  switch (api->version) {
  case 11: return V11(api)->isend(send_comm, data, size, tag, mhandle, NULL, request);
  case 10: return V10(api)->isend(send_comm, data, size, tag, mhandle, NULL, request);
  case 9: return V9(api)->isend(send_comm, data, size, tag, mhandle, request);
  default:
    if (size > INT_MAX) return ncclInvalidArgument;
    return V8(api)->isend(send_comm, data, (int)size, tag, mhandle, request);
  }
}

ncclResult_t c4_netapi_irecv(struct c4_netapi *api, void *recv_comm, void *data, size_t size,
                             int tag, void *mhandle, void **request) {
  void *bufs[1] = {data};
  int tags[1] = {tag};
  void *mh[1] = {mhandle};
  size_t sizes[1] = {size};
  switch (api->version) {
  case 11: return V11(api)->irecv(recv_comm, 1, bufs, sizes, tags, mh, NULL, request);
  case 10: return V10(api)->irecv(recv_comm, 1, bufs, sizes, tags, mh, NULL, request);
  case 9: return V9(api)->irecv(recv_comm, 1, bufs, sizes, tags, mh, request);
  default: {
    if (size > INT_MAX) return ncclInvalidArgument;
    int isizes[1] = {(int)size};
    return V8(api)->irecv(recv_comm, 1, bufs, isizes, tags, mh, request);
  }
  }
}

ncclResult_t c4_netapi_test(struct c4_netapi *api, void *request, int *done, int *size) {
  return V8(api)->test(request, done, size);
}

ncclResult_t c4_netapi_close_send(struct c4_netapi *api, void *comm) {
  return V8(api)->closeSend(comm);
}

ncclResult_t c4_netapi_close_recv(struct c4_netapi *api, void *comm) {
  return V8(api)->closeRecv(comm);
}

ncclResult_t c4_netapi_close_listen(struct c4_netapi *api, void *comm) {
  return V8(api)->closeListen(comm);
}
