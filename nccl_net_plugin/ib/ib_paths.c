/* ib_paths.c -- per-QP path choice (flow labels, LID path bits) and per-QP split weights. */
#include "ib_paths.h"

#include "c4_hash.h"
#include "ib_props.h"
#include "ib_proto.h"

#define SPORT_SPAN 0x4000u /* RoCEv2 source ports 0xc000..0xffff */

/* Does a QP other than q already send from UDP source port sport? */
static int sport_taken(const struct c4_netplan_bind *out, int nqps, int q, uint16_t sport) {
  for (int j = 0; j < nqps; j++)
    if (j != q && out[j].flow_label >= 0 &&
        c4_ib_flow_label_to_sport((uint32_t)out[j].flow_label) == sport)
      return 1;
  return 0;
}

void c4_ib_qp_paths(uint64_t conn_id, int nqps, int link_layer, unsigned remote_lmc,
                    const struct c4_netplan_bind *plan, int nplan, struct c4_netplan_bind *out) {
  if (nqps > C4_IB_MAX_QPS) nqps = C4_IB_MAX_QPS;
  uint64_t h = c4_fnv1a(C4_FNV_OFFSET, &conn_id, sizeof conn_id);
  for (int q = 0; q < nqps; q++) {
    out[q] = q < nplan && plan
                 ? plan[q]
                 : (struct c4_netplan_bind){.flow_label = -1, .sl = -1, .path_bits = -1};
    if (link_layer != C4_IB_LINK_ETH) {
      out[q].flow_label = -1;
      unsigned lids = remote_lmc < 8 ? 1u << remote_lmc : 1;
      if ((out[q].path_bits < 0 || (unsigned)out[q].path_bits >= lids) && lids > 1)
        out[q].path_bits = (int16_t)((h + (uint64_t)q) % lids);
    }
  }
  if (link_layer != C4_IB_LINK_ETH) return;
  /* planned labels first, so the spread ones go around them */
  uint32_t next = 1 + (uint32_t)(h % (SPORT_SPAN - 1)); /* port offset 1..0x3fff */
  for (int q = 0; q < nqps; q++) {
    if (out[q].flow_label >= 0) continue;
    for (uint32_t tries = 0; tries < SPORT_SPAN; tries++) {
      uint16_t sport = (uint16_t)(0xc000u | next);
      next = next % (SPORT_SPAN - 1) + 1;
      if (!sport_taken(out, nqps, q, sport)) {
        out[q].flow_label = c4_ib_sport_to_flow_label(sport);
        break;
      }
    }
  }
}

int c4_ib_qp_weights(const struct c4_paths *p, const uint64_t *skipped_since, uint64_t now,
                     int use_weights, double *w, uint64_t *span) {
  int probing = 0;
  for (int q = 0; q < p->n; q++) {
    w[q] = use_weights ? c4_paths_weight(p, q) : 1;
    span[q] = 0;
    uint64_t since = skipped_since[q];
    if (w[q] < 1 && since && now > since && now - since > C4_IB_PROBE_NS) {
      w[q] = 1;
      span[q] = now - since < C4_PATHS_TAU_NS ? now - since : C4_PATHS_TAU_NS;
      probing++;
    }
  }
  return probing;
}
