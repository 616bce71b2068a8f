/* ib_paths.h -- which fabric path each QP of a verbs comm takes (RoCEv2 flow label, so UDP source
 * port; InfiniBand destination LID) and the weight each QP gets in a message's split. Pure. */
#ifndef C4_IB_PATHS_H
#define C4_IB_PATHS_H

#include <stdint.h>

#include "net_paths.h"
#include "net_plan.h"

/* The path of every QP of a comm (out[0 .. nqps-1]). QP i takes the plan's flow i where the plan
 * names one (plan may be NULL, nplan 0). Where it names none:
 * - RoCE (link_layer C4_IB_LINK_ETH): a flow label whose UDP source port (rdma-core's mapping,
 *   c4_ib_flow_label_to_sport) no other QP of the comm uses, so each QP hashes onto an ECMP path
 *   of its own. The ports run on from a start drawn from conn_id: the same comm always gets the
 *   same labels (both ends compute them), and the comms between one pair of hosts do not all pile
 *   their QP i onto the same port. Never flow label 0 (the NIC would pick its own).
 * - InfiniBand: path bits (conn_id + i) mod 2^remote_lmc, one of the remote port's LIDs each
 *   (the subnet manager routes each LID its own way); none when its LMC is 0.
 * sl is the plan's, else -1; src_port and ifname are copied but do not apply to QPs. */
void c4_ib_qp_paths(uint64_t conn_id, int nqps, int link_layer, unsigned remote_lmc,
                    const struct c4_netplan_bind *plan, int nplan, struct c4_netplan_bind *out);

/* A QP left without bytes by every message for this long (100 ms) is given an even share of the
 * next. The socket transport re-measures on its own schedule (C4_PATHS_FAIR_*, core/net_paths.h):
 * its chunks never round a path's share to nothing, a QP's can. */
#define C4_IB_PROBE_NS 100000000ull

/* Each QP's weight for the next message (w[0 .. p->n-1]): the path rule's (c4_paths_weight:
 * measured rate over the fastest QP's, even inside the noise dead band), or 1 for all when
 * use_weights is 0. A QP weighing less than 1 that every message since skipped_since[q] (ns; 0:
 * the last message gave it bytes) left without bytes, for more than C4_IB_PROBE_NS before now,
 * weighs 1 for this message: a QP down-weighted until its share rounds to nothing would otherwise
 * never be measured again, and would stay down after its path healed. span[q] is then how long it
 * went unmeasured (at most C4_PATHS_TAU_NS), else 0: its sample stands for that time
 * (c4_paths_sample_rate's span_ns), so one probe moves a stale estimate as far as that much
 * sending would have, not as far as its one small write. A comm that sent nothing for a while
 * probes nothing. Returns how many QPs probe. */
int c4_ib_qp_weights(const struct c4_paths *p, const uint64_t *skipped_since, uint64_t now,
                     int use_weights, double *w, uint64_t *span);

#endif
