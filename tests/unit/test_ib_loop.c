/* test_ib_loop.c -- the verbs transport end to end in one process, on a software RDMA device
 * (tests/doubles/fake_ibverbs.c, loaded through C4_IBVERBS because this machine has no RDMA NIC):
 * device discovery and properties, the TCP handshake and QP exchange over loopback, checks on bad
 * peers, the clear-to-send protocol, messages of every size split over several QPs, refusals,
 * flush for GPU memory, and the timing records. What it cannot show is how real NICs behave. */
#include <arpa/inet.h>
#include <check.h>
#include <dlfcn.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_clock.h"
#include "c4_err.h"
#include "c4_ring.h"
#include "c4_telemetry.h"
#include "ib_fake_pair.h"
#include "ib_transport.h"
#include "nccl_net_abi.h"
#include "net_transport.h"

START_TEST(the_fake_port_is_offered_with_its_properties) {
  setup_fake();
  struct c4_ib_props p;
  c4_ib_get_props(0, &p);
  ck_assert_str_eq(p.name, "c4fake0");
  ck_assert_int_eq(p.port, 1);
  ck_assert_int_eq(p.speed_mbps, 100000); /* 4x EDR */
  ck_assert_uint_eq(p.guid, 0x0102030405060708ull);
  ck_assert_int_eq(p.ptr_support, NCCL_PTR_HOST); /* no peer memory, no dma-buf */
}
END_TEST

START_TEST(dma_buf_support_offers_gpu_memory) {
  setenv("C4_FAKE_IB_DMABUF", "1", 1);
  setup_fake();
  struct c4_ib_props p;
  c4_ib_get_props(0, &p);
  ck_assert_int_eq(p.ptr_support, NCCL_PTR_HOST | NCCL_PTR_CUDA | NCCL_PTR_DMABUF);
}
END_TEST

START_TEST(isend_gets_no_request_until_the_receive_is_posted) {
  setup_fake();
  struct c4_ib_comm *s, *r;
  connect_pair(&s, &r);
  static char src[100000], dst[100000];
  for (size_t i = 0; i < sizeof src; i++)
    src[i] = (char)(i * 7 + 1);
  void *ms, *mr;
  ck_assert_int_eq(c4_ib_reg_mr(s, src, sizeof src, NCCL_PTR_HOST, -1, 0, &ms), 0);
  ck_assert_int_eq(c4_ib_reg_mr(r, dst, sizeof dst, NCCL_PTR_HOST, -1, 0, &mr), 0);
  struct c4_ib_request *sreq = NULL, *rreq = NULL;
  for (int i = 0; i < 5; i++) {
    ck_assert_int_eq(c4_ib_isend(s, src, sizeof src, 3, ms, &sreq), 0);
    ck_assert_ptr_null(sreq);
  }
  ck_assert_int_eq(c4_ib_irecv(r, dst, sizeof dst, 3, mr, &rreq), 0);
  ck_assert_ptr_nonnull(rreq);
  ck_assert_int_eq(c4_ib_isend(s, src, sizeof src, 3, ms, &sreq), 0);
  ck_assert_ptr_nonnull(sreq);
  size_t got = 0, sent = 0;
  ck_assert_int_eq(wait_done(rreq, &got), 0);
  ck_assert_int_eq(wait_done(sreq, &sent), 0);
  ck_assert_uint_eq(got, sizeof src);
  ck_assert_uint_eq(sent, sizeof src);
  ck_assert_mem_eq(src, dst, sizeof src);
  c4_ib_dereg_mr(s, ms);
  c4_ib_dereg_mr(r, mr);
  c4_ib_close(s);
  c4_ib_close(r);
}
END_TEST

/* Sizes 0 to 5 MiB + 3, up to 8 in flight, over 4 QPs: every byte lands where it belongs, and a
 * receive posted larger than the message reports the message's size. */
