/* c4_hostcoll.h -- host-memory collectives over an NCCL net plugin, driven as NCCL's proxy
 * drives it: a ring of send/recv comms and a pipelined ring allreduce. c4perf and c4train use it.
 */
#ifndef C4_HOSTCOLL_H
#define C4_HOSTCOLL_H

#include <stddef.h>

#include "c4_bootstrap.h"
#include "c4_netapi.h"

struct c4_hostcoll {
  struct c4_netapi *api;
  int rank, world;
  void *send_comm; /* to rank + 1 */
  void *recv_comm; /* from rank - 1 */
  void *send_mh, *recv_mh;
  float *tmp;
  size_t tmp_count;
  int inflight;       /* requests per direction, at most 8 (NCCL_STEPS) */
  size_t slice_bytes; /* message size the ring cuts a segment into */
  int timeout_ms;     /* no progress for this long fails the collective */
};

/* Connects the ring on plugin device dev: each rank listens, the handles are allgathered through
 * bs, then connect to the next rank and accept from the previous one are polled together.
 * Returns 0 or a negative C4_E* code (logged). */
int c4_hostcoll_ring_init(struct c4_hostcoll *h, struct c4_netapi *api, int dev,
                          struct c4_bootstrap *bs);

/* In-place sum of count floats across all ranks (ring reduce-scatter, then allgather). Every rank
 * ends with the same bits. Returns 0 or a negative C4_E* code. */
int c4_hostcoll_allreduce_f32(struct c4_hostcoll *h, float *buf, size_t count);

/* Sends `bytes` from sbuf to the next rank while receiving `bytes` from the previous one into
 * rbuf, pipelined in slices. The building block of the ring. */
int c4_hostcoll_shift(struct c4_hostcoll *h, const void *sbuf, void *rbuf, size_t bytes);

void c4_hostcoll_ring_close(struct c4_hostcoll *h);

#endif
