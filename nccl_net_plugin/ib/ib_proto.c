/* ib_proto.c -- little-endian encoders and strict decoders for the verbs transport's QP info and
 * clear-to-send entries, the weighted split of a message over QPs, and receive-side accounting. */
#include "ib_proto.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "c4_err.h"
#include "net_le.h"

#define QPINFO_MAGIC 0x51493443u /* "C4IQ" in memory */
#define QPINFO_VERSION 1
#define QPINFO_QPS_AT 48

void c4_ib_qpinfo_put(uint8_t out[C4_IB_QPINFO_SIZE], const struct c4_ib_qpinfo *q) {
  memset(out, 0, C4_IB_QPINFO_SIZE);
  c4_le_put32(out, QPINFO_MAGIC);
  c4_le_put16(out + 4, QPINFO_VERSION);
  c4_le_put16(out + 6, q->nqps);
  c4_le_put16(out + 8, q->lid);
  out[10] = q->lmc;
  out[11] = q->link_layer;
  out[12] = q->mtu;
  memcpy(out + 16, q->gid, 16);
  c4_le_put64(out + 32, q->fifo_addr);
  c4_le_put32(out + 40, q->fifo_rkey);
  for (int i = 0; i < q->nqps && i < C4_IB_MAX_QPS; i++) {
    c4_le_put32(out + QPINFO_QPS_AT + 8 * i, q->qp[i].qpn);
    c4_le_put32(out + QPINFO_QPS_AT + 8 * i + 4, q->qp[i].psn);
  }
}

int c4_ib_qpinfo_get(const uint8_t in[C4_IB_QPINFO_SIZE], struct c4_ib_qpinfo *q, char *err,
                     size_t errlen) {
  memset(q, 0, sizeof *q);
  if (c4_le_get32(in) != QPINFO_MAGIC) {
    snprintf(err, errlen, "QP info magic 0x%08x is not c4's: the peer is not a c4 verbs comm",
             c4_le_get32(in));
    return C4_EPROTO;
  }
  if (c4_le_get16(in + 4) != QPINFO_VERSION) {
    snprintf(err, errlen, "QP info version %u, this c4 speaks %u", c4_le_get16(in + 4),
             QPINFO_VERSION);
    return C4_EPROTO;
  }
  q->nqps = c4_le_get16(in + 6);
  q->lid = c4_le_get16(in + 8);
  q->lmc = in[10];
  q->link_layer = in[11];
  q->mtu = in[12];
  memcpy(q->gid, in + 16, 16);
  q->fifo_addr = c4_le_get64(in + 32);
  q->fifo_rkey = c4_le_get32(in + 40);
  if (q->nqps < 1 || q->nqps > C4_IB_MAX_QPS) {
    snprintf(err, errlen, "QP info nqps %u outside 1..%d", q->nqps, C4_IB_MAX_QPS);
    return C4_EPROTO;
  }
  if (q->lmc > 7 || (q->link_layer != C4_IB_LINK_IB && q->link_layer != C4_IB_LINK_ETH) ||
      q->mtu < 1 || q->mtu > 5) {
    snprintf(err, errlen, "QP info lmc %u, link layer %u or MTU code %u is invalid", q->lmc,
             q->link_layer, q->mtu);
    return C4_EPROTO;
  }
  if (!c4_le_all_zero(in + 13, 3) || !c4_le_all_zero(in + 44, 4) ||
      !c4_le_all_zero(in + QPINFO_QPS_AT + 8 * q->nqps, 8 * (size_t)(C4_IB_MAX_QPS - q->nqps))) {
    snprintf(err, errlen, "QP info reserved bytes are not zero");
    return C4_EPROTO;
  }
  for (int i = 0; i < q->nqps; i++) {
    q->qp[i].qpn = c4_le_get32(in + QPINFO_QPS_AT + 8 * i);
    q->qp[i].psn = c4_le_get32(in + QPINFO_QPS_AT + 8 * i + 4);
    if (q->qp[i].qpn < 2 || q->qp[i].qpn > 0xffffff || q->qp[i].psn > 0xffffff) {
      snprintf(err, errlen, "QP info QP %d: number %u or PSN %u is not a 24-bit RC QP's", i,
               q->qp[i].qpn, q->qp[i].psn);
      return C4_EPROTO;
    }
  }
  return 0;
}