START_TEST(messages_of_every_size_arrive_whole_over_several_qps) {
  setenv("C4_IB_QPS", "4", 1);
  setenv("C4_IB_MIN_SHARE", "4096", 1);
  setup_fake();
  struct c4_ib_comm *s, *r;
  connect_pair(&s, &r);
  enum { N = 40, INFLIGHT = 8, MAXB = (5 << 20) + 3 };
  static const size_t sizes[] = {0, 1, 4095, 4096, 65536, 100003, 1 << 20, MAXB};
  char *src = malloc((size_t)INFLIGHT * MAXB), *dst = malloc((size_t)INFLIGHT * MAXB);
  ck_assert(src && dst);
  void *ms, *mr;
  ck_assert_int_eq(c4_ib_reg_mr(s, src, (size_t)INFLIGHT * MAXB, NCCL_PTR_HOST, -1, 0, &ms), 0);
  ck_assert_int_eq(c4_ib_reg_mr(r, dst, (size_t)INFLIGHT * MAXB, NCCL_PTR_HOST, -1, 0, &mr), 0);
  struct c4_ib_request *sq[N] = {0}, *rq[N] = {0};
  int posted_r = 0, posted_s = 0, done = 0;
  uint64_t t0 = c4_now_ns();
  while (done < N) {
    ck_assert_msg(c4_now_ns() - t0 < 20000000000ull, "stuck at message %d", done);
    if (posted_r < N && posted_r < done + INFLIGHT) {
      char *b = dst + (size_t)(posted_r % INFLIGHT) * MAXB;
      ck_assert_int_eq(c4_ib_irecv(r, b, MAXB, posted_r, mr, &rq[posted_r]), 0);
      if (rq[posted_r]) posted_r++;
    }
    if (posted_s < N && posted_s < done + INFLIGHT) {
      size_t size = sizes[posted_s % 8];
      char *b = src + (size_t)(posted_s % INFLIGHT) * MAXB;
      for (size_t i = 0; i < size; i++)
        b[i] = (char)(i * 31 + (size_t)posted_s);
      ck_assert_int_eq(c4_ib_isend(s, b, size, posted_s, ms, &sq[posted_s]), 0);
      if (sq[posted_s]) posted_s++;
    }
    if (done < posted_s && done < posted_r) {
      size_t got = 0, sent = 0, size = sizes[done % 8];
      ck_assert_int_eq(wait_done(rq[done], &got), 0);
      ck_assert_int_eq(wait_done(sq[done], &sent), 0);
      ck_assert_uint_eq(got, size);
      ck_assert_uint_eq(sent, size);
      char *b = dst + (size_t)(done % INFLIGHT) * MAXB;
      for (size_t i = 0; i < size; i++)
        if (b[i] != (char)(i * 31 + (size_t)done))
          ck_abort_msg("message %d (%zu bytes): byte %zu is wrong", done, size, i);
      done++;
    }
  }
  c4_ib_dereg_mr(s, ms);
  c4_ib_dereg_mr(r, mr);
  c4_ib_close(s);
  c4_ib_close(r);
  free(src);
  free(dst);
}
END_TEST

/* Each end writes one record per request, with the fields the socket transport fills: the same
 * connection id and peers, the sizes, and times in order. */
