/* c4_hostcoll.h -- host-memory collectives over an NCCL net plugin, driven as NCCL's proxy
 * drives it: a ring of send/recv comms and a pipelined ring allreduce. c4perf and c4train use it.
 */
#ifndef C4_HOSTCOLL_H
#define C4_HOSTCOLL_H

#include <stddef.h>

#include "c4_bootstrap.h"
#include "c4_netapi.h"
#include "c4_record.h"

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
  /* the plugin's c4Ext* calls (ext_plugin_api.c), NULL when it has none: collectives reported
   * to c4mon as the profiler plugin would */
  void (*ext_enter)(void);
  void (*ext_done)(const struct c4_coll_record *rec);
  uint64_t comm_id, seq; /* the same on every rank: a hash of the ring's handles */
};

/* Connects the ring on plugin device dev of an opened api (its v11 context is api->ctx): each
 * rank listens, the 128-byte handles are allgathered through bs, then connect to the next rank
 * and accept from the previous one are polled together, so no rank waits on another. Collective
 * over bs. h borrows api and bs (both must outlive it) and owns the comms until
 * c4_hostcoll_ring_close. world == 1 needs no plugin calls. Tunables: C4_COLL_INFLIGHT (requests
 * in flight per direction, default 4, at most 8), C4_COLL_SLICE_BYTES (default 1 MiB),
 * C4_COLL_TIMEOUT_MS (no progress for this long is a failure, default 60000). Returns 0, or
 * C4_ENOMEM, C4_EREMOTE (a plugin call failed, or the ring did not connect in time; logged), or
 * what c4_bootstrap_allgather returned; h is then closed. */
int c4_hostcoll_ring_init(struct c4_hostcoll *h, struct c4_netapi *api, int dev,
                          struct c4_bootstrap *bs);

/* The same for a ring of some of bs's ranks: members[0 .. n) (bs ranks in ring order, this rank
 * among them; NULL: all of bs, n its world). Every rank of bs calls it at once, each with its own
 * group, all groups of the same size n (with n 1 no rank calls the plugin, so none may join a
 * larger group then). C4_EINVAL when this rank is not a member. */
int c4_hostcoll_ring_init_group(struct c4_hostcoll *h, struct c4_netapi *api, int dev,
                                struct c4_bootstrap *bs, const int *members, int n);

/* In-place sum of count floats across all ranks: ring reduce-scatter, then ring allgather, each
 * step pipelined in slices with several requests in flight. Reported to the plugin (c4ExtColl*)
 * as one AllReduce collective record, when the plugin offers that. count need not divide by the
 * world size; count 0 and world 1 return at once. Every rank ends with the same bits. Collective:
 * all ranks call it with the same count. Returns 0, C4_ENOMEM or C4_EREMOTE (a plugin call failed
 * or no progress for C4_COLL_TIMEOUT_MS; buf is then partly reduced). */
int c4_hostcoll_allreduce_f32(struct c4_hostcoll *h, float *buf, size_t count);

/* The floats [*off, *off + *len) of a count-float allreduce that form segment idx of world: the
 * ring sums each segment's elements in its own order of ranks, so a caller that packs several
 * buffers into one and wants the same bits puts each element into the same segment. */
void c4_hostcoll_segment(size_t count, int world, int idx, size_t *off, size_t *len);

/* Deregisters and closes the comms and frees the scratch buffer; h can be initialised again.
 * Safe on a ring whose init failed. */
void c4_hostcoll_ring_close(struct c4_hostcoll *h);

#endif
