/* preload_track.h -- what the LD_PRELOAD shim remembers: communicators, and collectives waiting
 * for their CUDA event; it turns both into comm and coll records. */
#ifndef C4_PRELOAD_TRACK_H
#define C4_PRELOAD_TRACK_H

#include <stdbool.h>
#include <stdint.h>

#include "preload_abi.h"

/* False when the shim passes calls straight to NCCL: C4_TIMING=0, or the profiler plugin has
 * taken over (c4_shim_stand_down). */
bool c4_shim_active(void);

/* The profiler plugin records this process's collectives: says so once, and from now on the shim
 * takes no new call. Calls it took already are recorded as usual. */
void c4_shim_stand_down(void);

/* A communicator was created: id (the same on every rank), rank and size. */
void c4_shim_comm_add(ncclComm_t comm, uint64_t id, int rank, int nranks);
void c4_shim_comm_remove(ncclComm_t comm);
/* The id a communicator was registered with, or 0. */
uint64_t c4_shim_comm_id(ncclComm_t comm);

/* A collective or p2p call entered at t_arrive returned rc. Its completion is taken from a CUDA
 * event recorded on stream after the call (after the outermost ncclGroupEnd inside a group);
 * without CUDA its t_done stays unknown. */
void c4_shim_call(ncclComm_t comm, const char *func, int is_p2p, size_t count, ncclDataType_t dtype,
                  int root_or_peer, cudaStream_t stream, uint64_t t_arrive, ncclResult_t rc);

void c4_shim_group_start(void);
/* After the real ncclGroupEnd returned rc. */
void c4_shim_group_end(ncclResult_t rc);

/* Hash of bytes, for communicator ids. */
uint64_t c4_shim_hash(const void *p, size_t n, uint64_t seed);

#endif