START_TEST(every_request_gives_a_socket_transport_record) {
  setup_fake();
  struct c4_ib_comm *s, *r;
  connect_pair(&s, &r);
  struct c4_ring *ring = c4_telemetry_ring();
  struct c4_record rec;
  while (c4_ring_pop(ring, &rec)) {
  }
  static char buf[8192];
  void *ms, *mr;
  ck_assert_int_eq(c4_ib_reg_mr(s, buf, sizeof buf, NCCL_PTR_HOST, -1, 0, &ms), 0);
  ck_assert_int_eq(c4_ib_reg_mr(r, buf, sizeof buf, NCCL_PTR_HOST, -1, 0, &mr), 0);
  for (int m = 0; m < 3; m++) {
    struct c4_ib_request *rq, *sq;
    ck_assert_int_eq(c4_ib_irecv(r, buf + 4096, 4096, 11, mr, &rq), 0);
    ck_assert_int_eq(c4_ib_isend(s, buf, 1000 + (size_t)m, 11, ms, &sq), 0);
    ck_assert_ptr_nonnull(sq);
    ck_assert_int_eq(wait_done(sq, NULL), 0);
    ck_assert_int_eq(wait_done(rq, NULL), 0);
  }
  int seen[2] = {0, 0};
  uint64_t conn = 0;
  while (c4_ring_pop(ring, &rec)) {
    ck_assert_int_eq(rec.kind, C4_REC_XFER);
    struct c4_xfer_record *x = &rec.xfer;
    ck_assert_int_eq(x->version, C4_RECORD_VERSION);
    ck_assert_int_eq(x->status, C4_XFER_OK);
    ck_assert_int_eq(x->tag, 11);
    ck_assert_uint_eq(x->nccl_comm, 7);
    ck_assert_uint_eq(x->seq, (uint64_t)seen[x->dir]);
    ck_assert_uint_eq(x->bytes, 1000 + x->seq);
    ck_assert(x->t_posted > 0 && x->t_posted <= x->t_first_byte && x->t_first_byte <= x->t_done);
    ck_assert_int_eq(x->self.pid, getpid());
    ck_assert_int_eq(x->peer.pid, getpid());
    if (!conn) conn = x->conn_id;
    ck_assert_uint_eq(x->conn_id, conn); /* the same on both ends */
    seen[x->dir]++;
  }
  ck_assert_int_eq(seen[C4_DIR_SEND], 3);
  ck_assert_int_eq(seen[C4_DIR_RECV], 3);
  c4_ib_dereg_mr(s, ms);
  c4_ib_dereg_mr(r, mr);
  c4_ib_close(s);
  c4_ib_close(r);
}
END_TEST

/* A receive nobody sends to is reported as pending once it is older than C4_STUCK_MS, once. */
START_TEST(a_stuck_receive_is_reported_pending) {
  setenv("C4_STUCK_MS", "50", 1);
  setup_fake();
  struct c4_ib_comm *s, *r;
  connect_pair(&s, &r);
  static char buf[4096];
  void *mr;
  ck_assert_int_eq(c4_ib_reg_mr(r, buf, sizeof buf, NCCL_PTR_HOST, -1, 0, &mr), 0);
  struct c4_ib_request *rq;
  ck_assert_int_eq(c4_ib_irecv(r, buf, sizeof buf, 4, mr, &rq), 0);
  struct c4_ring *ring = c4_telemetry_ring();
  struct c4_record rec;
  while (c4_ring_pop(ring, &rec)) {
  }
  c4_ib_watch_scan();
  ck_assert(!c4_ring_pop(ring, &rec)); /* not old enough yet */
  usleep(80 * 1000);
  c4_ib_watch_scan();
  c4_ib_watch_scan();
  ck_assert(c4_ring_pop(ring, &rec));
  ck_assert_int_eq(rec.xfer.status, C4_XFER_PENDING);
  ck_assert_int_eq(rec.xfer.dir, C4_DIR_RECV);
  ck_assert_int_eq(rec.xfer.tag, 4);
  ck_assert_uint_eq(rec.xfer.t_done, 0);
  ck_assert(!c4_ring_pop(ring, &rec)); /* reported once */
  c4_ib_close(s);
  c4_ib_close(r);
}
END_TEST

/* A message that does not fit its receive (another tag, or too large) fails the sender's isend
 * and, through the refusal immediate, the receiver's request. */
static void refused(int recv_tag, size_t recv_size, int want_send_rc) {
  setup_fake();
  struct c4_ib_comm *s, *r;
  connect_pair(&s, &r);
  static char buf[8192];
  void *ms, *mr;
  ck_assert_int_eq(c4_ib_reg_mr(s, buf, sizeof buf, NCCL_PTR_HOST, -1, 0, &ms), 0);
  ck_assert_int_eq(c4_ib_reg_mr(r, buf, sizeof buf, NCCL_PTR_HOST, -1, 0, &mr), 0);
  struct c4_ib_request *rq, *sq = NULL;
  ck_assert_int_eq(c4_ib_irecv(r, buf + 4096, recv_size, recv_tag, mr, &rq), 0);
  ck_assert_int_eq(c4_ib_isend(s, buf, 2000, 1, ms, &sq), want_send_rc);
  ck_assert_ptr_null(sq);
  ck_assert_int_eq(wait_done(rq, NULL), C4_EREMOTE);
  c4_ib_close(s);
  c4_ib_close(r);
}

