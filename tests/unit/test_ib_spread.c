/* test_ib_spread.c -- the verbs transport spreading a comm's QPs over paths, on the fake RDMA
 * device (tests/doubles/fake_ibverbs.c; this machine has no RDMA NIC) with its paths given rates:
 * the flow labels (UDP source ports) or LIDs each QP is connected with, with and without a plan;
 * the split's weights leaving a slowed path and coming back when it heals; a QP whose share rounds
 * to nothing still measured; messages completing in order while one QP lags. What the fake cannot
 * show is which switch path a real fabric hashes a UDP port onto. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../check_run.h"
#include "c4_err.h"
#include "ib_comm.h"
#include "ib_fake_pair.h"
#include "ib_paths.h"
#include "ib_props.h"
#include "nccl_net_abi.h"

typedef int (*set_rate_fn)(int path, double bytes_per_ns);
typedef int (*qp_path_fn)(uint32_t qpn, uint32_t *flow_label, uint16_t *dlid);

/* Bytes per ns on every path (20 MB/s): a 256 KiB share takes 13 ms, long beside the few ms a
 * loaded machine may keep the test from polling, which would read as a slower path. */
#define RATE 0.02

/* The fake as a RoCE port with nqps QPs per comm and shares down to 4 KiB. */
static void setup_roce(const char *nqps) {
  setenv("C4_FAKE_IB_ROCE", "1", 1);
  setenv("C4_IB_GID_INDEX", "0", 1);
  setenv("C4_IB_QPS", nqps, 1);
  setenv("C4_IB_MIN_SHARE", "4096", 1);
  setup_fake();
}

/* QP q's UDP source port, as the comm chose it. */
static int sport(const struct c4_ib_comm *c, int q) {
  return c4_ib_flow_label_to_sport((uint32_t)c->path[q].flow_label);
}

/* The flow label and LID the fake saw QP q of c connected with. */
static void fake_path(const struct c4_ib_comm *c, int q, uint32_t *fl, uint16_t *dlid) {
  qp_path_fn qp_path = (qp_path_fn)fake_fn("c4_fake_ib_qp_path");
  ck_assert_int_eq(qp_path(c->qp[q]->qp_num, fl, dlid), 0);
}

static void set_rate(int path, double rate) {
  set_rate_fn f = (set_rate_fn)fake_fn("c4_fake_ib_set_rate");
  ck_assert_int_eq(f(path, rate), 0);
}

/* A sender and a receiver with one registered buffer each. */
struct pair {
  struct c4_ib_comm *s, *r;
  char *src, *dst;
  size_t cap;
  void *ms, *mr;
  int sent;
};

static void pair_open(struct pair *p, size_t cap) {
  connect_pair(&p->s, &p->r);
  p->cap = cap;
  p->src = malloc(cap);
  p->dst = malloc(cap);
  ck_assert(p->src && p->dst);
  ck_assert_int_eq(c4_ib_reg_mr(p->s, p->src, cap, NCCL_PTR_HOST, -1, 0, &p->ms), 0);
  ck_assert_int_eq(c4_ib_reg_mr(p->r, p->dst, cap, NCCL_PTR_HOST, -1, 0, &p->mr), 0);
  p->sent = 0;
}

static void pair_close(struct pair *p) {
  c4_ib_dereg_mr(p->s, p->ms);
  c4_ib_dereg_mr(p->r, p->mr);
  c4_ib_close(p->s);
  c4_ib_close(p->r);
  free(p->src);
  free(p->dst);
}

/* Moves one message of size bytes and checks it arrived whole; len gets each QP's share. */
static void one_message(struct pair *p, size_t size, uint64_t *len) {
  int tag = p->sent++;
  for (size_t i = 0; i < size; i += 512)
    p->src[i] = (char)(i / 512 + (size_t)tag);
  struct c4_ib_request *rq, *sq = NULL;
  ck_assert_int_eq(c4_ib_irecv(p->r, p->dst, size, tag, p->mr, &rq), 0);
  ck_assert_ptr_nonnull(rq);
  uint64_t t0 = c4_now_ns();
  while (!sq) {
    ck_assert_int_eq(c4_ib_isend(p->s, p->src, size, tag, p->ms, &sq), 0);
    ck_assert_msg(c4_now_ns() - t0 < 5000000000ull, "isend got no request within 5 s");
  }
  memcpy(len, sq->qp_len, sizeof sq->qp_len);
  size_t got = 0;
  ck_assert_int_eq(wait_done(sq, NULL), 0);
  ck_assert_int_eq(wait_done(rq, &got), 0);
  ck_assert_uint_eq(got, size);
  for (size_t i = 0; i < size; i += 512)
    if (p->dst[i] != (char)(i / 512 + (size_t)tag))
      ck_abort_msg("message %d: byte %zu is wrong", tag, i);
}

