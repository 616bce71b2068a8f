/* test_detect.c -- detection on hand-built records: each verdict fires on its fault, names the
 * right rank, NIC, link or connection, clears when the fault goes, and stays silent on warm-up,
 * steady unevenness and one-off blips. */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_trace_read.h"
#include "chained_ring.h"
#include "det.h"
#include "det_internal.h"
#include "det_test_util.h"
#include "mon_events.h"
#include "mon_metrics.h"

#define MS 1000000ull

/* A data-parallel loop of n ranks: compute 60 ms times slow(rank, seq) with 2% jitter, then a
 * 40 ms allreduce that starts when the last rank arrives. Heartbeats every 200 ms. */
static uint64_t run_colls(int n, uint64_t seq0, uint64_t seqs, uint64_t t,
                          double (*slow)(int rank, uint64_t seq)) {
  uint64_t arrive[64];
  static uint64_t next_hb;
  for (uint64_t s = seq0; s < seq0 + seqs; s++) {
    uint64_t last = 0;
    for (int r = 0; r < n; r++) {
      double jitter = 1 + 0.02 * ((double)((s * 7919 + (uint64_t)r * 104729) % 101) / 50.0 - 1);
      arrive[r] = t + (uint64_t)(60 * MS * slow(r, s) * jitter);
      if (arrive[r] > last) last = arrive[r];
    }
    uint64_t done = last + 40 * MS;
    for (int r = 0; r < n; r++)
      coll(r, n, s, arrive[r], done + (uint64_t)r * 1000);
    if (done >= next_hb) {
      for (int r = 0; r < n; r++)
        hb(r, done, s + 1, s + 1);
      next_hb = done + 200 * MS;
    }
    t = done + (uint64_t)n * 1000;
  }
  return t;
}

static double healthy(int r, uint64_t s) {
  (void)r;
  (void)s;
  return 1;
}
static double rank5_twice_from_100_to_200(int r, uint64_t s) {
  return r == 5 && s >= 100 && s < 200 ? 2.0 : 1.0;
}
static double rank7_always_slower(int r, uint64_t s) {
  (void)s;
  return r == 7 ? 1.2 : 1.0;
}
static double two_heavy_ranks_rank3_twice_from_150(int r, uint64_t s) {
  return (r == 1 || r == 3 ? 1.8 : 1.0) * (r == 3 && s >= 150 ? 2.0 : 1.0);
}
static double three_ranks_thrice_from_the_start(int r, uint64_t s) {
  (void)s;
  return r == 2 || r == 5 || r == 6 ? 3.0 : 1.0;
}
static double rank3_thrice_from_the_start(int r, uint64_t s) {
  (void)s;
  return r == 3 ? 3.0 : 1.0;
}
/* Each rank in turn 15% slower for 12 collectives, every 40: the bursts a shared machine gives. */
static double bursts_of_noise(int r, uint64_t s) {
  return s % 40 < 12 && (int)(s / 40 % 8) == r ? 1.15 : 1.0;
}
static double one_blip(int r, uint64_t s) { return r == 2 && s == 120 ? 3.0 : 1.0; }
/* Rank 1 noisy (a pipeline stage on a loaded machine: its compute +-45% from one collective to
 * the next), then 3x slow from collective 90 to 190, just after it has a baseline of its own. */
static double noisy_rank1_thrice_from_90(int r, uint64_t s) {
  if (r != 1) return 1.0;
  double u = (double)((s * 2654435761u) % 1000) / 1000.0; /* even over [0, 1) */
  return (0.55 + 0.9 * u) * (s >= 90 && s < 190 ? 3.0 : 1.0);
}
/* Rank 1 as noisy, then from collective 90 3x slow in 11 collectives of every 16: its statistic
 * past its young threshold, and under it now and then. */
static double noisy_rank1_thrice_mostly_from_90(int r, uint64_t s) {
  if (r != 1) return 1.0;
  double u = (double)((s * 2654435761u) % 1000) / 1000.0; /* even over [0, 1) */
  return (0.55 + 0.9 * u) * (s >= 90 && s % 16 < 11 ? 3.0 : 1.0);
}

/* Four pipeline stages meeting at a collective: stage 3 computes the head, 1.5x the others' 60 ms
 * (2% jitter), and times slow(seq) more; stage 0 ends the backward pass, leaving each collective
 * 40 ms after the others and arriving last, so the collective does not wait for stage 3, except
 * by a hair twice in a row in every 50 collectives. Heartbeats every 200 ms. */
static uint64_t run_stages(uint64_t seq0, uint64_t seqs, uint64_t t, double (*slow)(uint64_t)) {
  static uint64_t next_hb;
  uint64_t left[4] = {t + 40 * MS, t, t, t};
  for (uint64_t s = seq0; s < seq0 + seqs; s++) {
    uint64_t arrive[4], last = 0;
    for (int r = 0; r < 4; r++) {
      double jitter = 1 + 0.02 * ((double)((s * 7919 + (uint64_t)r * 104729) % 101) / 50.0 - 1);
      int hair = r == 3 && (s % 50 == 25 || s % 50 == 26);
      double ms = r == 3 ? (hair ? 101 : 90 * slow(s)) : 60;
      arrive[r] = left[r] + (uint64_t)(ms * (hair ? 1 : jitter) * MS);
      if (arrive[r] > last) last = arrive[r];
    }
    uint64_t done = last + 40 * MS;
    for (int r = 0; r < 4; r++) {
      left[r] = done + (r == 0 ? 40 * MS : (uint64_t)r * 1000);
      coll(r, 4, s, arrive[r], left[r]);
    }
    if (done >= next_hb) {
      for (int r = 0; r < 4; r++)
        hb(r, done, s + 1, s + 1);
      next_hb = done + 200 * MS;
    }
  }
  return left[1];
}

static double as_designed(uint64_t s) {
  (void)s;
  return 1;
}
static double twice_from_300(uint64_t s) { return s >= 300 ? 2 : 1; }
static double a_little_more_from_60_to_72(uint64_t s) { return s >= 60 && s < 72 ? 1.12 : 1; }

/* A detector with one communicator of n ranks, each its own host (node<r>). */
/* setup() with a traffic plan whose JSON text is plan_json (written to a file c4mon reads). */
static void setup_with_plan(const char *plan_json) {
  char plan[] = "/tmp/c4-test-plan-XXXXXX";
  int fd = mkstemp(plan);
  ck_assert_int_ge(fd, 0);
  FILE *f = fdopen(fd, "w");
  ck_assert_ptr_nonnull(f);
  fputs(plan_json, f);
  fclose(f);
  setup(plan);
  unlink(plan);
}

static void setup_comm(int n) {
  setup(NULL);
  for (int r = 0; r < n; r++)
    comm_record(r, n, 1);
}

/* The first rank an event names. */
static json_int_t first_rank(json_t *e) {
  return json_integer_value(json_array_get(json_object_get(e, "ranks"), 0));
}

/* The one straggler verdict, naming rank at a factor in (lo, hi). */
static json_t *the_straggler(int rank, double lo, double hi) {
  ck_assert_int_eq(count("straggler"), 1);
  json_t *e = first("straggler");
  ck_assert_int_eq(first_rank(e), rank);
  double f = json_real_value(json_object_get(e, "factor"));
  ck_assert_msg(f > lo && f < hi, "factor %.2f", f);
  return e;
}

START_TEST(a_rank_that_computes_longer_is_named_a_straggler_with_its_factor_and_clears) {
  setup_comm(8);
  uint64_t t = run_colls(8, 0, 100, 10 * MS, rank5_twice_from_100_to_200);
  ck_assert_int_eq(json_array_size(events), 0);
  uint64_t onset = t;
  t = run_colls(8, 100, 100, t, rank5_twice_from_100_to_200);
  json_t *e = first("straggler");
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(count("straggler"), 1);
  ck_assert_str_eq(json_string_value(json_object_get(e, "where")), "gpu");
  ck_assert_int_eq(first_rank(e), 5);
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(e, "hosts"), 0)), "node5");
  double f = json_real_value(json_object_get(e, "factor"));
  ck_assert_msg(f > 1.8 && f < 2.2, "factor %.2f", f);
  uint64_t flagged = (uint64_t)json_integer_value(json_object_get(e, "t"));
  ck_assert_msg(flagged > onset && flagged < onset + 1200 * MS, "flagged %.2f s after onset",
                (double)(flagged - onset) / 1e9);
  ck_assert_int_eq(count("recovered"), 0);
  run_colls(8, 200, 60, t, rank5_twice_from_100_to_200);
  ck_assert_int_eq(count("recovered"), 1);
  json_t *rec = first("recovered");
  ck_assert_int_eq(json_integer_value(json_object_get(rec, "clears")),
                   json_integer_value(json_object_get(e, "id")));
  c4_det_reset();
}
END_TEST

static double rank1_thrice_from_100(int r, uint64_t s) { return r == 1 && s >= 100 ? 3.0 : 1.0; }
static double rank1_bursts_of_a_third_more(int r, uint64_t s) {
  return r == 1 && s % 40 >= 20 ? 1.33 : 1.0;
}

/* Of two ranks, the median of both was the slow one itself: a 2-rank job's 3x straggler read 1x
 * and was never named. It is read against the other now, and named; bursts of a third more (what
 * healthy 2-rank jobs on a shared machine read) are not, a verdict on two ranks needing 1.5x. */
START_TEST(a_straggler_of_two_ranks_is_named_and_bursts_are_not) {
  setup_comm(2);
  uint64_t t = run_colls(2, 0, 100, 10 * MS, rank1_thrice_from_100);
  ck_assert_int_eq(json_array_size(events), 0);
  run_colls(2, 100, 100, t, rank1_thrice_from_100);
  the_straggler(1, 2.4, 3.6);
  c4_det_reset();
  setup_comm(2);
  run_colls(2, 0, 800, 10 * MS, rank1_bursts_of_a_third_more);
  ck_assert_int_eq(count("straggler"), 0);
  c4_det_reset();
}
END_TEST

/* A rank slow from its first collective has no healthy history to be its baseline: it is named
 * against its peers, with its factor, and never recovers while slow. */
START_TEST(a_rank_slow_from_the_start_is_named_against_its_peers) {
  setup_comm(8);
  run_colls(8, 0, 300, 10 * MS, rank3_thrice_from_the_start);
  ck_assert_int_eq(count("straggler"), 1);
  ck_assert_int_eq(count("recovered"), 0);
  json_t *e = first("straggler");
  ck_assert_int_eq(first_rank(e), 3);
  ck_assert_int_le(json_integer_value(json_object_get(e, "t")), 20 * 300 * MS);
  double f = json_real_value(json_object_get(e, "factor"));
  ck_assert_msg(f > 2.6 && f < 3.4, "factor %.2f", f);
  double cost = json_real_value(json_object_get(e, "cost"));
  ck_assert_msg(cost > 0.4 && cost < 0.8, "cost %.2f", cost);
  ck_assert_int_eq(json_array_size(events), 1);
  /* one verdict with updates: the state's copy follows the rank */
  json_t *st = c4_det_state_json();
  json_t *v = json_array_get(json_object_get(st, "verdicts"), 0);
  ck_assert_int_eq(json_array_size(json_object_get(st, "verdicts")), 1);
  double now = json_real_value(json_object_get(v, "factor"));
  ck_assert_msg(now > 2.6 && now < 3.4 && now != f, "state factor %.4f, raised at %.4f", now, f);
  json_decref(st);
  c4_det_reset();
}
END_TEST

