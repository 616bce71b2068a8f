/* ib_qp.c -- reliable-connected QPs: creation, and the INIT -> RTR -> RTS attributes that carry
 * each QP's planned path (RoCEv2 flow label, InfiniBand SL and LID path bits). */
#include <errno.h>
#include <string.h>

#include "c4_err.h"
#include "c4_log.h"
#include "ib_comm.h"
#include "ib_props.h"

void c4_ib_rtr_attr(const struct c4_ib_local *l, const struct c4_ib_qpinfo *remote, int qp_index,
                    const struct c4_netplan_bind *plan, struct ibv_qp_attr *attr, int *mask) {
  memset(attr, 0, sizeof *attr);
  attr->qp_state = IBV_QPS_RTR;
  attr->path_mtu = (enum ibv_mtu)(remote->mtu < l->mtu ? remote->mtu : l->mtu);
  attr->dest_qp_num = remote->qp[qp_index].qpn;
  attr->rq_psn = remote->qp[qp_index].psn;
  attr->max_dest_rd_atomic = 1;
  attr->min_rnr_timer = 12;
  attr->ah_attr.port_num = l->port;
  attr->ah_attr.src_path_bits = 0;
  if (l->link_layer == C4_IB_LINK_ETH) {
    attr->ah_attr.is_global = 1;
    memcpy(attr->ah_attr.grh.dgid.raw, remote->gid, 16);
    attr->ah_attr.grh.sgid_index = (uint8_t)l->gid_index;
    attr->ah_attr.grh.hop_limit = 255;
    attr->ah_attr.grh.traffic_class = (uint8_t)l->tc;
    attr->ah_attr.grh.flow_label = plan && plan->flow_label >= 0 ? (uint32_t)plan->flow_label : 0;
    attr->ah_attr.sl = (uint8_t)(plan && plan->sl >= 0 ? plan->sl : l->sl);
  } else {
    attr->ah_attr.is_global = 0;
    attr->ah_attr.dlid = c4_ib_dlid(remote->lid, remote->lmc, plan ? plan->path_bits : -1, NULL);
    attr->ah_attr.sl = (uint8_t)(plan && plan->sl >= 0 ? plan->sl : l->sl);
  }
  *mask = IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
          IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER;
}

void c4_ib_rts_attr(const struct c4_ib_local *l, uint32_t psn, struct ibv_qp_attr *attr,
                    int *mask) {
  memset(attr, 0, sizeof *attr);
  attr->qp_state = IBV_QPS_RTS;
  attr->timeout = (uint8_t)l->timeout;
  attr->retry_cnt = (uint8_t)l->retry_cnt;
  attr->rnr_retry = 7; /* 7: retry for ever; receives are always posted ahead */
  attr->sq_psn = psn;
  attr->max_rd_atomic = 1;
  *mask = IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
          IBV_QP_MAX_QP_RD_ATOMIC;
}

static struct c4_ib_local local_of(const struct c4_ib_dev *d) {
  return (struct c4_ib_local){.port = (uint8_t)d->port,
                              .link_layer = d->link_layer,
                              .mtu = d->mtu,
                              .gid_index = d->gid_index,
                              .sl = c4_ib_cfg.sl,
                              .tc = c4_ib_cfg.tc,
                              .timeout = c4_ib_cfg.timeout,
                              .retry_cnt = c4_ib_cfg.retry_cnt};
}

int c4_ib_qp_create(struct c4_ib_dev *d, struct ibv_cq *cq, struct ibv_qp **out) {
  struct ibv_qp_init_attr init = {
      .send_cq = cq,
      .recv_cq = cq,
      .qp_type = IBV_QPT_RC,
      .cap = {.max_send_wr = C4_IB_SEND_DEPTH,
              .max_recv_wr = C4_IB_RECV_DEPTH,
              .max_send_sge = 1,
              .max_recv_sge = 1},
  };
  struct ibv_qp *qp = c4_ib_v.create_qp(d->pd, &init);
  if (!qp) {
    C4_WARN("%s:%d: couldn't create an RC QP: %s", d->name, d->port, strerror(errno));
    return C4_ESYS;
  }
  struct ibv_qp_attr attr = {
      .qp_state = IBV_QPS_INIT,
      .pkey_index = 0,
      .port_num = (uint8_t)d->port,
      .qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
  };
  int rc = c4_ib_v.modify_qp(qp, &attr,
                             IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
  if (rc != 0) {
    C4_WARN("%s:%d: couldn't move a QP to INIT: %s", d->name, d->port, strerror(rc));
    c4_ib_v.destroy_qp(qp);
    return C4_ESYS;
  }
  *out = qp;
  return 0;
}

int c4_ib_qp_connect(struct c4_ib_dev *d, struct ibv_qp *qp, const struct c4_ib_qpinfo *remote,
                     int qp_index, const struct c4_netplan_bind *plan, uint32_t psn) {
  struct c4_ib_local l = local_of(d);
  struct ibv_qp_attr attr;
  int mask, rc;
  c4_ib_rtr_attr(&l, remote, qp_index, plan, &attr, &mask);
  if ((rc = c4_ib_v.modify_qp(qp, &attr, mask)) != 0) {
    C4_WARN("%s:%d: couldn't move QP %u to RTR (remote QP %u): %s", d->name, d->port, qp->qp_num,
            remote->qp[qp_index].qpn, strerror(rc));
    return C4_ESYS;
  }
  c4_ib_rts_attr(&l, psn, &attr, &mask);
  if ((rc = c4_ib_v.modify_qp(qp, &attr, mask)) != 0) {
    C4_WARN("%s:%d: couldn't move QP %u to RTS: %s", d->name, d->port, qp->qp_num, strerror(rc));
    return C4_ESYS;
  }
  return 0;
}