START_TEST(a_tag_that_differs_fails_both_ends) { refused(2, 4096, C4_EPROTO); }
END_TEST

START_TEST(a_message_larger_than_its_receive_fails_both_ends) { refused(1, 1000, C4_ETRUNC); }
END_TEST

START_TEST(gpu_memory_is_flushed_and_host_memory_is_not) {
  setenv("C4_FAKE_IB_DMABUF", "1", 1);
  setup_fake();
  struct c4_ib_comm *s, *r;
  connect_pair(&s, &r);
  static char src[4096], dst[4096];
  void *ms, *mr, *mhost;
  ck_assert_int_eq(c4_ib_reg_mr(s, src, sizeof src, NCCL_PTR_HOST, -1, 0, &ms), 0);
  ck_assert_int_eq(c4_ib_reg_mr(r, dst, sizeof dst, NCCL_PTR_CUDA, -1, 0, &mr), 0);
  struct c4_ib_request *rq, *sq, *fq;
  ck_assert_int_eq(c4_ib_irecv(r, dst, sizeof dst, 0, mr, &rq), 0);
  ck_assert_int_eq(c4_ib_isend(s, src, sizeof src, 0, ms, &sq), 0);
  ck_assert_int_eq(wait_done(rq, NULL), 0);
  ck_assert_int_eq(wait_done(sq, NULL), 0);
  ck_assert_int_eq(c4_ib_iflush(r, dst, mr, &fq), 0);
  ck_assert_ptr_nonnull(fq);
  ck_assert_int_eq(wait_done(fq, NULL), 0);
  ck_assert_int_eq(c4_ib_reg_mr(r, src, sizeof src, NCCL_PTR_HOST, -1, 0, &mhost), 0);
  ck_assert_int_eq(c4_ib_iflush(r, src, mhost, &fq), 0);
  ck_assert_ptr_null(fq); /* host memory: nothing to flush */
  c4_ib_close(s);
  c4_ib_close(r);
}
END_TEST

START_TEST(gpu_memory_is_refused_without_gpudirect) {
  setup_fake();
  struct c4_ib_comm *s, *r;
  connect_pair(&s, &r);
  static char buf[4096];
  void *m;
  ck_assert_int_eq(c4_ib_reg_mr(r, buf, sizeof buf, NCCL_PTR_CUDA, -1, 0, &m), C4_EINVAL);
  c4_ib_close(s);
  c4_ib_close(r);
}
END_TEST

/* A connection that does not speak c4's handshake is rejected and counted; the listener then
 * still connects a real peer. A handle from a socket device is refused by the verbs connector. */
