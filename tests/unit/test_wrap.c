/* test_wrap.c -- wrap mode (C4_WRAP): the identity trailer, refusing what cannot be wrapped (and
 * falling back to the socket transport), a v8-only vendor plugin (test double) wrapped and
 * translated, fail-soft when a comm's timing slots run out, and the records of c4 wrapping a
 * copy of itself against the records of c4 unwrapped, for the same traffic between two
 * processes. Plugins are loaded from the build (C4_PLUGIN_PATH, C4_BUILD_DIR). */
#include <check.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_clock.h"
#include "c4_err.h"
#include "c4_netapi.h"
#include "c4_trace_read.h"
#include "net_wrap_handle.h"
#include "net_wrap_inner.h"

#define H NCCL_NET_HANDLE_MAXSIZE
#define MAX_RECS 512

static const char *plugin_path(void) {
  const char *p = getenv("C4_PLUGIN_PATH");
  return p && *p ? p : "build/lib/libnccl-net-c4.so";
}

static const char *double_path(const char *name, char *buf, size_t len) {
  const char *b = getenv("C4_BUILD_DIR");
  snprintf(buf, len, "%s/tests/libc4-test-double-%s.so", b && *b ? b : "build", name);
  return buf;
}

/* Copies the plugin to a file of its own (another inode: dlopen loads a second instance). */
static void copy_plugin(char *dir, char *out, size_t len) {
  strcpy(dir, "/tmp/c4-wrap-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(out, len, "%s/libnccl-net-c4-inner.so", dir);
  int in = open(plugin_path(), O_RDONLY), o = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0755);
  ck_assert_int_ge(in, 0);
  ck_assert_int_ge(o, 0);
  char buf[65536];
  ssize_t k;
  while ((k = read(in, buf, sizeof buf)) > 0)
    ck_assert_int_eq(write(o, buf, (size_t)k), k);
  close(in);
  close(o);
}

static void remove_copy(const char *dir, const char *file) {
  unlink(file);
  rmdir(dir);
}

/* Every xfer record of a trace file; lenient: a line still being written is skipped, not failed. */
static int read_xfers_as(const char *path, struct c4_xfer_record *out, int max, int *headers,
                         int lenient) {
  struct c4_trace_reader r;
  ck_assert_int_eq(c4_trace_open(&r, path), 0);
  struct c4_record rec;
  char err[256];
  int n = 0, rc;
  while ((rc = c4_trace_next(&r, &rec, err, sizeof err)) != 0) {
    if (rc != 1 && lenient) continue;
    ck_assert_msg(rc == 1, "%s: %s", path, err);
    if (rec.kind == C4_REC_XFER && n < max) out[n++] = rec.xfer;
  }
  c4_trace_close(&r);
  if (headers) {
    FILE *f = fopen(path, "r");
    char line[4096];
    *headers = 0;
    while (f && fgets(line, sizeof line, f))
      *headers += strstr(line, "\"type\":\"header\"") != NULL;
    if (f) fclose(f);
  }
  return n;
}

static int read_xfers(const char *path, struct c4_xfer_record *out, int max, int *headers) {
  return read_xfers_as(path, out, max, headers, 0);
}

static char trace_path[64];

static void trace_to_temp(void) {
  strcpy(trace_path, "/tmp/c4-wrap-trace-XXXXXX");
  close(mkstemp(trace_path));
  setenv("C4_TRACE", trace_path, 1);
}

/* Before each test: a stuck watch that waits an hour. The tests count the records of completed
 * transfers; on a loaded machine a 2 s stall between a post and its test (the default
 * C4_STUCK_MS) would add pending reports (CI once saw 8 records for 6). The one test of the watch
 * sets its own C4_STUCK_MS. */
static void quiet_stuck_watch(void) { setenv("C4_STUCK_MS", "3600000", 1); }

/* After each test: its trace goes, however the test ended (one left a file in /tmp each run). */
static void remove_trace(void) {
  if (trace_path[0]) unlink(trace_path);
}

/* ---- the trailer ------------------------------------------------------------------------- */

START_TEST(the_trailer_round_trips_full_and_compact_and_refuses_a_spoiled_one) {
  struct c4_identity id = {.host = "node-3", .pid = 99, .rank = 3, .dev = 2};
  uint8_t h[H];
  struct c4_wrap_trailer t;
  memset(h, 0xab, sizeof h);
  ck_assert_uint_eq(c4_wrap_put_trailer(h, H, 0xfeedull, &id), C4_WRAP_TRAILER_FULL);
  ck_assert_uint_eq(h[H - C4_WRAP_TRAILER_FULL - 1], 0xab); /* nothing before it touched */
  ck_assert_uint_eq(c4_wrap_get_trailer(h, &t), C4_WRAP_TRAILER_FULL);
  ck_assert_uint_eq(t.conn_id, 0xfeed);
  ck_assert_str_eq(t.id.host, "node-3");
  ck_assert_int_eq(t.id.pid, 99);
  ck_assert_int_eq(t.id.rank, 3);
  ck_assert_int_eq(t.id.dev, 2);

  memset(h, 0xab, sizeof h);
  ck_assert_uint_eq(c4_wrap_put_trailer(h, 40, 7, &id), C4_WRAP_TRAILER_COMPACT);
  ck_assert_uint_eq(h[H - C4_WRAP_TRAILER_COMPACT - 1], 0xab);
  ck_assert_uint_eq(c4_wrap_get_trailer(h, &t), C4_WRAP_TRAILER_COMPACT);
  ck_assert_uint_eq(t.conn_id, 7);
  ck_assert_int_eq(t.id.rank, 3);
  ck_assert_str_eq(t.id.host, ""); /* compact: the host is not carried */
  ck_assert_int_eq(t.id.dev, -1);

  ck_assert_uint_eq(c4_wrap_put_trailer(h, 15, 7, &id), 0); /* no room: left alone */
  h[H - 10] ^= 1;                                           /* one bit off: no trailer */
  ck_assert_uint_eq(c4_wrap_get_trailer(h, &t), 0);
  ck_assert_int_eq(t.id.rank, -1);
  memset(h, 0, sizeof h);
  ck_assert_uint_eq(c4_wrap_get_trailer(h, &t), 0); /* an all-zero tail is no trailer */
}
END_TEST

