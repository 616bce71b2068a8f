/* fake_ibverbs.c -- TEST DOUBLE of libibverbs, because this machine has no RDMA NIC: one device,
 * "c4fake0", with one active InfiniBand port (4x EDR, LID 0x21, LMC 2) whose QPs all live in this
 * process. A posted RDMA write copies the bytes at once (checking both keys and ranges like a
 * NIC); a write with immediate also consumes a receive posted on the connected QP and completes
 * it on that QP's CQ; an RDMA read copies back. Errors complete with the status a NIC would give.
 * C4_FAKE_IB_DMABUF=1 makes dma-buf registration work, so the port offers GPU memory and receive
 * comms get their flush QP. C4_FAKE_IB_ROCE=1 makes the port RoCE (Ethernet link layer, one GID,
 * ::ffff:198.18.0.1, index 0; no LID): QPs must then be addressed through the GRH.
 * A fabric of paths, for the tests of spreading: each QP's path is its UDP source port on RoCE
 * (from the flow label it was given, rdma-core's mapping) or its destination LID on InfiniBand,
 * both readable with c4_fake_ib_qp_path. c4_fake_ib_set_rate gives a path a rate: each QP on it
 * then sends one write after the other at that rate, and a write's completions (the sender's and
 * the receiver's) are polled only once its bytes would have gone through. Paths without a rate
 * complete at once. Loaded by c4's verbs transport through C4_IBVERBS in tests only. */
#include <endian.h>
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <infiniband/verbs.h>

/* verbs.h wraps these three in macros; this file defines the exported functions themselves */
#undef ibv_reg_mr
#undef ibv_query_port
#undef ibv_get_device_list

#define MAX_QPS 1024
#define MAX_MRS 4096
#define CQ_CAP 8192
#define RQ_CAP 512
#define QPN_BASE 0x100
#define MAX_RATES 64

/* Completions in the order they were made; each can be polled from `ready` on (ns). */
struct fake_cq {
  struct ibv_cq cq;
  int n;
  struct ibv_wc wc[CQ_CAP];
  uint64_t ready[CQ_CAP];
};

struct fake_qp {
  struct ibv_qp qp;
  uint32_t dest; /* connected QP number (RTR) */
  int head, n;
  uint64_t recv[RQ_CAP];
  uint32_t flow_label; /* RoCE: the GRH flow label given at RTR */
  uint16_t dlid;       /* InfiniBand: the destination LID given at RTR */
  uint64_t busy_until; /* when the last write on a rated path is through (ns) */
};

/* Path rates (bytes per ns) set by the tests; path -1 is every other path's. */
static struct {
  int path;
  double rate;
} rates[MAX_RATES];
static int nrates;

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct ibv_device device = {
    .name = "c4fake0", .node_type = IBV_NODE_CA, .transport_type = IBV_TRANSPORT_IB};
static struct fake_qp *qps[MAX_QPS];
static struct ibv_mr *mrs[MAX_MRS]; /* key k is mrs[k] (lkey == rkey) */

static int roce(void) {
  const char *on = getenv("C4_FAKE_IB_ROCE");
  return on && strcmp(on, "1") == 0;
}

static uint64_t now_ns(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (uint64_t)t.tv_sec * 1000000000ull + (uint64_t)t.tv_nsec;
}

/* A QP's path: RoCE, its UDP source port (rdma-core's ibv_flow_label_to_udp_sport); InfiniBand,
 * its destination LID. */
static int path_of(const struct fake_qp *f) {
  if (!roce()) return f->dlid;
  uint32_t fl = f->flow_label & 0xfffff;
  return (int)(((fl & 0x3fff) ^ (fl >> 14)) | 0xc000);
}

/* The rate of path `path` (bytes per ns), 0 for none. Call with the lock held. */
static double rate_of(int path) {
  double dflt = 0;
  for (int i = 0; i < nrates; i++) {
    if (rates[i].path == path) return rates[i].rate;
    if (rates[i].path == -1) dflt = rates[i].rate;
  }
  return dflt;
}

