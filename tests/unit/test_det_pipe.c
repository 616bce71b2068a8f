/* test_det_pipe.c -- the straggler detector on a pipeline: 3 replicas of 2 stages (rank r is stage
 * r % 2 of replica r / 2) summing gradients in one world allreduce per step. When one stage is
 * slow, its neighbour stage waits for it in receives: only the slow stage is named, and it
 * recovers when it heals. The receives come as the net plugin's receive records, as the profiler's
 * p2p receive calls (no net plugin), or in the minimal schema (no host in the communicator
 * records, no pids); with communicator records that name no host, a rank's restarted process
 * takes over its waits. Then a job of two communicators whose collectives interleave, with no
 * receive records: a straggler's factor is its compute's, not diluted by its peers' waits for it
 * in the other communicator; and with groups, the processes' header lines tie a group's ranks
 * to their launcher ranks. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "../check_run.h"
#include "det.h"
#include "det_test_util.h"
#include "mon_events.h"

#define MS 1000000ull
#define RANKS 6
#define MICRO 4 /* micro-batches per replica per step */

/* How the trace tells the receives: the net plugin's receive records, the profiler's p2p receive
 * calls, receive records in the minimal schema (pid absent, so the rank) with communicator
 * records that name no host, or p2p calls in the minimal schema (no receive record at all). */
enum { AS_XFERS, AS_P2P_CALLS, AS_MINIMAL, AS_P2P_MINIMAL };
static int told_as;
static uint32_t restarted[RANKS]; /* added to a rank's pid in its receive records (a new process) */

static int as_calls(void) { return told_as == AS_P2P_CALLS || told_as == AS_P2P_MINIMAL; }
static int minimal(void) { return told_as == AS_MINIMAL || told_as == AS_P2P_MINIMAL; }

/* A p2p receive call of rank self on communicator 0xc4, entered at t0 and done at t1. */
static void recv_call(int self, int peer, uint64_t t0, uint64_t t1) {
  static uint64_t seq;
  struct c4_record r = {.kind = C4_REC_COLL};
  r.coll = (struct c4_coll_record){.comm = 0xc4,
                                   .seq = seq++,
                                   .rank = self,
                                   .nranks = RANKS,
                                   .is_p2p = 1,
                                   .root = peer,
                                   .bytes = 65536,
                                   .t_arrive = t0,
                                   .t_enqueued = t0 + 1000,
                                   .t_done = t1};
  strcpy(r.coll.func, "Recv");
  take(&r);
}

/* A completed receive of rank self from peer, posted at t0 and done at t1. */
static void recv_record(int self, int peer, uint64_t t0, uint64_t t1) {
  static uint64_t seq;
  if (as_calls()) {
    recv_call(self, peer, t0, t1);
    return;
  }
  struct c4_record r = {.kind = C4_REC_XFER};
  r.xfer = (struct c4_xfer_record){.dir = C4_DIR_RECV,
                                   .status = C4_XFER_OK,
                                   .conn_id = 1000 + (uint64_t)(peer * RANKS + self),
                                   .seq = seq++,
                                   .bytes = 65536,
                                   .t_posted = t0,
                                   .t_first_byte = t1 > t0 + 1000 ? t1 - 1000 : t0,
                                   .t_done = t1};
  r.xfer.self = (struct c4_identity){
      .rank = self, .pid = (uint32_t)self + (minimal() ? 0 : 100) + restarted[self]};
  r.xfer.peer = (struct c4_identity){
      .rank = peer, .pid = (uint32_t)peer + (minimal() ? 0 : 100) + restarted[peer]};
  snprintf(r.xfer.self.host, C4_HOST_MAX, "node%d", self);
  snprintf(r.xfer.peer.host, C4_HOST_MAX, "node%d", peer);
  take(&r);
}

/* 2% jitter, the same for a rank, step and pass every run. */
static double jitter(int r, uint64_t s, int pass) {
  uint64_t h = (s * 7919 + (uint64_t)r * 104729 + (uint64_t)pass * 1299709) % 101;
  return 1 + 0.02 * ((double)h / 50.0 - 1);
}

/* One replica's step from t: stage 0 (rank a) runs the forwards, 6 ms each, and sends each
 * activation on; stage 1 (rank b) receives it and runs forward and backward, 12 ms x slow_b, and
 * sends the gradient back; stage 0 receives each gradient and runs its backward, 6 ms. Every
 * receive is a record, posted when the rank starts waiting. Sets each rank's arrival at the
 * allreduce. */