START_TEST(room_is_the_untouched_or_all_zero_tail_of_the_handle) {
  uint8_t canary[H], h[H];
  c4_wrap_canary(canary, 12345);
  for (int i = 0; i < H; i++)
    ck_assert_uint_ne(canary[i], 0);
  memcpy(h, canary, H);
  memset(h, 0x11, 20); /* a plugin that wrote 20 bytes */
  ck_assert_uint_eq(c4_wrap_handle_room(h, canary), H - 20);
  memset(h, 0x11, 112); /* c4's own handle: 112 bytes, then zeros */
  memset(h + 112, 0, 16);
  ck_assert_uint_eq(c4_wrap_handle_room(h, canary), 16);
  h[127] = 1; /* a plugin that uses its last byte: no room at all */
  ck_assert_uint_eq(c4_wrap_handle_room(h, canary), 0);
  memcpy(h, canary, H);
  h[120] = 0; /* zeros mixed into the untouched tail stop the untouched run there */
  ck_assert_uint_eq(c4_wrap_handle_room(h, canary), 7);
}
END_TEST

/* ---- what cannot be wrapped ------------------------------------------------------------- */

START_TEST(a_missing_file_is_refused_naming_the_file_and_the_loaders_reason) {
  struct c4_wrap_inner in;
  char err[640];
  ck_assert_int_eq(c4_wrap_inner_load(&in, "/nonexistent/libnccl-net-x.so", err, sizeof err),
                   C4_ENOTFOUND);
  ck_assert_ptr_nonnull(strstr(err, "/nonexistent/libnccl-net-x.so"));
  ck_assert_ptr_nonnull(strstr(err, "No such file"));
  ck_assert_ptr_null(in.dl);
}
END_TEST

START_TEST(a_library_without_ncclnet_tables_is_refused) {
  struct c4_wrap_inner in;
  char err[640], lib[PATH_MAX];
  double_path("cudart", lib, sizeof lib); /* a real .so, with no ncclNetPlugin_v* */
  ck_assert_int_eq(c4_wrap_inner_load(&in, lib, err, sizeof err), C4_ENOTFOUND);
  ck_assert_ptr_nonnull(strstr(err, lib));
  ck_assert_ptr_nonnull(strstr(err, "exports none of ncclNetPlugin_v11"));
}
END_TEST

START_TEST(the_newest_version_is_taken_and_only_a_c4_is_switched_to_inner_mode) {
  struct c4_wrap_inner in;
  char err[640], lib[PATH_MAX], dir[64], copy[128];
  ck_assert_int_eq(c4_wrap_inner_load(&in, double_path("netv8", lib, sizeof lib), err, sizeof err),
                   0);
  ck_assert_int_eq(in.version, 8);
  ck_assert_str_eq(in.name, "fake-v8");
  ck_assert_int_eq(in.is_c4, 0);
  copy_plugin(dir, copy, sizeof copy);
  ck_assert_int_eq(c4_wrap_inner_load(&in, copy, err, sizeof err), 0);
  ck_assert_int_eq(in.version, 11);
  ck_assert_int_eq(in.is_c4, 1);
  remove_copy(dir, copy);
}
END_TEST

/* C4_WRAP that cannot be used: the plugin is c4's socket transport, as without C4_WRAP. */
static void expect_socket_fallback(const char *wrap) {
  setenv("C4_WRAP", wrap, 1);
  setenv("C4_SOCKET_IFNAME", "lo", 1);
  struct c4_netapi api;
  ck_assert_int_eq(c4_netapi_open(&api, plugin_path(), 11), 0);
  int ndev = 0;
  ck_assert_int_eq(c4_netapi_devices(&api, &ndev), ncclSuccess);
  ck_assert_int_eq(ndev, 1);
  ncclNetProperties_v11_t p;
  ck_assert_int_eq(c4_netapi_properties(&api, 0, &p), ncclSuccess);
  ck_assert_str_eq(p.name, "lo");
  uint8_t h[H];
  void *lc = NULL;
  ck_assert_int_eq(c4_netapi_listen(&api, 0, h, &lc), ncclSuccess);
  ck_assert_int_eq(h[0] | h[1] << 8 | h[2] << 16 | (uint32_t)h[3] << 24, 0x484E3443); /* "C4NH" */
  c4_netapi_close_listen(&api, lc);
  c4_netapi_close(&api);
}

