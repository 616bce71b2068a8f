/* net_wrap.c -- wrap mode's setup and connections: loads the plugin C4_WRAP names, forwards
 * init, devices, properties, listen, connect, accept, memory registration and close, and wraps
 * each comm so that net_wrap_req.c can time its requests. The identity trailer on listen handles
 * (net_wrap_handle.c) tells a connecting c4 who listens. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "c4_log.h"
#include "c4_random.h"
#include "net_config.h"
#include "net_wire.h"
#include "net_wrap_comm.h"
#include "net_wrap_handle.h"

int c4_wrap_setup(void) {
  if (c4_net_is_inner()) return 0;
  const char *path = getenv("C4_WRAP");
  if (!path || !*path) return 0;
  char err[640];
  int rc = c4_wrap_inner_load(&c4_wrap_lib, path, err, sizeof err);
  if (rc == 0 && c4_wrap_pool_init() != 0) {
    snprintf(err, sizeof err, "no memory for %d comms' timing slots", C4_WRAP_MAX_COMMS);
    rc = C4_ENOMEM;
  }
  if (rc != 0) {
    C4_WARN_SETTING("C4_WRAP: %s; c4 goes on with its own socket transport", err);
    return 0;
  }
  const struct c4_transport_config *cfg = c4_wrap_config_load();
  C4_INFO("C4_WRAP: forwarding to %s (net plugin \"%s\", ncclNet v%d%s), %s", path,
          c4_wrap_lib.name ? c4_wrap_lib.name : "?", c4_wrap_lib.version,
          c4_wrap_lib.is_c4 ? ", a c4 switched into inner mode" : "",
          cfg->timing ? "timing every request" : "not timing (C4_TIMING=0)");
  return 1;
}

int c4_wrap_has(int op) { return c4_wrap_inner_has(&c4_wrap_lib, op); }

/* ---- init and contexts -------------------------------------------------------------------- */

struct wrap_ctx {
  uint64_t nccl_comm;
  void *inner_ctx;
  ncclNetCommConfig_t config;
  int has_config;
};

/* Pre-v11 NCCLs init once and pass no context: one process-wide context stands in. */
static struct wrap_ctx default_ctx;
static pthread_mutex_t default_lock = PTHREAD_MUTEX_INITIALIZER;
static int default_done;
static int default_rc;

static struct wrap_ctx *ctx_of(void *ctx) { return ctx ? ctx : &default_ctx; }

int c4_wrap_init(void **ctx, uint64_t comm_id, ncclNetCommConfig_t *config,
                 ncclDebugLogger_t logger, ncclProfilerCallback_t prof) {
  /* An inner c4 reports nothing to the profiler; any other plugin gets NCCL's callback. */
  ncclProfilerCallback_t inner_prof = c4_wrap_lib.is_c4 ? NULL : prof;
  if (!ctx) {
    pthread_mutex_lock(&default_lock);
    if (!default_done) {
      default_rc =
          c4_wrap_inner_init(&c4_wrap_lib, &default_ctx.inner_ctx, 0, NULL, logger, inner_prof);
      default_done = 1;
    }
    int rc = default_rc;
    pthread_mutex_unlock(&default_lock);
    return rc;
  }
  struct wrap_ctx *c = calloc(1, sizeof *c);
  if (!c) return C4_ENOMEM;
  c->nccl_comm = comm_id;
  if (config) {
    c->config = *config;
    c->has_config = 1;
  }
  int rc = c4_wrap_inner_init(&c4_wrap_lib, &c->inner_ctx, comm_id, config, logger, inner_prof);
  if (rc != 0) {
    free(c);
    return rc;
  }
  *ctx = c;
  return 0;
}

int c4_wrap_finalize(void *ctx) {
  if (!ctx) return 0;
  struct wrap_ctx *c = ctx;
  int rc = c4_wrap_inner_finalize(&c4_wrap_lib, c->inner_ctx);
  free(c);
  return rc;
}

int c4_wrap_set_net_attr(void *ctx, ncclNetAttr_v11_t *attr) {
  return c4_wrap_inner_set_net_attr(&c4_wrap_lib, ctx_of(ctx)->inner_ctx, attr);
}