/* Ranks heavier by design (1.8x, a pipeline's last stages) learn that as their share; one of
 * them 2x slow on top is named at its own slowdown, not over the median of the others. */
START_TEST(a_heavy_rank_slowed_is_named_at_its_own_slowdown) {
  setup_comm(4);
  run_colls(4, 0, 400, 10 * MS, two_heavy_ranks_rank3_twice_from_150);
  the_straggler(3, 1.7, 2.3);
  c4_det_reset();
}
END_TEST

/* Three ranks equally slow from the start (a slow host's) take turns arriving last: each is
 * named, as each holds the collective up. */
START_TEST(ranks_slow_together_from_the_start_are_each_named) {
  setup_comm(8);
  run_colls(8, 0, 300, 10 * MS, three_ranks_thrice_from_the_start);
  ck_assert_int_eq(count("straggler"), 3);
  int named = 0;
  for (size_t i = 0; i < json_array_size(events); i++) {
    json_t *e = json_array_get(events, i);
    if (strcmp(json_string_value(json_object_get(e, "kind")), "straggler") == 0)
      named |= 1 << first_rank(e);
  }
  ck_assert_int_eq(named, 1 << 2 | 1 << 5 | 1 << 6);
  c4_det_reset();
}
END_TEST

/* Bursts of 15% on one rank at a time, for 12 collectives each, are the machine's noise once
 * seen: after the first rounds (a burst that is new is a real change) they raise nothing. */
START_TEST(bursts_of_noise_are_learned) {
  setup_comm(8);
  uint64_t t = run_colls(8, 0, 640, 10 * MS, bursts_of_noise);
  json_decref(events);
  events = json_array();
  run_colls(8, 640, 1280, t, bursts_of_noise);
  ck_assert_int_eq(count("straggler"), 0);
  c4_det_reset();
}
END_TEST

/* A rank whose young baseline is wide (few samples, noisy ratios) and that turns 3x slow sums its
 * evidence slowly: its samples past the threshold are not learned while they sum, so they cannot
 * raise the threshold past the fault (learned as they came, they did: never named). */
/* 4 ranks slowed by slow(rank, seq): nothing in the first 90 collectives, then rank 1 alone named
 * within `more` collectives. */
static void rank1_named_after_90(double (*slow)(int, uint64_t), uint64_t more) {
  setup_comm(4);
  uint64_t t = run_colls(4, 0, 90, 10 * MS, slow);
  ck_assert_int_eq(json_array_size(events), 0);
  run_colls(4, 90, more, t, slow);
  ck_assert_int_eq(count("straggler"), 1);
  ck_assert_int_eq(first_rank(first("straggler")), 1);
  c4_det_reset();
}

START_TEST(a_noisy_rank_slowed_just_after_its_baseline_is_named_before_it_is_learned) {
  rank1_named_after_90(noisy_rank1_thrice_from_90, 100);
}
END_TEST

/* The same rank slowed 3x with pauses: a statistic that dips under the threshold leaves the run
 * going while its evidence lasts (ended at the first dip, the run's slow samples were learned,
 * the threshold rose past the fault, and the rank was never named). */
START_TEST(a_slow_rank_whose_statistic_dips_under_its_threshold_is_still_named) {
  rank1_named_after_90(noisy_rank1_thrice_mostly_from_90, 200);
}
END_TEST

/* A stage heavier by design that the collective does not wait for learns that share as its
 * baseline: arriving last now and then raises nothing (judged against its peers for want of a
 * baseline, it was named the first time; and in its first collectives, before it has a baseline,
 * twice last of 12 was enough), and slowed 2x on top it is named at its own factor. */
START_TEST(a_heavy_stage_the_collective_does_not_wait_for_is_judged_against_its_own_share) {
  setup_comm(4);
  uint64_t t = run_stages(0, 300, 10 * MS, as_designed);
  ck_assert_int_eq(json_array_size(events), 0);
  run_stages(300, 100, t, twice_from_300);
  json_t *e = the_straggler(3, 1.7, 2.3);
  ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(e, "detail")), "usual share"));
  c4_det_reset();
}
END_TEST

/* The same stage 1.12x over its share for 12 collectives just as its baseline forms (about
 * collective 67): judged against its own share from then on, that is a burst, not the run past
 * 1.3x of its peers it had been in (carried over, that run's evidence named it at once). */
START_TEST(a_heavy_stages_run_against_its_peers_is_no_evidence_once_it_has_a_baseline) {
  setup_comm(4);
  run_stages(0, 200, 10 * MS, a_little_more_from_60_to_72);
  ck_assert_int_eq(count("straggler"), 0);
  c4_det_reset();
}
END_TEST

START_TEST(steady_unevenness_and_one_off_blips_raise_nothing) {
  setup_comm(8);
  uint64_t t = run_colls(8, 0, 300, 10 * MS, rank7_always_slower);
  ck_assert_int_eq(json_array_size(events), 0);
  run_colls(8, 300, 300, t, one_blip);
  run_colls(8, 600, 300, t, healthy);
  ck_assert_int_eq(json_array_size(events), 0);
  c4_det_reset();
}
END_TEST

START_TEST(a_rank_that_never_enters_is_a_noncomm_hang_naming_it) {
  setup(NULL);
  uint64_t t = run_colls(4, 0, 50, 10 * MS, healthy);
  for (int r = 0; r < 3; r++) /* rank 3 never arrives at collective 50 */
    coll(r, 4, 50, t + 60 * MS, 0);
  for (uint64_t k = 1; k <= 40; k++) /* heartbeats go on: everyone alive */
    for (int r = 0; r < 4; r++)
      hb(r, t + k * 100 * MS, r == 3 ? 50 : 51, 50);
  json_t *e = first("noncomm_hang");
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(count("comm_hang"), 0);
  ck_assert_int_eq(json_array_size(json_object_get(e, "ranks")), 1);
  ck_assert_int_eq(first_rank(e), 3);
  uint64_t at = (uint64_t)json_integer_value(json_object_get(e, "t"));
  ck_assert_msg(at >= t + 3000 * MS && at <= t + 3200 * MS, "flagged at +%.2f s",
                (double)(at - t) / 1e9);
  c4_det_reset();
}
END_TEST

/* A larger model on a loaded host: 5 s of compute between collectives, then the ranks go in and
 * the collective takes 0.5 s; or one rank goes in a second before the others. No completion for
 * 5.5 s, but nobody waits 3 s: no hang of either kind. */
static void long_compute(int early_ms) {
  uint64_t t = run_colls(4, 0, 50, 10 * MS, healthy);
  for (uint64_t k = 1; k <= 55; k++) /* rank 0 goes in at 5 s less early_ms, the rest at 5 s */
    for (int r = 0; r < 4; r++)
      hb(r, t + k * 100 * MS, k * 100 >= (uint64_t)(r ? 5000 : 5000 - early_ms) ? 51 : 50, 50);
  for (int r = 0; r < 4; r++)
    coll(r, 4, 50, t + (uint64_t)(r ? 5000 : 5000 - early_ms) * MS, t + 5550 * MS);
  run_colls(4, 51, 5, t + 5600 * MS, healthy);
}

/* Collectives seq0.. where rank 0 goes in wait_ms before the others (heartbeats every 100 ms say
 * so) and each completes 50 ms after they come; the next starts 10 ms later. Returns its time. */
static uint64_t rank0_waits(uint64_t t, uint64_t seq0, int n, const uint64_t *wait_ms) {
  for (int i = 0; i < n; i++) {
    uint64_t s = seq0 + (uint64_t)i, in = t + wait_ms[i] * MS, done = in + 50 * MS;
    for (uint64_t h = t + 100 * MS; h < done; h += 100 * MS)
      for (int r = 0; r < 4; r++)
        hb(r, h, !r || h >= in ? s + 1 : s, s);
    for (int r = 0; r < 4; r++)
      coll(r, 4, s, r ? in : t, done);
    t = done + 10 * MS;
  }
  return t;
}

/* Ranks that wait 1.5 s for one another every collective (a loaded host's uneven compute): one
 * wait of 4 s is within three times the longest of the last 256 (4.6 s) and no hang; a rank that
 * does not come is one, once the wait is past that. */
START_TEST(a_wait_is_judged_against_the_jobs_longest_recent_waits) {
  setup(NULL);
  uint64_t w[40];
  for (int i = 0; i < 40; i++)
    w[i] = i == 39 ? 4000 : 1500;
  rank0_waits(10 * MS, 0, 40, w);
  ck_assert_int_eq(count("noncomm_hang"), 0);
  c4_det_reset();
  setup(NULL);
  w[39] = 1500;
  uint64_t t = rank0_waits(10 * MS, 0, 40, w);
  for (uint64_t h = t + 100 * MS; h <= t + 6000 * MS; h += 100 * MS) /* the others never come */
    for (int r = 0; r < 4; r++)
      hb(r, h, r ? 40 : 41, 40);
  json_t *e = first("noncomm_hang");
  ck_assert_ptr_nonnull(e);
  uint64_t at = (uint64_t)json_integer_value(json_object_get(e, "t"));
  ck_assert_msg(at >= t + 4500 * MS && at <= t + 5000 * MS, "flagged at +%.2f s",
                (double)(at - t) / 1e9);
  c4_det_reset();
}
END_TEST

START_TEST(a_long_compute_with_one_rank_in_early_is_no_hang) {
  setup(NULL);
  long_compute(1000);
  ck_assert_int_eq(count("noncomm_hang"), 0);
  ck_assert_int_eq(count("comm_hang"), 0);
  c4_det_reset();
  setup(NULL);
  long_compute(0);
  ck_assert_int_eq(count("noncomm_hang"), 0);
  ck_assert_int_eq(count("comm_hang"), 0);
  c4_det_reset();
}
END_TEST

/* x's two ends: ranks self and peer on hosts node<self> and node<peer>, each with pid 100 + its
 * rank unless minimal (a minimal-schema line names none). */
static int no_dev; /* the transfers' ends give no device (-1): each rank stands for its NIC */

static void ends(struct c4_xfer_record *x, int self, int peer, int minimal) {
  x->self = (struct c4_identity){
      .rank = self, .pid = minimal ? 0 : 100 + (uint32_t)self, .dev = no_dev ? -1 : 0};
  x->peer = (struct c4_identity){
      .rank = peer, .pid = minimal ? 0 : 100 + (uint32_t)peer, .dev = no_dev ? -1 : 0};
  snprintf(x->self.host, C4_HOST_MAX, "node%d", self);
  snprintf(x->peer.host, C4_HOST_MAX, "node%d", peer);
}

/* A completed transfer of bytes from src to dst over connection conn, as its receiver records
 * it. */
static void received(uint64_t conn, int src, int dst, uint64_t seq, uint64_t bytes, uint64_t t_post,
                     uint64_t t_first, uint64_t t_done) {
  struct c4_record r = {.kind = C4_REC_XFER};
  r.xfer = (struct c4_xfer_record){.dir = C4_DIR_RECV,
                                   .status = C4_XFER_OK,
                                   .conn_id = conn,
                                   .seq = seq,
                                   .bytes = bytes,
                                   .t_posted = t_post,
                                   .t_first_byte = t_first,
                                   .t_done = t_done};
  ends(&r.xfer, dst, src, 0);
  take(&r);
}

