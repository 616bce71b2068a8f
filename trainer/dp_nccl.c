/* dp_nccl.c -- the GPU group: NCCL loaded with dlopen (so c4train starts on machines without
 * CUDA), one communicator over the ranks, gradients summed in place on the GPU. With
 * NCCL_NET_PLUGIN=c4 NCCL's inter-node traffic goes through c4's plugin and is timed there.
 * The declarations below are NCCL's and the CUDA runtime's public C ABI (nccl.h,
 * cuda_runtime_api.h): only the calls used. This path needs a GPU and cannot run on the machine
 * c4 is developed on; `make gpu-check` runs it. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "dp.h"

typedef struct {
  char internal[128];
} nccl_unique_id;
typedef void *nccl_comm;
enum { NCCL_FLOAT32 = 7, NCCL_SUM = 0 };

struct dp_nccl {
  void *nccl, *cudart;
  nccl_comm comm;
  int (*get_unique_id)(nccl_unique_id *);
  int (*comm_init_rank)(nccl_comm *, int, nccl_unique_id, int);
  int (*all_reduce)(const void *, void *, size_t, int, int, nccl_comm, void *);
  int (*comm_destroy)(nccl_comm);
  const char *(*error_string)(int);
  int (*stream_synchronize)(void *);
};

static void *open_first(const char *const *names) {
  for (; *names; names++) {
    void *h = dlopen(*names, RTLD_NOW | RTLD_GLOBAL);
    if (h) return h;
  }
  return NULL;
}

#define FIND(lib, field, sym)                                                                      \
  do {                                                                                             \
    *(void **)&n->field = dlsym(n->lib, sym);                                                      \
    if (!n->field) {                                                                               \
      snprintf(err, errlen, "lib%s has no %s", #lib, sym);                                         \
      goto fail;                                                                                   \
    }                                                                                              \
  } while (0)

int dp_nccl_open(struct dp *d, const struct c4_ranks *r, char *err, size_t errlen) {
  /* the CUDA runtime is already loaded with libc4k-cuda.so; NCCL may sit beside it */
  static const char *const cudart_names[] = {"libcudart.so.13", "libcudart.so.12", "libcudart.so",
                                             "/usr/local/cuda/lib64/libcudart.so", NULL};
  static const char *const nccl_names[] = {"libnccl.so.2", "/usr/local/cuda/lib64/libnccl.so.2",
                                           "libnccl.so", NULL};
  struct dp_nccl *n = calloc(1, sizeof *n);
  if (!n) {
    snprintf(err, errlen, "out of memory");
    return C4_ENOMEM;
  }
  n->cudart = open_first(cudart_names);
  n->nccl = open_first(nccl_names);
  if (!n->cudart || !n->nccl) {
    snprintf(err, errlen, "--device cuda needs %s (not found on the library path)",
             n->cudart ? "libnccl.so.2" : "the CUDA runtime, libcudart.so");
    goto fail;
  }
  FIND(cudart, stream_synchronize, "cudaStreamSynchronize");
  FIND(nccl, get_unique_id, "ncclGetUniqueId");
  FIND(nccl, comm_init_rank, "ncclCommInitRank");
  FIND(nccl, all_reduce, "ncclAllReduce");
  FIND(nccl, comm_destroy, "ncclCommDestroy");
  FIND(nccl, error_string, "ncclGetErrorString");
  /* the GPU is the one the kernels' runtime made current (c4k_cuda_select_device) */
  int rc;
  nccl_unique_id id;
  memset(&id, 0, sizeof id);
  if (r->rank == 0 && (rc = n->get_unique_id(&id)) != 0) {
    snprintf(err, errlen, "ncclGetUniqueId: %s", n->error_string(rc));
    goto fail;
  }
  nccl_unique_id *all = calloc((size_t)r->world, sizeof id);
  if (!all || c4_bootstrap_allgather(&d->bs, &id, all, sizeof id)) {
    snprintf(err, errlen, "exchanging NCCL's unique id failed");
    free(all);
    goto fail;
  }
  id = all[0];
  free(all);
  if ((rc = n->comm_init_rank(&n->comm, r->world, id, r->rank)) != 0) {
    snprintf(err, errlen, "ncclCommInitRank(rank %d of %d): %s", r->rank, r->world,
             n->error_string(rc));
    goto fail;
  }
  d->nccl = n;
  return 0;
fail:
  /* the libraries stay mapped: NCCL or CUDA may have started threads */
  free(n);
  return C4_EINVAL;
}

int dp_nccl_allreduce(struct dp *d, float *grads, size_t n) {
  struct dp_nccl *x = d->nccl;
  for (size_t at = 0; at < n; at += d->bucket_floats) {
    size_t len = n - at < d->bucket_floats ? n - at : d->bucket_floats;
    int rc = x->all_reduce(grads + at, grads + at, len, NCCL_FLOAT32, NCCL_SUM, x->comm, NULL);
    if (rc) {
      fprintf(stderr, "c4train: ncclAllReduce: %s\n", x->error_string(rc));
      return C4_EREMOTE;
    }
  }
  return x->stream_synchronize(NULL) ? -1 : 0;
}

void dp_nccl_close(struct dp *d) {
  if (d->nccl->comm) d->nccl->comm_destroy(d->nccl->comm);
  free(d->nccl);
  d->nccl = NULL;
}
