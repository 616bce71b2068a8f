/* ib_dev.c -- the verbs transport's devices: loads libibverbs, finds the active ports that pass
 * C4_IB_HCA / NCCL_IB_HCA, opens each (context, protection domain, GID, registration cache) and
 * translates its attributes into NCCL's properties. */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4_env.h"
#include "c4_err.h"
#include "c4_log.h"
#include "ib_comm.h"
#include "ib_props.h"
#include "ib_sysfs.h"
#include "nccl_net_abi.h"

#define IB_MAX_DEVS 16
#define IB_ACCESS (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ)

struct c4_ib_config c4_ib_cfg;
struct c4_ibv c4_ib_v;

static struct {
  int ndev;
  struct c4_ib_dev dev[IB_MAX_DEVS];
} ib;

struct c4_ib_dev *c4_ib_dev_get(int i) {
  return i >= 0 && i < ib.ndev ? &ib.dev[i] : NULL;
}

/* c4's variable when set, else NCCL's of the same meaning, else def (range-checked). */
static long env2(const char *c4name, const char *ncclname, long def, long min, long max) {
  const char *v = getenv(c4name);
  return c4_env_long(v && *v ? c4name : ncclname, def, min, max);
}

static void config_load(void) {
  c4_ib_cfg = (struct c4_ib_config){
      .nqps = (int)env2("C4_IB_QPS", "NCCL_IB_QPS_PER_CONNECTION", 2, 1, C4_IB_MAX_QPS),
      .timeout = (int)env2("C4_IB_TIMEOUT", "NCCL_IB_TIMEOUT", 20, 1, 31),
      .retry_cnt = (int)env2("C4_IB_RETRY_CNT", "NCCL_IB_RETRY_CNT", 7, 0, 7),
      .sl = (int)env2("C4_IB_SL", "NCCL_IB_SL", 0, 0, 15),
      .tc = (int)env2("C4_IB_TC", "NCCL_IB_TC", 0, 0, 255),
      .gdr = (int)c4_env_long("C4_IB_GDR", 1, 0, 1),
      .mr_max = (int)c4_env_long("C4_IB_MR_MAX", 4096, 1, 1 << 20),
      .mr_keep = (int)c4_env_long("C4_IB_MR_KEEP", 0, 0, 1 << 20),
      .min_share = (uint64_t)c4_env_long("C4_IB_MIN_SHARE", 64 << 10, C4_IB_SCHED_ALIGN, 1 << 30),
  };
}

/* Registration through verbs, for the cache (ib_mr.h). */
static int mr_reg(void *ctx, void *addr, size_t len, int type, int fd, uint64_t offset, void **mr,
                  uint32_t *lkey, uint32_t *rkey) {
  struct c4_ib_dev *d = ctx;
  struct ibv_mr *m;
  if (fd >= 0) {
    if (!c4_ib_v.reg_dmabuf_mr) {
      C4_WARN("%s: dma-buf registration asked for, but libibverbs has no ibv_reg_dmabuf_mr",
              d->name);
      return C4_EINVAL;
    }
    m = c4_ib_v.reg_dmabuf_mr(d->pd, offset, len, (uint64_t)(uintptr_t)addr, fd, IB_ACCESS);
  } else {
    m = c4_ib_v.reg_mr(d->pd, addr, len, IB_ACCESS);
  }
  if (!m) {
    C4_WARN("%s: couldn't register %zu bytes at %p (memory type %d%s): %s", d->name, len, addr,
            type, fd >= 0 ? ", dma-buf" : "", strerror(errno));
    return C4_ESYS;
  }
  *mr = m;
  *lkey = m->lkey;
  *rkey = m->rkey;
  return 0;
}

static void mr_dereg(void *ctx, void *mr) {
  (void)ctx;
  c4_ib_v.dereg_mr(mr);
}

/* NCCL's probe: a dma-buf registration of fd -1 fails with EOPNOTSUPP / EPROTONOSUPPORT when the
 * kernel or provider cannot do dma-buf at all, and with another error (bad fd) when it can. */