/* A transfer from src to dst, seen from end dir, posted at t and stuck after moving bytes. */
static void pending_moved(int src, int dst, int dir, uint64_t t, uint64_t bytes) {
  struct c4_record r = {.kind = C4_REC_XFER};
  r.xfer = (struct c4_xfer_record){.dir = (uint8_t)dir,
                                   .status = C4_XFER_PENDING,
                                   .conn_id = 1000 + (uint64_t)(src * 16 + dst), /* one a link */
                                   .seq = 9,
                                   .bytes = bytes,
                                   .t_posted = t};
  int self = dir == C4_DIR_SEND ? src : dst, peer = dir == C4_DIR_SEND ? dst : src;
  ends(&r.xfer, self, peer, 0);
  r.xfer.peer.dev = 1;
  take(&r);
}

static void pending(int src, int dst, int dir, uint64_t t) {
  pending_moved(src, dst, dir, t, 4096);
}

/* A 1 MiB transfer from src to dst that completed at t, as its receiver records it. */
static void moved(int src, int dst, uint64_t t) {
  received(1000 + (uint64_t)(src * 16 + dst), src, dst, t / MS, 1 << 20, t - 50 * MS, t - 49 * MS,
           t);
}

/* 4 healthy ranks through collectives 0-49, then all of them inside collective 50, which does not
 * complete. Returns the time the collectives before it ended. */
static uint64_t all_inside_collective_50(void) {
  setup(NULL);
  uint64_t t = run_colls(4, 0, 50, 10 * MS, healthy);
  for (int r = 0; r < 4; r++)
    coll(r, 4, 50, t + 60 * MS, 0);
  return t;
}

/* 4 s of heartbeats from t on saying every rank is inside collective 50. */
static void heartbeats_inside(uint64_t t) {
  for (uint64_t k = 1; k <= 40; k++)
    for (int r = 0; r < 4; r++)
      hb(r, t + k * 100 * MS, 51, 50);
}

/* The event's link is src -> dst. */
static void link_is(json_t *e, const char *src, const char *dst) {
  json_t *link = json_object_get(e, "link");
  ck_assert_str_eq(json_string_value(json_array_get(link, 0)), src);
  ck_assert_str_eq(json_string_value(json_array_get(link, 1)), dst);
}

/* Collectives 0-49 of 4 ranks back to back with no heartbeats (a trace written on the node).
 * Returns the last one's completion. */
static uint64_t back_to_back_without_heartbeats(void) {
  setup(NULL);
  uint64_t t = 10 * MS, last = 0;
  for (uint64_t s = 0; s < 50; s++, t += 100 * MS) {
    for (int r = 0; r < 4; r++)
      coll(r, 4, s, t + (uint64_t)r * MS, t + 60 * MS);
    last = t + 60 * MS;
  }
  return last;
}

START_TEST(all_ranks_inside_and_a_stuck_send_is_a_comm_hang_at_that_link) {
  uint64_t t = all_inside_collective_50();
  pending(2, 3, C4_DIR_RECV, t + 2000 * MS); /* the receiver waits on the sender... */
  pending(1, 2, C4_DIR_RECV, t + 2000 * MS); /* ...and so does the next one downstream */
  pending(2, 3, C4_DIR_SEND, t + 2001 * MS); /* the send that does not go */
  heartbeats_inside(t);
  json_t *e = first("comm_hang");
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(count("noncomm_hang"), 0);
  ck_assert_str_eq(json_string_value(json_object_get(e, "where")), "link");
  link_is(e, "node2", "node3");
  /* it completes after all: recovered */
  run_colls(4, 51, 5, t + 5000 * MS, healthy);
  ck_assert_int_eq(count("recovered"), 1);
  c4_det_reset();
}
END_TEST

/* Receives alone: a ring's stuck link and the receives stalled behind it look alike, so the
 * verdict names the first posted and says that it may be another, at a confidence shared among
 * them. */
START_TEST(stuck_receives_without_a_send_name_a_link_and_say_it_is_uncertain) {
  uint64_t t = all_inside_collective_50();
  pending(1, 2, C4_DIR_RECV, t + 2002 * MS);
  pending(2, 3, C4_DIR_RECV, t + 2000 * MS); /* the first posted */
  pending(3, 0, C4_DIR_RECV, t + 2001 * MS);
  heartbeats_inside(t);
  json_t *e = first("comm_hang");
  ck_assert_ptr_nonnull(e);
  link_is(e, "node2", "node3");
  ck_assert_double_eq_tol(json_number_value(json_object_get(e, "confidence")), 0.2, 1e-9);
  const char *detail = json_string_value(json_object_get(e, "detail"));
  ck_assert_msg(strstr(detail, "the first posted of 3 receives stuck alike"), "detail: %s", detail);
  c4_det_reset();
}
END_TEST

/* Receives alone, from a ring that stalled on link 2 -> 3: each link downstream of it forwarded
 * one more step's chunk before the stall reached it, so the stuck link's receiver moved least,
 * though it was not the first posted; named alone, at the confidence of a receive. */
START_TEST(of_stuck_receives_the_one_that_moved_least_names_the_link) {
  uint64_t t = all_inside_collective_50();
  pending_moved(3, 0, C4_DIR_RECV, t + 2000 * MS, 1 << 16);
  pending_moved(0, 1, C4_DIR_RECV, t + 2000 * MS, 2 << 16);
  pending_moved(1, 2, C4_DIR_RECV, t + 2000 * MS, 3 << 16);
  pending_moved(2, 3, C4_DIR_RECV, t + 2001 * MS, 0);
  heartbeats_inside(t);
  json_t *e = first("comm_hang");
  ck_assert_ptr_nonnull(e);
  link_is(e, "node2", "node3");
  ck_assert_double_eq_tol(json_number_value(json_object_get(e, "confidence")), 0.6, 1e-9);
  c4_det_reset();
}
END_TEST

/* A trace written on the node (C4_TRACE) has no heartbeats: the transfers the plugin reported
 * stuck since the last completed collective say their ranks are inside one, and the hang is
 * judged at its threshold, counted from the newest of them, whether the next record comes long
 * after it or the trace ends inside it (c4_det_hang_due, which replay advances to). */
START_TEST(without_heartbeats_stuck_transfers_make_a_comm_hang_at_its_threshold) {
  uint64_t last = back_to_back_without_heartbeats();
  ck_assert_uint_eq(c4_det_hang_due(), 0); /* nothing stuck */
  pending(2, 3, C4_DIR_RECV, last + 50 * MS);
  pending(2, 3, C4_DIR_SEND, last + 60 * MS);
  uint64_t due = last + 60 * MS + 3000 * MS; /* the default 3 s threshold */
  ck_assert_uint_eq(c4_det_hang_due(), due);
  c4_det_advance(last + 2000 * MS);
  ck_assert_int_eq(count("comm_hang"), 0);
  c4_det_advance(last + 9000 * MS); /* the next record, long after */
  json_t *e = first("comm_hang");
  ck_assert_ptr_nonnull(e);
  ck_assert_uint_eq(json_integer_value(json_object_get(e, "t")), due);
  link_is(e, "node2", "node3");
  ck_assert_double_eq(json_number_value(json_object_get(e, "confidence")), 1.0);
  ck_assert_uint_eq(c4_det_hang_due(), 0); /* judged */
  c4_det_reset();
}
END_TEST

/* A trace of collective records alone (a profiler without the net plugin, no heartbeats) that
 * ends inside a collective none completed: judged at the trace's end, where the threshold has
 * passed. All ranks in: a comm_hang naming the communicator's ranks; one never in: a
 * noncomm_hang naming it. Before, neither raised anything. */
START_TEST(a_trace_of_collectives_alone_that_ends_inside_a_hang_is_judged_at_its_end) {
  for (int missing = -1; missing < 4; missing += 3) { /* -1: all in; 2: rank 2 never comes */
    uint64_t last = back_to_back_without_heartbeats(), t = last + 40 * MS;
    for (int r = 0; r < 4; r++)
      if (r != missing) coll(r, 4, 50, t + (uint64_t)r * MS, 0);
    ck_assert_uint_eq(c4_det_hang_due(), 0); /* no transfer stuck: the old rule sees nothing */
    uint64_t due = c4_det_hang_due_at_end();
    ck_assert_uint_ge(due, last + 3000 * MS);
    c4_det_advance(due + 1);
    json_t *e = first(missing < 0 ? "comm_hang" : "noncomm_hang");
    ck_assert_msg(e != NULL, "missing %d: no hang", missing);
    json_t *ranks = json_object_get(e, "ranks");
    if (missing < 0) {
      ck_assert_int_eq(json_array_size(ranks), 4);
    } else {
      ck_assert_int_eq(json_array_size(ranks), 1);
      ck_assert_int_eq(first_rank(e), missing);
    }
    c4_det_reset();
  }
}
END_TEST

/* A trace of collective records alone cut inside its last allreduce (a copy of a live file, a
 * killed job): the ranks whose records made it completed it, so the one whose line was cut off
 * was in it too. Nothing is hung, at the trace's end or later; before, the rank whose line was cut
 * off was named a noncomm_hang 3 s past the trace's last record. */
START_TEST(a_trace_cut_inside_its_last_allreduce_is_no_hang) {
  uint64_t last = back_to_back_without_heartbeats(), t = last + 40 * MS;
  for (int r = 0; r < 4; r++)
    if (r != 1) coll(r, 4, 50, t + (uint64_t)r * MS, t + 60 * MS);
  uint64_t due = c4_det_hang_due_at_end();
  c4_det_advance((due > t ? due : t) + 10000 * MS);
  ck_assert_int_eq(count("noncomm_hang"), 0);
  ck_assert_int_eq(count("comm_hang"), 0);
  c4_det_reset();
}
END_TEST

/* A collective the last rank went into long after the previous one completed (2.5 s of compute)
 * is hung the threshold after that rank went in, not after the previous completion: 0.5 s inside
 * is no hang. */
START_TEST(a_hang_threshold_counts_from_the_last_rank_going_in) {
  uint64_t last = back_to_back_without_heartbeats(), in = last + 2500 * MS;
  for (int r = 0; r < 4; r++)
    coll(r, 4, 50, in - (uint64_t)(3 - r) * MS, 0);
  ck_assert_uint_ge(c4_det_hang_due_at_end(), in + 3000 * MS);
  c4_det_advance(last + 3001 * MS);
  ck_assert_int_eq(count("comm_hang"), 0);
  c4_det_advance(in + 3001 * MS);
  ck_assert_int_eq(count("comm_hang"), 1);
  c4_det_reset();
}
END_TEST

/* Where heartbeats come they say who is inside a collective: a transfer left pending while the
 * ranks compute (or as the job ends) is no hang. A healthy c4perf job raised one after its
 * goodbye when pending transfers counted whatever the heartbeats said. */
START_TEST(with_heartbeats_a_pending_transfer_outside_any_collective_is_no_hang) {
  setup(NULL);
  uint64_t t = run_colls(4, 0, 50, 10 * MS, healthy);
  pending(2, 3, C4_DIR_RECV, t + 100 * MS);
  for (uint64_t k = 1; k <= 60; k++) /* 6 s, every rank outside: entered 50, done 50 */
    for (int r = 0; r < 4; r++)
      hb(r, t + k * 100 * MS, 50, 50);
  ck_assert_int_eq(count("comm_hang"), 0);
  ck_assert_int_eq(count("noncomm_hang"), 0);
  c4_det_reset();
}
END_TEST

/* One large collective on a slow fabric: every rank inside it for 6 s while its transfers keep
 * completing is moving, not hung (a fresh-clone CI's healthy c4perf job, a 256 MiB allreduce on
 * a loaded machine, was called hung). Once they stop, the hang counts from the last one that
 * completed. Both ways the ranks inside are known: the collective's records open (the
 * profiler), and heartbeats alone (c4perf's host ring), where the heartbeats' ranks inside are
 * named (the CI's verdict named none). */
