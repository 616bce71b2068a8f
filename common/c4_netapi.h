/* c4_netapi.h -- loads an NCCL net plugin with dlopen and drives whichever table version it
 * exports (v11, v10, v9, v8) through one set of calls, as NCCL's proxy would. */
#ifndef C4_NETAPI_H
#define C4_NETAPI_H

#include <stddef.h>
#include <stdint.h>

#include "nccl_net_abi.h"

struct c4_netapi {
  void *dl;
  int version; /* 11, 10, 9 or 8 */
  const void *table;
  const char *name;
  void *ctx;     /* v11 init context */
  char err[512]; /* why the last open failed (dlerror's text, missing table, init result) */
};

/* dlopens path (NULL: "libnccl-net-c4.so" on the library path, as NCCL_NET_PLUGIN=c4 finds it)
 * and takes the newest table it exports (v11, else v10, v9, v8), or exactly `version` when
 * version > 0; then calls the plugin's init with a stderr logger (C4_DEBUG=NONE|WARN|INFO). The
 * api struct owns the handle until c4_netapi_close. Returns 0, C4_ENOTFOUND (cannot load: api->err
 * holds dlerror's text; or no such table) or C4_EREMOTE (the plugin's init failed); the reason
 * is also logged. */
int c4_netapi_open(struct c4_netapi *api, const char *path, int version);

/* c4_netapi_open forcing one table version (8..11); C4_EINVAL for any other number. */
int c4_netapi_open_version(struct c4_netapi *api, const char *path, int version);

/* The newest ncclNetPlugin_v11..v8 table the dlopened library dl exports, or exactly
 * ncclNetPlugin_v<version> when version > 0, with its version number in *found. NULL when there is
 * none (*found unchanged; dlerror() tells the last lookup's failure). */
const void *c4_netapi_find_table(void *dl, int version, int *found);

/* Copies the fields a v8 properties struct shares with v11 into p; p's other fields are left as
 * they are (zero them, or set NCCL's defaults, first). */
void c4_netapi_props_from_v8(const ncclNetProperties_v8_t *q, ncclNetProperties_v11_t *p);

/* Calls finalize (v11) and forgets the handle; the library stays mapped because the plugin may
 * still own threads. Safe on an api that failed to open or was already closed. */
void c4_netapi_close(struct c4_netapi *api);

/* Each returns the plugin's ncclResult_t. Sizes are size_t; v8's int sizes are range-checked. */
ncclResult_t c4_netapi_devices(struct c4_netapi *api, int *ndev);
/* Fills the common properties (v8 fields, plus maxP2pBytes = 0 when the version has none). */
ncclResult_t c4_netapi_properties(struct c4_netapi *api, int dev, ncclNetProperties_v11_t *p);
ncclResult_t c4_netapi_listen(struct c4_netapi *api, int dev, void *handle, void **listen_comm);
ncclResult_t c4_netapi_connect(struct c4_netapi *api, int dev, void *handle, void **send_comm);
ncclResult_t c4_netapi_accept(struct c4_netapi *api, void *listen_comm, void **recv_comm);
ncclResult_t c4_netapi_reg_mr(struct c4_netapi *api, void *comm, void *data, size_t size,
                              void **mhandle);
ncclResult_t c4_netapi_dereg_mr(struct c4_netapi *api, void *comm, void *mhandle);
ncclResult_t c4_netapi_isend(struct c4_netapi *api, void *send_comm, void *data, size_t size,
                             int tag, void *mhandle, void **request);
ncclResult_t c4_netapi_irecv(struct c4_netapi *api, void *recv_comm, void *data, size_t size,
                             int tag, void *mhandle, void **request);
ncclResult_t c4_netapi_test(struct c4_netapi *api, void *request, int *done, int *size);
ncclResult_t c4_netapi_close_send(struct c4_netapi *api, void *comm);
ncclResult_t c4_netapi_close_recv(struct c4_netapi *api, void *comm);
ncclResult_t c4_netapi_close_listen(struct c4_netapi *api, void *comm);

#endif
