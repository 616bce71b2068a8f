/* assign.h -- places flows on the paths of a leaf-spine fabric: for each flow a source NIC port, a
 * destination NIC port and, between leaves, a spine, so that the most loaded link is as light as
 * it can be made; and, to compare with, the placement ECMP's random hashing gives. */
#ifndef C4_PLAN_ASSIGN_H
#define C4_PLAN_ASSIGN_H

#include <stdint.h>

#include "topo.h"

struct c4_plan_flow {
  int src, dst;   /* host indices */
  uint64_t bytes; /* expected bytes */
};

struct c4_plan_path {
  int src_port, dst_port; /* port_idx within the source and the destination host */
  int spine;              /* -1 when both ports are on one leaf */
};

/* A link's load is the time it needs for its bytes: bytes * 8 / (gbps * 1e9) seconds, each
 * direction of a link on its own (host port out, host port in, leaf up to a spine, spine down). */

/* Plans n flows into paths[n]: largest flows first, each on the path whose busiest link ends up
 * least loaded, then flows on the busiest links move while that lowers their path's load, and a
 * host's flows on its busiest ports are re-placed together over its ports on that leaf. Returns
 * 0, or C4_EINVAL (a host index out of range, a flow between hosts with no path) or C4_ENOMEM. */
int c4_plan_assign(const struct c4_plan_topo *t, const struct c4_plan_flow *flows, int n,
                   struct c4_plan_path *paths);

/* What ECMP does: each flow on a uniformly random source port, destination port and spine
 * (among those joined to both leaves), from seed. Same returns as c4_plan_assign. */
int c4_plan_hash(const struct c4_plan_topo *t, const struct c4_plan_flow *flows, int n,
                 uint64_t seed, struct c4_plan_path *paths);

/* The first of the n flows whose hosts have no path between them (no two of their ports on one
 * leaf, and no spine joined to both leaves of a pair), or C4_NONE when every flow has one: what
 * c4_plan_assign's C4_EINVAL names for a user. */
int c4_plan_unroutable(const struct c4_plan_topo *t, const struct c4_plan_flow *flows, int n);

/* The most loaded link's load (seconds) under paths, or a C4_E* code when a path is not valid on t
 * (a port out of range, a spine between ports on one leaf, none or one not joined between two
 * leaves). */
double c4_plan_max_load(const struct c4_plan_topo *t, const struct c4_plan_flow *flows, int n,
                        const struct c4_plan_path *paths);

/* A lower bound (seconds) on the max link load of any placement: the largest of each host's
 * traffic out (in) over its ports' capacity, each flow's bytes over its fastest ports, each leaf's
 * traffic that must leave (enter) it over its uplink capacity, and each host's least possible
 * busiest port out (in) with its flows whole, when a bounded search proves it. */
double c4_plan_lower_bound(const struct c4_plan_topo *t, const struct c4_plan_flow *flows, int n);

#endif