START_TEST(a_missing_wrapped_plugin_leaves_c4s_socket_transport_running) {
  expect_socket_fallback("/nonexistent/libnccl-net-x.so");
}
END_TEST

START_TEST(a_wrapped_library_without_tables_leaves_c4s_socket_transport_running) {
  char lib[PATH_MAX];
  expect_socket_fallback(double_path("cudart", lib, sizeof lib));
}
END_TEST

START_TEST(naming_this_plugin_itself_leaves_c4s_socket_transport_running) {
  expect_socket_fallback(plugin_path());
}
END_TEST

/* ---- a v8-only vendor plugin ------------------------------------------------------------ */

struct v8_pair {
  struct c4_netapi api;
  void *open_ctx, *ctx, *send, *recv;
};

/* What NCCL's profiler callback saw: c4's link info, one per connection. */
static struct c4_link_info links[8];
static int nlinks, nstops;

static ncclResult_t profiler_cb(void **event, int type, void *phandle, int64_t plugin_id,
                                void *ext) {
  ck_assert_ptr_nonnull(phandle);
  ck_assert_int_eq(plugin_id, C4_PROFILER_PLUGIN_ID);
  if (type == 0 && nlinks < 8) {
    links[nlinks++] = *(struct c4_link_info *)ext;
    *event = &links[nlinks - 1];
  }
  nstops += type == 1;
  return ncclSuccess;
}

/* Opens c4 (table `version`) wrapping the v8 double and connects a pair in this process. */
static void v8_pair_open(struct v8_pair *p, int version) {
  char lib[PATH_MAX];
  setenv("C4_WRAP", double_path("netv8", lib, sizeof lib), 1);
  setenv("RANK", "5", 1);
  setenv("C4_HOSTNAME", "wrap-host", 1);
  trace_to_temp();
  memset(p, 0, sizeof *p);
  ck_assert_int_eq(c4_netapi_open(&p->api, plugin_path(), version), 0);
  ck_assert_str_eq(p->api.name, "c4");
  if (version == 11) { /* a communicator's own init: its id must reach the records */
    ncclNetCommConfig_t cfg = {.trafficClass = -1};
    ck_assert_int_eq(
        ((const ncclNet_v11_t *)p->api.table)->init(&p->ctx, 0xbeef, &cfg, NULL, profiler_cb),
        ncclSuccess);
    p->open_ctx = p->api.ctx;
    p->api.ctx = p->ctx;
  }
  uint8_t h[H];
  void *lc = NULL;
  ck_assert_int_eq(c4_netapi_listen(&p->api, 0, h, &lc), ncclSuccess);
  for (int i = 0; i < 100 && !p->send; i++)
    ck_assert_int_eq(c4_netapi_connect(&p->api, 0, h, &p->send), ncclSuccess);
  for (int i = 0; i < 100 && !p->recv; i++)
    ck_assert_int_eq(c4_netapi_accept(&p->api, lc, &p->recv), ncclSuccess);
  ck_assert_ptr_nonnull(p->send);
  ck_assert_ptr_nonnull(p->recv);
  ck_assert_int_eq(c4_netapi_close_listen(&p->api, lc), ncclSuccess);
}

/* Closes both comms and finalizes every context the pair made. */
static void v8_pair_close(struct v8_pair *p) {
  ck_assert_int_eq(c4_netapi_close_send(&p->api, p->send), ncclSuccess);
  ck_assert_int_eq(c4_netapi_close_recv(&p->api, p->recv), ncclSuccess);
  if (p->ctx) {
    ck_assert_int_eq(((const ncclNet_v11_t *)p->api.table)->finalize(p->ctx), ncclSuccess);
    p->api.ctx = p->open_ctx;
  }
  c4_netapi_close(&p->api);
}

static void wait_done(struct c4_netapi *api, void *req, int *size) {
  int done = 0;
  for (int i = 0; i < 1000 && !done; i++)
    ck_assert_int_eq(c4_netapi_test(api, req, &done, size), ncclSuccess);
  ck_assert_int_eq(done, 1);
}

/* The xfer records of the in-process trace once `want` of them are there (the writer drains every
 * 10 ms; a loaded machine may take longer), or whatever is there after 10 s; then 50 ms more, so
 * that records beyond `want` would show. */
static int trace_xfers(struct c4_xfer_record *x, int want) {
  uint64_t deadline = c4_now_ns() + 10000000000ull;
  while (read_xfers_as(trace_path, x, MAX_RECS, NULL, 1) < want && c4_now_ns() < deadline)
    usleep(20000);
  usleep(50000); /* the traffic is over: the writer has nothing left to write after this */
  return read_xfers(trace_path, x, MAX_RECS, NULL);
}

