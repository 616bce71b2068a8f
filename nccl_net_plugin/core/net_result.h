/* net_result.h -- C4_E* codes to NCCL's ncclResult_t and back: the one translation at the plugin's
 * edges (the exported tables, and the wrapped plugin in wrap mode). */
#ifndef C4_NET_RESULT_H
#define C4_NET_RESULT_H

#include "nccl_net_abi.h"

/* The ncclResult_t NCCL gets for code rc (0 or a C4_E* code). */
ncclResult_t c4_net_to_nccl(int rc);

/* The C4_E* code for what another NCCL net plugin returned; c4_net_to_nccl gives r back for every
 * value NCCL defines (an undefined value becomes C4_EINTERNAL). */
int c4_net_from_nccl(ncclResult_t r);

#endif
