/* test_plan.c -- the plugin follows C4_PLAN: the reader accepts what c4plan assign writes and
 * rejects bad files saying what is wrong; a real loopback connection binds its data sockets to the
 * planned source ports, picks up a rewritten plan after a second, and goes on with ephemeral ports
 * when the plan is bad or a planned port is taken. */
#include <arpa/inet.h>
#include <check.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_clock.h"
#include "c4_err.h"
#include "c4_log.h"
#include "net_comm.h"
#include "net_plan.h"
#include "net_transport.h"
#include "transport_pair.h"

#define HOST "plan-host"

static int parse(const char *text, struct c4_netplan **p, char *err, size_t errlen) {
  return c4_netplan_parse(text, strlen(text), p, err, errlen);
}

START_TEST(the_reader_groups_flows_by_host_pair_in_file_order) {
  const char *text =
      "{\"v\":1,\"paths\":[{\"id\":\"s1\",\"pairs\":[[\"h0\",\"h3\"]]}],\"future\":true,"
      "\"flows\":[{\"src\":\"h0\",\"dst\":\"h3\",\"bytes\":10,\"src_port_idx\":1,\"dst_port_idx\":"
      "0,"
      "\"ifname\":\"eth1\",\"path\":\"s1\",\"src_port\":49160,\"flow_label\":8},"
      "{\"src\":\"h3\",\"dst\":\"h0\",\"src_port_idx\":0,\"ifname\":\"eth0\",\"path\":\"s2\","
      "\"src_port\":null},"
      "{\"src\":\"h0\",\"dst\":\"h3\",\"src_port_idx\":0,\"ifname\":null,\"path\":\"s2\","
      "\"src_port\":50001}]}";
  struct c4_netplan *p;
  char err[256];
  ck_assert_int_eq(parse(text, &p, err, sizeof err), 0);
  ck_assert_int_eq(p->npairs, 2);
  const struct c4_netplan_pair *a = c4_netplan_find(p, "h0", "h3");
  ck_assert_ptr_nonnull(a);
  ck_assert_int_eq(a->nbinds, 2);
  ck_assert_int_eq(a->binds[0].src_port, 49160);
  ck_assert_str_eq(a->binds[0].ifname, "eth1");
  ck_assert_int_eq(a->binds[1].src_port, 50001);
  ck_assert_str_eq(a->binds[1].ifname, "");
  const struct c4_netplan_pair *b = c4_netplan_find(p, "h3", "h0");
  ck_assert_ptr_nonnull(b);
  ck_assert_int_eq(b->nbinds, 1);
  ck_assert_int_eq(b->binds[0].src_port, 0); /* null: ephemeral */
  ck_assert_ptr_null(c4_netplan_find(p, "h0", "h1"));
  c4_netplan_free(p);
  ck_assert_int_eq(parse("{\"v\":1,\"paths\":[]}", &p, err, sizeof err), 0); /* no flows */
  ck_assert_int_eq(p->npairs, 0);
  c4_netplan_free(p);
}
END_TEST