START_TEST(roce_qps_send_from_distinct_ports_both_ends_alike) {
  setup_roce("4");
  struct c4_ib_comm *s, *r;
  connect_pair(&s, &r);
  struct c4_netplan_bind want[4];
  c4_ib_qp_paths(s->conn_id, 4, C4_IB_LINK_ETH, 0, NULL, 0, want);
  for (int q = 0; q < 4; q++) {
    uint32_t fl_s, fl_r;
    uint16_t lid;
    fake_path(s, q, &fl_s, &lid);
    fake_path(r, q, &fl_r, &lid);
    ck_assert_uint_eq(fl_s, (uint32_t)want[q].flow_label); /* from the connection id */
    ck_assert_uint_eq(fl_r, fl_s);                         /* acks take the data's port */
    ck_assert_uint_ne(fl_s, 0);
    for (int j = 0; j < q; j++)
      ck_assert_int_ne(sport(s, j), sport(s, q));
  }
  c4_ib_close(s);
  c4_ib_close(r);
}
END_TEST

START_TEST(infiniband_qps_address_distinct_lids) {
  setenv("C4_IB_QPS", "4", 1);
  setup_fake(); /* InfiniBand, LID 0x21, LMC 2 */
  struct c4_ib_comm *s, *r;
  connect_pair(&s, &r);
  int used = 0;
  for (int q = 0; q < 4; q++) {
    uint32_t fl;
    uint16_t lid;
    fake_path(s, q, &fl, &lid);
    ck_assert(lid >= 0x21 && lid <= 0x24);
    used |= 1 << (lid - 0x21);
  }
  ck_assert_int_eq(used, 0xf);
  c4_ib_close(s);
  c4_ib_close(r);
}
END_TEST

START_TEST(qps_follow_the_plans_flow_labels) {
  char plan[] = "/tmp/c4-ib-plan-XXXXXX";
  int fd = mkstemp(plan);
  ck_assert_int_ge(fd, 0);
  const char *doc = "{\"v\":1,\"flows\":[{\"src\":\"ibh\",\"dst\":\"ibh\",\"flow_label\":8},"
                    "{\"src\":\"ibh\",\"dst\":\"ibh\",\"flow_label\":4660}]}";
  ck_assert_int_eq(write(fd, doc, strlen(doc)), (int)strlen(doc));
  close(fd);
  setenv("C4_PLAN", plan, 1);
  setenv("C4_HOSTNAME", "ibh", 1);
  setup_roce("4");
  struct c4_ib_comm *s, *r;
  connect_pair(&s, &r);
  unlink(plan);
  uint32_t fl;
  uint16_t lid;
  fake_path(s, 0, &fl, &lid);
  ck_assert_uint_eq(fl, 8);
  ck_assert_int_eq(sport(s, 0), 0xc008);
  fake_path(s, 1, &fl, &lid);
  ck_assert_uint_eq(fl, 4660);
  ck_assert_int_eq(sport(s, 1), 0xd234);
  for (int q = 2; q < 4; q++) { /* beyond the plan: spread, around the planned ports */
    fake_path(s, q, &fl, &lid);
    ck_assert_uint_eq(fl, (uint32_t)s->path[q].flow_label);
    for (int j = 0; j < q; j++)
      ck_assert_int_ne(sport(s, j), sport(s, q));
  }
  c4_ib_close(s);
  c4_ib_close(r);
}
END_TEST

enum { INFLIGHT = 8 }; /* messages in flight, as NCCL keeps them (NCCL_STEPS) */

/* Streams messages of size bytes, INFLIGHT at a time, until QP q's share of one is on the side of
 * `share` that below says (1: under it, 0: at or over it) or limit_ns passes; every message is
 * checked whole. Returns the time it took (ns), or 0. p->cap holds INFLIGHT messages. */