START_TEST(a_collective_whose_transfers_still_complete_is_no_hang_until_they_stop) {
  for (int open = 0; open < 2; open++) {
    setup(NULL);
    uint64_t t = run_colls(4, 0, 50, 10 * MS, healthy), stop = t + 6000 * MS;
    for (int r = 0; r < 4 && open; r++)
      coll(r, 4, 50, t + 60 * MS, 0);
    for (uint64_t k = 1; k <= 100; k++) { /* 10 s of heartbeats inside collective 50 */
      uint64_t at = t + k * 100 * MS;
      if (at <= stop) moved((int)k % 4, (int)(k + 1) % 4, at);
      for (int r = 0; r < 4; r++)
        hb(r, at, 51, 50);
      if (at < stop + 3000 * MS)
        ck_assert_msg(count("comm_hang") == 0, "open %d: at %d ms", open, (int)((at - t) / MS));
    }
    json_t *e = first("comm_hang");
    ck_assert_msg(e != NULL, "open %d: no hang after the transfers stopped", open);
    ck_assert_int_eq(json_array_size(json_object_get(e, "ranks")), 4);
    ck_assert_int_eq(json_array_size(json_object_get(e, "hosts")), 4);
    c4_det_reset();
  }
}
END_TEST

/* Detection afresh; ranks 0-2 heartbeat for half a second, then rank 1's stream (pid 101 on
 * node1) ends without a goodbye. Returns that end record, for the caller to send again. */
static struct c4_record three_ranks_then_rank1_lost(void) {
  setup(NULL);
  for (uint64_t k = 1; k <= 5; k++)
    for (int r = 0; r < 3; r++)
      hb(r, k * 100 * MS, 0, 0);
  struct c4_record end = {.kind = C4_REC_RANK};
  end.rank = (struct c4_rank_record){.rank = 1, .pid = 101, .event = C4_RANK_LOST, .t = 600 * MS};
  strcpy(end.rank.host, "node1");
  take(&end);
  return end;
}

START_TEST(a_stream_that_ends_without_goodbye_or_goes_silent_is_a_lost_rank) {
  struct c4_record end = three_ranks_then_rank1_lost();
  json_t *e = first("rank_lost");
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(first_rank(e), 1);
  end.rank.rank = 2; /* a clean goodbye is not a loss */
  end.rank.event = C4_RANK_BYE;
  take(&end);
  /* rank 0 keeps going, then falls silent: lost after the threshold (10 s) */
  for (uint64_t k = 7; k <= 30; k++)
    hb(0, k * 100 * MS, 0, 0);
  hb(3, 3000 * MS, 0, 0); /* rank 3 is alive: its heartbeats are 9.9 s apart at most */
  hb(3, 12900 * MS, 0, 0);
  hb(3, 13500 * MS, 0, 0);
  ck_assert_int_eq(count("rank_lost"), 2);
  hb(1, 13600 * MS, 0, 0); /* rank 1 is back */
  ck_assert_int_eq(count("recovered"), 1);
  c4_det_reset();
}
END_TEST

/* Rank 1 lost at 5.5 s, its replacement (another pid) streaming from 120 s and dying at 122 s:
 * lost again 10 s after its last heartbeat, whatever the gap between the two. */
START_TEST(a_replacement_that_dies_early_is_lost_at_the_usual_threshold) {
  setup(NULL);
  for (uint64_t t = 1; t <= 130; t++) {
    hb(0, t * 1000 * MS, 0, 0);
    if (t <= 5) hb(1, t * 1000 * MS, 0, 0);
  }
  ck_assert_int_eq(count("rank_lost"), 1);
  struct c4_record r = {.kind = C4_REC_RANK};
  r.rank = (struct c4_rank_record){.rank = 1, .pid = 777, .event = C4_RANK_HB};
  strcpy(r.rank.host, "node1");
  for (uint64_t t = 1200; t <= 1220; t++) { /* 120 s to 122 s, every 100 ms */
    r.rank.t = t * 100 * MS;
    take(&r);
    if (t % 10 == 0) hb(0, t * 100 * MS + 1, 0, 0);
  }
  for (uint64_t t = 123; t <= 131; t++)
    hb(0, t * 1000 * MS + 2, 0, 0);
  ck_assert_int_eq(count("rank_lost"), 1); /* not yet: 10 s after 122 s is 132 s */
  for (uint64_t t = 132; t <= 135; t++)
    hb(0, t * 1000 * MS + 2, 0, 0);
  ck_assert_int_eq(count("rank_lost"), 2);
  c4_det_reset();
}
END_TEST

/* c4mon stopped 25 s: when it runs again, the ranks' heartbeats of that time wait in its sockets
 * and are read one by one, the first moving the clock 25 s on. Told of its stall first (serve's
 * loop notices it did not wake), it judges no rank lost meanwhile; not told, the ranks not yet
 * read are lost. */
static int lost_after_a_stall(int told) {
  setup(NULL);
  for (uint64_t t = 100; t <= 3000; t += 100)
    for (int r = 0; r < 2; r++)
      hb(r, t * MS, 0, 0);
  if (told) c4_det_stalled(28000 * MS);
  for (uint64_t t = 28000; t <= 35000; t += 100)
    for (int r = 0; r < 2; r++)
      hb(r, t * MS + (uint64_t)r * MS, 0, 0);
  int n = count("rank_lost");
  c4_det_reset();
  return n;
}

START_TEST(a_stall_of_c4mon_itself_pages_no_rank_lost) {
  ck_assert_int_eq(lost_after_a_stall(1), 0);
  ck_assert_int_ge(lost_after_a_stall(0), 1); /* what the stall notice prevents */
}
END_TEST

/* c4mon serve stopping closes what it no longer watches: a stopped c4mon left verdicts open in
 * its events file for good, and a restarted one raised them again under new ids. */
START_TEST(closing_all_leaves_no_verdict_open) {
  three_ranks_then_rank1_lost();
  ck_assert_int_eq(count("rank_lost"), 1);
  c4_det_close_all();
  ck_assert_int_eq(count("recovered"), 1);
  json_t *st = c4_det_state_json();
  ck_assert_int_eq(json_array_size(json_object_get(st, "verdicts")), 0);
  json_decref(st);
  c4_det_reset();
}
END_TEST

START_TEST(a_stopped_process_is_a_noncomm_hang_before_it_is_lost) {
  setup(NULL);
  uint64_t t = run_colls(4, 0, 50, 10 * MS, healthy);
  for (int r = 0; r < 3; r++) /* rank 3 was stopped inside the collective */
    coll(r, 4, 50, t + 60 * MS, 0);
  for (uint64_t k = 1; k <= 40; k++)
    for (int r = 0; r < 3; r++)
      hb(r, t + k * 100 * MS, 51, 50);
  json_t *e = first("noncomm_hang");
  ck_assert_ptr_nonnull(e);
  ck_assert_int_eq(first_rank(e), 3);
  ck_assert_int_eq(count("rank_lost"), 0);
  c4_det_reset();
}
END_TEST

/* Transfers between NICs host/dev, as their receivers record them: 6 hosts x 1 NIC, each sending 1
 * MiB to the next two hosts and the previous one every 20 ms at 10 GB/s times rate(src, dst), the
 * transfers keep() refuses left out (NULL: none). */
static void run_xfers_but(uint64_t t0, uint64_t t1, double (*rate)(int src, int dst, uint64_t t),
                          int (*keep)(int src, int dst, uint64_t t)) {
  static uint64_t seq;
  for (uint64_t t = t0; t < t1; t += 20 * MS)
    for (int s = 0; s < 6; s++)
      for (int k = 0; k < 3; k++) {
        int d = (s + (k == 2 ? 5 : k + 1)) % 6;
        if (keep && !keep(s, d, t)) continue;
        double jitter = 1 + 0.03 * ((double)((seq * 31 + (uint64_t)s * 7) % 21) / 10.0 - 1);
        uint64_t ns = (uint64_t)(1048576 / (10.0 * rate(s, d, t)) * jitter);
        received((uint64_t)(s * 8 + d), s, d, seq++, 1048576, t, t + 5000, t + 5000 + ns);
      }
}

static void run_xfers(uint64_t t0, uint64_t t1, double (*rate)(int src, int dst, uint64_t t)) {
  run_xfers_but(t0, t1, rate, NULL);
}

static double all_fine(int s, int d, uint64_t t) {
  (void)s, (void)d, (void)t;
  return 1;
}
static double node2_sends_at_half(int s, int d, uint64_t t) {
  (void)d;
  return s == 2 && t >= 12000 * MS && t < 17000 * MS ? 0.5 : 1;
}
static double node4_receives_at_quarter(int s, int d, uint64_t t) {
  (void)s;
  return d == 4 && t >= 12000 * MS ? 0.25 : 1;
}
static double link_1_to_2_at_30(int s, int d, uint64_t t) {
  return s == 1 && d == 2 && t >= 12000 * MS ? 0.3 : 1;
}
static double link_1_to_2_at_2pct_until_17s(int s, int d, uint64_t t) {
  return s == 1 && d == 2 && t >= 12000 * MS && t < 17000 * MS ? 0.02 : 1;
}
static double node3_at_half_both_ways(int s, int d, uint64_t t) {
  return (s == 3 || d == 3) && t >= 12000 * MS ? 0.5 : 1;
}
static double one_slow_transfer(int s, int d, uint64_t t) {
  return s == 3 && d == 4 && t == 12000 * MS ? 0.2 : 1;
}

static double link_1_to_2_at_quarter_from_the_start(int s, int d, uint64_t t) {
  (void)t;
  return s == 1 && d == 2 ? 0.25 : 1;
}

/* run_xfers' traffic, all fine, and from 12 s on each host sending to the host three on as well,
 * over a route 4x slower: a phase that begins after every cell has its baseline. */
static void run_xfers_with_a_slow_new_route(uint64_t t0, uint64_t t1) {
  static uint64_t seq;
  run_xfers(t0, 12000 * MS, all_fine);
  for (uint64_t t = 12000 * MS; t < t1; t += 20 * MS) {
    run_xfers(t, t + 20 * MS, all_fine);
    for (int s = 0; s < 6; s++)
      received((uint64_t)(1000 + s), s, (s + 3) % 6, seq++, 1048576, t, t + 5000,
               t + 5000 + (uint64_t)(1048576 / 10.0 * 4));
  }
}

static double link_1_to_2_at_88(int s, int d, uint64_t t) {
  return s == 1 && d == 2 && t >= 12000 * MS ? 0.88 : 1;
}

static json_t *only_comm_slow(void) {
  ck_assert_int_eq(count("comm_slow"), 1);
  return first("comm_slow");
}

START_TEST(a_slow_sending_nic_is_its_row_and_clears_when_restored) {
  setup(NULL);
  run_xfers(1000 * MS, 22000 * MS, node2_sends_at_half);
  json_t *e = only_comm_slow();
  ck_assert_str_eq(json_string_value(json_object_get(e, "where")), "nic_tx");
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(e, "nic"), "host")), "node2");
  double f = json_real_value(json_object_get(e, "factor"));
  ck_assert_msg(f > 1.7 && f < 2.3, "factor %.2f", f);
  uint64_t at = (uint64_t)json_integer_value(json_object_get(e, "t"));
  ck_assert_msg(at > 12000 * MS && at < 14000 * MS, "flagged at %.2f s", (double)at / 1e9);
  ck_assert_int_eq(count("recovered"), 1);
  c4_det_reset();
}
END_TEST