START_TEST(the_reader_rejects_bad_plans_saying_what_is_wrong) {
  static const struct {
    const char *text, *says;
  } bad[] = {
      {"", "not JSON"},
      {"{\"v\":1,", "not JSON"},
      {"[1]", "not a JSON object"},
      {"{\"flows\":[]}", "\"v\" is not 1"},
      {"{\"v\":2,\"flows\":[]}", "\"v\" is not 1"},
      {"{\"v\":1,\"flows\":{}}", "\"flows\" is not an array"},
      {"{\"v\":1,\"flows\":[7]}", "flows[0] is not an object"},
      {"{\"v\":1,\"flows\":[{\"dst\":\"b\"}]}", "flows[0].src is not a host name"},
      {"{\"v\":1,\"flows\":[{\"src\":\"a\",\"dst\":\"\"}]}", "flows[0].dst is not a host name"},
      {"{\"v\":1,\"flows\":[{\"src\":\"a\",\"dst\":\"b\"},{\"src\":\"a\",\"dst\":\"b\","
       "\"src_port\":70000}]}",
       "flows[1].src_port is not an integer 1..65535 or null"},
      {"{\"v\":1,\"flows\":[{\"src\":\"a\",\"dst\":\"b\",\"src_port\":\"80\"}]}",
       "flows[0].src_port"},
      {"{\"v\":1,\"flows\":[{\"src\":\"a\",\"dst\":\"b\",\"ifname\":\"abcdefghijklmnopq\"}]}",
       "flows[0].ifname is not an interface name"},
      {"{\"v\":1,\"flows\":[{\"src\":\"a\",\"dst\":\"b\",\"src_port_idx\":-1}]}",
       "flows[0].src_port_idx"},
      {"{\"v\":1,\"flows\":[{\"src\":\"a\",\"dst\":\"b\",\"path\":3}]}", "flows[0].path"},
  };
  for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
    struct c4_netplan *p = (struct c4_netplan *)1;
    char err[256] = "";
    ck_assert_int_eq(parse(bad[i].text, &p, err, sizeof err), C4_EINVAL);
    ck_assert_ptr_null(p);
    ck_assert_msg(strstr(err, bad[i].says), "%s: got \"%s\", want \"%s\"", bad[i].text, err,
                  bad[i].says);
  }
}
END_TEST

/* ---- through the transport ---- */

static struct c4_transport_config cfg;
static struct c4_comm *tx, *rx;
static char plan_path[64];
static char logged[8192];

static void capture(int level, unsigned long flags, const char *file, int line, const char *fmt,
                    ...) {
  (void)flags, (void)file, (void)line;
  if (level != C4_LOG_WARN) return;
  size_t n = strlen(logged);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(logged + n, sizeof logged - n, fmt, ap);
  va_end(ap);
  n = strlen(logged);
  if (n + 1 < sizeof logged) strcat(logged, "\n");
}

static void setup(void) {
  setenv("C4_HOSTNAME", HOST, 1);
  snprintf(plan_path, sizeof plan_path, "/tmp/c4-test-plan-%d.json", (int)getpid());
  setenv("C4_PLAN", plan_path, 1);
  setenv("C4_DEBUG", "WARN", 1); /* the suite's NONE would silence what a setting says on stderr */
  c4_log_set_logger(capture);
  logged[0] = 0;
  c4_netplan_reset();
}

static void teardown(void) {
  c4_log_set_logger(NULL);
  unlink(plan_path);
  c4_netplan_reset();
}

/* A port nobody uses now: bound by the kernel, then released. */
/* A port free now, below the ephemeral range (32768 up): a port the kernel handed out as
 * ephemeral could be handed out again to this test's own control connections before the plan's
 * data socket binds it (a fresh-clone CI's run read another port where the plan named one). */
static int free_port(void) {
  static int next;
  if (!next) next = 20000 + (int)(getpid() % 300) * 40;
  for (int tries = 0; tries < 2000; tries++) {
    int port = next++;
    if (next >= 32000) next = 20000;
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {.sin_family = AF_INET,
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK),
                            .sin_port = htons((uint16_t)port)};
    int ok = bind(fd, (struct sockaddr *)&a, sizeof a) == 0;
    close(fd);
    if (ok) return port;
  }
  ck_abort_msg("no free port in 20000-31999");
  return 0;
}