static int dmabuf_works(struct ibv_pd *pd) {
  if (!c4_ib_v.reg_dmabuf_mr) return 0;
  errno = 0;
  struct ibv_mr *m = c4_ib_v.reg_dmabuf_mr(pd, 0, 0, 0, -1, 0);
  if (m) {
    c4_ib_v.dereg_mr(m);
    return 1;
  }
  return errno != EOPNOTSUPP && errno != EPROTONOSUPPORT;
}

/* Opens port `port` of device `dev` as plugin device ib.dev[ib.ndev]. Returns 0, or a code after
 * logging why the port is skipped. */
static int open_port(struct ibv_device *dev, const char *name, int port,
                     const struct ibv_device_attr *dattr, const struct ibv_port_attr *pattr) {
  struct c4_ib_dev *d = &ib.dev[ib.ndev];
  memset(d, 0, sizeof *d);
  snprintf(d->name, sizeof d->name, "%s", name);
  d->port = port;
  d->lid = pattr->lid;
  d->lmc = pattr->lmc;
  d->link_layer = pattr->link_layer == IBV_LINK_LAYER_ETHERNET ? C4_IB_LINK_ETH : C4_IB_LINK_IB;
  d->mtu = (uint8_t)pattr->active_mtu;
  d->speed_mbps = c4_ib_speed_mbps(pattr->active_width, pattr->active_speed);
  d->guid = be64toh(dattr->sys_image_guid);
  c4_ib_pci_path("/sys", name, d->pci_path, sizeof d->pci_path);
  int given = (int)env2("C4_IB_GID_INDEX", "NCCL_IB_GID_INDEX", -1, -1, 255);
  int rc;
  if (d->link_layer == C4_IB_LINK_ETH) {
    rc = c4_ib_gid_pick("/sys", name, port, pattr->gid_tbl_len, given, &d->gid_index);
    if (rc != 0) {
      C4_WARN("%s:%d (RoCE): %s; skipping the port", name, port,
              rc == C4_EINVAL ? "the GID index given (C4_IB_GID_INDEX / NCCL_IB_GID_INDEX) is "
                                "beyond its GID table"
                              : "no RoCE v2 GID (give its netdev an IP address, or set "
                                "NCCL_IB_GID_INDEX)");
      return rc;
    }
  } else {
    d->gid_index = given >= 0 ? given : 0;
  }
  if (!(d->ctx = c4_ib_v.open_device(dev))) {
    C4_WARN("%s:%d: couldn't open the device: %s", name, port, strerror(errno));
    return C4_ESYS;
  }
  rc = C4_ESYS;
  if ((errno = c4_ib_v.query_gid(d->ctx, (uint8_t)port, d->gid_index, &d->gid)) != 0) {
    C4_WARN("%s:%d: couldn't read GID %d: %s", name, port, d->gid_index, strerror(errno));
    goto close_ctx;
  }
  if (!(d->pd = c4_ib_v.alloc_pd(d->ctx))) {
    C4_WARN("%s:%d: couldn't allocate a protection domain: %s", name, port, strerror(errno));
    goto close_ctx;
  }
  d->ptr_support = c4_ib_ptr_support(c4_ib_cfg.gdr, c4_ib_peermem_loaded("/sys", "/proc/modules"),
                                     dmabuf_works(d->pd));
  struct c4_ib_mr_ops ops = {.reg = mr_reg, .dereg = mr_dereg, .ctx = d};
  long page = sysconf(_SC_PAGESIZE);
  if ((rc = c4_ib_mr_cache_init(&d->mrc, &ops, page > 0 ? (size_t)page : 4096, c4_ib_cfg.mr_max,
                                c4_ib_cfg.mr_keep)) != 0)
    goto free_pd;
  ib.ndev++;
  return 0;
free_pd:
  c4_ib_v.dealloc_pd(d->pd);
close_ctx:
  c4_ib_v.close_device(d->ctx);
  return rc;
}