START_TEST(a_v8_only_plugin_is_wrapped_translated_and_timed_with_the_listeners_identity) {
  static const int versions[] = {11, 8};
  for (int v = 0; v < 2; v++) {
    pid_t pid = fork(); /* one plugin instance per version: C4_WRAP is read once */
    if (pid == 0) {
      struct v8_pair p;
      v8_pair_open(&p, versions[v]);
      ncclNetProperties_v11_t props;
      ck_assert_int_eq(c4_netapi_properties(&p.api, 0, &props), ncclSuccess);
      ck_assert_str_eq(props.name, "fake-v8");
      ck_assert_int_eq(props.maxRecvs, 8);
      ck_assert_int_eq(props.speed, 100000);
      if (versions[v] == 11) ck_assert_uint_eq(props.maxP2pBytes, 1ull << 30); /* v8: int sizes */
      char out[3][1000], in[3][1000];
      for (int i = 0; i < 3; i++) {
        memset(out[i], 'a' + i, sizeof out[i]);
        void *s = NULL, *r = NULL;
        ck_assert_int_eq(c4_netapi_isend(&p.api, p.send, out[i], 100 * (i + 1), 10 + i, NULL, &s),
                         ncclSuccess);
        ck_assert_int_eq(c4_netapi_irecv(&p.api, p.recv, in[i], sizeof in[i], 10 + i, NULL, &r),
                         ncclSuccess);
        int got = -1;
        wait_done(&p.api, r, &got);
        wait_done(&p.api, s, NULL);
        ck_assert_int_eq(got, 100 * (i + 1));
        ck_assert_int_eq(memcmp(in[i], out[i], (size_t)got), 0);
      }
      v8_pair_close(&p);
      struct c4_xfer_record x[MAX_RECS];
      int n = trace_xfers(x, 6), sends = 0;
      ck_assert_int_eq(n, 6);
      for (int i = 0; i < n; i++) {
        ck_assert_int_eq(x[i].status, C4_XFER_OK);
        ck_assert_int_eq(x[i].tag, 10 + (int)x[i].seq);
        ck_assert_uint_eq(x[i].bytes, 100 * (x[i].seq + 1));
        ck_assert_uint_eq(x[i].conn_id, x[0].conn_id); /* the listener's id, on both ends */
        ck_assert_uint_eq(x[i].nccl_comm, versions[v] == 11 ? 0xbeef : 0);
        ck_assert_uint_eq(x[i].t_first_byte, 0);
        ck_assert_uint_le(x[i].t_posted, x[i].t_done);
        ck_assert_str_eq(x[i].self.host, "wrap-host");
        ck_assert_int_eq(x[i].self.rank, 5);
        if (x[i].dir == C4_DIR_SEND) { /* the double leaves 112 bytes: the full trailer */
          sends++;
          ck_assert_str_eq(x[i].peer.host, "wrap-host");
          ck_assert_int_eq(x[i].peer.pid, getpid());
          ck_assert_int_eq(x[i].peer.rank, 5);
          ck_assert_int_eq(x[i].peer.dev, 0);
        } else {
          ck_assert_int_eq(x[i].peer.rank, -1); /* the connector's identity never arrives */
        }
      }
      ck_assert_int_eq(sends, 3);
      unlink(trace_path);
      exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "ncclNet v%d", versions[v]);
  }
}
END_TEST

START_TEST(a_grouped_receive_reaches_a_v8_plugin_with_int_sizes_and_yields_one_record_each) {
  struct v8_pair p;
  v8_pair_open(&p, 11);
  const ncclNet_v11_t *t = p.api.table;
  char a[64] = "first", b[64] = "second", ra[64], rb[64];
  void *sa = NULL, *sb = NULL, *r = NULL;
  ck_assert_int_eq(t->isend(p.send, a, 6, 1, NULL, NULL, &sa), ncclSuccess);
  ck_assert_int_eq(t->isend(p.send, b, 7, 2, NULL, NULL, &sb), ncclSuccess);
  void *bufs[2] = {ra, rb}, *mh[2] = {NULL, NULL};
  size_t sizes[2] = {sizeof ra, sizeof rb};
  int tags[2] = {1, 2}, got[2] = {0, 0}, done = 0;
  ck_assert_int_eq(t->irecv(p.recv, 2, bufs, sizes, tags, mh, NULL, &r), ncclSuccess);
  ck_assert_ptr_nonnull(r);
  for (int i = 0; i < 100 && !done; i++)
    ck_assert_int_eq(t->test(r, &done, got), ncclSuccess);
  ck_assert_int_eq(done, 1);
  ck_assert_int_eq(got[0], 6);
  ck_assert_int_eq(got[1], 7);
  ck_assert_str_eq(rb, "second");
  wait_done(&p.api, sa, NULL);
  wait_done(&p.api, sb, NULL);
  struct c4_xfer_record x[MAX_RECS];
  int n = trace_xfers(x, 4), recvs = 0;
  ck_assert_int_eq(n, 4);
  for (int i = 0; i < n; i++)
    if (x[i].dir == C4_DIR_RECV) {
      recvs++;
      ck_assert_int_eq(x[i].tag, 1 + (int)x[i].seq); /* seq 0 tag 1, seq 1 tag 2 */
      ck_assert_uint_eq(x[i].bytes, 6 + x[i].seq);
    }
  ck_assert_int_eq(recvs, 2);
  unlink(trace_path);
  v8_pair_close(&p);
}
END_TEST

