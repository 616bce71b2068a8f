/* flows.h -- where the planner's flows come from: a flows file (docs/plan-format.md), a c4 trace
 * (bytes of xfer records per host pair), or synthetic ring and random traffic. */
#ifndef C4_PLAN_FLOWS_H
#define C4_PLAN_FLOWS_H

#include <stddef.h>
#include <stdint.h>

#include "assign.h"
#include "topo.h"

/* Reads {"v":1,"flows":[{"src":H,"dst":H,"bytes":N}]} with host names from t. Returns the number
 * of flows with *out (the caller frees it), or -1 with "FILE: FIELD: reason" in err. */
int c4_plan_flows_load(const char *path, const struct c4_plan_topo *t, struct c4_plan_flow **out,
                       char *err, size_t errlen);

/* Same, from a JSON text of len bytes; `what` names it in errors. */
int c4_plan_flows_parse(const char *text, size_t len, const char *what,
                        const struct c4_plan_topo *t, struct c4_plan_flow **out, char *err,
                        size_t errlen);

/* One flow per directed host pair of a trace's sends (xfer records, dir send), its bytes summed.
 * Hosts t does not know are an error. Returns the count with *out (the caller frees it), or a C4_E*
 * code with the reason in err. */
int c4_plan_flows_from_trace(const char *path, const struct c4_plan_topo *t,
                             struct c4_plan_flow **out, char *err, size_t errlen);

/* Ring traffic: host i sends `per_host` flows of `bytes` to host i + 1 (mod nhosts). Returns the
 * count with *out (the caller frees it), or C4_ENOMEM. */
int c4_plan_flows_ring(const struct c4_plan_topo *t, int per_host, uint64_t bytes,
                       struct c4_plan_flow **out);

/* Random traffic: each host sends `per_host` flows to uniformly random other hosts, each of
 * between bytes / 2 and 3 * bytes / 2 (uniform), from seed. Same returns as the ring. */
int c4_plan_flows_random(const struct c4_plan_topo *t, int per_host, uint64_t bytes, uint64_t seed,
                         struct c4_plan_flow **out);

#endif
