/* ib_proto.h -- the verbs transport's protocol, as pure functions: the bytes one process writes for
 * another (QP info exchanged at connect time, clear-to-send entries the receiver RDMA-writes into
 * the sender's FIFO), how a message is split over the QPs of a comm by per-QP weights, and how
 * the receiver counts the write-with-immediate completions of a message (docs/rdma.md). */
#ifndef C4_IB_PROTO_H
#define C4_IB_PROTO_H

#include <stddef.h>
#include <stdint.h>

#define C4_IB_MAX_QPS 16
#define C4_IB_SLOTS 32 /* NCCL_NET_MAX_REQUESTS: one CTS FIFO entry per request slot */
#define C4_IB_QPINFO_SIZE 176
#define C4_IB_CTS_SIZE 32
#define C4_IB_MAX_MSG (1u << 30)  /* the plugin's maxP2pBytes: a QP's share fits an immediate */
#define C4_IB_IMM_ERR 0xffffffffu /* immediate of a message the sender refused (tag or size) */
#define C4_IB_SCHED_ALIGN 4096    /* QP shares are cut at multiples of this */

enum { C4_IB_LINK_IB = 1, C4_IB_LINK_ETH = 2 }; /* IBV_LINK_LAYER_* */

struct c4_ib_qp_addr {
  uint32_t qpn; /* 24 bits */
  uint32_t psn; /* 24 bits: the first packet sequence number this QP sends */
};

/* What one end tells the other about its QPs (sent on the handshake's TCP connection). */
struct c4_ib_qpinfo {
  uint16_t nqps;      /* 1..C4_IB_MAX_QPS */
  uint16_t lid;       /* base LID (InfiniBand); 0 on RoCE */
  uint8_t lmc;        /* 0..7 */
  uint8_t link_layer; /* C4_IB_LINK_* */
  uint8_t mtu;        /* enum ibv_mtu, 1 (256) .. 5 (4096): the active MTU */
  uint8_t gid[16];
  uint64_t fifo_addr; /* sender: its CTS FIFO (C4_IB_SLOTS entries); receiver: 0 */
  uint32_t fifo_rkey;
  struct c4_ib_qp_addr qp[C4_IB_MAX_QPS];
};

void c4_ib_qpinfo_put(uint8_t out[C4_IB_QPINFO_SIZE], const struct c4_ib_qpinfo *q);
/* Fills q from bytes another process sent. Returns 0, or C4_EPROTO with what is wrong in err
 * (wrong magic or version, nqps outside 1..16, a QP number below 2 or above 24 bits, an unknown
 * link layer or MTU, nonzero reserved bytes). */
int c4_ib_qpinfo_get(const uint8_t in[C4_IB_QPINFO_SIZE], struct c4_ib_qpinfo *q, char *err,
                     size_t errlen);

/* One clear-to-send entry: the receive posted for message seq. */
struct c4_ib_cts {
  uint64_t addr; /* where the receiver's buffer is (RDMA write target) */
  uint32_t rkey;
  int32_t tag;
  uint64_t size; /* posted size */
  uint64_t seq;
};

/* Encodes cts; the last 8 bytes (seq + 1, never 0) are the entry's valid mark. */
void c4_ib_cts_put(uint8_t out[C4_IB_CTS_SIZE], const struct c4_ib_cts *cts);

/* Reads FIFO entry `in` for message `seq`. Returns 0 (cts filled) when it is that message's
 * entry; C4_EAGAIN when it still holds an older message's entry or none (the receiver has not
 * posted yet: isend returns no request); C4_EPROTO when it names a later message or is malformed
 * (the receiver is not following the protocol). */
int c4_ib_cts_get(const uint8_t in[C4_IB_CTS_SIZE], uint64_t seq, struct c4_ib_cts *cts);

/* Can a message of `size` bytes with `tag` go into the receive cts describes? 0; C4_EPROTO for a
 * tag that differs; C4_ETRUNC when size exceeds the posted size. */
int c4_ib_cts_match(const struct c4_ib_cts *cts, int tag, uint64_t size);

/* Splits a message of size bytes over nqps QPs into contiguous shares, QP 0's first: len[i] bytes
 * to QP i, proportional to weights[i] (one per QP; a weight that is not a positive finite number
 * is 0; all 0 means equal). At most size / min_share QPs carry data (at least one), the heaviest
 * ones; shares are cut at multiples of C4_IB_SCHED_ALIGN and what rounding leaves goes to the
 * heaviest QP. The lens always add up to size. Returns how many QPs carry bytes (0 for size 0). */
int c4_ib_sched_split(uint64_t size, int nqps, const double *weights, uint64_t min_share,
                      uint64_t *len);

/* Receiver: the write-with-immediate completions seen per QP. Every message ends with one such
 * write on every QP (zero-length where the QP carried nothing), and RC keeps each QP's writes in
 * order, so the k-th immediate on a QP belongs to message k. */
struct c4_ib_rx {
  int nqps;
  uint64_t imms[C4_IB_MAX_QPS];
};

/* Accounts an immediate `imm` (the bytes that QP carried) arriving on QP qp; sets *seq to the
 * message it completes a part of. Returns 0; C4_EREMOTE for C4_IB_IMM_ERR (the sender refused the
 * message); C4_EPROTO for a QP out of range, a message not yet posted here (seq >= next_post: the
 * sender wrote without a clear-to-send) or an immediate above C4_IB_MAX_MSG. */
int c4_ib_rx_on_imm(struct c4_ib_rx *rx, int qp, uint32_t imm, uint64_t next_post, uint64_t *seq);

/* One message's parts so far. */
struct c4_ib_rx_msg {
  int parts;
  uint64_t bytes;
};

/* Adds a part of `bytes` to m. Returns 1 when all nqps parts are in, 0 while some are missing,
 * C4_ETRUNC when the bytes exceed the posted size. */
int c4_ib_rx_msg_add(struct c4_ib_rx_msg *m, uint64_t bytes, int nqps, uint64_t posted);

#endif
