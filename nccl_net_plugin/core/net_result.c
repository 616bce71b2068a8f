/* net_result.c -- C4_E* codes to NCCL's ncclResult_t and back. */
#include "net_result.h"

#include "c4_err.h"

ncclResult_t c4_net_to_nccl(int rc) {
  switch (rc) {
  case C4_OK: return ncclSuccess;
  case C4_EINVAL: return ncclInvalidArgument;
  case C4_ETRUNC:
  case C4_EUSAGE: return ncclInvalidUsage;
  case C4_EPROTO:
  case C4_EREMOTE: return ncclRemoteError;
  case C4_ENOMEM:
  case C4_ESYS: return ncclSystemError;
  case C4_ECUDA: return ncclUnhandledCudaError;
  case C4_EINPROGRESS: return ncclInProgress;
  default: return ncclInternalError;
  }
}

int c4_net_from_nccl(ncclResult_t r) {
  switch (r) {
  case ncclSuccess: return C4_OK;
  case ncclUnhandledCudaError: return C4_ECUDA;
  case ncclSystemError: return C4_ESYS;
  case ncclInvalidArgument: return C4_EINVAL;
  case ncclInvalidUsage: return C4_EUSAGE;
  case ncclRemoteError: return C4_EREMOTE;
  case ncclInProgress: return C4_EINPROGRESS;
  default: return C4_EINTERNAL;
  }
}