/* Tests: path (a UDP source port on RoCE, a LID on InfiniBand; -1: every path not named) sends at
 * bytes_per_ns from now on (0: at once). Returns 0, or -1 when the table is full. */
int c4_fake_ib_set_rate(int path, double bytes_per_ns) {
  pthread_mutex_lock(&lock);
  int i = 0;
  while (i < nrates && rates[i].path != path)
    i++;
  if (i == MAX_RATES) {
    pthread_mutex_unlock(&lock);
    return -1;
  }
  rates[i].path = path;
  rates[i].rate = bytes_per_ns;
  if (i == nrates) nrates++;
  pthread_mutex_unlock(&lock);
  return 0;
}

/* Tests: the flow label and destination LID QP qpn was connected with. Returns 0, or -1 for a QP
 * that does not exist. */
int c4_fake_ib_qp_path(uint32_t qpn, uint32_t *flow_label, uint16_t *dlid) {
  pthread_mutex_lock(&lock);
  struct fake_qp *f = qpn >= QPN_BASE && qpn < QPN_BASE + MAX_QPS ? qps[qpn - QPN_BASE] : NULL;
  if (f) *flow_label = f->flow_label, *dlid = f->dlid;
  pthread_mutex_unlock(&lock);
  return f ? 0 : -1;
}

struct ibv_device **ibv_get_device_list(int *num_devices) {
  struct ibv_device **list = calloc(2, sizeof *list);
  if (!list) return NULL;
  list[0] = &device;
  *num_devices = 1;
  return list;
}

void ibv_free_device_list(struct ibv_device **list) { free(list); }

const char *ibv_get_device_name(struct ibv_device *dev) { return dev->name; }

static int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
static int post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
static int poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);

struct ibv_context *ibv_open_device(struct ibv_device *dev) {
  struct ibv_context *c = calloc(1, sizeof *c);
  if (!c) return NULL;
  c->device = dev;
  c->ops.post_send = post_send;
  c->ops.post_recv = post_recv;
  c->ops.poll_cq = poll_cq;
  return c;
}

int ibv_close_device(struct ibv_context *c) {
  free(c);
  return 0;
}

int ibv_query_device(struct ibv_context *c, struct ibv_device_attr *a) {
  (void)c;
  memset(a, 0, sizeof *a);
  a->phys_port_cnt = 1;
  a->sys_image_guid = htobe64(0x0102030405060708ull); /* big-endian, as verbs gives it */
  a->max_qp = MAX_QPS;
  a->max_qp_wr = RQ_CAP;
  return 0;
}

/* The exported symbol takes the compat struct (a prefix of struct ibv_port_attr); only fields of
 * that prefix are written. */
int ibv_query_port(struct ibv_context *c, uint8_t port, struct _compat_ibv_port_attr *compat) {
  (void)c;
  if (port != 1) return EINVAL;
  struct ibv_port_attr *a = (struct ibv_port_attr *)compat;
  a->state = IBV_PORT_ACTIVE;
  a->max_mtu = IBV_MTU_4096;
  a->active_mtu = IBV_MTU_4096;
  a->gid_tbl_len = 1;
  a->lid = roce() ? 0 : 0x21;
  a->lmc = roce() ? 0 : 2;
  a->active_width = 2;  /* 4x */
  a->active_speed = 32; /* EDR */
  a->link_layer = roce() ? IBV_LINK_LAYER_ETHERNET : IBV_LINK_LAYER_INFINIBAND;
  return 0;
}

int ibv_query_gid(struct ibv_context *c, uint8_t port, int index, union ibv_gid *gid) {
  (void)c, (void)port;
  if (index != 0) return EINVAL;
  memset(gid, 0, sizeof *gid);
  if (roce()) {
    static const uint8_t v4[] = {0xff, 0xff, 198, 18, 0, 1};
    memcpy(gid->raw + 10, v4, sizeof v4);
  } else {
    gid->raw[0] = 0xfe, gid->raw[1] = 0x80, gid->raw[15] = 1;
  }
  return 0;
}