START_TEST(more_requests_than_timing_slots_are_forwarded_and_complete_untimed) {
  struct v8_pair p;
  v8_pair_open(&p, 11);
  enum { N = 70 }; /* more than the 64 slots a comm has */
  static char out[N][16], in[N][16];
  void *s[N], *r[N];
  for (int i = 0; i < N; i++) {
    snprintf(out[i], sizeof out[i], "msg %d", i);
    ck_assert_int_eq(c4_netapi_isend(&p.api, p.send, out[i], 16, 0, NULL, &s[i]), ncclSuccess);
    ck_assert_ptr_nonnull(s[i]);
  }
  for (int i = 0; i < N; i++) {
    ck_assert_int_eq(c4_netapi_irecv(&p.api, p.recv, in[i], 16, 0, NULL, &r[i]), ncclSuccess);
    ck_assert_ptr_nonnull(r[i]);
  }
  for (int i = 0; i < N; i++) {
    wait_done(&p.api, r[i], NULL);
    wait_done(&p.api, s[i], NULL);
    ck_assert_str_eq(in[i], out[i]);
  }
  struct c4_xfer_record x[MAX_RECS];
  int n = trace_xfers(x, 2 * 64), count[2][3] = {{0}};
  for (int i = 0; i < n; i++)
    count[x[i].dir & 1][x[i].status % 3]++;
  /* the first 64 each way timed, the rest forwarded untimed */
  ck_assert_msg(count[C4_DIR_SEND][C4_XFER_OK] == 64 && count[C4_DIR_RECV][C4_XFER_OK] == 64,
                "send ok %d, recv ok %d, %d records in all", count[C4_DIR_SEND][C4_XFER_OK],
                count[C4_DIR_RECV][C4_XFER_OK], n);
  unlink(trace_path);
  v8_pair_close(&p);
}
END_TEST

START_TEST(a_wrapped_receive_outstanding_past_c4_stuck_ms_is_reported_once_while_it_waits) {
  setenv("C4_STUCK_MS", "100", 1);
  struct v8_pair p;
  v8_pair_open(&p, 11);
  char a[8] = "late", b[8];
  void *r = NULL, *s = NULL;
  ck_assert_int_eq(c4_netapi_irecv(&p.api, p.recv, b, sizeof b, 3, NULL, &r), ncclSuccess);
  for (int i = 0; i < 40; i++) { /* 400 ms: the watch runs every 10 ms, reports once */
    int done = 1;
    ck_assert_int_eq(c4_netapi_test(&p.api, r, &done, NULL), ncclSuccess);
    ck_assert_int_eq(done, 0);
    usleep(10000);
  }
  ck_assert_int_eq(c4_netapi_isend(&p.api, p.send, a, 5, 3, NULL, &s), ncclSuccess);
  wait_done(&p.api, r, NULL);
  wait_done(&p.api, s, NULL);
  struct c4_xfer_record x[MAX_RECS];
  int n = trace_xfers(x, 3), pending = 0, ok = 0;
  for (int i = 0; i < n; i++) {
    if (x[i].status == C4_XFER_PENDING) {
      pending++;
      ck_assert_int_eq(x[i].dir, C4_DIR_RECV);
      ck_assert_int_eq(x[i].tag, 3);
      ck_assert_uint_eq(x[i].t_done, 0);
    }
    ok += x[i].status == C4_XFER_OK;
  }
  ck_assert_int_eq(pending, 1); /* reported once while stuck... */
  ck_assert_int_eq(ok, 2);      /* ...and again when it completed, with its send */
  unlink(trace_path);
  v8_pair_close(&p);
}
END_TEST

START_TEST(irecv_consumed_is_offered_as_the_wrapped_plugin_has_it_and_gets_its_own_request) {
  struct v8_pair p;
  v8_pair_open(&p, 11);
  const ncclNet_v11_t *t = p.api.table;
  ck_assert_ptr_nonnull(t->irecvConsumed); /* the double has it; c4 alone does not */
  ck_assert_ptr_null(t->getDeviceMr);      /* the double has not */
  char lib[PATH_MAX];
  void *dl = dlopen(double_path("netv8", lib, sizeof lib), RTLD_NOW | RTLD_NOLOAD);
  ck_assert_ptr_nonnull(dl);
  int (*consumed)(void) = (int (*)(void))dlsym(dl, "fake_netv8_consumed");
  ck_assert_ptr_nonnull(consumed);
  char a[8] = "abc", b[8];
  for (int i = 0; i < 3; i++) {
    void *s = NULL, *r = NULL;
    ck_assert_int_eq(c4_netapi_isend(&p.api, p.send, a, 4, 0, NULL, &s), ncclSuccess);
    ck_assert_int_eq(c4_netapi_irecv(&p.api, p.recv, b, sizeof b, 0, NULL, &r), ncclSuccess);
    wait_done(&p.api, r, NULL);
    wait_done(&p.api, s, NULL);
    ck_assert_int_eq(t->irecvConsumed(p.recv, 1, r), ncclSuccess); /* as NCCL does, after test */
    ck_assert_int_eq(consumed(), i + 1);
  }
  dlclose(dl);
  v8_pair_close(&p);
}
END_TEST