/* A link 50x slow (the demo's 80 Mbit/s on loopback reads 200x) clears at its second calm
 * evaluation: the window ending 1.5 s after the restore, judged GRACE later. Three misses in a row
 * (what clearing asked before) come 0.5 s later, too late for a run that ends 2 s after the
 * fault. */
START_TEST(a_far_out_link_clears_within_a_few_seconds_of_its_restore) {
  setup(NULL);
  run_xfers(1000 * MS, 22000 * MS, link_1_to_2_at_2pct_until_17s);
  json_t *e = only_comm_slow();
  ck_assert_str_eq(json_string_value(json_object_get(e, "where")), "link");
  ck_assert_int_eq(count("recovered"), 1);
  json_t *rec = first("recovered");
  double at = (double)json_integer_value(json_object_get(rec, "t")) / 1e9;
  ck_assert_msg(at > 17.0 && at < 17.0 + 2.0, "cleared at %.2f s, restored at 17 s", at);
  c4_det_reset();
}
END_TEST

START_TEST(a_slow_receiving_nic_is_its_column) {
  setup(NULL);
  run_xfers(1000 * MS, 16000 * MS, node4_receives_at_quarter);
  json_t *e = only_comm_slow();
  ck_assert_str_eq(json_string_value(json_object_get(e, "where")), "nic_rx");
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(e, "nic"), "host")), "node4");
  c4_det_reset();
}
END_TEST

/* A host's link degraded both ways slows its row and its column: one NIC, one verdict. */
START_TEST(a_nic_slow_both_ways_is_one_verdict) {
  setup(NULL);
  run_xfers(1000 * MS, 18000 * MS, node3_at_half_both_ways);
  json_t *e = only_comm_slow();
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(e, "nic"), "host")), "node3");
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(e, "nic"), "dev")), 0);
  ck_assert_int_eq(json_array_size(events), 1);
  c4_det_reset();
}
END_TEST

/* The one verdict raised: a link from node1 to node2 at a factor in (lo, hi). */
static json_t *only_the_link_1_to_2(double lo, double hi) {
  json_t *e = only_comm_slow();
  ck_assert_str_eq(json_string_value(json_object_get(e, "where")), "link");
  json_t *link = json_object_get(e, "link");
  ck_assert_str_eq(json_string_value(json_array_get(link, 0)), "node1");
  ck_assert_str_eq(json_string_value(json_array_get(link, 1)), "node2");
  double f = json_real_value(json_object_get(e, "factor"));
  ck_assert_msg(f > lo && f < hi, "factor %.3f", f);
  return e;
}

/* run_xfers from 1 s to end at rate: only_the_link_1_to_2(lo, hi). */
static void the_link_1_to_2(double (*rate)(int src, int dst, uint64_t t), uint64_t end, double lo,
                            double hi) {
  setup(NULL);
  run_xfers(1000 * MS, end, rate);
  only_the_link_1_to_2(lo, hi);
  c4_det_reset();
}

START_TEST(one_slow_link_is_its_cell) { the_link_1_to_2(link_1_to_2_at_30, 16000 * MS, 2.8, 3.9); }
END_TEST

/* node1 sends to node2 only in the first 300 ms of every 2 s (a link a job uses for one collective
 * every few seconds), while the other links carry transfers every 20 ms. */
static int link_1_to_2_now_and_then(int s, int d, uint64_t t) {
  return !(s == 1 && d == 2) || t % (2000 * MS) < 300 * MS;
}
static double link_1_to_2_at_30_from_20s(int s, int d, uint64_t t) {
  return s == 1 && d == 2 && t >= 20000 * MS ? 0.3 : 1;
}

/* Its cell is read in two evaluations of four; the ones between, with no transfer on it, say
 * nothing and do not break its streak: the link at 30% from 20 s is named, before its baseline
 * learns it. Counted as misses, they broke every streak, and the link was never named. */
START_TEST(a_slow_link_used_now_and_then_is_named) {
  setup(NULL);
  run_xfers_but(1000 * MS, 40000 * MS, link_1_to_2_at_30_from_20s, link_1_to_2_now_and_then);
  json_t *e = only_the_link_1_to_2(2.8, 3.9);
  uint64_t at = (uint64_t)json_integer_value(json_object_get(e, "t"));
  ck_assert_msg(at > 20000 * MS && at < 28000 * MS, "flagged at %.2f s", (double)at / 1e9);
  c4_det_reset();
}
END_TEST

/* The same traffic, healthy: the link's few readings raise nothing. */
START_TEST(a_healthy_link_used_now_and_then_raises_nothing) {
  setup(NULL);
  run_xfers_but(1000 * MS, 60000 * MS, all_fine, link_1_to_2_now_and_then);
  ck_assert_int_eq(count("comm_slow"), 0);
  c4_det_reset();
}
END_TEST

/* A link 1.14x slow sums its evidence over some 8 evaluations: its samples wait meanwhile, as a
 * straggler's do (learned three evaluations late, they lifted its threshold past it: never
 * named). */
START_TEST(a_link_slowed_a_little_is_named_before_it_is_learned) {
  the_link_1_to_2(link_1_to_2_at_88, 22000 * MS, 1.1, 1.2);
}
END_TEST

/* A ring of n hosts, each sending 1 MiB to the next every 20 ms: link s -> s + 1 at base[s] times
 * link 0 -> 1's time per byte, its level moving noise (log) from one 250 ms stretch to the next, as
 * a shared machine's do; from 30 s to burst_end link burst_link -> burst_link + 1 is burst times
 * slower. */
struct uneven_ring {
  int n;
  double base[5], noise;
  int burst_link;
  double burst;
  uint64_t burst_end;
};
static double ring_level(const struct uneven_ring *g, int s, uint64_t t) {
  uint64_t h = ((uint64_t)s * 1000003u + t / (250 * MS)) * 0x9e3779b97f4a7c15ull;
  h ^= h >> 29;
  h *= 0xbf58476d1ce4e5b9ull;
  h ^= h >> 32;
  double u1 = ((double)(h & 0xffffffff) + 0.5) / 4294967296.0,
         u2 = ((double)(h >> 32) + 0.5) / 4294967296.0;
  double normal = sqrt(-2 * log(u1)) * cos(2 * M_PI * u2);
  double burst = s == g->burst_link && t >= 30000 * MS && t < g->burst_end ? g->burst : 1;
  return g->base[s] * exp(g->noise * normal) * burst;
}
static void run_uneven_ring(const struct uneven_ring *g, uint64_t t1) {
  static uint64_t seq;
  setup(NULL);
  for (uint64_t t = 1000 * MS; t < t1; t += 20 * MS)
    for (int s = 0; s < g->n; s++) {
      int d = (s + 1) % g->n;
      uint64_t ns = (uint64_t)(1048576 / 10.0 * ring_level(g, s, t));
      received((uint64_t)(s * 8 + d), s, d, seq++, 1048576, t, t + 5000, t + 5000 + ns);
    }
}

/* The median cell reads 0 against the median, whatever it does: unless it is judged against the
 * other cells, its spread is its few readings off the median, and a burst its peers' noise covers
 * is named (a healthy 4-rank job's link at 1.46x). Links that differ by design keep link 1 -> 2
 * the median cell nearly always (4 hosts) and link 2 -> 3 (5 hosts); a 1.3x burst of 1.5 s on it
 * is not named, nor on another link; a lasting 1.7x is. */
START_TEST(the_median_cell_varies_as_much_as_its_peers) {
  struct uneven_ring g = {4, {1, 1.15, 1.3, 1.45}, 0.10, 1, 1.3, 31500 * MS};
  run_uneven_ring(&g, 40000 * MS);
  ck_assert_int_eq(count("comm_slow"), 0);
  c4_det_reset();
  g.burst_link = 2;
  run_uneven_ring(&g, 40000 * MS);
  ck_assert_int_eq(count("comm_slow"), 0);
  c4_det_reset();
  struct uneven_ring odd = {5, {1, 1.15, 1.3, 1.45, 1.6}, 0.10, 2, 1.3, 31500 * MS};
  run_uneven_ring(&odd, 40000 * MS);
  ck_assert_int_eq(count("comm_slow"), 0);
  c4_det_reset();
  g.burst_link = 1, g.burst = 1.7, g.burst_end = 40000 * MS;
  run_uneven_ring(&g, 40000 * MS);
  link_is(only_comm_slow(), "node1", "node2");
  c4_det_reset();
}
END_TEST

/* Three links, one of them 4x faster than the other two (a host's own loopback, say), from the
 * job's first transfer: the median cell, read against the fast one, would read 4x and be named by
 * the first-phase rule; read against the one above it, nothing is slow. */
START_TEST(a_fast_link_does_not_make_the_median_cell_slow) {
  struct uneven_ring g = {3, {0.25, 1, 1.05}, 0.02, -1, 1, 0};
  run_uneven_ring(&g, 20000 * MS);
  ck_assert_int_eq(count("comm_slow"), 0);
  c4_det_reset();
}
END_TEST

/* A link slow from its first transfer has no healthy usual to learn: judged against the median
 * cell while no cell has a baseline, 4x is named (learned as the cell's usual, it never was). */
START_TEST(a_link_slow_from_its_first_transfer_is_named) {
  the_link_1_to_2(link_1_to_2_at_quarter_from_the_start, 16000 * MS, 3.5, 4.5);
}
END_TEST

/* Cells that first carry traffic in a later phase are not judged against the median cell: a new
 * route 4x slower than the rest is its own usual (a restarted job's new ring read 3-17x the median
 * cell on the drill's fabric, with no fault). */
START_TEST(a_slow_route_that_a_later_phase_opens_is_its_own_usual) {
  setup(NULL);
  run_xfers_with_a_slow_new_route(1000 * MS, 22000 * MS);
  ck_assert_int_eq(count("comm_slow"), 0);
  c4_det_reset();
}
END_TEST

/* A minimal trace (no t_first, no pid, no dev) of pairwise exchanges, as a fresh user wrote one
 * by hand: 8 ranks on their own hosts, each sending 16 MiB to ranks +1, +2 and +4 every 110 ms
 * (3% jitter) at 5 GB/s, each pair as soon as both ends are in, both ends' records written;
 * node3's NIC sends at 0.4 of its rate from 20 s (healthy: never). Records as the trace has
 * them, in completion order. */