struct ibv_pd *ibv_alloc_pd(struct ibv_context *c) {
  struct ibv_pd *pd = calloc(1, sizeof *pd);
  if (pd) pd->context = c;
  return pd;
}

int ibv_dealloc_pd(struct ibv_pd *pd) {
  free(pd);
  return 0;
}

static struct ibv_mr *new_mr(struct ibv_pd *pd, void *addr, size_t length) {
  struct ibv_mr *mr = calloc(1, sizeof *mr);
  if (!mr) return NULL;
  pthread_mutex_lock(&lock);
  int k = 1;
  while (k < MAX_MRS && mrs[k])
    k++;
  if (k == MAX_MRS) {
    pthread_mutex_unlock(&lock);
    free(mr);
    errno = ENOMEM;
    return NULL;
  }
  *mr = (struct ibv_mr){.context = pd->context,
                        .pd = pd,
                        .addr = addr,
                        .length = length,
                        .lkey = (uint32_t)k,
                        .rkey = (uint32_t)k};
  mrs[k] = mr;
  pthread_mutex_unlock(&lock);
  return mr;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length, int access) {
  (void)access;
  return new_mr(pd, addr, length);
}

struct ibv_mr *ibv_reg_dmabuf_mr(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
                                 int fd, int access) {
  (void)offset, (void)access;
  const char *on = getenv("C4_FAKE_IB_DMABUF");
  if (!on || strcmp(on, "1") != 0) {
    errno = EOPNOTSUPP;
    return NULL;
  }
  if (fd < 0) {
    errno = EBADF;
    return NULL;
  }
  return new_mr(pd, (void *)(uintptr_t)iova, length);
}

int ibv_dereg_mr(struct ibv_mr *mr) {
  pthread_mutex_lock(&lock);
  mrs[mr->lkey] = NULL;
  pthread_mutex_unlock(&lock);
  free(mr);
  return 0;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *c, int cqe, void *cq_context,
                             struct ibv_comp_channel *channel, int comp_vector) {
  (void)channel, (void)comp_vector;
  if (cqe > CQ_CAP) {
    errno = EINVAL;
    return NULL;
  }
  struct fake_cq *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  f->cq.context = c;
  f->cq.cq_context = cq_context;
  f->cq.cqe = cqe;
  return &f->cq;
}

int ibv_destroy_cq(struct ibv_cq *cq) {
  free((struct fake_cq *)cq);
  return 0;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd, struct ibv_qp_init_attr *attr) {
  if (attr->qp_type != IBV_QPT_RC || attr->cap.max_recv_wr > RQ_CAP) {
    errno = EINVAL;
    return NULL;
  }
  struct fake_qp *f = calloc(1, sizeof *f);
  if (!f) return NULL;
  pthread_mutex_lock(&lock);
  int i = 0;
  while (i < MAX_QPS && qps[i])
    i++;
  if (i == MAX_QPS) {
    pthread_mutex_unlock(&lock);
    free(f);
    errno = ENOMEM;
    return NULL;
  }
  qps[i] = f;
  pthread_mutex_unlock(&lock);
  f->qp.context = pd->context;
  f->qp.pd = pd;
  f->qp.send_cq = attr->send_cq;
  f->qp.recv_cq = attr->recv_cq;
  f->qp.qp_num = QPN_BASE + (uint32_t)i;
  f->qp.qp_type = IBV_QPT_RC;
  f->qp.state = IBV_QPS_RESET;
  return &f->qp;
}

