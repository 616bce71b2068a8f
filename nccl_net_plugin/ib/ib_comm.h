/* ib_comm.h -- the inside of the verbs transport, shared by its files (ib_dev.c, ib_qp.c,
 * ib_conn.c, ib_comm.c). Not exported. */
#ifndef C4_IB_COMM_H
#define C4_IB_COMM_H

#include <stdatomic.h>
#include <stdint.h>

#include "c4_record.h"
#include "ib_mr.h"
#include "ib_proto.h"
#include "ib_transport.h"
#include "ib_verbs.h"
#include "net_paths.h"
#include "net_plan.h"
#include "net_req_head.h"

#define C4_IB_HANDLE_MARK_AT 10 /* handle byte saying "verbs listener" (0 for sockets) */
#define C4_IB_HANDLE_MARK 0x49
#define C4_IB_SEND_DEPTH 64 /* send WRs per QP: 32 requests plus CTS writes and margin */
#define C4_IB_RECV_DEPTH 64 /* receive WRs kept posted per QP for write-with-immediate */

/* Tunables, read once by c4_ib_setup (docs/rdma.md, README). */
struct c4_ib_config {
  int nqps;           /* C4_IB_QPS / NCCL_IB_QPS_PER_CONNECTION */
  int timeout;        /* C4_IB_TIMEOUT / NCCL_IB_TIMEOUT: 4.096 us x 2^timeout per retry */
  int retry_cnt;      /* C4_IB_RETRY_CNT / NCCL_IB_RETRY_CNT */
  int sl;             /* C4_IB_SL / NCCL_IB_SL, unless the plan names one */
  int tc;             /* C4_IB_TC / NCCL_IB_TC: RoCE traffic class */
  int gdr;            /* C4_IB_GDR: 0 offers host memory only */
  int mr_max;         /* C4_IB_MR_MAX: registrations per device */
  int mr_keep;        /* C4_IB_MR_KEEP: unused registrations kept */
  uint64_t min_share; /* C4_IB_MIN_SHARE: least bytes a QP carries of a split message */
};
extern struct c4_ib_config c4_ib_cfg;
extern struct c4_ibv c4_ib_v;

/* One usable port of one RDMA device. */
struct c4_ib_dev {
  char name[64];
  int port;
  struct ibv_context *ctx;
  struct ibv_pd *pd;
  uint16_t lid;
  uint8_t lmc, link_layer, mtu; /* C4_IB_LINK_*, enum ibv_mtu */
  int gid_index;
  union ibv_gid gid;
  int speed_mbps;
  uint64_t guid;
  char pci_path[256];
  int ptr_support;
  struct c4_ib_mr_cache mrc;
};

/* Device i of c4_ib_setup's list, or NULL. */
struct c4_ib_dev *c4_ib_dev_get(int i);

/* What a QP's transitions need to know about this end (ib_qp.c). */
struct c4_ib_local {
  uint8_t port, link_layer, mtu;
  int gid_index;
  int sl, tc, timeout, retry_cnt;
};

/* Fills attr and *mask for INIT -> RTR of QP qp_index, connected to the remote's QP of the same
 * index: path MTU the smaller of both ends', RoCE through the GRH (remote GID, our GID index,
 * the plan's flow label for this QP, else 0), InfiniBand by LID (the plan's path bits under the
 * remote's LMC, else its base LID) and service level (the plan's, else cfg's). plan may be NULL.
 * Pure: tests check what each QP is given. */
void c4_ib_rtr_attr(const struct c4_ib_local *l, const struct c4_ib_qpinfo *remote, int qp_index,
                    const struct c4_netplan_bind *plan, struct ibv_qp_attr *attr, int *mask);

/* Fills attr and *mask for RTR -> RTS with our first PSN. Pure. */
void c4_ib_rts_attr(const struct c4_ib_local *l, uint32_t psn, struct ibv_qp_attr *attr, int *mask);

/* Creates an RC QP on cq and moves it to INIT. Returns 0 or C4_ESYS (logged). */
int c4_ib_qp_create(struct c4_ib_dev *d, struct ibv_cq *cq, struct ibv_qp **out);

/* Moves qp through RTR to RTS (ib_qp.c). Returns 0 or C4_ESYS (logged). */
int c4_ib_qp_connect(struct c4_ib_dev *d, struct ibv_qp *qp, const struct c4_ib_qpinfo *remote,
                     int qp_index, const struct c4_netplan_bind *plan, uint32_t psn);