struct pw_rec {
  uint64_t t;
  struct c4_record r;
};
static int by_time(const void *a, const void *b) {
  uint64_t x = ((const struct pw_rec *)a)->t, y = ((const struct pw_rec *)b)->t;
  return (x > y) - (x < y);
}
static void run_pairwise(int slow_host) {
  enum { N = 8, STEPS = 360 };
  const int offs[3] = {1, 2, 4};
  struct pw_rec *recs = malloc(sizeof *recs * N * 3 * 2 * STEPS);
  ck_assert_ptr_nonnull(recs);
  uint64_t prev[N], seed = 5;
  size_t n = 0;
  for (int r = 0; r < N; r++)
    prev[r] = 1000 * MS;
  for (int step = 0; step < STEPS; step++) {
    uint64_t arrive[N], done[N] = {0};
    for (int r = 0; r < N; r++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      arrive[r] = prev[r] +
                  (uint64_t)(110 * MS * (1 + 0.03 * ((double)(seed >> 40) / 16777216.0 - 0.5) * 2));
    }
    for (int r = 0; r < N; r++)
      for (int k = 0; k < 3; k++) {
        int d = (r + offs[k]) % N;
        uint64_t start = arrive[r] > arrive[d] ? arrive[r] : arrive[d];
        double slow = r == slow_host && start >= 20000 * MS ? 2.5 : 1;
        uint64_t end = start + (uint64_t)(16777216 / 5.0 * slow * (1 + 0.02 * (k + r % 3) / 4));
        for (int dir = 0; dir < 2; dir++) {
          int self = dir ? d : r, peer = dir ? r : d;
          struct c4_record *x = &recs[n].r;
          *x = (struct c4_record){.kind = C4_REC_XFER};
          x->xfer = (struct c4_xfer_record){.dir = dir ? C4_DIR_RECV : C4_DIR_SEND,
                                            .status = C4_XFER_OK,
                                            .bytes = 16777216,
                                            .t_posted = arrive[self],
                                            .t_done = end};
          ends(&x->xfer, self, peer, 1);
          c4_trace_minimal(x); /* what the trace reader makes of the line */
          recs[n++].t = end;
        }
        done[r] = end > done[r] ? end : done[r];
        done[d] = end > done[d] ? end : done[d];
      }
    for (int r = 0; r < N; r++)
      prev[r] = done[r] + 50000;
  }
  qsort(recs, n, sizeof *recs, by_time);
  for (size_t i = 0; i < n; i++)
    take(&recs[i].r);
  free(recs);
}

/* Found where a start taken at the communicator's latest post (a collective's) raised nothing:
 * the communicator is told to start pairwise, and node3's NIC is named alone, at about its
 * factor; healthy, nothing is raised. */
START_TEST(a_slow_nic_in_a_minimal_trace_of_pairwise_exchanges_is_named) {
  setup(NULL);
  run_pairwise(-1);
  ck_assert_int_eq(json_array_size(events), 0);
  c4_det_reset();
  setup(NULL);
  run_pairwise(3);
  json_t *e = only_comm_slow();
  ck_assert_str_eq(json_string_value(json_object_get(e, "where")), "nic_tx");
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(e, "hosts"), 0)), "node3");
  double f = json_real_value(json_object_get(e, "factor"));
  ck_assert_msg(f > 2.0 && f < 3.0, "factor %.2f", f);
  /* without dev, the matrix (and the metrics' labels) name a rank's NIC HOST/rRANK, the event's
   * host and rank, not a device number of its own making */
  json_t *st = c4_det_state_json();
  json_t *nodes = json_object_get(json_object_get(st, "matrix"), "nodes");
  int named = 0;
  for (size_t i = 0; i < json_array_size(nodes); i++)
    named += !strcmp(json_string_value(json_array_get(nodes, i)), "node3/r3");
  ck_assert_int_eq(named, 1);
  json_decref(st);
  c4_det_reset();
}
END_TEST

/* With a plan that routes one host pair alone over a spine, that pair's slow cell is the spine:
 * one path verdict, not a link. */
START_TEST(a_slow_spine_that_one_pair_crosses_is_its_path) {
  setup_with_plan("{\"v\":1,\"paths\":[{\"id\":\"spine1\",\"pairs\":[[\"node1\",\"node2\"]]},"
                  "{\"id\":\"spine0\",\"pairs\":[[\"node0\",\"node1\"],[\"node2\",\"node3\"],"
                  "[\"node3\",\"node4\"]]}]}");
  run_xfers(1000 * MS, 16000 * MS, link_1_to_2_at_30);
  json_t *e = only_comm_slow();
  ck_assert_str_eq(json_string_value(json_object_get(e, "where")), "path");
  ck_assert_str_eq(json_string_value(json_object_get(e, "path")), "spine1");
  double factor = json_real_value(json_object_get(e, "factor"));
  ck_assert_msg(factor > 2.8 && factor < 3.9, "factor %.2f", factor);
  c4_det_reset();
}
END_TEST

/* A spine that two ring pairs cross slows to half at 12 s, and from then on a third pair crosses
 * it too (a phase that begins with the fault, as a rare collective's cells did in c4scen's
 * minimal trace of seed 2 at 64 ranks): the newcomer's cells have no usual yet, so they are
 * neither hot nor calm, and the two slow pairs are the whole of what the spine says. Counted
 * among the spine's cells, the newcomer left too few hot to name it (2 of 3), and the spine went
 * unnamed for the 4 s it took the newcomer to learn the slowdown as its usual (then another spine
 * was named, 5.5 s late). */
static double spine_pairs_at_half(int s, int d, uint64_t t) {
  return ((s == 1 && d == 2) || (s == 3 && d == 4)) && t >= 12000 * MS ? 0.5 : 1;
}

/* Transfers as run_xfers gives them at rate, with a traffic plan (plan_json), and from 12 s a
 * newcomer pair node0 -> node3 that the plan puts on a spine: its cells have no baseline yet. */
static void run_with_newcomer(const char *plan_json, double (*rate)(int, int, uint64_t)) {
  setup_with_plan(plan_json);
  run_xfers(1000 * MS, 12000 * MS, rate);
  static uint64_t seq = 1u << 31;
  for (uint64_t t = 12000 * MS; t < 16000 * MS; t += 20 * MS) {
    run_xfers(t, t + 20 * MS, rate);
    received(998, 0, 3, seq++, 1048576, t, t + 5000, t + 5000 + (uint64_t)(1048576 / 10.0));
  }
}

START_TEST(cells_without_a_usual_do_not_hide_a_slow_spine) {
  run_with_newcomer("{\"v\":1,\"paths\":[{\"id\":\"spine1\",\"pairs\":[[\"node1\",\"node2\"],"
                    "[\"node3\",\"node4\"],[\"node0\",\"node3\"]]}]}",
                    spine_pairs_at_half);
  json_t *e = only_comm_slow();
  ck_assert_str_eq(json_string_value(json_object_get(e, "where")), "path");
  ck_assert_str_eq(json_string_value(json_object_get(e, "path")), "spine1");
  uint64_t at = (uint64_t)json_integer_value(json_object_get(e, "t"));
  ck_assert_msg(at < 14500 * MS, "flagged at %.2f s, onset at 12 s", (double)at / 1e9);
  double factor = json_real_value(json_object_get(e, "factor"));
  ck_assert_msg(factor > 1.7 && factor < 2.3, "factor %.2f", factor);
  c4_det_reset();
}
END_TEST

/* The same newcomer pair on a spine, and what is slow is not the spine: one link of the pairs it
 * carries (a link verdict), or a NIC whose cells it carries two of (a NIC verdict). Left out of
 * the spine's count, the newcomer made the link the spine's one cell (a path verdict) and the
 * NIC's two cells the whole spine (a path verdict, and the NIC's lost): a review found both. */

static double node1_sends_at_half(int s, int d, uint64_t t) {
  (void)d;
  return s == 1 && t >= 12000 * MS ? 0.5 : 1;
}

START_TEST(a_slow_link_or_nic_sharing_a_spine_with_new_cells_is_not_the_spine) {
  run_with_newcomer("{\"v\":1,\"paths\":[{\"id\":\"spine1\",\"pairs\":[[\"node1\",\"node2\"],"
                    "[\"node0\",\"node3\"]]}]}",
                    link_1_to_2_at_30);
  json_t *e = only_comm_slow();
  ck_assert_str_eq(json_string_value(json_object_get(e, "where")), "link");
  c4_det_reset();
  run_with_newcomer("{\"v\":1,\"paths\":[{\"id\":\"spine1\",\"pairs\":[[\"node1\",\"node2\"],"
                    "[\"node1\",\"node3\"],[\"node0\",\"node3\"]]}]}",
                    node1_sends_at_half);
  e = only_comm_slow();
  ck_assert_str_eq(json_string_value(json_object_get(e, "where")), "nic_tx");
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(e, "nic"), "host")), "node1");
  c4_det_reset();
}
END_TEST

START_TEST(a_healthy_matrix_and_one_slow_transfer_raise_nothing) {
  setup(NULL);
  run_xfers(1000 * MS, 10000 * MS, all_fine);
  run_xfers(10000 * MS, 14000 * MS, one_slow_transfer);
  ck_assert_int_eq(json_array_size(events), 0);
  json_t *st = c4_det_state_json();
  json_t *m = json_object_get(st, "matrix");
  ck_assert_int_eq(json_array_size(json_object_get(m, "nodes")), 6);
  ck_assert_int_eq(json_array_size(json_object_get(m, "cells")), 18);
  json_decref(st);
  c4_det_reset();
}
END_TEST

/* All-to-all among 6 NICs with a different, steady size per pair (64 KiB to 8 MiB): uneven, but
 * every pair moves at the link's rate, so time per byte is even and nothing is slow. */
START_TEST(an_uneven_but_steady_all_to_all_raises_nothing) {
  setup(NULL);
  uint64_t seq = 0;
  for (uint64_t t = 1000 * MS; t < 12000 * MS; t += 50 * MS)
    for (int s = 0; s < 6; s++)
      for (int d = 0; d < 6; d++) {
        if (s == d) continue;
        uint64_t bytes = 65536ull << ((s * 5 + d * 3) % 8);
        double jitter = 1 + 0.03 * ((double)((seq * 31 + (uint64_t)d * 7) % 21) / 10.0 - 1);
        received((uint64_t)(s * 8 + d), s, d, seq++, bytes, t, t + 5000,
                 t + 5000 + (uint64_t)((double)bytes / 10.0 * jitter));
      }
  ck_assert_int_eq(json_array_size(events), 0);
  json_t *st = c4_det_state_json();
  ck_assert_int_eq(json_array_size(json_object_get(json_object_get(st, "matrix"), "cells")), 30);
  json_decref(st);
  c4_det_reset();
}
END_TEST

/* The cache in front of the identity table is exact: hosts alike in their first 16 bytes, the
 * same pid on every host (containers), and a rank that changes are all told apart. */
START_TEST(processes_are_told_apart_by_their_whole_host_and_pid) {
  struct det_idents x = {0};
  char a[C4_HOST_MAX] = "node-0001.cluster.example.com",
       b[C4_HOST_MAX] = "node-0001.cluster.example.org", c[C4_HOST_MAX] = "n1";
  for (int round = 0; round < 3; round++) { /* again and again: the cached path */
    det_ident_learn(&x, a, 7, 1);
    det_ident_learn(&x, b, 7, 2);
    det_ident_learn(&x, c, 7, 3);
  }
  ck_assert_int_eq(det_ident_rank(&x, a, 7), 1);
  ck_assert_int_eq(det_ident_rank(&x, b, 7), 2);
  ck_assert_int_eq(det_ident_rank(&x, c, 7), 3);
  ck_assert_int_eq(det_ident_rank(&x, a, 8), -1);
  det_ident_learn(&x, a, 7, 4); /* the same process under a new rank */
  det_ident_learn(&x, c, 7, 5);
  ck_assert_int_eq(det_ident_rank(&x, a, 7), 4);
  ck_assert_int_eq(det_ident_rank(&x, b, 7), 2);
  ck_assert_int_eq(det_ident_rank(&x, c, 7), 5);
  det_ident_learn(&x, a, 7, 2); /* the rank b has, cached under the same 16 bytes and pid */
  ck_assert_int_eq(det_ident_rank(&x, a, 7), 2);
  det_ident_learn(&x, c, 7, 3); /* back to a rank it had: no older entry of it answers instead */
  ck_assert_int_eq(det_ident_rank(&x, c, 7), 3);
  det_ident_learn(&x, c, 7, 5);
  ck_assert_int_eq(det_ident_rank(&x, c, 7), 5);
  for (int h = 0; h < 20000; h++) { /* more processes than the cache has places */
    char host[C4_HOST_MAX] = {0};
    snprintf(host, sizeof host, "node-%05d.cluster.example.com", h);
    det_ident_learn(&x, host, 100, h);
    det_ident_learn(&x, host, 100, h);
  }
  for (int h = 0; h < 20000; h += 997) {
    char host[C4_HOST_MAX] = {0};
    snprintf(host, sizeof host, "node-%05d.cluster.example.com", h);
    ck_assert_int_eq(det_ident_rank(&x, host, 100), h);
  }
  det_ident_reset(&x);
}
END_TEST