/* Checks the transitions c4 makes: RESET -> INIT -> RTR (to an existing QP) -> RTS. */
int ibv_modify_qp(struct ibv_qp *qp, struct ibv_qp_attr *attr, int mask) {
  struct fake_qp *f = (struct fake_qp *)qp;
  if (!(mask & IBV_QP_STATE)) return EINVAL;
  switch (attr->qp_state) {
  case IBV_QPS_INIT:
    if (qp->state != IBV_QPS_RESET || attr->port_num != 1) return EINVAL;
    break;
  case IBV_QPS_RTR:
    if (qp->state != IBV_QPS_INIT || !(mask & IBV_QP_DEST_QPN) || attr->dest_qp_num < QPN_BASE ||
        attr->dest_qp_num >= QPN_BASE + MAX_QPS || !qps[attr->dest_qp_num - QPN_BASE])
      return EINVAL;
    if (roce() ? !attr->ah_attr.is_global || attr->ah_attr.grh.dgid.raw[10] != 0xff
               : attr->ah_attr.is_global || attr->ah_attr.dlid < 0x21 || attr->ah_attr.dlid > 0x24)
      return EINVAL;
    f->dest = attr->dest_qp_num;
    f->flow_label = attr->ah_attr.grh.flow_label;
    f->dlid = attr->ah_attr.dlid;
    break;
  case IBV_QPS_RTS:
    if (qp->state != IBV_QPS_RTR) return EINVAL;
    break;
  default: return EINVAL;
  }
  qp->state = attr->qp_state;
  return 0;
}

int ibv_destroy_qp(struct ibv_qp *qp) {
  pthread_mutex_lock(&lock);
  qps[qp->qp_num - QPN_BASE] = NULL;
  pthread_mutex_unlock(&lock);
  free((struct fake_qp *)qp);
  return 0;
}

const char *ibv_wc_status_str(enum ibv_wc_status status) {
  switch (status) {
  case IBV_WC_SUCCESS: return "success";
  case IBV_WC_LOC_PROT_ERR: return "local protection error";
  case IBV_WC_REM_ACCESS_ERR: return "remote access error";
  case IBV_WC_RNR_RETRY_EXC_ERR: return "RNR retry counter exceeded";
  case IBV_WC_RETRY_EXC_ERR: return "transport retry counter exceeded";
  default: return "unknown";
  }
}

/* ---- the data path: the provider ops the inline verbs.h wrappers call ---- */

static void push(struct ibv_cq *cq, const struct ibv_wc *wc, uint64_t ready) {
  struct fake_cq *f = (struct fake_cq *)cq;
  if (f->n == CQ_CAP) abort(); /* a CQ overrun is a bug in the caller's sizing */
  f->wc[f->n] = *wc;
  f->ready[f->n] = ready;
  f->n++;
}

/* When a write of `bytes` posted now on src is through its path: now for a path without a rate;
 * else after the writes before it on that QP, at the path's rate. Call with the lock held. */
static uint64_t through_at(struct fake_qp *src, uint64_t bytes) {
  double rate = rate_of(path_of(src));
  if (!(rate > 0)) return 0;
  uint64_t now = now_ns(), start = src->busy_until > now ? src->busy_until : now;
  src->busy_until = start + (uint64_t)((double)bytes / rate);
  return src->busy_until;
}

/* The registered range of key k holding [addr, addr + len), or NULL. */
static struct ibv_mr *range(uint32_t k, uint64_t addr, uint64_t len) {
  struct ibv_mr *mr = k < MAX_MRS ? mrs[k] : NULL;
  uint64_t start = mr ? (uint64_t)(uintptr_t)mr->addr : 0;
  if (!mr || addr < start || addr - start > mr->length || len > mr->length - (addr - start))
    return NULL;
  return mr;
}

