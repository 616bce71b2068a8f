/* dp.h -- the data-parallel group of c4train: a rendezvous (for small exchanges: step timings,
 * losses) and a gradient allreduce in buckets, over the c4 net plugin's API on CPUs and on GPUs
 * under --pp (the host ring of c4_hostcoll, driven as NCCL drives a net plugin, and reported to
 * c4mon as collectives; a GPU's buckets staged through host memory) or over NCCL on GPUs
 * (dp_nccl.c). */
#ifndef C4_DP_H
#define C4_DP_H

#include <stddef.h>
#include <stdint.h>

#include "c4_bootstrap.h"
#include "c4_hostcoll.h"
#include "c4_netapi.h"
#include "c4_ranks.h"

struct dp_nccl; /* dp_nccl.c */
struct c4k_ops; /* kernels/c4k.h */

struct dp {
  int rank, world;
  size_t bucket_floats;
  struct c4_bootstrap bs;
  struct c4_netapi api;
  struct c4_hostcoll ring;
  int ring_up;
  struct dp_nccl *nccl;            /* non-NULL: gradients live on the GPU and go through NCCL */
  void (*ext_step)(uint64_t step); /* the plugin's c4ExtStep, or NULL */
  int step_timeout_ms;             /* C4_COLL_TIMEOUT_MS: dp_gather_step's wait */
  const struct c4k_ops *mem;       /* non-NULL: what is summed lives in these kernels' memory */
  float *host_bucket;              /* and goes through this host bucket (dp_stage_through_host) */
};

/* Joins the group described by r. CPU: loads the net plugin at plugin_path (NULL: the one beside
 * the program, else libnccl-net-c4.so on the library path) and connects the ring on device 0.
 * GPU (use_nccl): loads libnccl.so.2 and builds a communicator on the current GPU (the kernels
 * chose it: c4k_cuda_select_device). bucket_bytes
 * is the allreduce bucket size. Returns 0, or a C4_E* code with err naming what failed:
 * C4_ENOTFOUND the plugin did not load, C4_EINVAL the rendezvous address or ranks are wrong,
 * another a peer that did not answer. */
int dp_init(struct dp *d, const struct c4_ranks *r, const char *plugin_path, int use_nccl,
            size_t bucket_bytes, char *err, size_t errlen);

/* For a CPU group (the plugin's host ring) summing what lives in mem's memory, a GPU's under
 * --pp: each bucket is copied to a host buffer, summed on the ring and copied back, so the
 * pipeline's exchanges go through c4's plugin on either device, and the CPU run takes the same
 * path as the GPU's. 0, or C4_EINVAL on an NCCL group, C4_ENOMEM. */
int dp_stage_through_host(struct dp *d, const struct c4k_ops *mem);

/* Tells the net plugin the training step (from 1) that begins, so that faults keyed to steps
 * (C4_FAULT from_step/to_step, docs/fault.md) follow the training; nothing when the plugin does
 * not take it (another plugin, or NCCL on GPUs). */
void dp_step(struct dp *d, int step);

/* Sums n floats of grads (host memory on CPU, device memory on GPU) across the group in place,
 * one collective per bucket. Returns 0, or a C4_E* code when a peer is gone or silent (the group is
 * then broken: the caller should stop and let the launcher restart on the healthy ranks). */
int dp_allreduce(struct dp *d, float *grads, size_t n);

/* Sums n floats of buf (in the group's memory: dp_stage_through_host's, else the host's) in place
 * over `ring` (the group's own or one of its subsets'), bucket by bucket. 0 or C4_EREMOTE. */
int dp_ring_allreduce(struct dp *d, struct c4_hostcoll *ring, float *buf, size_t n);

/* Sums n floats of host memory in place over the group's ring (a CPU group only: C4_EINVAL on
 * NCCL). 0 or C4_EREMOTE. */
int dp_allreduce_host(struct dp *d, float *buf, size_t n);

/* Every rank gives len bytes and receives all ranks' (rank order), waiting for a peer as long as
 * the rendezvous does (C4_BOOTSTRAP_TIMEOUT_MS: another rank may be writing a checkpoint or
 * evaluating). 0 or -1 as above. */
int dp_allgather(struct dp *d, const void *mine, void *all, size_t len);

/* The same right after a step's collective, which every live rank leaves within a collective's
 * time of the others: a silent peer is given up on after C4_COLL_TIMEOUT_MS, as the collective
 * would. With the rendezvous's wait, rank 0 gathering the step's timings from a stopped rank
 * outwaited the launcher's hang grace after its peers had given up in the ring, and was killed
 * as hung itself (test_train's SIGSTOP drill, 1 run in 3 of its case under ASan). */
int dp_gather_step(struct dp *d, const void *mine, void *all, size_t len);

void dp_close(struct dp *d);

/* dp_nccl.c */
int dp_nccl_open(struct dp *d, const struct c4_ranks *r, char *err, size_t errlen);
int dp_nccl_allreduce(struct dp *d, float *grads, size_t n);
void dp_nccl_close(struct dp *d);

#endif
