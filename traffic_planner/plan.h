/* plan.h -- the plan file (docs/plan-format.md): every flow's path, and the host pairs of each
 * path as c4mon reads them. */
#ifndef C4_PLAN_PLAN_H
#define C4_PLAN_PLAN_H

#include <jansson.h>
#include <stddef.h>

#include "assign.h"
#include "portmap.h"
#include "topo.h"

/* RoCEv2: rdma-core's ibv_flow_label_to_udp_sport (libibverbs/verbs.h) makes the UDP source port
 * (fl & 0x3fff) ^ ((fl & 0xfc000) >> 14), ORed with 0xc000. A flow label below 0x4000 therefore
 * gives port 0xc000 | fl: this returns that label for a port in 49152..65535, else -1. */
long c4_plan_flow_label(int udp_src_port);

/* The plan as one JSON tree (the caller decrefs it), or NULL when out of memory. ports may be NULL
 * (no probes: every "src_port" and "flow_label" is null). */
json_t *c4_plan_json(const struct c4_plan_topo *t, const struct c4_plan_flow *flows, int n,
                     const struct c4_plan_path *paths, const struct c4_plan_portmap *ports);

/* Writes the tree to path atomically (a temporary file renamed over it), so a reader sees the old
 * plan or the new one. Returns 0, or a C4_E* code with "FILE: reason" in err. */
int c4_plan_write(const char *path, json_t *plan, char *err, size_t errlen);

#endif