/* Every rank of the job's ranks 0..n-1 (hosts nodeR, pids 100+R) ends its stream at t: BYE
 * (a clean goodbye) or, for the ranks in lost_mask, LOST. */
static void end_streams(int n, unsigned lost_mask, uint64_t t) {
  for (int r = 0; r < n; r++) {
    struct c4_record end = {.kind = C4_REC_RANK};
    end.rank = (struct c4_rank_record){.rank = r,
                                       .pid = 100 + (uint32_t)r,
                                       .event = lost_mask >> r & 1 ? C4_RANK_LOST : C4_RANK_BYE,
                                       .t = t};
    snprintf(end.rank.host, sizeof end.rank.host, "node%d", r);
    take(&end);
  }
}

/* The ranks of job "job" in detection's state. */
static int ranks_shown(void) {
  json_t *st = c4_det_state_json();
  int n = 0;
  size_t i;
  json_t *e;
  json_array_foreach(json_object_get(st, "ranks"), i, e) n +=
      !strcmp(json_string_value(json_object_get(e, "job")), "job");
  json_decref(st);
  return n;
}

static size_t verdicts_shown(void) {
  json_t *st = c4_det_state_json();
  size_t n = json_array_size(json_object_get(st, "verdicts"));
  json_decref(st);
  return n;
}

/* A straggler is standing when every rank says goodbye: job_end says the job ended, the
 * straggler recovers at once, and after the forget period the job's ranks leave the state (and
 * with them its series in /metrics, which renders from it). */
START_TEST(a_clean_job_end_closes_its_verdicts_and_its_series_leave_after_the_forget_period) {
  setup(NULL);
  struct c4_det_config cfg = {.forget_ns = 5000 * MS};
  ck_assert_int_eq(c4_det_init(&cfg), 0);
  ck_assert_int_eq(c4_mon_metrics_start("127.0.0.1:0"), 0);
  c4_mon_events_add_sink(c4_mon_metrics_event, NULL); /* as c4mon's outputs do */
  for (int r = 0; r < 8; r++)
    comm_record(r, 8, 1);
  uint64_t t = run_colls(8, 0, 150, 10 * MS, rank5_twice_from_100_to_200);
  ck_assert_int_eq(count("straggler"), 1);
  ck_assert_uint_eq(verdicts_shown(), 1);
  end_streams(8, 0, t + MS);
  c4_det_advance(t + 600 * MS);
  ck_assert_int_eq(count("job_end"), 1);
  json_t *end = first("job_end");
  ck_assert_str_eq(json_string_value(json_object_get(end, "job")), "job");
  ck_assert_int_eq(json_array_size(json_object_get(end, "ranks")), 8);
  ck_assert_int_eq(count("recovered"), 1);
  ck_assert_uint_eq(verdicts_shown(), 0);
  ck_assert_int_eq(ranks_shown(), 8); /* still shown during the forget period */
  json_t *st = c4_det_state_json();
  c4_mon_metrics_publish(st, NULL);
  json_decref(st);
  char *text = c4_mon_metrics_text();
  ck_assert_msg(strstr(text, "c4_verdicts_active{job=\"job\",kind=\"straggler\"} 0\n"), "%s", text);
  ck_assert_ptr_nonnull(strstr(text, "c4_events_total{job=\"job\",kind=\"job_end\"} 1\n"));
  free(text);
  c4_det_advance(t + 4000 * MS);
  ck_assert_int_eq(ranks_shown(), 8);
  c4_det_advance(t + 6000 * MS);
  ck_assert_int_eq(ranks_shown(), 0);
  st = c4_det_state_json();
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(st, "gone"), 0)), "job");
  c4_mon_metrics_publish(st, NULL);
  json_decref(st);
  text = c4_mon_metrics_text();
  ck_assert_msg(!strstr(text, "job=\"job\""), "the ended job's series stayed:\n%s", text);
  free(text);
  ck_assert_int_eq(count("job_end"), 1); /* said once */
  c4_mon_metrics_stop();
  c4_det_reset();
}
END_TEST

/* A job restarted on its survivors numbers them again: the process that streams as rank 1 after
 * rank 1 was lost is another, and the lost one's verdict stands (the lost process itself
 * streaming again clears it: the case above). */
START_TEST(a_lost_rank_s_verdict_is_its_process_s) {
  three_ranks_then_rank1_lost();
  ck_assert_int_eq(count("rank_lost"), 1);
  struct c4_record renumbered = {.kind = C4_REC_RANK}; /* rank 2's process, now rank 1 */
  renumbered.rank = (struct c4_rank_record){.rank = 1, .pid = 102, .t = 900 * MS};
  strcpy(renumbered.rank.host, "node2");
  take(&renumbered);
  renumbered.rank.t = 1000 * MS;
  take(&renumbered);
  ck_assert_int_eq(count("recovered"), 0);
  ck_assert_uint_eq(verdicts_shown(), 1);
  c4_det_reset();
}
END_TEST

/* twin (another process as rank 0) streams at 300 ms: the twin ranks c4mon then counts, and a
 * reset. */
static int twins_after(struct c4_record *twin) {
  twin->rank.t = 300 * MS;
  take(twin);
  json_t *st = c4_det_state_json();
  int n = (int)json_integer_value(json_object_get(st, "twin_ranks"));
  json_decref(st);
  c4_det_reset();
  return n;
}

/* Two live processes streaming as one rank of one job (two jobs under one C4_JOB name) are said
 * once and counted: their heartbeats interleave as one rank's, and a hang of either is missed. */
START_TEST(two_processes_streaming_as_one_rank_are_said) {
  setup(NULL);
  struct c4_record twin = {.kind = C4_REC_RANK};
  twin.rank = (struct c4_rank_record){.rank = 0, .pid = 900};
  strcpy(twin.rank.host, "other");
  for (uint64_t k = 1; k <= 5; k++) {
    hb(0, k * 100 * MS, 0, 0); /* pid 100 on node0 */
    twin.rank.t = k * 100 * MS + 50 * MS;
    take(&twin);
  }
  json_t *st = c4_det_state_json();
  ck_assert_int_eq(json_integer_value(json_object_get(st, "twin_ranks")), 1);
  json_decref(st);
  c4_det_reset();
  setup(NULL); /* one process after another under one rank (a restart after a goodbye): none */
  hb(0, 100 * MS, 0, 0);
  end_streams(1, 0, 200 * MS);
  ck_assert_int_eq(twins_after(&twin), 0);
  setup(NULL); /* a lost process's number taken by its replacement (a restart on the survivors) */
  hb(0, 100 * MS, 0, 0);
  struct c4_record lost = {.kind = C4_REC_RANK};
  lost.rank = (struct c4_rank_record){.rank = 0, .pid = 100, .event = C4_RANK_LOST, .t = 150 * MS};
  strcpy(lost.rank.host, "node0");
  take(&lost);
  ck_assert_int_eq(count("rank_lost"), 1);
  ck_assert_int_eq(twins_after(&twin), 0);
}
END_TEST

/* Ranks lost keep their verdicts and their series when the others end cleanly, through the
 * forget period, and then go with the job (kept for good, a killed job's rank_lost verdicts stood
 * until c4mon restarted); a job whose ranks all died did not end cleanly, and its verdicts go the
 * forget period after the last; a rank streaming again starts the job anew. */
START_TEST(lost_ranks_keep_their_verdicts_and_a_job_that_streams_again_is_not_forgotten) {
  setup(NULL);
  struct c4_det_config cfg = {.forget_ns = 2000 * MS};
  ck_assert_int_eq(c4_det_init(&cfg), 0);
  for (uint64_t k = 1; k <= 5; k++)
    for (int r = 0; r < 3; r++)
      hb(r, k * 100 * MS, 0, 0);
  end_streams(3, 1u << 1, 600 * MS); /* rank 1 lost, ranks 0 and 2 said goodbye */
  c4_det_advance(1200 * MS);
  ck_assert_int_eq(count("rank_lost"), 1);
  ck_assert_int_eq(count("job_end"), 1);
  ck_assert_int_eq(count("recovered"), 0);
  ck_assert_uint_eq(verdicts_shown(), 1);
  c4_det_advance(2400 * MS); /* within the forget period (2 s) of the job's end: still there */
  ck_assert_int_eq(ranks_shown(), 3);
  ck_assert_uint_eq(verdicts_shown(), 1);
  c4_det_advance(4000 * MS); /* past it: the job, its lost rank and its verdict are gone */
  ck_assert_int_eq(ranks_shown(), 0);
  ck_assert_uint_eq(verdicts_shown(), 0);
  ck_assert_int_eq(count("recovered"), 1);
  hb(0, 4100 * MS, 0, 0); /* the job runs again under its name */
  hb(2, 4100 * MS, 0, 0);
  c4_det_advance(9000 * MS);
  ck_assert_int_eq(ranks_shown(), 3);
  c4_det_reset();

  setup(NULL); /* every rank lost: no job_end */
  for (int r = 0; r < 2; r++)
    hb(r, 100 * MS, 0, 0);
  end_streams(2, 3u, 200 * MS);
  c4_det_advance(1000 * MS);
  ck_assert_int_eq(count("rank_lost"), 2);
  ck_assert_int_eq(count("job_end"), 0);
  ck_assert_uint_eq(verdicts_shown(), 2);
  c4_det_advance(125000 * MS); /* the default forget period, 120 s, after the last went */
  ck_assert_uint_eq(verdicts_shown(), 0);
  c4_det_reset();
}
END_TEST

/* A ring of 4 hosts (node r sends to node r + 1), as its receivers record it, every 20 ms at
 * 10 GB/s times rate(src, dst, t): each NIC has one cell out and one in. */
static void run_ring(uint64_t t0, uint64_t t1, double (*rate)(int src, int dst, uint64_t t)) {
  static uint64_t seq;
  for (uint64_t t = t0; t < t1; t += 20 * MS)
    for (int s = 0; s < 4; s++) {
      int d = (s + 1) % 4;
      double jitter = 1 + 0.03 * ((double)((seq * 31 + (uint64_t)s * 7) % 21) / 10.0 - 1);
      uint64_t ns = (uint64_t)(1048576 / (10.0 * rate(s, d, t)) * jitter);
      received((uint64_t)(s * 8 + d), s, d, seq++, 1048576, t, t + 5000, t + 5000 + ns);
    }
}

static double node2_link_at_quarter(int s, int d, uint64_t t) {
  return (s == 2 || d == 2) && t >= 12000 * MS ? 0.25 : 1;
}

/* make drill's degraded host link: in a ring its NIC has one cell each way, and the plan gives the
 * cell out of it a path of its own (the hosts share a leaf). Both cells slow: one NIC verdict,
 * not the path (which would leave the cell into the NIC as a second verdict). */