START_TEST(the_profiler_learns_each_wrapped_connection_once_with_its_record_id) {
  struct v8_pair p;
  v8_pair_open(&p, 11);
  const ncclNet_v11_t *t = p.api.table;
  int phandle[4]; /* NCCL's per-step profiler handles; only their being non-NULL matters */
  char a[32] = "x", b[32];
  for (int i = 0; i < 2; i++) {
    void *s = NULL, *r = NULL, *bufs[1] = {b}, *mh[1] = {NULL}, *ph[1] = {&phandle[i]};
    size_t size = sizeof b;
    int tag = 0;
    ck_assert_int_eq(t->isend(p.send, a, 2, 0, NULL, &phandle[2 + i], &s), ncclSuccess);
    ck_assert_int_eq(t->irecv(p.recv, 1, bufs, &size, &tag, mh, ph, &r), ncclSuccess);
    wait_done(&p.api, r, NULL);
    wait_done(&p.api, s, NULL);
  }
  ck_assert_int_eq(nlinks, 2); /* once per connection, not per request */
  ck_assert_int_eq(nstops, 2);
  ck_assert_int_ne(links[0].dir, links[1].dir);
  struct c4_xfer_record x[MAX_RECS];
  ck_assert_int_eq(trace_xfers(x, 4), 4);
  for (int i = 0; i < 2; i++) {
    ck_assert_uint_eq(links[i].magic, C4_LINK_MAGIC);
    ck_assert_uint_eq(links[i].conn_id, x[0].conn_id); /* the records' "conn" */
  }
  unlink(trace_path);
  v8_pair_close(&p);
}
END_TEST

/* ---- a v10 vendor plugin under a v11 NCCL -------------------------------------------------- */

START_TEST(a_v10_plugin_gets_the_v11_config_profiler_handles_and_virtual_devices) {
  char lib[PATH_MAX];
  void *dd = dlopen(double_path("netv10", lib, sizeof lib), RTLD_NOW | RTLD_LOCAL);
  ck_assert_msg(dd != NULL, "%s", dlerror());
  int (*seen)(int) = (int (*)(int))dlsym(dd, "fake_netv10_seen");
  ck_assert_ptr_nonnull(seen);
  setenv("C4_WRAP", lib, 1);
  setenv("RANK", "4", 1);
  trace_to_temp();
  void *dl = dlopen(plugin_path(), RTLD_NOW | RTLD_LOCAL);
  ck_assert_ptr_nonnull(dl);
  const ncclNet_v11_t *t = dlsym(dl, "ncclNetPlugin_v11");
  ck_assert_ptr_nonnull(t);
  void *ctx = NULL;
  ncclNetCommConfig_t cfg = {.trafficClass = 5};
  ck_assert_int_eq(t->init(&ctx, 0x77, &cfg, NULL, profiler_cb), ncclSuccess);
  ck_assert_int_eq(seen(0), 1); /* NCCL's profiler callback reached the plugin */
  ncclNetProperties_v11_t props;
  ck_assert_int_eq(t->getProperties(0, &props), ncclSuccess);
  ck_assert_str_eq(props.name, "fake-v10");
  ck_assert_int_eq(props.maxRecvs, 8); /* capped: c4 keeps 8 receives per request */
  ck_assert_uint_eq(props.maxP2pBytes, 1ull << 33);
  ck_assert_int_eq(props.maxMultiRequestSize, 1);
  ck_assert_ptr_nonnull(t->makeVDevice); /* offered because the plugin has it... */
  ck_assert_ptr_null(t->irecvConsumed);  /* ...and this one not */
  ncclNetVDeviceProps_t vp = {.ndevs = 1, .devs = {0}};
  int vdev = -1;
  ck_assert_int_eq(t->makeVDevice(&vdev, &vp), ncclSuccess);
  ck_assert_int_eq(vdev, 7);
  ck_assert_int_eq(seen(3), 1);

  uint8_t h[H];
  void *lc = NULL, *sc = NULL, *rc = NULL;
  ncclNetDeviceHandle_t *dh = NULL;
  ck_assert_int_eq(t->listen(ctx, 0, h, &lc), ncclSuccess);
  for (int i = 0; i < 100 && !sc; i++)
    ck_assert_int_eq(t->connect(ctx, 0, h, &sc, &dh), ncclSuccess);
  for (int i = 0; i < 100 && !rc; i++)
    ck_assert_int_eq(t->accept(lc, &rc, &dh), ncclSuccess);
  ck_assert_ptr_nonnull(rc);
  ck_assert_int_eq(seen(1), 5); /* the config a v11 NCCL gave at init, at the v10 connect */
  char a[3000], b[4000];
  memset(a, 7, sizeof a);
  int ph_s, ph_r, tag = 9, got = 0, done = 0;
  void *sr = NULL, *rr = NULL, *bufs[1] = {b}, *mh[1] = {NULL}, *ph[1] = {&ph_r};
  size_t size = sizeof b;
  ck_assert_int_eq(t->isend(sc, a, sizeof a, 9, NULL, &ph_s, &sr), ncclSuccess);
  ck_assert_int_eq(t->irecv(rc, 1, bufs, &size, &tag, mh, ph, &rr), ncclSuccess);
  for (int i = 0; i < 100 && !done; i++)
    ck_assert_int_eq(t->test(rr, &done, &got), ncclSuccess);
  ck_assert_int_eq(got, (int)sizeof a);
  for (done = 0; !done;)
    ck_assert_int_eq(t->test(sr, &done, NULL), ncclSuccess);
  ck_assert_int_eq(seen(2), 2); /* both profiler handles passed through */
  ck_assert_int_eq(nlinks, 2);  /* and c4's link info went to NCCL's profiler */
  struct c4_xfer_record x[MAX_RECS];
  ck_assert_int_eq(trace_xfers(x, 2), 2);
  for (int i = 0; i < 2; i++) {
    ck_assert_uint_eq(x[i].nccl_comm, 0x77);
    ck_assert_uint_eq(x[i].bytes, sizeof a);
    ck_assert_int_eq(x[i].tag, 9);
    ck_assert_uint_eq(x[i].conn_id, links[0].conn_id);
    if (x[i].dir == C4_DIR_SEND) ck_assert_int_eq(x[i].peer.rank, 4);
  }
  ck_assert_int_eq(t->closeSend(sc), ncclSuccess);
  ck_assert_int_eq(t->closeRecv(rc), ncclSuccess);
  ck_assert_int_eq(t->closeListen(lc), ncclSuccess);
  ck_assert_int_eq(t->finalize(ctx), ncclSuccess);
  unlink(trace_path);
}
END_TEST