/* Writes text as the plan the way c4plan does: a temporary file renamed over the plan. */
static void write_plan(const char *text) {
  char tmp[80];
  snprintf(tmp, sizeof tmp, "%s.tmp", plan_path);
  FILE *f = fopen(tmp, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
  ck_assert_int_eq(rename(tmp, plan_path), 0);
}

static void write_ports(int p0, int p1, const char *ifname) {
  char text[512];
  snprintf(text, sizeof text,
           "{\"v\":1,\"flows\":[{\"src\":\"%s\",\"dst\":\"%s\",\"src_port_idx\":0,"
           "\"ifname\":\"%s\",\"path\":\"s0\",\"src_port\":%d},{\"src\":\"%s\",\"dst\":\"%s\","
           "\"src_port_idx\":0,\"ifname\":null,\"path\":\"s1\",\"src_port\":%d},"
           "{\"src\":\"other\",\"dst\":\"%s\",\"src_port\":40000}]}",
           HOST, HOST, ifname, p0, HOST, HOST, p1, HOST);
  write_plan(text);
}

static void connect_pair(int nsocks) {
  c4_transport_config_load(&cfg);
  cfg.nsocks = nsocks;
  cfg.nthreads = 0;
  c4_test_transport_pair(&cfg, &tx, &rx);
}

/* The source port of data socket i, seen from both ends (they must agree). */
static int data_port(int i) {
  struct sockaddr_in a, b;
  socklen_t la = sizeof a, lb = sizeof b;
  ck_assert_int_eq(getsockname(tx->data_fd[i], (struct sockaddr *)&a, &la), 0);
  ck_assert_int_eq(getpeername(rx->data_fd[i], (struct sockaddr *)&b, &lb), 0);
  ck_assert_int_eq(ntohs(a.sin_port), ntohs(b.sin_port));
  return ntohs(a.sin_port);
}

/* A 4 MiB message over the data sockets arrives intact. */
static void send_one(void) {
  size_t n = 4 << 20;
  unsigned char *a = malloc(n), *b = calloc(1, n);
  for (size_t i = 0; i < n; i++)
    a[i] = (unsigned char)(i * 131u ^ (i >> 11));
  struct c4_request *sr = NULL, *rr = NULL;
  ck_assert_int_eq(c4_transport_irecv(rx, b, n, 1, &rr), 0);
  ck_assert_ptr_nonnull(rr);
  uint64_t deadline = c4_now_ns() + 20000000000ull;
  while (!sr && c4_now_ns() < deadline)
    ck_assert_int_eq(c4_transport_isend(tx, a, n, 1, &sr), 0);
  ck_assert_ptr_nonnull(sr);
  int sd = 0, rd = 0;
  size_t got = 0;
  while ((!sd || !rd) && c4_now_ns() < deadline) {
    if (!sd) ck_assert_int_eq(c4_transport_test(sr, &sd, NULL), 0);
    if (!rd) ck_assert_int_eq(c4_transport_test(rr, &rd, &got), 0);
  }
  ck_assert_msg(sd && rd, "the message did not arrive within 20 s");
  ck_assert_uint_eq(got, n);
  ck_assert_int_eq(memcmp(a, b, n), 0);
  free(a);
  free(b);
}

/* ... then both comms are closed. */
static void send_one_and_close(void) {
  send_one();
  c4_transport_close(tx);
  c4_transport_close(rx);
}

START_TEST(data_sockets_bind_the_planned_ports_and_follow_a_rewritten_plan) {
  int p0 = free_port(), p1 = free_port();
  write_ports(p0, p1, "lo");
  connect_pair(3); /* three sockets, two planned ports: the third is ephemeral */
  ck_assert_int_eq(data_port(0), p0);
  ck_assert_int_eq(data_port(1), p1);
  ck_assert_int_ne(data_port(2), p0);
  ck_assert_int_ne(data_port(2), p1);
  ck_assert_uint_eq(atomic_load(&c4_netplan_stats.bound), 2);
  send_one_and_close();

  int q0, q1;
  do {
    q0 = free_port(), q1 = free_port();
  } while (q0 == p0 || q0 == p1 || q1 == p0 || q1 == p1 || q0 == q1);
  write_ports(q0, q1, "lo");
  connect_pair(2); /* within the second: the plan read before still holds */
  ck_assert_int_eq(data_port(0), p0);
  ck_assert_int_eq(data_port(1), p1);
  send_one_and_close();
  usleep(1100 * 1000);
  connect_pair(2);
  ck_assert_int_eq(data_port(0), q0);
  ck_assert_int_eq(data_port(1), q1);
  send_one_and_close();
  ck_assert_uint_eq(atomic_load(&c4_netplan_stats.loads), 2);
  ck_assert_uint_eq(atomic_load(&c4_netplan_stats.bad_plans), 0);
  ck_assert_uint_eq(atomic_load(&c4_netplan_stats.bind_fallbacks), 0);
  ck_assert_str_eq(logged, "");
}
END_TEST

/* A plan c4mon pushed is followed at the next connect when C4_PLAN is unset; a bad push is
 * logged and counted and changes nothing; a C4_PLAN file takes precedence over a push. */
START_TEST(a_pushed_plan_is_followed_when_no_plan_file_is_set) {
  unsetenv("C4_PLAN");
  int p0 = free_port(), p1 = free_port();
  char text[512];
  snprintf(text, sizeof text,
           "{\"v\":1,\"flows\":[{\"src\":\"%s\",\"dst\":\"%s\",\"src_port\":%d},"
           "{\"src\":\"%s\",\"dst\":\"%s\",\"src_port\":%d}]}",
           HOST, HOST, p0, HOST, HOST, p1);
  c4_netplan_push(text, strlen(text));
  c4_netplan_push("{\"v\":2}", 7);
  ck_assert_uint_eq(atomic_load(&c4_netplan_stats.pushes), 1);
  ck_assert_uint_eq(atomic_load(&c4_netplan_stats.bad_plans), 1);
  ck_assert_ptr_nonnull(strstr(logged, "the plan c4mon pushed: \"v\" is not 1"));
  connect_pair(2);
  ck_assert_int_eq(data_port(0), p0);
  ck_assert_int_eq(data_port(1), p1);
  send_one_and_close();
  /* a plan file, once set, wins over what was pushed */
  int q0;
  do
    q0 = free_port();
  while (q0 == p0 || q0 == p1);
  setenv("C4_PLAN", plan_path, 1);
  snprintf(text, sizeof text,
           "{\"v\":1,\"flows\":[{\"src\":\"%s\",\"dst\":\"%s\",\"src_port\":%d}]}", HOST, HOST, q0);
  write_plan(text);
  usleep(1100 * 1000);
  connect_pair(2);
  ck_assert_int_eq(data_port(0), q0);
  ck_assert_int_ne(data_port(1), p1);
  send_one_and_close();
}
END_TEST

/* A plan's `avoid`, pushed by c4mon while its `path` verdict stands, moves the comms already
 * connected at once (also when C4_PLAN is set): the data socket whose planned path it names is
 * cut to the floor weight. On loopback the path is as fast as the other, so the comm's own fair
 * re-measure finds it at speed and lets it back; a push of the same set changes nothing, and a
 * push naming the other path moves that socket. */
START_TEST(a_pushed_avoid_moves_a_connected_comm_off_the_path_until_its_own_measure_clears_it) {
  write_ports(free_port(), free_port(), "lo");
  connect_pair(2);
  send_one();
  const char *avoid_s1 = "{\"v\":1,\"avoid\":[\"s1\"]}";
  c4_netplan_push(avoid_s1, strlen(avoid_s1));
  uint64_t b0 = tx->paths.bytes[0], b1 = tx->paths.bytes[1];
  send_one();
  pthread_mutex_lock(&tx->claim_lock);
  int avoided = tx->paths.avoid[1], judged = (int)tx->paths.fair_runs;
  uint64_t d0 = tx->paths.bytes[0] - b0, d1 = tx->paths.bytes[1] - b1;
  pthread_mutex_unlock(&tx->claim_lock);
  if (!judged) { /* no re-measure yet (0.25 s): the socket was kept off its path */
    ck_assert_int_eq(avoided, 1);
    ck_assert_msg((double)d1 / (double)(d0 + d1) < 0.05, "socket 1 still carried %.3f",
                  (double)d1 / (double)(d0 + d1));
  }
  uint64_t deadline = c4_now_ns() + 5000000000ull;
  int back = 0;
  while (!back && c4_now_ns() < deadline) {
    send_one();
    pthread_mutex_lock(&tx->claim_lock);
    back = !tx->paths.avoid[1] && tx->paths.fair_back > 0;
    pthread_mutex_unlock(&tx->claim_lock);
  }
  ck_assert_msg(back, "the comm's own re-measure did not let socket 1 back within 5 s");
  c4_netplan_push(avoid_s1, strlen(avoid_s1)); /* the same set: nothing new to follow */
  send_one();
  ck_assert_int_eq(tx->paths.avoid[1], 0);
  const char *avoid_s0 = "{\"v\":1,\"avoid\":[\"s0\"]}";
  c4_netplan_push(avoid_s0, strlen(avoid_s0));
  send_one();
  pthread_mutex_lock(&tx->claim_lock);
  ck_assert_int_eq(tx->paths.avoid[0] || tx->paths.fair_back > 1, 1);
  ck_assert_int_eq(tx->paths.avoid[1], 0);
  pthread_mutex_unlock(&tx->claim_lock);
  c4_transport_close(tx);
  c4_transport_close(rx);
  ck_assert_uint_eq(atomic_load(&c4_netplan_stats.avoid_sets), 3);
}
END_TEST

/* A bad plan is said on stderr too, not only in NCCL's log, which jobs keep quiet. */
START_TEST(a_bad_plan_is_logged_once_and_the_connection_uses_ephemeral_ports) {
  int p0 = free_port();
  char text[256];
  snprintf(text, sizeof text,
           "{\"v\":2,\"flows\":[{\"src\":\"%s\",\"dst\":\"%s\",\"src_port\":%d}]}", HOST, HOST, p0);
  write_plan(text);
  char err_path[] = "/tmp/c4-test-stderr-XXXXXX";
  int err_fd = mkstemp(err_path), saved = dup(2);
  ck_assert_int_ge(err_fd, 0);
  dup2(err_fd, 2);
  connect_pair(2);
  fflush(stderr);
  dup2(saved, 2);
  close(saved);
  char said[2048] = "";
  ck_assert_int_ge(pread(err_fd, said, sizeof said - 1, 0), 0);
  close(err_fd);
  unlink(err_path);
  ck_assert_msg(strstr(said, "c4: C4_PLAN=") != NULL, "not on stderr: \"%s\"", said);
  ck_assert_int_ne(data_port(0), p0);
  send_one_and_close();
  usleep(1100 * 1000);
  connect_pair(2); /* the same bad file again: not logged again */
  send_one_and_close();
  ck_assert_uint_eq(atomic_load(&c4_netplan_stats.bad_plans), 1);
  ck_assert_uint_eq(atomic_load(&c4_netplan_stats.bound), 0);
  ck_assert_ptr_nonnull(strstr(logged, plan_path));
  ck_assert_ptr_nonnull(strstr(logged, "\"v\" is not 1"));
  ck_assert_ptr_null(strstr(strstr(logged, plan_path) + 1, plan_path));

  unlink(plan_path); /* missing: logged, counted, ephemeral */
  usleep(1100 * 1000);
  connect_pair(1);
  send_one_and_close();
  ck_assert_uint_eq(atomic_load(&c4_netplan_stats.bad_plans), 2);
  ck_assert_ptr_nonnull(strstr(logged, "cannot read"));
}
END_TEST

START_TEST(a_taken_port_or_a_missing_interface_falls_back_with_a_warning) {
  int taken = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  socklen_t len = sizeof a;
  ck_assert_int_eq(bind(taken, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(listen(taken, 1), 0);
  ck_assert_int_eq(getsockname(taken, (struct sockaddr *)&a, &len), 0);
  int busy = ntohs(a.sin_port), p1 = free_port();
  write_ports(busy, p1, "c4-no-such-if0");
  connect_pair(2);
  ck_assert_int_ne(data_port(0), busy);
  ck_assert_int_eq(data_port(1), p1);
  send_one_and_close();
  close(taken);
  ck_assert_uint_eq(atomic_load(&c4_netplan_stats.bind_fallbacks), 1);
  ck_assert_ptr_nonnull(strstr(logged, "c4-no-such-if0"));
  ck_assert_ptr_nonnull(strstr(logged, "ephemeral port"));
}
END_TEST

/* Another socket already connected from the planned port to the same listener: the planned
 * 4-tuple is taken, so connect() itself refuses it and the data socket moves to an ephemeral port.
 */
START_TEST(a_taken_four_tuple_falls_back_to_an_ephemeral_port) {
  int p0 = free_port();
  write_ports(p0, free_port(), "lo");
  c4_transport_config_load(&cfg);
  cfg.nsocks = 2;
  cfg.nthreads = 0;
  struct sockaddr_storage lo = {0};
  ((struct sockaddr_in *)&lo)->sin_family = AF_INET;
  ((struct sockaddr_in *)&lo)->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  uint8_t handle[128] = {0};
  struct c4_listen_comm *l = NULL;
  ck_assert_int_eq(c4_transport_listen(&cfg, 0, 0xfeed, &lo, handle, &l), 0);
  struct c4_wire_handle h;
  char err[160];
  ck_assert_int_eq(c4_wire_get_handle(handle, &h, err, sizeof err), 0);
  int squat = socket(AF_INET, SOCK_STREAM, 0), one = 1;
  setsockopt(squat, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  struct sockaddr_in a = {.sin_family = AF_INET,
                          .sin_port = htons((uint16_t)p0),
                          .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
  ck_assert_int_eq(bind(squat, (struct sockaddr *)&a, sizeof a), 0);
  ck_assert_int_eq(connect(squat, (struct sockaddr *)&h.addr, sizeof(struct sockaddr_in)), 0);
  tx = rx = NULL;
  uint64_t deadline = c4_now_ns() + 10000000000ull;
  while ((!tx || !rx) && c4_now_ns() < deadline) {
    if (!tx) ck_assert_int_eq(c4_transport_connect(&cfg, 0, 0xbeef, handle, &tx), 0);
    if (!rx) ck_assert_int_eq(c4_transport_accept(l, &rx), 0);
  }
  ck_assert_ptr_nonnull(tx);
  ck_assert_ptr_nonnull(rx);
  ck_assert_int_ne(data_port(0), p0);
  send_one_and_close();
  c4_transport_close_listen(l);
  close(squat);
  ck_assert_uint_eq(atomic_load(&c4_netplan_stats.bind_fallbacks), 1);
  ck_assert_ptr_nonnull(strstr(logged, "ephemeral port"));
}
END_TEST

int main(void) {
  Suite *s = suite_create("plan");
  TCase *tc = tcase_create("reader");
  tcase_add_test(tc, the_reader_groups_flows_by_host_pair_in_file_order);
  tcase_add_test(tc, the_reader_rejects_bad_plans_saying_what_is_wrong);
  suite_add_tcase(s, tc);
  tc = tcase_create("transport");
  tcase_set_timeout(tc, 60);
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, data_sockets_bind_the_planned_ports_and_follow_a_rewritten_plan);
  tcase_add_test(tc, a_pushed_plan_is_followed_when_no_plan_file_is_set);
  tcase_add_test(
      tc, a_pushed_avoid_moves_a_connected_comm_off_the_path_until_its_own_measure_clears_it);
  tcase_add_test(tc, a_bad_plan_is_logged_once_and_the_connection_uses_ephemeral_ports);
  tcase_add_test(tc, a_taken_port_or_a_missing_interface_falls_back_with_a_warning);
  tcase_add_test(tc, a_taken_four_tuple_falls_back_to_an_ephemeral_port);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