START_TEST(bad_peers_are_rejected_and_the_listener_goes_on) {
  setenv("C4_HANDSHAKE_TIMEOUT_MS", "200", 1);
  setup_fake();
  uint8_t handle[C4_HANDLE_SIZE] = {0};
  struct c4_ib_listen *l;
  struct sockaddr_storage addr = loopback();
  ck_assert_int_eq(c4_ib_listen(&cfg, 0, 7, &addr, handle, &l), 0);
  struct c4_wire_handle h;
  char err[160];
  ck_assert_int_eq(c4_wire_get_handle(handle, &h, err, sizeof err), 0);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  ck_assert_int_eq(connect(fd, (struct sockaddr *)&h.addr, sizeof(struct sockaddr_in)), 0);
  char junk[C4_HELLO_SIZE];
  memset(junk, 'x', sizeof junk);
  ck_assert_int_eq(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
  unsigned long before = atomic_load(&c4_transport_stats.rejected_peers);
  struct c4_ib_comm *r = NULL;
  uint64_t t0 = c4_now_ns();
  while (atomic_load(&c4_transport_stats.rejected_peers) == before) {
    ck_assert_int_eq(c4_ib_accept(l, &r), 0);
    ck_assert_ptr_null(r);
    ck_assert_msg(c4_now_ns() - t0 < 3000000000ull, "junk was not rejected");
  }
  close(fd);
  struct c4_ib_comm *s = NULL;
  t0 = c4_now_ns();
  while (!s || !r) {
    if (!s) ck_assert_int_eq(c4_ib_connect(&cfg, 0, 7, handle, &s), 0);
    if (!r) ck_assert_int_eq(c4_ib_accept(l, &r), 0);
    ck_assert_msg(c4_now_ns() - t0 < 5000000000ull, "no connection after the bad peer");
  }
  c4_ib_close_listen(l);
  c4_ib_close(s);
  c4_ib_close(r);
  handle[10] = 0; /* a socket-transport handle */
  memset(handle + 120, 0, 8);
  ck_assert_int_eq(c4_ib_connect(&cfg, 0, 7, handle, &s), C4_EPROTO);
}
END_TEST

/* The plugin as NCCL sees it (dlopen, ncclNetPlugin_v11): with an RDMA port there, the devices
 * are RDMA ports and every call reaches the verbs transport. */
START_TEST(nccl_sees_the_rdma_port_through_the_plugin) {
  use_fake();
  setenv("C4_SOCKET_IFNAME", "lo", 1);
  char path[PATH_MAX + 64];
  beside_test("../lib/libnccl-net-c4.so", path, sizeof path);
  void *so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(so, "%s", dlerror());
  const ncclNet_v11_t *net = dlsym(so, "ncclNetPlugin_v11");
  ck_assert_ptr_nonnull(net);
  void *ctx = NULL;
  ck_assert_int_eq(net->init(&ctx, 42, NULL, NULL, NULL), ncclSuccess);
  int ndev = 0;
  ck_assert_int_eq(net->devices(&ndev), ncclSuccess);
  ck_assert_int_eq(ndev, 1);
  ncclNetProperties_v11_t props;
  ck_assert_int_eq(net->getProperties(0, &props), ncclSuccess);
  ck_assert_str_eq(props.name, "c4fake0");
  ck_assert_int_eq(props.speed, 100000);
  ck_assert_int_eq(props.port, 1);
  ck_assert_int_eq(props.ptrSupport, NCCL_PTR_HOST);
  ck_assert_int_eq(props.maxRecvs, 1);
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {0};
  void *l = NULL, *s = NULL, *r = NULL;
  ck_assert_int_eq(net->listen(ctx, 0, handle, &l), ncclSuccess);
  uint64_t t0 = c4_now_ns();
  while (!s || !r) {
    if (!s) ck_assert_int_eq(net->connect(ctx, 0, handle, &s, NULL), ncclSuccess);
    if (!r) ck_assert_int_eq(net->accept(l, &r, NULL), ncclSuccess);
    ck_assert(c4_now_ns() - t0 < 5000000000ull);
  }
  ck_assert_int_eq(net->closeListen(l), ncclSuccess);
  static char src[300000], dst[300000];
  for (size_t i = 0; i < sizeof src; i++)
    src[i] = (char)(i ^ 0x5a);
  void *ms, *mr;
  ck_assert_int_eq(net->regMr(s, src, sizeof src, NCCL_PTR_HOST, &ms), ncclSuccess);
  ck_assert_int_eq(net->regMr(r, dst, sizeof dst, NCCL_PTR_HOST, &mr), ncclSuccess);
  void *sreq = NULL, *rreq = NULL;
  ck_assert_int_eq(net->isend(s, src, sizeof src, 5, ms, NULL, &sreq), ncclSuccess);
  ck_assert_ptr_null(sreq); /* not posted on the other side yet */
  void *data[1] = {dst};
  size_t sizes[1] = {sizeof dst};
  int tags[1] = {5};
  void *mhs[1] = {mr};
  ck_assert_int_eq(net->irecv(r, 1, data, sizes, tags, mhs, NULL, &rreq), ncclSuccess);
  ck_assert_ptr_nonnull(rreq);
  ck_assert_int_eq(net->isend(s, src, sizeof src, 5, ms, NULL, &sreq), ncclSuccess);
  ck_assert_ptr_nonnull(sreq);
  int sdone = 0, rdone = 0, got = 0;
  while (!sdone || !rdone) {
    if (!sdone) ck_assert_int_eq(net->test(sreq, &sdone, NULL), ncclSuccess);
    if (!rdone) ck_assert_int_eq(net->test(rreq, &rdone, &got), ncclSuccess);
    ck_assert(c4_now_ns() - t0 < 10000000000ull);
  }
  ck_assert_int_eq(got, (int)sizeof src);
  ck_assert_mem_eq(src, dst, sizeof src);
  void *freq = (void *)1;
  int fsize = (int)sizeof dst;
  ck_assert_int_eq(net->iflush(r, 1, data, &fsize, mhs, &freq), ncclSuccess);
  ck_assert_ptr_null(freq); /* host memory */
  ck_assert_int_eq(net->deregMr(s, ms), ncclSuccess);
  ck_assert_int_eq(net->deregMr(r, mr), ncclSuccess);
  ck_assert_int_eq(net->closeSend(s), ncclSuccess);
  ck_assert_int_eq(net->closeRecv(r), ncclSuccess);
  ck_assert_int_eq(net->finalize(ctx), ncclSuccess);
}
END_TEST

START_TEST(without_verbs_the_plugin_offers_sockets) {
  setenv("C4_IBVERBS", "libc4-no-such-ibverbs.so.1", 1);
  setenv("C4_SOCKET_IFNAME", "lo", 1);
  char path[PATH_MAX + 64];
  beside_test("../lib/libnccl-net-c4.so", path, sizeof path);
  void *so = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(so, "%s", dlerror());
  const ncclNet_v11_t *net = dlsym(so, "ncclNetPlugin_v11");
  void *ctx = NULL;
  ck_assert_int_eq(net->init(&ctx, 1, NULL, NULL, NULL), ncclSuccess);
  int ndev = 0;
  ck_assert_int_eq(net->devices(&ndev), ncclSuccess);
  ck_assert_int_eq(ndev, 1);
  ncclNetProperties_v11_t props;
  ck_assert_int_eq(net->getProperties(0, &props), ncclSuccess);
  ck_assert_str_eq(props.name, "lo");
  net->finalize(ctx);
}
END_TEST

int main(void) {
  Suite *su = suite_create("ib_loop");
  TCase *t = tcase_create("fake_device");
  tcase_set_timeout(t, 60);
  tcase_add_test(t, the_fake_port_is_offered_with_its_properties);
  tcase_add_test(t, dma_buf_support_offers_gpu_memory);
  tcase_add_test(t, isend_gets_no_request_until_the_receive_is_posted);
  tcase_add_test(t, messages_of_every_size_arrive_whole_over_several_qps);
  tcase_add_test(t, every_request_gives_a_socket_transport_record);
  tcase_add_test(t, a_stuck_receive_is_reported_pending);
  tcase_add_test(t, a_tag_that_differs_fails_both_ends);
  tcase_add_test(t, a_message_larger_than_its_receive_fails_both_ends);
  tcase_add_test(t, gpu_memory_is_flushed_and_host_memory_is_not);
  tcase_add_test(t, gpu_memory_is_refused_without_gpudirect);
  tcase_add_test(t, bad_peers_are_rejected_and_the_listener_goes_on);
  tcase_add_test(t, nccl_sees_the_rdma_port_through_the_plugin);
  tcase_add_test(t, without_verbs_the_plugin_offers_sockets);
  suite_add_tcase(su, t);
  return c4_check_run(su);
}
