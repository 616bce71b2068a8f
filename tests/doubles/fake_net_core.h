/* fake_net_core.h -- TEST DOUBLE core shared by fake_netv8.c and fake_netv10.c: the inside of a
 * pretend vendor NCCL net plugin for wrap mode's tests. It writes a 16-byte listen handle and
 * leaves the rest of the 128 bytes alone, and moves data inside one process (both ends of a
 * connection live in the test process): a send completes when a receive takes it, in posting
 * order, one send per receive slot of a grouped irecv. Its irecvConsumed insists on getting its
 * own request back. Each file adds the exported table of one ncclNet version. Not a transport;
 * never shipped. Static inline: each double uses what its version needs. */
#ifndef C4_FAKE_NET_CORE_H
#define C4_FAKE_NET_CORE_H

#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nccl_net_abi.h"

#define FAKE_MAX_CONNS 64
#define FAKE_MAX_OPS 256 /* requests per connection per direction, over a test's life */
#define FAKE_HANDLE_MAGIC 0x3856464bu

struct fake_op {
  struct fake_conn *conn;
  int is_send;
  int n;
  void *data[8];
  size_t size[8];
  int tag[8];
  size_t got[8];
  int matched; /* sends: 1 once taken; receives: slots filled */
  int failed;
};

struct fake_conn {
  int listening, connected, accepted;
  struct fake_op sends[FAKE_MAX_OPS], recvs[FAKE_MAX_OPS];
  int nsends, nrecvs;
  int next_send; /* first send not yet taken */
  int next_recv; /* first receive not yet full */
};

static struct fake_conn fake_conns[FAKE_MAX_CONNS];
static int fake_nconns, fake_nconsumed;
static pthread_mutex_t fake_lock = PTHREAD_MUTEX_INITIALIZER;

static inline ncclResult_t fake_devices(int *ndev) {
  *ndev = 1;
  return ncclSuccess;
}

static inline ncclResult_t fake_listen(int dev, void *handle, void **listen_comm) {
  (void)dev;
  pthread_mutex_lock(&fake_lock);
  int i = fake_nconns < FAKE_MAX_CONNS ? fake_nconns++ : -1;
  pthread_mutex_unlock(&fake_lock);
  if (i < 0) return ncclSystemError;
  fake_conns[i].listening = 1;
  uint32_t h[4] = {FAKE_HANDLE_MAGIC, (uint32_t)i, 0, 0};
  memcpy(handle, h, sizeof h); /* 16 bytes; the other 112 are not this plugin's */
  *listen_comm = &fake_conns[i];
  return ncclSuccess;
}

static inline ncclResult_t fake_connect(void *handle, void **send_comm) {
  uint32_t h[4];
  memcpy(h, handle, sizeof h);
  if (h[0] != FAKE_HANDLE_MAGIC || h[1] >= FAKE_MAX_CONNS || !fake_conns[h[1]].listening)
    return ncclInvalidUsage;
  fake_conns[h[1]].connected = 1;
  *send_comm = (char *)&fake_conns[h[1]] + 1; /* send end: odd address, receive end: the conn */
  return ncclSuccess;
}

static inline ncclResult_t fake_accept(void *listen_comm, void **recv_comm,
                                       ncclNetDeviceHandle_t **dev_comm) {
  (void)dev_comm;
  struct fake_conn *c = listen_comm;
  *recv_comm = c->connected && !c->accepted ? c : NULL;
  if (*recv_comm) c->accepted = 1;
  return ncclSuccess;
}

static inline ncclResult_t fake_reg_mr(void *comm, void *data, size_t size, int type,
                                       void **mhandle) {
  (void)comm, (void)data, (void)size;
  *mhandle = type == NCCL_PTR_HOST ? (void *)&fake_lock : NULL;
  return type == NCCL_PTR_HOST ? ncclSuccess : ncclInternalError;
}

static inline ncclResult_t fake_reg_mr_dmabuf(void *comm, void *data, size_t size, int type,
                                              uint64_t offset, int fd, void **mhandle) {
  (void)offset, (void)fd;
  return fake_reg_mr(comm, data, size, type, mhandle);
}