enum { C4_IB_REQ_FREE = 0, C4_IB_REQ_POSTED, C4_IB_REQ_DONE, C4_IB_REQ_ERROR };

struct c4_ib_request {
  C4_REQ_HEAD; /* seq, state, t_posted, done_bytes, stuck_reported (net_req_head.h) */
  struct c4_ib_comm *comm;
  int is_flush;
  int tag;
  int error;
  char *buf;
  uint64_t size;  /* send: message size; receive: posted size */
  uint64_t total; /* bytes moved */
  int pending;    /* send: QP completions still to come */
  struct c4_ib_rx_msg rx;
  uint64_t qp_len[C4_IB_MAX_QPS];
  uint64_t probe_span[C4_IB_MAX_QPS]; /* send: QPs re-measured by this message (ib_paths.h) */
  uint64_t t_wr;                      /* when the WRs were posted (path samples) */
  _Atomic uint64_t t_first_byte;
  _Atomic uint64_t t_done;
};

struct c4_ib_comm {
  int is_send;
  int dev;
  uint64_t conn_id;
  uint64_t nccl_comm;
  struct c4_identity self, peer;
  struct c4_transport_config cfg;
  struct c4_ib_dev *d;
  struct ibv_cq *cq;
  int nqps;
  struct ibv_qp *qp[C4_IB_MAX_QPS];
  uint32_t psn[C4_IB_MAX_QPS];
  struct ibv_qp *flush_qp; /* receive comms with GPUDirect: RDMA reads from ourselves */
  /* control memory, registered: send: the CTS FIFO the receiver writes; receive: the CTS entries
   * we write from, then an 8-byte target for flush reads */
  uint8_t *ctrl;
  struct ibv_mr *ctrl_mr;
  uint64_t fifo_addr; /* receive: the sender's FIFO */
  uint32_t fifo_rkey;
  int cts_outstanding; /* receive: CTS writes not yet completed (QP 0) */

  struct c4_ib_request reqs[C4_IB_SLOTS];
  uint64_t next_post;
  struct c4_ib_request flushes[C4_IB_SLOTS];
  struct c4_ib_rx rx;
  struct c4_paths paths; /* send: each QP's throughput, for the split's weights */
  struct c4_netplan_bind path[C4_IB_MAX_QPS]; /* each QP's path (flow label, LID bits) */
  uint64_t skipped_since[C4_IB_MAX_QPS]; /* send: first message since that gave a QP no bytes */
  uint64_t probes; /* send: messages that re-measured a QP left without bytes */

  struct c4_link_info link;
  int link_given;
  atomic_int failed;
  char failure[256];
};

/* Makes a comm's verbs objects: CQ, nqps QPs in INIT, control memory, posted receives. The QPs
 * are connected later with c4_ib_comm_connect. Fills `mine` with what the peer needs. */
int c4_ib_comm_new(int is_send, const struct c4_transport_config *cfg, int dev, int nqps,
                   struct c4_ib_comm **out, struct c4_ib_qpinfo *mine);

/* Connects the QPs to the peer's (and a receive comm's flush QP to itself) with the plan's paths
 * for this host -> the peer's host, and starts the comm (watched for stuck requests). */
int c4_ib_comm_connect(struct c4_ib_comm *c, uint64_t nccl_comm, uint64_t conn_id,
                       const struct c4_identity *self, const struct c4_identity *peer,
                       const struct c4_ib_qpinfo *remote);

/* Frees everything c4_ib_comm_new made. */
void c4_ib_comm_free(struct c4_ib_comm *c);

/* Fills rec for request r of comm c (status, bytes and t_done from the caller), field by field
 * as the socket transport fills its records (ib_watch.c). */
void c4_ib_request_record(const struct c4_ib_comm *c, struct c4_ib_request *r, int status,
                          uint64_t bytes, uint64_t t_done, struct c4_xfer_record *rec);

/* Live comms join the stuck-request watch when connected and leave before they are freed. */
void c4_ib_watch_add(struct c4_ib_comm *c);
void c4_ib_watch_remove(struct c4_ib_comm *c);

/* Marks the comm broken (first failure wins) and logs it once. */
void c4_ib_comm_fail(struct c4_ib_comm *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
