/* scen_net.h -- what c4scen's collectives send over the network: for each kind of collective in
 * the job's repeating pattern, the list of inter-host transfers (built once, timed per
 * collective by the generator), and which transfers stall behind a dead one. */
#ifndef C4_SCEN_NET_H
#define C4_SCEN_NET_H

#include <stddef.h>
#include <stdint.h>

#include "scen_topo.h"

#define C4_SCEN_NIC_BPNS 12.5  /* bytes per ns: 100 Gb/s per direction */
#define C4_SCEN_LAT_NS 5000    /* network latency */
#define C4_SCEN_LOCAL_BPNS 150 /* inside a host (NVLink), for a one-host job */

/* The pattern: ring allreduce 64 MiB, tree allreduce 4 MiB, ring allreduce 16 MiB, pipeline
 * send/recv 8 MiB (the last only with two or more hosts). */
enum { C4_SCEN_K_RING64, C4_SCEN_K_TREE4, C4_SCEN_K_RING16, C4_SCEN_K_P2P, C4_SCEN_NKINDS };

/* One transfer: sender, receiver, bytes and connection. */
struct c4_scen_xf {
  int32_t src, dst; /* launcher ranks; the channel is src % G (= dst % G) */
  uint32_t slot;    /* index of the connection's request counter */
  uint8_t algo;     /* C4_SCEN_RING, _TREE0, _TREE1, _P2P */
  uint8_t phase;    /* tree: 0 reduce (child to parent), 1 broadcast (parent to child) */
  int32_t child;    /* tree: heap position of the child end; else -1 */
  uint64_t bytes;
  uint64_t conn;
};

struct c4_scen_kind {
  const char *func, *algo; /* "AllReduce"/"Send", "Ring"/"Tree"/"" */
  uint64_t bytes;          /* the collective's size */
  int p2p;
  struct c4_scen_xf *xf; /* phase 0 first, then phase 1 */
  size_t nxf, nup;       /* all, and those of phase 0 */
  uint16_t *nops;        /* per rank: its transfers (sends and receives) */
  double local_ns;       /* duration when no transfer leaves the host */
};

/* Builds the kinds of job j (C4_SCEN_NKINDS of them; the p2p one is empty with one host).
 * Returns 0 or C4_ENOMEM; free with c4_scen_net_free. */
int c4_scen_net_build(const struct c4_scen_job *j, struct c4_scen_kind *k);
void c4_scen_net_free(struct c4_scen_kind *k);

/* How many connection request counters the slots index. */
size_t c4_scen_net_slots(const struct c4_scen_job *j);

/* 1 when transfer x cannot complete because dead stopped: the rest of a ring's channel, the
 * ancestors' reduce and the whole broadcast of a tree behind a dead reduce edge, the subtree
 * behind a dead broadcast edge. */
/* Bytes transfer x (stalled behind dead, which moved dead_moved) moved before the stall reached
 * it. In a ring, a link h hops downstream of the dead one sends h more of the allreduce's
 * 2 (H - 1) steps first (each host forwards what it holds until it waits on what the dead link
 * never brought), so the dead link's receiver moved least; elsewhere dead_moved. */
uint64_t c4_scen_net_moved_behind(const struct c4_scen_job *j, const struct c4_scen_xf *dead,
                                  const struct c4_scen_xf *x, uint64_t dead_moved);

int c4_scen_net_stalls(const struct c4_scen_job *j, const struct c4_scen_xf *dead,
                       const struct c4_scen_xf *x);

#endif
