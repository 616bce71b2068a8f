/* preload_abi.h -- the slice of NCCL's public API (nccl.h, 2.19 to 2.28) that the LD_PRELOAD shim
 * wraps, declared by c4 with opaque types: same symbols and argument layouts, no CUDA headers. */
#ifndef C4_PRELOAD_ABI_H
#define C4_PRELOAD_ABI_H

#include <stddef.h>

#include "nccl_net_abi.h" /* ncclResult_t */

typedef struct ncclComm *ncclComm_t;
typedef void *cudaStream_t;
typedef int ncclDataType_t; /* an enum in nccl.h */
typedef int ncclRedOp_t;
typedef struct ncclConfig ncclConfig_t; /* passed through by pointer only */

#define NCCL_UNIQUE_ID_BYTES 128
typedef struct {
  char internal[NCCL_UNIQUE_ID_BYTES];
} ncclUniqueId;

/* ncclDataType_t values (nccl.h) and their sizes. */
static inline size_t c4_nccl_dtype_size(ncclDataType_t t) {
  static const unsigned char size[] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};
  return t >= 0 && t < (int)sizeof size ? size[t] : 0;
}

static inline const char *c4_nccl_dtype_name(ncclDataType_t t) {
  static const char *const name[] = {"ncclInt8",     "ncclUint8",      "ncclInt32",
                                     "ncclUint32",   "ncclInt64",      "ncclUint64",
                                     "ncclFloat16",  "ncclFloat32",    "ncclFloat64",
                                     "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
  return t >= 0 && t < (int)(sizeof name / sizeof *name) ? name[t] : "unknown";
}

#endif