static void replica_step(int a, int b, uint64_t s, uint64_t t, double slow_b, uint64_t *arrive) {
  uint64_t act[MICRO], grad[MICRO], ta = t, tb = t;
  for (int i = 0; i < MICRO; i++) {
    ta += (uint64_t)(6 * MS * jitter(a, s, i));
    act[i] = ta + 100000; /* the transfer */
  }
  for (int i = 0; i < MICRO; i++) {
    uint64_t got = act[i] > tb ? act[i] : tb + 20000;
    recv_record(b, a, tb, got);
    tb = got + (uint64_t)(12 * MS * slow_b * jitter(b, s, MICRO + i));
    grad[i] = tb + 100000;
  }
  for (int i = 0; i < MICRO; i++) {
    uint64_t got = grad[i] > ta ? grad[i] : ta + 20000;
    recv_record(a, b, ta, got);
    ta = got + (uint64_t)(6 * MS * jitter(a, s, 2 * MICRO + i));
  }
  arrive[a] = ta;
  arrive[b] = tb;
}

/* Steps s0 .. s0 + n - 1 from t, rank 3 (replica 1's second stage) slow(step) times slower;
 * the allreduce takes 20 ms from the last arrival, its ring's receives recorded too. */
static uint64_t run_steps(uint64_t s0, uint64_t n, uint64_t t, double (*slow)(uint64_t step)) {
  for (uint64_t s = s0; s < s0 + n; s++) {
    uint64_t arrive[RANKS], last = 0;
    for (int p = 0; p < RANKS / 2; p++)
      replica_step(2 * p, 2 * p + 1, s, t, p == 1 ? slow(s) : 1.0, arrive);
    for (int r = 0; r < RANKS; r++)
      if (arrive[r] > last) last = arrive[r];
    uint64_t done = last + 20 * MS;
    for (int r = 0; r < RANKS; r++) {
      for (int k = 0; k < 4 && !as_calls(); k++) /* the ring's pipelined slices */
        recv_record(r, (r + RANKS - 1) % RANKS, arrive[r] + (uint64_t)k * 4 * MS,
                    last + (uint64_t)(k + 1) * 5 * MS);
      coll(r, RANKS, s, arrive[r], done + (uint64_t)r * 1000);
    }
    for (int r = 0; r < RANKS; r++)
      hb(r, done, s + 1, s + 1);
    t = done + 100000;
  }
  return t;
}

static double thrice_from_100_to_200(uint64_t s) { return s >= 100 && s < 200 ? 3.0 : 1.0; }

/* The verdicts of kind naming rank. */
static int named(const char *kind, int rank) {
  int n = 0;
  size_t i;
  json_t *e;
  json_array_foreach(events, i, e) {
    if (strcmp(json_string_value(json_object_get(e, "kind")), kind)) continue;
    json_t *ranks = json_object_get(e, "ranks");
    size_t j;
    json_t *v;
    json_array_foreach(ranks, j, v) n += json_integer_value(v) == rank;
  }
  return n;
}

static int all_of(const char *kind) {
  int n = 0;
  for (int r = 0; r < RANKS; r++)
    n += named(kind, r);
  return n;
}

START_TEST(only_the_slow_stage_is_named_not_the_stage_that_waits_for_it) {
  told_as = _i;
  setup(NULL);
  for (int r = 0; r < RANKS; r++) {
    struct c4_record c = {.kind = C4_REC_COMM};
    c.comm = (struct c4_comm_record){.comm = 0xc4, .rank = r, .nranks = RANKS, .pid = 100 + r};
    if (minimal())
      c.comm.pid = (uint32_t)r; /* and no host */
    else
      snprintf(c.comm.host, sizeof c.comm.host, "node%d", r);
    take(&c);
  }
  uint64_t t = run_steps(0, 100, 10 * MS, thrice_from_100_to_200);
  ck_assert_int_eq(all_of("straggler"), 0);
  t = run_steps(100, 100, t, thrice_from_100_to_200);
  ck_assert_int_eq(named("straggler", 3), 1);
  ck_assert_msg(all_of("straggler") == 1, "%d straggler verdicts (rank 2, which waits for 3: %d)",
                all_of("straggler"), named("straggler", 2));
  /* its host: the comm record's, or in the minimal schema its receives' (none in p2p calls) */
  json_t *hosts = json_object_get(first("straggler"), "hosts");
  if (told_as == AS_P2P_MINIMAL)
    ck_assert_int_eq(json_array_size(hosts), 0);
  else
    ck_assert_str_eq(json_string_value(json_array_get(hosts, 0)), "node3");
  run_steps(200, 80, t, thrice_from_100_to_200);
  ck_assert_int_eq(named("recovered", 3), 1);
  ck_assert_int_eq(all_of("straggler"), 1);
  c4_det_reset();
}
END_TEST