/* Adds every active port of one device that passes the HCA list. */
static void scan_device(struct ibv_device *dev, const char *hca) {
  const char *name = c4_ib_v.get_device_name(dev);
  struct ibv_context *ctx = c4_ib_v.open_device(dev);
  if (!ctx) {
    C4_WARN("%s: couldn't open the device: %s", name, strerror(errno));
    return;
  }
  struct ibv_device_attr dattr;
  if ((errno = c4_ib_v.query_device(ctx, &dattr)) != 0) {
    C4_WARN("%s: couldn't query the device: %s", name, strerror(errno));
    c4_ib_v.close_device(ctx);
    return;
  }
  for (int port = 1; port <= dattr.phys_port_cnt && ib.ndev < IB_MAX_DEVS; port++) {
    struct ibv_port_attr pattr;
    memset(&pattr, 0, sizeof pattr);
    if (c4_ib_v.query_port(ctx, (uint8_t)port, &pattr) != 0) continue;
    if (pattr.state != IBV_PORT_ACTIVE) {
      C4_INFO("%s:%d: port not active; skipped", name, port);
      continue;
    }
    if (!c4_ib_hca_matches(hca, name, port)) {
      C4_INFO("%s:%d: not selected by C4_IB_HCA / NCCL_IB_HCA=%s", name, port, hca);
      continue;
    }
    open_port(dev, name, port, &dattr, &pattr);
  }
  c4_ib_v.close_device(ctx);
}

int c4_ib_setup(void) {
  config_load();
  if (c4_env_long("C4_IB", 1, 0, 1) == 0) {
    C4_INFO("C4_IB=0: verbs transport off; offering sockets");
    return 0;
  }
  char err[256];
  const char *lib = getenv("C4_IBVERBS"); /* another rdma-core, or the tests' fake */
  if (c4_ibv_load(lib && *lib ? lib : "libibverbs.so.1", &c4_ib_v, err, sizeof err) != 0) {
    C4_INFO("verbs transport off (%s); offering sockets", err);
    return 0;
  }
  int n = 0;
  struct ibv_device **list = c4_ib_v.get_device_list(&n);
  static const char *const hca_vars[] = {"C4_IB_HCA", "NCCL_IB_HCA", NULL};
  const char *hca = c4_env_first(hca_vars);
  for (int i = 0; list && i < n && ib.ndev < IB_MAX_DEVS; i++)
    scan_device(list[i], hca);
  if (list) c4_ib_v.free_device_list(list);
  if (ib.ndev == 0) {
    C4_INFO("verbs transport off: %s; offering sockets",
            n == 0 ? "libibverbs finds no RDMA device"
                   : "no active RDMA port passes C4_IB_HCA / NCCL_IB_HCA");
    c4_ibv_unload(&c4_ib_v);
    return 0;
  }
  for (int i = 0; i < ib.ndev; i++) {
    struct c4_ib_dev *d = &ib.dev[i];
    C4_INFO("RDMA device %d: %s:%d, %s, %d Mbps, GID index %d, %s%s", i, d->name, d->port,
            d->link_layer == C4_IB_LINK_ETH ? "RoCE" : "InfiniBand", d->speed_mbps, d->gid_index,
            d->pci_path[0] ? d->pci_path : "no PCI path",
            d->ptr_support & NCCL_PTR_CUDA ? ", GPUDirect RDMA" : "");
  }
  return ib.ndev;
}

void c4_ib_get_props(int dev, struct c4_ib_props *p) {
  struct c4_ib_dev *d = &ib.dev[dev];
  *p = (struct c4_ib_props){.name = d->name,
                            .pci_path = d->pci_path[0] ? d->pci_path : NULL,
                            .guid = d->guid,
                            .ptr_support = d->ptr_support,
                            .speed_mbps = d->speed_mbps,
                            .port = d->port};
}
