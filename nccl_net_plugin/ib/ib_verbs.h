/* ib_verbs.h -- libibverbs, loaded at run time: the plugin is not linked against it, so it loads
 * (and offers sockets) on machines without rdma-core. c4_ibv_load dlopens libibverbs.so.1 and
 * resolves the functions below into one table. The data-path calls of verbs.h (ibv_post_send,
 * ibv_post_recv, ibv_poll_cq) are inline wrappers around the provider's ops and need no symbol.
 * Code that uses the table must not call any other ibv_* function. */
#ifndef C4_IB_VERBS_H
#define C4_IB_VERBS_H

#include <infiniband/verbs.h>
#include <stddef.h>

struct c4_ibv {
  void *lib;
  struct ibv_device **(*get_device_list)(int *num_devices);
  void (*free_device_list)(struct ibv_device **list);
  const char *(*get_device_name)(struct ibv_device *device);
  struct ibv_context *(*open_device)(struct ibv_device *device);
  int (*close_device)(struct ibv_context *context);
  int (*query_device)(struct ibv_context *context, struct ibv_device_attr *attr);
  /* the exported symbol; it fills the fields every rdma-core release has (memset the rest) */
  int (*query_port)(struct ibv_context *context, uint8_t port, struct ibv_port_attr *attr);
  int (*query_gid)(struct ibv_context *context, uint8_t port, int index, union ibv_gid *gid);
  struct ibv_pd *(*alloc_pd)(struct ibv_context *context);
  int (*dealloc_pd)(struct ibv_pd *pd);
  struct ibv_mr *(*reg_mr)(struct ibv_pd *pd, void *addr, size_t length, int access);
  /* NULL in rdma-core before v34 (no dma-buf registration) */
  struct ibv_mr *(*reg_dmabuf_mr)(struct ibv_pd *pd, uint64_t offset, size_t length, uint64_t iova,
                                  int fd, int access);
  int (*dereg_mr)(struct ibv_mr *mr);
  struct ibv_cq *(*create_cq)(struct ibv_context *context, int cqe, void *cq_context,
                              struct ibv_comp_channel *channel, int comp_vector);
  int (*destroy_cq)(struct ibv_cq *cq);
  struct ibv_qp *(*create_qp)(struct ibv_pd *pd, struct ibv_qp_init_attr *attr);
  int (*modify_qp)(struct ibv_qp *qp, struct ibv_qp_attr *attr, int attr_mask);
  int (*destroy_qp)(struct ibv_qp *qp);
  const char *(*wc_status_str)(enum ibv_wc_status status);
};

/* Loads `lib` (normally "libibverbs.so.1") into t. Returns 0; or C4_ENOTFOUND with the reason in
 * err (the library is missing, or lacks a required function) and t zeroed. */
int c4_ibv_load(const char *lib, struct c4_ibv *t, char *err, size_t errlen);

/* Unloads what c4_ibv_load loaded; t is zeroed. */
void c4_ibv_unload(struct c4_ibv *t);

#endif