static double healthy(uint64_t s) {
  (void)s;
  return 1.0;
}

/* Communicator records that name no host, so its ranks are tied to the launcher ranks by
 * number, and receive records that name processes. Rank 2 (a first stage, which waits for its
 * gradients) restarts at step 100: its receives come from a new pid. Its waits are then the new
 * process's; kept on the old process, whose waits stopped, its blocked receives read as compute
 * and named it. */
START_TEST(a_rank_tied_by_number_follows_its_restarted_process) {
  told_as = AS_XFERS;
  setup(NULL);
  for (int r = 0; r < RANKS; r++) {
    struct c4_record c = {.kind = C4_REC_COMM};
    c.comm = (struct c4_comm_record){.comm = 0xc4, .rank = r, .nranks = RANKS};
    take(&c);
  }
  uint64_t t = run_steps(0, 100, 10 * MS, healthy);
  restarted[2] = 1000;
  run_steps(100, 150, t, healthy);
  restarted[2] = 0;
  ck_assert_int_eq(all_of("straggler"), 0);
  c4_det_reset();
}
END_TEST

/* Two communicators of the same RANKS ranks (a tensor-parallel group's and the world's, say),
 * taking turns: 30 ms of compute, an allreduce on 0xc5, 30 ms more, one on 0xc4; rank 3
 * computes slow(step) times as long. On 0xc4 a healthy rank's gap holds its wait for rank 3
 * in 0xc5's allreduce, which is no compute. */
static uint64_t run_two_comms(uint64_t s0, uint64_t n, uint64_t t, double (*slow)(uint64_t)) {
  for (uint64_t s = s0; s < s0 + n; s++)
    for (int c = 0; c < 2; c++) {
      uint64_t arrive[RANKS], last = 0;
      for (int r = 0; r < RANKS; r++) {
        arrive[r] = t + (uint64_t)(30 * MS * (r == 3 ? slow(s) : 1.0) * jitter(r, s, c));
        if (arrive[r] > last) last = arrive[r];
      }
      uint64_t done = last + 10 * MS;
      for (int r = 0; r < RANKS; r++)
        coll_on(c ? 0xc4 : 0xc5, r, RANKS, s, arrive[r], done + (uint64_t)r * 1000);
      if (c)
        for (int r = 0; r < RANKS; r++)
          hb(r, done, 2 * s + 2, 2 * s + 2);
      t = done + 100000;
    }
  return t;
}

START_TEST(a_stragglers_factor_is_its_compute_not_its_peers_waits_in_another_communicator) {
  setup(NULL);
  for (int c = 0; c < 2; c++)
    for (int r = 0; r < RANKS; r++) {
      struct c4_record m = {.kind = C4_REC_COMM};
      m.comm = (struct c4_comm_record){
          .comm = c ? 0xc4 : 0xc5, .rank = r, .nranks = RANKS, .pid = 100 + r};
      snprintf(m.comm.host, sizeof m.comm.host, "node%d", r);
      take(&m);
    }
  uint64_t t = run_two_comms(0, 100, 10 * MS, thrice_from_100_to_200);
  ck_assert_int_eq(all_of("straggler"), 0);
  run_two_comms(100, 100, t, thrice_from_100_to_200);
  ck_assert_int_eq(named("straggler", 3), 1); /* one verdict for the rank, on either */
  ck_assert_int_eq(all_of("straggler"), 1);
  size_t i;
  json_t *e;
  json_array_foreach(events, i, e) {
    if (strcmp(json_string_value(json_object_get(e, "kind")), "straggler")) continue;
    double f = json_real_value(json_object_get(e, "factor"));
    ck_assert_msg(f > 2.6 && f < 3.4, "factor %.2f on %s", f,
                  json_string_value(json_object_get(e, "comm")));
  }
  c4_det_reset();
}
END_TEST