static inline ncclResult_t fake_dereg_mr(void *comm, void *mhandle) {
  (void)comm, (void)mhandle;
  return ncclSuccess;
}

static inline struct fake_conn *fake_conn_of(void *comm, int *is_send) {
  *is_send = (uintptr_t)comm & 1;
  return (struct fake_conn *)((uintptr_t)comm & ~(uintptr_t)1);
}

static inline ncclResult_t fake_isend(void *send_comm, void *data, size_t size, int tag,
                                      void **request) {
  int is_send;
  struct fake_conn *c = fake_conn_of(send_comm, &is_send);
  if (!is_send) return ncclInvalidUsage;
  pthread_mutex_lock(&fake_lock);
  struct fake_op *o = c->nsends < FAKE_MAX_OPS ? &c->sends[c->nsends++] : NULL;
  if (o)
    *o = (struct fake_op){
        .conn = c, .is_send = 1, .n = 1, .data = {data}, .size = {size}, .tag = {tag}};
  pthread_mutex_unlock(&fake_lock);
  *request = o;
  return ncclSuccess;
}

static inline ncclResult_t fake_irecv(void *recv_comm, int n, void **data, const size_t *sizes,
                                      const int *tags, void **request) {
  int is_send;
  struct fake_conn *c = fake_conn_of(recv_comm, &is_send);
  if (is_send || n < 1 || n > 8) return ncclInvalidUsage;
  pthread_mutex_lock(&fake_lock);
  struct fake_op *o = c->nrecvs < FAKE_MAX_OPS ? &c->recvs[c->nrecvs++] : NULL;
  if (o) {
    *o = (struct fake_op){.conn = c, .n = n};
    for (int i = 0; i < n; i++) {
      o->data[i] = data[i];
      o->size[i] = sizes[i];
      o->tag[i] = tags[i];
    }
  }
  pthread_mutex_unlock(&fake_lock);
  *request = o;
  return ncclSuccess;
}

/* Hands sends to receive slots in posting order (lock held). */
static inline void fake_progress(struct fake_conn *c) {
  while (c->next_recv < c->nrecvs && c->next_send < c->nsends) {
    struct fake_op *r = &c->recvs[c->next_recv], *s = &c->sends[c->next_send++];
    int k = r->matched++;
    if (s->size[0] > r->size[k] || s->tag[0] != r->tag[k]) r->failed = s->failed = 1;
    if (!r->failed) memcpy(r->data[k], s->data[0], s->size[0]);
    r->got[k] = s->size[0];
    s->matched = 1;
    if (r->matched == r->n) c->next_recv++;
  }
}

static inline ncclResult_t fake_test(void *request, int *done, int *sizes) {
  struct fake_op *o = request;
  pthread_mutex_lock(&fake_lock);
  fake_progress(o->conn);
  int finished = o->is_send ? o->matched : o->matched == o->n;
  int failed = o->failed;
  pthread_mutex_unlock(&fake_lock);
  *done = finished && !failed;
  if (failed) return ncclRemoteError;
  if (*done && sizes)
    for (int i = 0; i < o->n; i++)
      sizes[i] = (int)(o->is_send ? o->size[0] : o->got[i]);
  return ncclSuccess;
}

static inline ncclResult_t fake_iflush(void *recv_comm, int n, void **data, int *sizes,
                                       void **mhandles, void **request) {
  (void)recv_comm, (void)n, (void)data, (void)sizes, (void)mhandles;
  *request = NULL;
  return ncclSuccess;
}

static inline ncclResult_t fake_irecv_consumed(void *recv_comm, int n, void *request) {
  (void)recv_comm;
  struct fake_op *o = request;
  if ((char *)o < (char *)fake_conns || (char *)o >= (char *)(fake_conns + FAKE_MAX_CONNS) ||
      o->is_send || o->n != n)
    return ncclInvalidUsage; /* not a receive request of this plugin's */
  fake_nconsumed++;
  return ncclSuccess;
}

static inline ncclResult_t fake_close(void *comm) {
  (void)comm;
  return ncclSuccess;
}

#endif