void c4_ib_cts_put(uint8_t out[C4_IB_CTS_SIZE], const struct c4_ib_cts *cts) {
  c4_le_put64(out, cts->addr);
  c4_le_put32(out + 8, cts->rkey);
  c4_le_put32(out + 12, (uint32_t)cts->tag);
  c4_le_put64(out + 16, cts->size);
  c4_le_put64(out + 24, cts->seq + 1);
}

int c4_ib_cts_get(const uint8_t in[C4_IB_CTS_SIZE], uint64_t seq, struct c4_ib_cts *cts) {
  uint64_t mark = c4_le_get64(in + 24);
  if (mark <= seq) return C4_EAGAIN; /* empty (0) or an older message's entry */
  if (mark != seq + 1) return C4_EPROTO;
  cts->addr = c4_le_get64(in);
  cts->rkey = c4_le_get32(in + 8);
  cts->tag = (int32_t)c4_le_get32(in + 12);
  cts->size = c4_le_get64(in + 16);
  cts->seq = seq;
  return 0;
}

int c4_ib_cts_match(const struct c4_ib_cts *cts, int tag, uint64_t size) {
  if (cts->tag != tag) return C4_EPROTO;
  if (size > cts->size) return C4_ETRUNC;
  return 0;
}

static double clean_weight(double w) { return isfinite(w) && w > 0 ? w : 0; }

int c4_ib_sched_split(uint64_t size, int nqps, const double *weights, uint64_t min_share,
                      uint64_t *len) {
  if (nqps < 1) return 0;
  for (int i = 0; i < nqps; i++)
    len[i] = 0;
  if (size == 0) return 0;
  double w[C4_IB_MAX_QPS] = {0};
  int n = nqps > C4_IB_MAX_QPS ? C4_IB_MAX_QPS : nqps, positive = 0;
  for (int i = 0; i < n; i++)
    positive += (w[i] = clean_weight(weights ? weights[i] : 1)) > 0;
  if (positive == 0)
    for (int i = 0; i < n; i++)
      w[i] = 1, positive++;
  /* keep the heaviest `use` QPs (ties: the lower index) */
  uint64_t fit = min_share ? size / min_share : size;
  int use = fit < 1 ? 1 : fit < (uint64_t)positive ? (int)fit : positive;
  int keep[C4_IB_MAX_QPS] = {0}, heaviest = -1;
  for (int k = 0; k < use; k++) {
    int best = -1;
    for (int i = 0; i < n; i++)
      if (!keep[i] && w[i] > 0 && (best < 0 || w[i] > w[best])) best = i;
    keep[best] = 1;
    if (heaviest < 0) heaviest = best;
  }
  double sum = 0;
  for (int i = 0; i < n; i++)
    if (keep[i]) sum += w[i];
  uint64_t given = 0;
  for (int i = 0; i < n; i++) {
    if (!keep[i]) continue;
    uint64_t share = (uint64_t)((double)size * (w[i] / sum));
    share -= share % C4_IB_SCHED_ALIGN;
    if (share > size - given) share = size - given;
    len[i] = share;
    given += share;
  }
  len[heaviest] += size - given;
  int carrying = 0;
  for (int i = 0; i < n; i++)
    carrying += len[i] > 0;
  return carrying;
}

int c4_ib_rx_on_imm(struct c4_ib_rx *rx, int qp, uint32_t imm, uint64_t next_post, uint64_t *seq) {
  if (qp < 0 || qp >= rx->nqps || qp >= C4_IB_MAX_QPS) return C4_EPROTO;
  *seq = rx->imms[qp]++;
  if (imm == C4_IB_IMM_ERR) return C4_EREMOTE;
  if (*seq >= next_post || imm > C4_IB_MAX_MSG) return C4_EPROTO;
  return 0;
}

int c4_ib_rx_msg_add(struct c4_ib_rx_msg *m, uint64_t bytes, int nqps, uint64_t posted) {
  m->parts++;
  m->bytes += bytes;
  if (m->bytes > posted) return C4_ETRUNC;
  return m->parts >= nqps;
}