/* A world of 8 ranks on 2 hosts and two groups of 4 (launcher ranks 0-3 and 4-7, ranks 0-3 in
 * their group), taking turns: 30 ms of compute, the groups' allreduces, 30 ms more, the world's.
 * Communicator records name each rank's host and pid; no heartbeats or transfers (a profiler's
 * trace). Launcher rank 5 computes 3x as long from step 100. */
static void run_world_and_groups(uint64_t s0, uint64_t n, uint64_t *t) {
  for (uint64_t s = s0; s < s0 + n; s++)
    for (int c = 0; c < 2; c++) { /* 0: the groups; 1: the world */
      uint64_t arrive[8], last[2] = {0, 0};
      for (int r = 0; r < 8; r++) {
        arrive[r] =
            *t + (uint64_t)(30 * MS * (r == 5 ? thrice_from_100_to_200(s) : 1.0) * jitter(r, s, c));
        int g = c ? 0 : r / 4;
        if (arrive[r] > last[g]) last[g] = arrive[r];
      }
      uint64_t end = 0;
      for (int r = 0; r < 8; r++) {
        uint64_t done = last[c ? 0 : r / 4] + 10 * MS + (uint64_t)r * 1000;
        coll_on(c ? 0xd0 : 0xd1 + (uint64_t)(r / 4), c ? r : r % 4, c ? 8 : 4, s, arrive[r], done);
        if (done > end) end = done;
      }
      *t = end + 100000;
    }
}

/* The processes' header lines (C4_RANK_HELLO records) say which launcher rank each is, so the
 * group's rank 1 on host node1 is known as launcher rank 5 and the straggler is named once, as
 * rank 5, with its host. Without them nothing says it, and it is named twice: as 5 on the world
 * and as 1 on its group. */
START_TEST(header_lines_tie_a_groups_ranks_to_their_launcher_ranks) {
  for (int headers = 0; headers < 2; headers++) {
    setup(NULL);
    for (int r = 0; r < 8; r++) {
      struct c4_record m = {.kind = C4_REC_RANK};
      m.rank = (struct c4_rank_record){
          .rank = r, .pid = 200 + (uint32_t)r, .event = C4_RANK_HELLO, .t = MS};
      snprintf(m.rank.host, sizeof m.rank.host, "node%d", r / 4);
      if (headers) take(&m);
      for (int c = 0; c < 2; c++) {
        m = (struct c4_record){.kind = C4_REC_COMM};
        m.comm = (struct c4_comm_record){.comm = c ? 0xd0 : 0xd1 + (uint64_t)(r / 4),
                                         .rank = c ? r : r % 4,
                                         .nranks = c ? 8 : 4,
                                         .pid = 200 + (uint32_t)r,
                                         .t = 2 * MS};
        snprintf(m.comm.host, sizeof m.comm.host, "node%d", r / 4);
        take(&m);
      }
    }
    uint64_t t = 10 * MS;
    run_world_and_groups(0, 200, &t);
    ck_assert_int_eq(named("straggler", 5), 1);
    ck_assert_int_eq(count("straggler"), headers ? 1 : 2);
    if (!headers) ck_assert_int_eq(named("straggler", 1), 1);
    json_t *e = first("straggler");
    ck_assert_str_eq(json_string_value(json_array_get(json_object_get(e, "hosts"), 0)), "node1");
    c4_det_reset();
  }
}
END_TEST

int main(void) {
  Suite *s = suite_create("det_pipe");
  TCase *tc = tcase_create("det_pipe");
  tcase_set_timeout(tc, 60);
  tcase_add_loop_test(tc, only_the_slow_stage_is_named_not_the_stage_that_waits_for_it, AS_XFERS,
                      AS_P2P_MINIMAL + 1);
  tcase_add_test(tc,
                 a_stragglers_factor_is_its_compute_not_its_peers_waits_in_another_communicator);
  tcase_add_test(tc, header_lines_tie_a_groups_ranks_to_their_launcher_ranks);
  tcase_add_test(tc, a_rank_tied_by_number_follows_its_restarted_process);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