static enum ibv_wc_status one_send(struct fake_qp *src, struct ibv_send_wr *wr, uint32_t *bytes,
                                   uint64_t *ready) {
  struct fake_qp *dst = src->qp.state == IBV_QPS_RTS ? qps[src->dest - QPN_BASE] : NULL;
  if (!dst || dst->qp.state < IBV_QPS_RTR) return IBV_WC_RETRY_EXC_ERR;
  uint64_t remote = wr->wr.rdma.remote_addr, total = 0;
  for (int s = 0; s < wr->num_sge; s++)
    total += wr->sg_list[s].length;
  *bytes = (uint32_t)total;
  for (int s = 0; s < wr->num_sge; s++)
    if (!range(wr->sg_list[s].lkey, wr->sg_list[s].addr, wr->sg_list[s].length))
      return IBV_WC_LOC_PROT_ERR;
  if (total && !range(wr->wr.rdma.rkey, remote, total)) return IBV_WC_REM_ACCESS_ERR;
  if (wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM && dst->n == 0) return IBV_WC_RNR_RETRY_EXC_ERR;
  for (int s = 0; s < wr->num_sge; s++) {
    struct ibv_sge *g = &wr->sg_list[s];
    if (wr->opcode == IBV_WR_RDMA_READ)
      memmove((void *)(uintptr_t)g->addr, (void *)(uintptr_t)remote, g->length);
    else
      memmove((void *)(uintptr_t)remote, (void *)(uintptr_t)g->addr, g->length);
    remote += g->length;
  }
  *ready = through_at(src, total);
  if (wr->opcode == IBV_WR_RDMA_WRITE_WITH_IMM) {
    struct ibv_wc wc = {.wr_id = dst->recv[dst->head],
                        .status = IBV_WC_SUCCESS,
                        .opcode = IBV_WC_RECV_RDMA_WITH_IMM,
                        .byte_len = (uint32_t)total,
                        .imm_data = wr->imm_data,
                        .qp_num = dst->qp.qp_num,
                        .wc_flags = IBV_WC_WITH_IMM};
    dst->head = (dst->head + 1) % RQ_CAP;
    dst->n--;
    push(dst->qp.recv_cq, &wc, *ready);
  }
  return IBV_WC_SUCCESS;
}

static int post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad) {
  struct fake_qp *f = (struct fake_qp *)qp;
  pthread_mutex_lock(&lock);
  for (; wr; wr = wr->next) {
    if (wr->opcode != IBV_WR_RDMA_WRITE && wr->opcode != IBV_WR_RDMA_WRITE_WITH_IMM &&
        wr->opcode != IBV_WR_RDMA_READ) {
      *bad = wr;
      pthread_mutex_unlock(&lock);
      return EINVAL;
    }
    uint32_t bytes = 0;
    uint64_t ready = 0;
    enum ibv_wc_status st = one_send(f, wr, &bytes, &ready);
    if ((wr->send_flags & IBV_SEND_SIGNALED) || st != IBV_WC_SUCCESS) {
      struct ibv_wc wc = {.wr_id = wr->wr_id,
                          .status = st,
                          .opcode =
                              wr->opcode == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ : IBV_WC_RDMA_WRITE,
                          .byte_len = bytes,
                          .qp_num = qp->qp_num};
      push(qp->send_cq, &wc, ready);
    }
  }
  pthread_mutex_unlock(&lock);
  return 0;
}

static int post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad) {
  struct fake_qp *f = (struct fake_qp *)qp;
  pthread_mutex_lock(&lock);
  for (; wr; wr = wr->next) {
    if (f->n == RQ_CAP) {
      *bad = wr;
      pthread_mutex_unlock(&lock);
      return ENOMEM;
    }
    f->recv[(f->head + f->n) % RQ_CAP] = wr->wr_id;
    f->n++;
  }
  pthread_mutex_unlock(&lock);
  return 0;
}

/* Hands out up to n completions whose time has come, oldest first; the rest keep their order
 * (one QP's are through in the order it posted them, so each QP's stay in order). */
static int poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc) {
  struct fake_cq *f = (struct fake_cq *)cq;
  pthread_mutex_lock(&lock);
  uint64_t now = f->n ? now_ns() : 0;
  int k = 0, kept = 0;
  for (int i = 0; i < f->n; i++) {
    if (k < n && f->ready[i] <= now) {
      wc[k++] = f->wc[i];
    } else {
      f->wc[kept] = f->wc[i];
      f->ready[kept++] = f->ready[i];
    }
  }
  f->n = kept;
  pthread_mutex_unlock(&lock);
  return k;
}