int c4_wrap_devices(int *ndev) { return c4_wrap_inner_devices(&c4_wrap_lib, ndev); }

int c4_wrap_properties(int dev, ncclNetProperties_v11_t *p) {
  int rc = c4_wrap_inner_properties(&c4_wrap_lib, dev, p);
  if (rc == 0 && p->maxRecvs > C4_WRAP_MAX_RECVS) p->maxRecvs = C4_WRAP_MAX_RECVS;
  return rc;
}

int c4_wrap_make_vdevice(int *d, ncclNetVDeviceProps_t *props) {
  return c4_wrap_inner_make_vdevice(&c4_wrap_lib, d, props);
}

/* ---- listen and accept -------------------------------------------------------------------- */

struct wrap_listen {
  void *inner;
  int dev;
  uint64_t nccl_comm;
  uint64_t conn_id; /* in the trailer: the accepted comm's records carry it */
};

int c4_wrap_listen(void *ctx, int dev, void *handle, void **listen_comm) {
  struct wrap_ctx *x = ctx_of(ctx);
  struct wrap_listen *l = calloc(1, sizeof *l);
  if (!l) return C4_ENOMEM;
  uint8_t canary[NCCL_NET_HANDLE_MAXSIZE];
  c4_wrap_canary(canary, c4_random_u64());
  memcpy(handle, canary, sizeof canary);
  int rc = c4_wrap_inner_listen(&c4_wrap_lib, x->inner_ctx, dev, handle, &l->inner);
  if (rc != 0) {
    free(l);
    return rc;
  }
  l->dev = dev;
  l->nccl_comm = x->nccl_comm;
  l->conn_id = c4_random_u64();
  struct c4_identity self;
  c4_wire_self_identity(&self, dev);
  size_t room = c4_wrap_handle_room(handle, canary);
  size_t put = c4_wrap_put_trailer(handle, room, l->conn_id, &self);
  if (!put) {
    /* The wrapped handle is (or may be) all in use: leave it alone, the peer goes unknown. */
    if (atomic_fetch_add(&c4_wrap_stats.no_room_handles, 1) == 0)
      C4_INFO("wrap: %s's listen handle leaves %zu bytes free, too few for c4's identity "
              "trailer: its peers' records will not name this process",
              c4_wrap_lib.name, room);
  }
  *listen_comm = l;
  return 0;
}

int c4_wrap_accept(void *listen_comm, void **recv_comm, ncclNetDeviceHandle_t **dev_comm) {
  struct wrap_listen *l = listen_comm;
  void *inner = NULL;
  *recv_comm = NULL;
  int rc = c4_wrap_inner_accept(&c4_wrap_lib, l->inner, &inner, dev_comm);
  if (rc != 0 || !inner) return rc;
  /* The connector's identity never reaches the listener: no bytes flow back out of band. */
  struct c4_identity unknown = {.rank = -1, .dev = -1};
  struct c4_wrap_comm *c = c4_wrap_comm_new(inner, 0, l->dev, l->nccl_comm, l->conn_id, &unknown);
  if (!c) {
    c4_wrap_inner_close_recv(&c4_wrap_lib, inner);
    return C4_ENOMEM;
  }
  *recv_comm = c;
  return 0;
}

int c4_wrap_close_listen(void *listen_comm) {
  struct wrap_listen *l = listen_comm;
  int rc = c4_wrap_inner_close_listen(&c4_wrap_lib, l->inner);
  free(l);
  return rc;
}

/* ---- connect ------------------------------------------------------------------------------ */

/* Connects in progress, by handle buffer: the trailer is read and cleared on the first call, and
 * the wrapped plugin may keep its own progress in those bytes on later calls. */
#define PENDING_MAX 1024
static struct {
  pthread_mutex_t lock;
  int n;
  struct pending {
    const void *handle;
    struct c4_wrap_trailer t;
  } e[PENDING_MAX];
} pending = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* The trailer for this handle: from the table on later calls, read and cleared on the first.
 * 0 when the handle carried none (or the table is full: then it is not even looked at). */