/* ---- c4 wrapping a copy of itself, against c4 unwrapped ---------------------------------- */

#define NMSG 12
static size_t msg_size(int i) { return i % 3 == 0 ? (size_t)(1 << 20) + (size_t)i : 1000u * i; }

/* One side of a run in its own process: RANK is the side, C4_TRACE its file, C4_WRAP as given. */
static int side(int is_send, int fd, const char *wrap, const char *trace) {
  setenv("RANK", is_send ? "1" : "0", 1);
  setenv("C4_SOCKET_IFNAME", "lo", 1);
  setenv("C4_HOSTNAME", "wrap-test", 1);
  setenv("C4_TRACE", trace, 1);
  if (wrap)
    setenv("C4_WRAP", wrap, 1);
  else
    unsetenv("C4_WRAP");
  struct c4_netapi api;
  if (c4_netapi_open(&api, plugin_path(), 11)) return 2;
  uint8_t h[H];
  void *comm = NULL, *lc = NULL;
  uint64_t deadline = c4_now_ns() + 20000000000ull;
  if (!is_send) {
    if (c4_netapi_listen(&api, 0, h, &lc) != ncclSuccess || write(fd, h, H) != H) return 3;
    while (!comm && c4_now_ns() < deadline)
      if (c4_netapi_accept(&api, lc, &comm) != ncclSuccess) return 4;
    c4_netapi_close_listen(&api, lc);
  } else {
    if (read(fd, h, H) != H) return 5;
    while (!comm && c4_now_ns() < deadline)
      if (c4_netapi_connect(&api, 0, h, &comm) != ncclSuccess) return 6;
  }
  if (!comm) return 7;
  char *buf = malloc((1 << 20) + NMSG);
  for (int i = 0; i < NMSG; i++) {
    void *req = NULL;
    memset(buf, i, msg_size(i));
    while (!req && c4_now_ns() < deadline)
      if ((is_send ? c4_netapi_isend(&api, comm, buf, msg_size(i), 20 + i, NULL, &req)
                   : c4_netapi_irecv(&api, comm, buf, (1 << 20) + NMSG, 20 + i, NULL, &req)) !=
          ncclSuccess)
        return 8;
    int done = 0, got = 0;
    while (!done && c4_now_ns() < deadline)
      if (c4_netapi_test(&api, req, &done, &got) != ncclSuccess) return 9;
    if (!done || (!is_send && (size_t)got != msg_size(i))) return 10;
  }
  free(buf);
  if (is_send)
    c4_netapi_close_send(&api, comm);
  else
    c4_netapi_close_recv(&api, comm);
  c4_netapi_close(&api);
  exit(0); /* not _exit: the telemetry's atexit flush writes the rest of the trace */
}

static int run_pair(const char *wrap, const char *recv_trace, const char *send_trace) {
  int p[2];
  ck_assert_int_eq(pipe(p), 0);
  fflush(NULL);
  pid_t r = fork();
  if (r == 0) exit(side(0, p[1], wrap, recv_trace));
  pid_t s = fork();
  if (s == 0) exit(side(1, p[0], wrap, send_trace));
  close(p[0]);
  close(p[1]);
  int st1, st2;
  waitpid(r, &st1, 0);
  waitpid(s, &st2, 0);
  return !(WIFEXITED(st1) && !WEXITSTATUS(st1) && WIFEXITED(st2) && !WEXITSTATUS(st2));
}

static int by_dir_seq(const void *a, const void *b) {
  const struct c4_xfer_record *x = a, *y = b;
  if (x->dir != y->dir) return x->dir - y->dir;
  return x->seq < y->seq ? -1 : x->seq > y->seq;
}

/* A run's records from both sides, sorted by direction and seq; *span the summed durations. */
static int run_records(const char *wrap, struct c4_xfer_record *x, uint64_t *span, int *headers) {
  char rt[] = "/tmp/c4-wrap-rt-XXXXXX", st[] = "/tmp/c4-wrap-st-XXXXXX";
  close(mkstemp(rt));
  close(mkstemp(st));
  ck_assert_msg(run_pair(wrap, rt, st) == 0, "a side failed (%s)", wrap ? "wrapped" : "plain");
  int h1, h2;
  int n = read_xfers(rt, x, MAX_RECS, &h1);
  n += read_xfers(st, x + n, MAX_RECS - n, &h2);
  *headers = h1 + h2;
  unlink(rt);
  unlink(st);
  qsort(x, (size_t)n, sizeof *x, by_dir_seq);
  *span = 0;
  for (int i = 0; i < n; i++) {
    ck_assert_uint_le(x[i].t_posted, x[i].t_done);
    *span += x[i].t_done - x[i].t_posted;
  }
  return n;
}

