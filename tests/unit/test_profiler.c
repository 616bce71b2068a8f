/* test_profiler.c -- the profiler plugin, loaded from the built .so (C4_PLUGIN_PATH) and driven
 * through its exported v5 and v4 tables in the order NCCL drives them: per-communicator init,
 * Coll start, Coll stop (enqueued), ProxyOp starts and stops from the proxy thread, a PXN op whose
 * parent lives in another process, p2p without network, a collective whose network never
 * finishes. What it writes to C4_TRACE is read back. */
#include <check.h>
#include <dlfcn.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_record.h"
#include "nccl_profiler_abi.h"

static char path[64];
static void *dl;

static void *load(const char *sym) {
  strcpy(path, "/tmp/c4-prof-XXXXXX");
  close(mkstemp(path));
  setenv("C4_TRACE", path, 1);
  setenv("C4_PROF_SETTLE_MS", "20", 1);
  setenv("C4_DEBUG", "NONE", 1);
  const char *p = getenv("C4_PLUGIN_PATH");
  dl = dlopen(p ? p : "build/lib/libnccl-net-c4.so", RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(dl != NULL, "%s", dlerror());
  void *t = dlsym(dl, sym);
  ck_assert_ptr_nonnull(t);
  return t;
}

/* The coll lines written so far, as a JSON array, and the number of comm lines. */
static json_t *colls_in_trace(int *comms) {
  usleep(100000); /* the writer drains every 10 ms */
  json_t *out = json_array();
  FILE *f = fopen(path, "r");
  char line[4096];
  *comms = 0;
  while (f && fgets(line, sizeof line, f)) {
    json_t *j = json_loads(line, 0, NULL);
    ck_assert_ptr_nonnull(j);
    const char *type = json_string_value(json_object_get(j, "type"));
    if (!strcmp(type, "coll")) json_array_append(out, j);
    *comms += !strcmp(type, "comm");
    json_decref(j);
  }
  if (f) fclose(f);
  return out;
}

static json_t *find_seq(json_t *colls, int p2p, long seq) {
  size_t i;
  json_t *c;
  json_array_foreach(colls, i, c) {
    if (json_is_true(json_object_get(c, "p2p")) == p2p &&
        json_integer_value(json_object_get(c, "seq")) == seq)
      return c;
  }
  return NULL;
}

static void coll_descr(ncclProfilerEventDescr_v5_t *d, uint64_t seq) {
  memset(d, 0, sizeof *d);
  d->type = ncclProfileColl;
  d->parentObj = (void *)0x1000; /* the group: never read */
  d->rank = 1;
  d->coll.seqNumber = seq;
  d->coll.func = "AllReduce";
  d->coll.count = 1024;
  d->coll.root = -1;
  d->coll.datatype = "ncclFloat32";
  d->coll.nChannels = 2;
  d->coll.algo = "Ring";
  d->coll.proto = "Simple";
}

static void *proxy_op(const ncclProfiler_v5_t *p, void *ctx, void *parent, pid_t pid) {
  ncclProfilerEventDescr_v5_t d = {.type = ncclProfileProxyOp, .parentObj = parent};
  d.proxyOp.pid = pid;
  d.proxyOp.peer = 2;
  d.proxyOp.isSend = 1;
  void *h = NULL;
  ck_assert_int_eq(p->startEvent(ctx, &h, &d), ncclSuccess);
  return h;
}

START_TEST(v5_times_arrival_and_network_completion_and_waits_for_stuck_collectives) {
  const ncclProfiler_v5_t *p = load("ncclProfiler_v5");
  void *ctx = NULL;
  int mask = 0;
  ck_assert_int_eq(p->init(&ctx, 0x1234, &mask, "comm-A", 2, 4, 1, NULL), ncclSuccess);
  ck_assert_int_eq(mask, ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp |
                             ncclProfileKernelCh | ncclProfileProxyStep | ncclProfileNetPlugin);

  ncclProfilerEventDescr_v5_t d;
  void *coll7 = NULL, *coll8 = NULL, *p2p = NULL;
  coll_descr(&d, 7);
  ck_assert_int_eq(p->startEvent(ctx, &coll7, &d), ncclSuccess);
  ck_assert_ptr_nonnull(coll7);
  ck_assert_int_eq(p->stopEvent(coll7), ncclSuccess); /* enqueued; the network has not started */
  void *op1 = proxy_op(p, ctx, coll7, getpid());
  void *op2 = proxy_op(p, ctx, coll7, getpid());
  void *pxn = proxy_op(p, ctx, (void *)0xdead0000, getpid() + 1); /* parent in another process */
  usleep(5000);
  p->stopEvent(op1);
  usleep(5000);
  p->stopEvent(op2);
  p->stopEvent(pxn);

  memset(&d, 0, sizeof d);
  d.type = ncclProfileP2p;
  d.p2p.func = "Send";
  d.p2p.count = 100;
  d.p2p.datatype = "ncclInt8";
  d.p2p.peer = 3;
  p->startEvent(ctx, &p2p, &d);
  p->stopEvent(p2p);

  coll_descr(&d, 8);
  p->startEvent(ctx, &coll8, &d);
  p->stopEvent(coll8);
  void *stuck = proxy_op(p, ctx, coll8, getpid()); /* never stops: a hang */
  (void)stuck;

  int comms = 0;
  json_t *colls = colls_in_trace(&comms);
  ck_assert_int_eq(comms, 1);
  json_t *c7 = find_seq(colls, 0, 7), *s0 = find_seq(colls, 1, 0);
  ck_assert_ptr_nonnull(c7);
  ck_assert_ptr_nonnull(s0);
  ck_assert_ptr_null(find_seq(colls, 0, 8)); /* stuck: entered, not done */
  ck_assert_str_eq(json_string_value(json_object_get(c7, "func")), "AllReduce");
  ck_assert_str_eq(json_string_value(json_object_get(c7, "comm")), "0000000000001234");
  ck_assert_int_eq(json_integer_value(json_object_get(c7, "bytes")), 4096);
  ck_assert_int_eq(json_integer_value(json_object_get(c7, "rank")), 1);
  ck_assert_int_eq(json_integer_value(json_object_get(c7, "nops")), 2);
  ck_assert_str_eq(json_string_value(json_object_get(c7, "algo")), "Ring");
  json_int_t arrive = json_integer_value(json_object_get(c7, "t_arrive"));
  json_int_t enq = json_integer_value(json_object_get(c7, "t_enqueued"));
  json_int_t done = json_integer_value(json_object_get(c7, "t_done"));
  ck_assert_int_le(arrive, enq);
  ck_assert_int_ge(done - enq, 10000000); /* the last op stopped >= 10 ms after the enqueue */
  ck_assert(json_is_null(json_object_get(s0, "t_done"))); /* no network op: completion unknown */
  ck_assert_int_eq(json_integer_value(json_object_get(s0, "root")), 3);
  json_decref(colls);

  ck_assert_int_eq(p->finalize(ctx), ncclSuccess); /* reports what is left, as it is */
  colls = colls_in_trace(&comms);
  json_t *c8 = find_seq(colls, 0, 8);
  ck_assert_ptr_nonnull(c8);
  ck_assert(json_is_null(json_object_get(c8, "t_done")));
  ck_assert_int_eq(json_integer_value(json_object_get(c8, "nops")), 1);
  json_decref(colls);
  unlink(path);
}
END_TEST

START_TEST(v4_reports_the_same_collective_record) {
  const ncclProfiler_v4_t *p = load("ncclProfiler_v4");
  void *ctx = NULL, *coll = NULL, *op = NULL;
  int mask = 0;
  ck_assert_int_eq(p->init(&ctx, &mask, "comm-B", 0xabcd, 1, 2, 0, NULL), ncclSuccess);
  ck_assert_int_ne(mask & ncclProfileColl, 0);
  ncclProfilerEventDescr_v4_t d = {.type = ncclProfileColl};
  d.coll.seqNumber = 3;
  d.coll.func = "AllGather";
  d.coll.count = 10;
  d.coll.datatype = "ncclBfloat16";
  p->startEvent(ctx, &coll, &d);
  p->stopEvent(coll);
  ncclProfilerEventDescr_v4_t o = {.type = ncclProfileProxyOp, .parentObj = coll};
  o.proxyOp.pid = getpid();
  p->startEvent(ctx, &op, &o);
  p->stopEvent(op);
  int comms;
  json_t *colls = colls_in_trace(&comms);
  json_t *c = find_seq(colls, 0, 3);
  ck_assert_ptr_nonnull(c);
  ck_assert_str_eq(json_string_value(json_object_get(c, "comm")), "000000000000abcd");
  ck_assert_int_eq(json_integer_value(json_object_get(c, "bytes")), 20);
  ck_assert(json_is_integer(json_object_get(c, "t_done")));
  json_decref(colls);
  p->finalize(ctx);
  unlink(path);
}
END_TEST

START_TEST(events_c4_does_not_use_get_no_handle_and_stopping_null_is_harmless) {
  const ncclProfiler_v5_t *p = load("ncclProfiler_v5");
  void *ctx = NULL, *h = (void *)1;
  int mask;
  p->init(&ctx, 1, &mask, "c", 1, 1, 0, NULL);
  ncclProfilerEventDescr_v5_t d = {.type = ncclProfileGroupApi};
  ck_assert_int_eq(p->startEvent(ctx, &h, &d), ncclSuccess);
  ck_assert_ptr_null(h);
  ck_assert_int_eq(p->stopEvent(NULL), ncclSuccess);
  ck_assert_int_eq(p->recordEventState(NULL, 0, NULL), ncclSuccess);
  ck_assert_int_eq(p->finalize(ctx), ncclSuccess);
  unlink(path);
}
END_TEST

START_TEST(a_connection_reported_under_a_proxy_step_becomes_one_link_record) {
  const ncclProfiler_v5_t *p = load("ncclProfiler_v5");
  void *ctx = NULL, *coll = NULL;
  int mask = 0;
  p->init(&ctx, 0x77, &mask, "c", 2, 4, 1, NULL);
  ck_assert_int_ne(mask & ncclProfileProxyStep, 0);
  ck_assert_int_ne(mask & ncclProfileNetPlugin, 0);
  ncclProfilerEventDescr_v5_t d;
  coll_descr(&d, 1);
  p->startEvent(ctx, &coll, &d);
  ncclProfilerEventDescr_v5_t o = {.type = ncclProfileProxyOp, .parentObj = coll};
  o.proxyOp.pid = getpid();
  o.proxyOp.peer = 2;
  o.proxyOp.isSend = 1;
  void *op = NULL, *step = NULL, *net = (void *)1;
  p->startEvent(ctx, &op, &o);
  ncclProfilerEventDescr_v5_t s5 = {.type = ncclProfileProxyStep, .parentObj = op};
  p->startEvent(ctx, &step, &s5);
  ck_assert_ptr_nonnull(step);
  struct c4_link_info link = {.magic = C4_LINK_MAGIC, .conn_id = 0xabc, .dir = C4_DIR_SEND};
  ncclProfilerEventDescr_v5_t n5 = {.type = ncclProfileNetPlugin, .parentObj = step};
  n5.netPlugin.id = C4_PROFILER_PLUGIN_ID;
  n5.netPlugin.data = &link;
  for (int i = 0; i < 3; i++)
    p->startEvent(ctx, &net, &n5); /* once per connection is enough */
  n5.netPlugin.id = 99;            /* another net plugin's data: not read */
  n5.netPlugin.data = (void *)0x10;
  p->startEvent(ctx, &net, &n5);
  p->stopEvent(step);
  p->stopEvent(op);
  p->stopEvent(coll);
  usleep(100000);
  FILE *f = fopen(path, "r");
  char line[4096];
  int links = 0;
  while (fgets(line, sizeof line, f)) {
    if (!strstr(line, "\"type\":\"link\"")) continue;
    links++;
    ck_assert_ptr_nonnull(strstr(line, "\"conn\":\"0000000000000abc\""));
    ck_assert_ptr_nonnull(strstr(line, "\"rank\":1"));
    ck_assert_ptr_nonnull(strstr(line, "\"peer\":2"));
    ck_assert_ptr_nonnull(strstr(line, "\"comm\":\"0000000000000077\""));
    ck_assert_ptr_nonnull(strstr(line, "\"dir\":\"send\""));
  }
  fclose(f);
  ck_assert_int_eq(links, 1);
  p->finalize(ctx);
  unlink(path);
}
END_TEST

/* NCCL's logger: the last message. */
static char logged[1024];
static void logger(int level, unsigned long flags, const char *file, int line, const char *fmt,
                   ...) {
  (void)level, (void)flags, (void)file, (void)line;
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(logged, sizeof logged, fmt, ap);
  va_end(ap);
}

START_TEST(timing_off_asks_nccl_for_no_events_and_records_nothing) {
  setenv("C4_TIMING", "0", 1);
  const ncclProfiler_v5_t *p = load("ncclProfiler_v5");
  void *ctx = (void *)1, *coll = (void *)1;
  int mask = -1;
  ck_assert_int_eq(p->init(&ctx, 0x99, &mask, "c", 1, 2, 0, NULL), ncclSuccess);
  ck_assert_int_eq(mask, 0);
  ncclProfilerEventDescr_v5_t d;
  coll_descr(&d, 1);
  ck_assert_int_eq(p->startEvent(ctx, &coll, &d), ncclSuccess); /* NCCL may still call */
  ck_assert_ptr_null(coll);
  ck_assert_int_eq(p->stopEvent(coll), ncclSuccess);
  ck_assert_int_eq(p->finalize(ctx), ncclSuccess);
  usleep(50000);
  FILE *f = fopen(path, "r");
  ck_assert_int_eq(fgetc(f), EOF); /* not even a header: no telemetry thread ran */
  fclose(f);
  unlink(path);
}
END_TEST

START_TEST(a_bad_timing_value_is_refused_aloud_and_timing_stays_on) {
  setenv("C4_TIMING", "2", 1);
  const ncclProfiler_v5_t *p = load("ncclProfiler_v5");
  void *ctx = NULL;
  int mask = 0;
  ck_assert_int_eq(p->init(&ctx, 0x98, &mask, "c", 1, 2, 0, logger), ncclSuccess);
  ck_assert_ptr_nonnull(strstr(logged, "C4_TIMING=2 refused"));
  ck_assert_int_eq(mask, ncclProfileColl | ncclProfileP2p | ncclProfileProxyOp |
                             ncclProfileKernelCh | ncclProfileProxyStep | ncclProfileNetPlugin);
  p->finalize(ctx);
  unlink(path);
}
END_TEST

/* NCCL's profiler callback, recorded. */
static int calls, starts;
static int64_t seen_id;
static struct c4_link_info seen;
static ncclResult_t record_callback(void **eh, int type, void *phandle, int64_t id, void *data) {
  (void)phandle;
  calls++;
  if (type == 0) {
    starts++;
    seen_id = id;
    if (data) memcpy(&seen, data, sizeof seen);
    *eh = (void *)0x1;
  }
  return ncclSuccess;
}

START_TEST(the_net_plugin_names_each_connection_to_the_profiler_once) {
  load("ncclProfiler_v5");
  setenv("C4_SOCKET_IFNAME", "lo", 1);
  const ncclNet_v11_t *n = dlsym(dl, "ncclNetPlugin_v11");
  ck_assert_ptr_nonnull(n);
  void *nctx = NULL;
  ck_assert_int_eq(n->init(&nctx, 0x77, NULL, NULL, record_callback), ncclSuccess);
  char handle[NCCL_NET_HANDLE_MAXSIZE] = {0};
  void *lc = NULL, *sc = NULL, *rc = NULL;
  ncclNetDeviceHandle_t *dh = NULL;
  ck_assert_int_eq(n->listen(nctx, 0, handle, &lc), ncclSuccess);
  for (int i = 0; i < 100000 && (!sc || !rc); i++) {
    if (!sc) ck_assert_int_eq(n->connect(nctx, 0, handle, &sc, &dh), ncclSuccess);
    if (!rc) ck_assert_int_eq(n->accept(lc, &rc, &dh), ncclSuccess);
  }
  ck_assert_ptr_nonnull(sc);
  ck_assert_ptr_nonnull(rc);
  char buf[64] = "x", out[64];
  void *phandle = (void *)0x1000, *phandles[1] = {(void *)0x2000};
  for (int round = 0; round < 3; round++) {
    void *rr = NULL, *sr = NULL, *data[1] = {out};
    size_t sizes[1] = {sizeof out};
    int tags[1] = {0};
    ck_assert_int_eq(n->irecv(rc, 1, data, sizes, tags, NULL, phandles, &rr), ncclSuccess);
    while (!sr)
      ck_assert_int_eq(n->isend(sc, buf, sizeof buf, 0, NULL, phandle, &sr), ncclSuccess);
    int d1 = 0, d2 = 0, size;
    while (!d1 || !d2) {
      if (!d1) n->test(sr, &d1, &size);
      if (!d2) n->test(rr, &d2, &size);
    }
  }
  ck_assert_int_eq(starts, 2); /* one per connection end, not one per message */
  ck_assert_int_eq(calls, 4);  /* each start is stopped */
  ck_assert_int_eq(seen_id, C4_PROFILER_PLUGIN_ID);
  ck_assert_uint_eq(seen.magic, C4_LINK_MAGIC);
  n->closeSend(sc);
  n->closeRecv(rc);
  n->closeListen(lc);
  n->finalize(nctx);
  unlink(path);
}
END_TEST

int main(void) {
  Suite *s = suite_create("profiler");
  TCase *tc = tcase_create("profiler");
  tcase_set_timeout(tc, 30);
  tcase_add_test(tc, v5_times_arrival_and_network_completion_and_waits_for_stuck_collectives);
  tcase_add_test(tc, v4_reports_the_same_collective_record);
  tcase_add_test(tc, events_c4_does_not_use_get_no_handle_and_stopping_null_is_harmless);
  tcase_add_test(tc, a_connection_reported_under_a_proxy_step_becomes_one_link_record);
  tcase_add_test(tc, the_net_plugin_names_each_connection_to_the_profiler_once);
  tcase_add_test(tc, timing_off_asks_nccl_for_no_events_and_records_nothing);
  tcase_add_test(tc, a_bad_timing_value_is_refused_aloud_and_timing_stays_on);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