START_TEST(a_nic_slow_both_ways_in_a_ring_is_its_nic_not_a_one_pair_path) {
  setup_with_plan(
      "{\"v\":1,\"paths\":[{\"id\":\"s0\",\"pairs\":[[\"node0\",\"node1\"],[\"node1\",\"node2\"]]},"
      "{\"id\":\"l0\",\"pairs\":[[\"node2\",\"node3\"]]},{\"id\":\"l1\",\"pairs\":[[\"node3\","
      "\"node0\"]]}]}");
  run_ring(1000 * MS, 18000 * MS, node2_link_at_quarter);
  json_t *e = only_comm_slow();
  const char *where = json_string_value(json_object_get(e, "where"));
  ck_assert_msg(!strcmp(where, "nic_tx") || !strcmp(where, "nic_rx"), "named %s", where);
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(e, "nic"), "host")), "node2");
  c4_det_reset();
}
END_TEST

/* A ring's NIC slow both ways in a trace that gives no devices: the verdict's device is -1, as
 * docs/events.md says, not the rank the matrix kept the NIC under (it said -4 for rank 2). */
START_TEST(a_nic_slow_both_ways_without_devices_names_device_minus_one) {
  setup(NULL);
  no_dev = 1;
  run_ring(1000 * MS, 18000 * MS, node2_link_at_quarter);
  no_dev = 0;
  json_t *e = only_comm_slow();
  ck_assert_str_eq(json_string_value(json_object_get(json_object_get(e, "nic"), "host")), "node2");
  ck_assert_ptr_nonnull(strstr(json_string_value(json_object_get(e, "detail")), "both ways"));
  ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(e, "nic"), "dev")), -1);
  c4_det_reset();
}
END_TEST

/* Each transfer of a chained ring (chained_ring.h), as its receiver records it without t_first. */
static void receive_it(const struct chained_xfer *x, void *arg) {
  uint64_t *seq = arg;
  received((uint64_t)(x->src * 8 + x->dst), x->src, x->dst, (*seq)++, 1 << 20, x->post, 0, x->done);
}

/* A chained ring of 8 hosts from t0 while its calls start before t1, its hops slowed by slow. */
static void chained_ring(uint64_t t0, uint64_t t1, double (*slow)(int src, int dst, uint64_t t)) {
  static uint64_t seq;
  static struct chained_ring g = {.xfer = receive_it, .arg = &seq, .jitter = 7};
  g.slow = slow;
  chained_ring_run(&g, t0, t1, 1 << 30);
}

static double no_fault(int src, int dst, uint64_t t) {
  (void)src, (void)dst, (void)t;
  return 1;
}

static double link_2_to_3_at_a_third(int src, int dst, uint64_t t) {
  return src == 2 && dst == 3 && t >= 15000 * MS ? 3 : 1;
}

/* Chained steps without t_first: a healthy ring raises nothing (it raised link verdicts at up to
 * 9.75x when each start was the communicator's latest post), and one link at a third of its rate
 * is that link, near 3x (it was read at every cell, or not at all). */
START_TEST(a_chained_ring_without_first_bytes_is_quiet_healthy_and_names_its_slow_link) {
  setup(NULL);
  chained_ring(1000 * MS, 40000 * MS, no_fault);
  c4_det_advance(41000 * MS);
  ck_assert_int_eq(json_array_size(events), 0);
  c4_det_reset();
  setup(NULL);
  chained_ring(1000 * MS, 30000 * MS, link_2_to_3_at_a_third);
  json_t *e = only_comm_slow();
  ck_assert_str_eq(json_string_value(json_object_get(e, "where")), "link");
  link_is(e, "node2", "node3");
  double f = json_real_value(json_object_get(e, "factor"));
  ck_assert_msg(f > 2.4 && f < 3.6, "factor %.3f", f);
  c4_det_reset();
}
END_TEST

/* A ring of 4 hosts whose collectives c4mon never sees (transfer records alone: the net plugin
 * without the profiler or the shim), every hop moving every 20 ms from t0 to t1. */
static void transfers_only_ring(uint64_t t0, uint64_t t1) {
  for (uint64_t t = t0; t < t1; t += 20 * MS)
    for (int s = 0; s < 4; s++)
      moved(s, (s + 1) % 4, t + (uint64_t)s * MS);
}

/* Transfers alone: a hop stuck with nothing completing for the hang threshold is a comm_hang at
 * that hop (before, such a job's hangs were never judged), cleared once transfers complete
 * again; a long pause with nothing pending is compute, and a transfer left pending while the job
 * went on moving for longer than the threshold is no hang when it stops. */
START_TEST(transfers_alone_stuck_for_the_threshold_are_a_comm_hang_at_the_stuck_hop) {
  setup(NULL);
  transfers_only_ring(1000 * MS, 6000 * MS);
  pending(2, 3, C4_DIR_SEND, 6000 * MS);
  pending(2, 3, C4_DIR_RECV, 6000 * MS);
  moved(3, 0, 6010 * MS); /* the hops downstream drain */
  c4_det_advance(8500 * MS);
  ck_assert_int_eq(count("comm_hang"), 0);
  c4_det_advance(9500 * MS);
  json_t *e = first("comm_hang");
  ck_assert_ptr_nonnull(e);
  link_is(e, "node2", "node3");
  ck_assert_ptr_nonnull(
      strstr(json_string_value(json_object_get(e, "detail")), "no transfer has completed"));
  transfers_only_ring(10000 * MS, 11000 * MS);
  ck_assert_int_eq(count("recovered"), 1);
  c4_det_reset();

  setup(NULL); /* compute: nothing pending, nothing moving for 10 s */
  transfers_only_ring(1000 * MS, 6000 * MS);
  c4_det_advance(16000 * MS);
  transfers_only_ring(16000 * MS, 17000 * MS);
  pending(1, 2, C4_DIR_RECV, 17500 * MS - 4000 * MS); /* left over, the job went on past it */
  c4_det_advance(30000 * MS);
  ck_assert_int_eq(json_array_size(events), 0);
  c4_det_reset();
}
END_TEST

int main(void) {
  Suite *s = suite_create("detect");
  TCase *tc = tcase_create("detect");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, a_rank_that_computes_longer_is_named_a_straggler_with_its_factor_and_clears);
  tcase_add_test(tc, steady_unevenness_and_one_off_blips_raise_nothing);
  tcase_add_test(tc, a_noisy_rank_slowed_just_after_its_baseline_is_named_before_it_is_learned);
  tcase_add_test(tc, a_slow_rank_whose_statistic_dips_under_its_threshold_is_still_named);
  tcase_add_test(tc,
                 a_heavy_stage_the_collective_does_not_wait_for_is_judged_against_its_own_share);
  tcase_add_test(tc, a_heavy_stages_run_against_its_peers_is_no_evidence_once_it_has_a_baseline);
  tcase_add_test(tc, a_hang_threshold_counts_from_the_last_rank_going_in);
  tcase_add_test(tc, a_nic_slow_both_ways_is_one_verdict);
  tcase_add_test(tc, a_nic_slow_both_ways_without_devices_names_device_minus_one);
  tcase_add_test(tc, a_chained_ring_without_first_bytes_is_quiet_healthy_and_names_its_slow_link);
  tcase_add_test(tc, a_slow_nic_in_a_minimal_trace_of_pairwise_exchanges_is_named);
  tcase_add_test(tc, cells_without_a_usual_do_not_hide_a_slow_spine);
  tcase_add_test(tc, a_slow_link_or_nic_sharing_a_spine_with_new_cells_is_not_the_spine);
  tcase_add_test(tc, a_slow_spine_that_one_pair_crosses_is_its_path);
  tcase_add_test(tc, a_nic_slow_both_ways_in_a_ring_is_its_nic_not_a_one_pair_path);
  tcase_add_test(tc, a_rank_slow_from_the_start_is_named_against_its_peers);
  tcase_add_test(tc, a_straggler_of_two_ranks_is_named_and_bursts_are_not);
  tcase_add_test(tc, ranks_slow_together_from_the_start_are_each_named);
  tcase_add_test(tc, a_heavy_rank_slowed_is_named_at_its_own_slowdown);
  tcase_add_test(tc, bursts_of_noise_are_learned);
  tcase_add_test(tc, a_rank_that_never_enters_is_a_noncomm_hang_naming_it);
  tcase_add_test(tc, a_long_compute_with_one_rank_in_early_is_no_hang);
  tcase_add_test(tc, a_wait_is_judged_against_the_jobs_longest_recent_waits);
  tcase_add_test(tc, all_ranks_inside_and_a_stuck_send_is_a_comm_hang_at_that_link);
  tcase_add_test(tc, stuck_receives_without_a_send_name_a_link_and_say_it_is_uncertain);
  tcase_add_test(tc, of_stuck_receives_the_one_that_moved_least_names_the_link);
  tcase_add_test(tc, a_trace_of_collectives_alone_that_ends_inside_a_hang_is_judged_at_its_end);
  tcase_add_test(tc, a_trace_cut_inside_its_last_allreduce_is_no_hang);
  tcase_add_test(tc, without_heartbeats_stuck_transfers_make_a_comm_hang_at_its_threshold);
  tcase_add_test(tc, transfers_alone_stuck_for_the_threshold_are_a_comm_hang_at_the_stuck_hop);
  tcase_add_test(tc, with_heartbeats_a_pending_transfer_outside_any_collective_is_no_hang);
  tcase_add_test(tc, a_collective_whose_transfers_still_complete_is_no_hang_until_they_stop);
  tcase_add_test(tc, a_stream_that_ends_without_goodbye_or_goes_silent_is_a_lost_rank);
  tcase_add_test(tc, a_lost_rank_s_verdict_is_its_process_s);
  tcase_add_test(tc, two_processes_streaming_as_one_rank_are_said);
  tcase_add_test(tc, a_replacement_that_dies_early_is_lost_at_the_usual_threshold);
  tcase_add_test(tc, a_stall_of_c4mon_itself_pages_no_rank_lost);
  tcase_add_test(tc, closing_all_leaves_no_verdict_open);
  tcase_add_test(tc, a_stopped_process_is_a_noncomm_hang_before_it_is_lost);
  tcase_add_test(tc, a_slow_sending_nic_is_its_row_and_clears_when_restored);
  tcase_add_test(tc, a_far_out_link_clears_within_a_few_seconds_of_its_restore);
  tcase_add_test(tc, a_slow_receiving_nic_is_its_column);
  tcase_add_test(tc, a_link_slowed_a_little_is_named_before_it_is_learned);
  tcase_add_test(tc, the_median_cell_varies_as_much_as_its_peers);
  tcase_add_test(tc, a_fast_link_does_not_make_the_median_cell_slow);
  tcase_add_test(tc, a_link_slow_from_its_first_transfer_is_named);
  tcase_add_test(tc, a_slow_route_that_a_later_phase_opens_is_its_own_usual);
  tcase_add_test(tc, one_slow_link_is_its_cell);
  tcase_add_test(tc, a_slow_link_used_now_and_then_is_named);
  tcase_add_test(tc, a_healthy_link_used_now_and_then_raises_nothing);
  tcase_add_test(tc, a_healthy_matrix_and_one_slow_transfer_raise_nothing);
  tcase_add_test(tc, an_uneven_but_steady_all_to_all_raises_nothing);
  tcase_add_test(tc, processes_are_told_apart_by_their_whole_host_and_pid);
  tcase_add_test(tc,
                 a_clean_job_end_closes_its_verdicts_and_its_series_leave_after_the_forget_period);
  tcase_add_test(tc, lost_ranks_keep_their_verdicts_and_a_job_that_streams_again_is_not_forgotten);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