static uint64_t stream_until(struct pair *p, size_t size, int q, double share, int below,
                             uint64_t limit_ns) {
  struct c4_ib_request *rq[INFLIGHT], *sq[INFLIGHT];
  uint64_t t0 = c4_now_ns(), took = 0;
  int posted = 0, done = 0, stop = 0;
  while (done < posted || !stop) {
    while (!stop && posted - done < INFLIGHT) {
      int k = posted % INFLIGHT, tag = p->sent + posted;
      char *src = p->src + (size_t)k * size, *dst = p->dst + (size_t)k * size;
      for (size_t i = 0; i < size; i += 512)
        src[i] = (char)(i / 512 + (size_t)tag);
      ck_assert_int_eq(c4_ib_irecv(p->r, dst, size, tag, p->mr, &rq[k]), 0);
      ck_assert_ptr_nonnull(rq[k]);
      for (sq[k] = NULL; !sq[k];)
        ck_assert_int_eq(c4_ib_isend(p->s, src, size, tag, p->ms, &sq[k]), 0);
      double got = (double)sq[k]->qp_len[q] / (double)size;
      posted++;
      if (below ? got < share : got >= share) stop = 1, took = c4_now_ns() - t0;
      if (c4_now_ns() - t0 > limit_ns) stop = 1;
    }
    int k = done % INFLIGHT, tag = p->sent + done;
    size_t got = 0;
    ck_assert_int_eq(wait_done(sq[k], NULL), 0);
    ck_assert_int_eq(wait_done(rq[k], &got), 0);
    ck_assert_uint_eq(got, size);
    for (size_t i = 0; i < size; i += 512)
      if (p->dst[(size_t)k * size + i] != (char)(i / 512 + (size_t)tag))
        ck_abort_msg("message %d: byte %zu is wrong", tag, i);
    done++;
  }
  p->sent += posted;
  return took;
}

START_TEST(weights_move_off_a_slowed_qp_and_back_when_it_heals) {
  setup_roce("4");
  set_rate(-1, RATE);
  struct pair p;
  pair_open(&p, (size_t)INFLIGHT << 20);
  set_rate(sport(p.s, 2), RATE / 4); /* QP 2's path at a quarter of the others' rate */
  /* even is 1/4 of each message; weighted by rate, 0.25 / 3.25 = 0.077 */
  uint64_t t_off = stream_until(&p, 1 << 20, 2, 0.15, 1, 10000000000ull);
  ck_assert_msg(t_off > 0, "QP 2 kept %.3f of QP 0's bytes on a path at 1/4 the rate",
                (double)p.s->paths.bytes[2] / (double)p.s->paths.bytes[0]);
  for (int q = 0; q < 4; q++)
    if (q != 2) ck_assert(c4_paths_weight(&p.s->paths, q) == 1);
  set_rate(sport(p.s, 2), RATE); /* healed */
  uint64_t t_back = stream_until(&p, 1 << 20, 2, 0.25, 0, 15000000000ull);
  ck_assert_msg(t_back > 0, "QP 2 still weighs %.3f 15 s after its path healed",
                c4_paths_weight(&p.s->paths, 2));
  ck_assert_uint_eq(p.s->probes, 0); /* it carried in every message: measured, never probed */
  printf("slowed QP down-weighted after %.0f ms, back to an even share %.0f ms after healing "
         "(%d messages in flight)\n",
         (double)t_off / 1e6, (double)t_back / 1e6, INFLIGHT);
  pair_close(&p);
}
END_TEST