static size_t pending_take(void *handle, struct c4_wrap_trailer *t) {
  pthread_mutex_lock(&pending.lock);
  int i = 0;
  while (i < pending.n && pending.e[i].handle != handle)
    i++;
  if (i == pending.n && pending.n < PENDING_MAX) {
    pending.e[i].handle = handle;
    if (c4_wrap_get_trailer(handle, &pending.e[i].t))
      memset((uint8_t *)handle + NCCL_NET_HANDLE_MAXSIZE - pending.e[i].t.size, 0,
             pending.e[i].t.size); /* what the wrapped listen wrote there: zeros, or nothing */
    pending.n++;
  }
  size_t size = 0;
  if (i < pending.n) {
    *t = pending.e[i].t;
    size = t->size;
  }
  pthread_mutex_unlock(&pending.lock);
  return size;
}

static void pending_done(const void *handle) {
  pthread_mutex_lock(&pending.lock);
  for (int i = 0; i < pending.n; i++)
    if (pending.e[i].handle == handle) {
      pending.e[i] = pending.e[--pending.n];
      break;
    }
  pthread_mutex_unlock(&pending.lock);
}

int c4_wrap_connect(void *ctx, int dev, ncclNetCommConfig_t *config, void *handle, void **send_comm,
                    ncclNetDeviceHandle_t **dev_comm) {
  struct wrap_ctx *x = ctx_of(ctx);
  struct c4_wrap_trailer t;
  size_t has = pending_take(handle, &t);
  if (!config && x->has_config) config = &x->config; /* v11 NCCL gave it at init */
  void *inner = NULL;
  *send_comm = NULL;
  int rc = c4_wrap_inner_connect(&c4_wrap_lib, x->inner_ctx, dev, config, handle, &inner, dev_comm);
  if (rc == 0 && !inner) return 0; /* polled: call again */
  pending_done(handle);
  if (rc != 0) return rc;
  if (!has) {
    if (atomic_fetch_add(&c4_wrap_stats.unknown_peers, 1) == 0)
      C4_INFO("wrap: a listen handle carried no c4 identity trailer (the listener is not a "
              "wrapping c4, or its plugin left no room): the peer is unknown in its records");
    t = (struct c4_wrap_trailer){.conn_id = c4_random_u64(), .id = {.rank = -1, .dev = -1}};
  }
  struct c4_wrap_comm *c = c4_wrap_comm_new(inner, 1, dev, x->nccl_comm, t.conn_id, &t.id);
  if (!c) {
    c4_wrap_inner_close_send(&c4_wrap_lib, inner);
    return C4_ENOMEM;
  }
  *send_comm = c;
  return 0;
}

/* ---- memory registration and close -------------------------------------------------------- */

static void *inner_comm(void *comm) { return ((struct c4_wrap_comm *)comm)->inner; }

int c4_wrap_reg_mr(void *comm, void *data, size_t size, int type, void **mhandle) {
  return c4_wrap_inner_reg_mr(&c4_wrap_lib, inner_comm(comm), data, size, type, mhandle);
}

int c4_wrap_reg_mr_dmabuf(void *comm, void *data, size_t size, int type, uint64_t offset, int fd,
                          void **mhandle) {
  return c4_wrap_inner_reg_mr_dmabuf(&c4_wrap_lib, inner_comm(comm), data, size, type, offset, fd,
                                     mhandle);
}

int c4_wrap_dereg_mr(void *comm, void *mhandle) {
  return c4_wrap_inner_dereg_mr(&c4_wrap_lib, inner_comm(comm), mhandle);
}

int c4_wrap_get_device_mr(void *comm, void *mhandle, void **dptr_mhandle) {
  return c4_wrap_inner_get_device_mr(&c4_wrap_lib, inner_comm(comm), mhandle, dptr_mhandle);
}

int c4_wrap_close(void *comm) {
  if (!comm) return 0;
  struct c4_wrap_comm *c = comm;
  int rc = c->is_send ? c4_wrap_inner_close_send(&c4_wrap_lib, c->inner)
                      : c4_wrap_inner_close_recv(&c4_wrap_lib, c->inner);
  c4_wrap_comm_free(c);
  return rc;
}
