/* net_xfer_record.h -- the timing record of one request, filled the same way by the socket
 * transport (struct c4_comm, c4_request) and the verbs transport (c4_ib_comm, c4_ib_request).
 * A macro because the two transports' structs differ in type but name these fields alike:
 * comm: is_send, conn_id, nccl_comm, self, peer; request: tag and the atomics seq, t_posted,
 * t_first_byte. */
#ifndef C4_NET_XFER_RECORD_H
#define C4_NET_XFER_RECORD_H

#include <stdatomic.h>

#include "c4_record.h"

#define C4_XFER_RECORD_FILL(rec, c, r, status_, bytes_, t_done_)                                   \
  (*(rec) = (struct c4_xfer_record){                                                               \
       .version = C4_RECORD_VERSION,                                                               \
       .dir = (c)->is_send ? C4_DIR_SEND : C4_DIR_RECV,                                            \
       .status = (uint8_t)(status_),                                                               \
       .tag = (r)->tag,                                                                            \
       .conn_id = (c)->conn_id,                                                                    \
       .nccl_comm = (c)->nccl_comm,                                                                \
       .seq = atomic_load_explicit(&(r)->seq, memory_order_relaxed),                               \
       .bytes = (bytes_),                                                                          \
       .t_posted = atomic_load_explicit(&(r)->t_posted, memory_order_relaxed),                     \
       .t_first_byte = atomic_load_explicit(&(r)->t_first_byte, memory_order_relaxed),             \
       .t_done = (t_done_),                                                                        \
       .self = (c)->self,                                                                          \
       .peer = (c)->peer,                                                                          \
   })

#endif