START_TEST(c4_wrapping_its_own_copy_writes_the_records_of_the_unwrapped_run) {
  char dir[64], copy[128];
  copy_plugin(dir, copy, sizeof copy);
  static struct c4_xfer_record plain[MAX_RECS], wrapped[MAX_RECS];
  uint64_t plain_span, wrapped_span;
  int plain_headers, wrapped_headers;
  int np = run_records(NULL, plain, &plain_span, &plain_headers);
  int nw = run_records(copy, wrapped, &wrapped_span, &wrapped_headers);
  remove_copy(dir, copy);
  ck_assert_int_eq(np, 2 * NMSG);
  ck_assert_int_eq(nw, np);
  ck_assert_int_eq(wrapped_headers, plain_headers); /* the inner c4 wrote no trace of its own */
  for (int i = 0; i < np; i++) {
    const struct c4_xfer_record *a = &plain[i], *b = &wrapped[i];
    ck_assert_int_eq(b->dir, a->dir);
    ck_assert_uint_eq(b->seq, a->seq);
    ck_assert_int_eq(b->status, a->status);
    ck_assert_int_eq(b->tag, a->tag);
    ck_assert_uint_eq(b->bytes, a->bytes);
    ck_assert_uint_eq(b->nccl_comm, a->nccl_comm);
    ck_assert_str_eq(b->self.host, a->self.host);
    ck_assert_int_eq(b->self.rank, a->self.rank);
    ck_assert_int_eq(b->self.dev, a->self.dev);
    ck_assert_uint_eq(b->conn_id, wrapped[0].conn_id); /* one connection, one id on both ends */
    ck_assert_uint_eq(b->t_first_byte, 0);
    if (a->dir == C4_DIR_SEND) {
      ck_assert_int_eq(b->peer.rank, a->peer.rank); /* the compact trailer's rank */
      ck_assert_int_eq(b->peer.rank, 0);
    } else {
      ck_assert_int_eq(b->peer.rank, -1); /* documented: the listener never learns it */
    }
  }
  fprintf(stderr, "test_wrap: %d requests, summed request time %.1f ms plain, %.1f ms wrapped\n",
          np, plain_span / 1e6, wrapped_span / 1e6);
  /* Same traffic, same loopback: the outside timing sees the same order of magnitude. */
  ck_assert_msg(wrapped_span < 10 * plain_span + 1000000000ull,
                "wrapped %llu ns against plain %llu ns", (unsigned long long)wrapped_span,
                (unsigned long long)plain_span);
}
END_TEST

int main(void) {
  setenv("C4_DEBUG", getenv("C4_DEBUG") ? getenv("C4_DEBUG") : "NONE", 1);
  Suite *s = suite_create("wrap");
  TCase *tc = tcase_create("wrap");
  tcase_set_timeout(tc, 120);
  tcase_add_checked_fixture(tc, quiet_stuck_watch, remove_trace);
  tcase_add_test(tc, the_trailer_round_trips_full_and_compact_and_refuses_a_spoiled_one);
  tcase_add_test(tc, room_is_the_untouched_or_all_zero_tail_of_the_handle);
  tcase_add_test(tc, a_missing_file_is_refused_naming_the_file_and_the_loaders_reason);
  tcase_add_test(tc, a_library_without_ncclnet_tables_is_refused);
  tcase_add_test(tc, the_newest_version_is_taken_and_only_a_c4_is_switched_to_inner_mode);
  tcase_add_test(tc, a_missing_wrapped_plugin_leaves_c4s_socket_transport_running);
  tcase_add_test(tc, a_wrapped_library_without_tables_leaves_c4s_socket_transport_running);
  tcase_add_test(tc, naming_this_plugin_itself_leaves_c4s_socket_transport_running);
  tcase_add_test(tc, a_v8_only_plugin_is_wrapped_translated_and_timed_with_the_listeners_identity);
  tcase_add_test(tc,
                 a_grouped_receive_reaches_a_v8_plugin_with_int_sizes_and_yields_one_record_each);
  tcase_add_test(tc, more_requests_than_timing_slots_are_forwarded_and_complete_untimed);
  tcase_add_test(tc,
                 a_wrapped_receive_outstanding_past_c4_stuck_ms_is_reported_once_while_it_waits);
  tcase_add_test(tc,
                 irecv_consumed_is_offered_as_the_wrapped_plugin_has_it_and_gets_its_own_request);
  tcase_add_test(tc, the_profiler_learns_each_wrapped_connection_once_with_its_record_id);
  tcase_add_test(tc, a_v10_plugin_gets_the_v11_config_profiler_handles_and_virtual_devices);
  tcase_add_test(tc, c4_wrapping_its_own_copy_writes_the_records_of_the_unwrapped_run);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