START_TEST(a_qp_whose_share_rounds_to_nothing_is_still_measured) {
  setup_roce("4");
  set_rate(-1, RATE);
  struct pair p;
  pair_open(&p, 64 << 10);
  set_rate(sport(p.s, 3), RATE / 64); /* weight 1/32, the floor: 675 of 64 KiB, cut to 0 */
  uint64_t len[C4_IB_MAX_QPS], t0 = c4_now_ns();
  while (c4_paths_weight(&p.s->paths, 3) > 1.0 / 16) {
    one_message(&p, 64 << 10, len);
    ck_assert_msg(c4_now_ns() - t0 < 10000000000ull, "QP 3 never down-weighted in 10 s");
  }
  uint64_t chunks0 = p.s->paths.chunks[3], probes0 = p.s->probes;
  int messages = 0, carried = 0;
  t0 = c4_now_ns();
  while (c4_now_ns() - t0 < 1000000000ull) {
    one_message(&p, 64 << 10, len);
    messages++;
    carried += len[3] > 0;
  }
  /* it carries only when re-measured (its weighted share is nothing), at most once every
   * C4_IB_PROBE_NS, yet a few times a second */
  ck_assert_int_ge(carried, 3);
  ck_assert_uint_eq(p.s->probes - probes0, (uint64_t)carried);
  ck_assert_int_le(carried, 1 + (int)(1000000000ull / C4_IB_PROBE_NS));
  ck_assert_uint_eq(p.s->paths.chunks[3] - chunks0, (uint64_t)carried);
  set_rate(sport(p.s, 3), RATE); /* healed: the probes bring it back */
  t0 = c4_now_ns();
  while (c4_paths_weight(&p.s->paths, 3) < 1) {
    one_message(&p, 64 << 10, len);
    ck_assert_msg(c4_now_ns() - t0 < 15000000000ull, "QP 3 still weighs %.3f 15 s after healing",
                  c4_paths_weight(&p.s->paths, 3));
  }
  printf("QP at the floor: carried in %d of %d messages in 1 s; weight 1 again %.0f ms after "
         "healing\n",
         carried, messages, (double)(c4_now_ns() - t0) / 1e6);
  pair_close(&p);
}
END_TEST

/* After every poll, the requests done (not yet taken) are a prefix of those outstanding. */
static void take_in_order(struct c4_ib_request **req, int n, size_t size) {
  uint64_t t0 = c4_now_ns();
  for (int next = 0; next < n;) {
    int done = 0;
    size_t got = 0;
    ck_assert_int_eq(c4_ib_test(req[next], &done, &got), 0);
    if (done) {
      ck_assert_uint_eq(got, size);
      next++;
      continue;
    }
    for (int k = next + 1; k < n; k++)
      ck_assert_msg(atomic_load(&req[k]->state) != C4_IB_REQ_DONE,
                    "request %d completed before request %d", k, next);
    ck_assert_msg(c4_now_ns() - t0 < 10000000000ull, "request %d not done in 10 s", next);
  }
}

START_TEST(messages_complete_in_order_while_one_qp_lags) {
  setup_roce("4");
  set_rate(-1, RATE);
  enum { N = 8, SIZE = 256 << 10 };
  struct pair p;
  pair_open(&p, (size_t)N * SIZE);
  set_rate(sport(p.s, 1), RATE / 8); /* QP 1 finishes each message last */
  struct c4_ib_request *rq[N], *sq[N];
  for (int m = 0; m < N; m++) {
    ck_assert_int_eq(c4_ib_irecv(p.r, p.dst + (size_t)m * SIZE, SIZE, m, p.mr, &rq[m]), 0);
    ck_assert_ptr_nonnull(rq[m]);
  }
  for (int m = 0; m < N; m++) {
    for (size_t i = 0; i < SIZE; i += 256)
      p.src[(size_t)m * SIZE + i] = (char)(m * 7 + (int)(i / 256));
    ck_assert_int_eq(c4_ib_isend(p.s, p.src + (size_t)m * SIZE, SIZE, m, p.ms, &sq[m]), 0);
    ck_assert_ptr_nonnull(sq[m]);
  }
  take_in_order(rq, N, SIZE);
  take_in_order(sq, N, SIZE);
  for (int m = 0; m < N; m++)
    for (size_t i = 0; i < SIZE; i += 256)
      ck_assert_int_eq(p.dst[(size_t)m * SIZE + i], (char)(m * 7 + (int)(i / 256)));
  pair_close(&p);
}
END_TEST

int main(void) {
  Suite *s = suite_create("ib_spread");
  TCase *t = tcase_create("spread");
  tcase_set_timeout(t, 60);
  tcase_add_test(t, roce_qps_send_from_distinct_ports_both_ends_alike);
  tcase_add_test(t, infiniband_qps_address_distinct_lids);
  tcase_add_test(t, qps_follow_the_plans_flow_labels);
  tcase_add_test(t, weights_move_off_a_slowed_qp_and_back_when_it_heals);
  tcase_add_test(t, a_qp_whose_share_rounds_to_nothing_is_still_measured);
  tcase_add_test(t, messages_complete_in_order_while_one_qp_lags);
  suite_add_tcase(s, t);
  return c4_check_run(s);
}
