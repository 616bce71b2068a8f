/* test_scenario.c -- c4scen, run as a program ($C4_BUILD_DIR/bin/c4scen): generated traces are
 * the same bytes for a seed, in time order, the same records as JSON lines and in binary form,
 * and carry the faults their truth names; the scorer counts hits, misses, false alarms and wrong
 * places, and names the file and line it cannot read. */
#include <check.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_record.h"
#include "c4_trace_read.h"

static char bin[4096];
static char dir[64];

/* Finds the c4scen built beside the tests and makes a scratch directory. */
static void setup(void) {
  const char *b = getenv("C4_BUILD_DIR");
  ck_assert_msg(b && *b, "C4_BUILD_DIR is not set: run through tests/run.sh (it names the build)");
  snprintf(bin, sizeof bin, "%s/bin/c4scen", b);
  ck_assert_msg(access(bin, X_OK) == 0, "%s is missing: build it (make SAN=1 all)", bin);
  snprintf(dir, sizeof dir, "/tmp/c4-scen-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* Runs "c4scen ARGS" (ARGS printf-formatted, a shell command line's tail), its standard error
 * into DIR/err; returns the exit code. */
static int scen(const char *fmt, ...) {
  char args[2048], cmd[8192];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(args, sizeof args, fmt, ap);
  va_end(ap);
  snprintf(cmd, sizeof cmd, "'%s' %s 2>'%s/err'", bin, args, dir);
  int st = system(cmd);
  ck_assert_msg(st != -1 && WIFEXITED(st), "could not run %s", cmd);
  return WEXITSTATUS(st);
}

/* What c4scen printed on standard error last (static buffer). */
static const char *err_text(void) {
  static char text[4096];
  char path[128];
  snprintf(path, sizeof path, "%s/err", dir);
  FILE *f = fopen(path, "r");
  size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
  text[n] = 0;
  if (f) fclose(f);
  return text;
}

/* Every record of a trace file (JSON lines or binary), in file order; *n gets the count. */
static struct c4_record *read_all(const char *path, size_t *n) {
  struct c4_trace_reader rd;
  ck_assert_int_eq(c4_trace_open(&rd, path), 0);
  size_t cap = 1024;
  struct c4_record *v = malloc(cap * sizeof *v);
  char err[256];
  int rc;
  *n = 0;
  while ((rc = c4_trace_next(&rd, &v[*n], err, sizeof err)) != 0) {
    ck_assert_msg(rc == 1, "%s: %s", path, err);
    if (++*n == cap) v = realloc(v, (cap *= 2) * sizeof *v);
  }
  c4_trace_close(&rd);
  return v;
}

/* The documented order of a trace (docs/scenarios.md): coll t_done or t_arrive; xfer t_done,
 * a pending one when the plugin writes it (t_post + 2 s), else t_post; the rest t. */
static uint64_t when(const struct c4_record *r) {
  switch (r->kind) {
  case C4_REC_XFER:
    return r->xfer.t_done                      ? r->xfer.t_done
           : r->xfer.status == C4_XFER_PENDING ? r->xfer.t_posted + 2000000000ull
                                               : r->xfer.t_posted;
  case C4_REC_COLL: return r->coll.t_done ? r->coll.t_done : r->coll.t_arrive;
  case C4_REC_COMM: return r->comm.t;
  case C4_REC_RANK: return r->rank.t;
  default: return 0;
  }
}

static int same_bytes(const char *a, const char *b) {
  char cmd[512];
  snprintf(cmd, sizeof cmd, "cmp -s '%s' '%s'", a, b);
  return system(cmd) == 0;
}

#define SMALL "--hosts 4 --gpus 2 --seconds 12"

START_TEST(a_trace_is_the_same_bytes_for_a_seed_and_differs_for_another) {
  const char *f = "--fault straggler:rank=3:factor=2:t=4 --fault nic_rx:host=2:dev=1:rate=0.4:t=5 "
                  "--blips 3";
  ck_assert_int_eq(scen("gen " SMALL " %s --seed 9 --out %s/a --truth %s/ta", f, dir, dir), 0);
  ck_assert_int_eq(scen("gen " SMALL " %s --seed 9 --out %s/b --truth %s/tb", f, dir, dir), 0);
  ck_assert_int_eq(scen("gen " SMALL " %s --seed 10 --out %s/c --truth %s/tc", f, dir, dir), 0);
  ck_assert_int_eq(scen("gen " SMALL " %s --seed 9 --bin --out %s/d --truth %s/td", f, dir, dir),
                   0);
  ck_assert_int_eq(scen("gen " SMALL " %s --seed 9 --bin --out %s/e --truth %s/te", f, dir, dir),
                   0);
  char a[128], b[128];
  snprintf(a, sizeof a, "%s/a", dir);
  snprintf(b, sizeof b, "%s/b", dir);
  ck_assert_msg(same_bytes(a, b), "two runs with seed 9 differ");
  snprintf(b, sizeof b, "%s/ta", dir);
  snprintf(a, sizeof a, "%s/tb", dir);
  ck_assert_msg(same_bytes(a, b), "two truths with seed 9 differ");
  snprintf(a, sizeof a, "%s/d", dir);
  snprintf(b, sizeof b, "%s/e", dir);
  ck_assert_msg(same_bytes(a, b), "two binary runs with seed 9 differ");
  snprintf(a, sizeof a, "%s/a", dir);
  snprintf(b, sizeof b, "%s/c", dir);
  ck_assert_msg(!same_bytes(a, b), "seeds 9 and 10 gave the same trace");
}
END_TEST

START_TEST(records_are_in_time_order_and_the_binary_form_holds_the_same_ones) {
  ck_assert_int_eq(scen("gen " SMALL " --blips 2 --fault link:src=1:dst=2:dev=0:rate=0.3:t=3 "
                        "--out %s/j --truth %s/t",
                        dir, dir),
                   0);
  ck_assert_int_eq(scen("gen " SMALL " --blips 2 --fault link:src=1:dst=2:dev=0:rate=0.3:t=3 "
                        "--bin --out %s/b --truth %s/t",
                        dir, dir),
                   0);
  char p[128];
  size_t nj, nb;
  snprintf(p, sizeof p, "%s/j", dir);
  struct c4_record *j = read_all(p, &nj);
  snprintf(p, sizeof p, "%s/b", dir);
  struct c4_record *b = read_all(p, &nb);
  ck_assert_uint_gt(nj, 1000);
  ck_assert_uint_eq(nj, nb);
  size_t kinds[6] = {0};
  for (size_t i = 0; i < nj; i++) {
    ck_assert_msg(!memcmp(&j[i], &b[i], sizeof j[i]), "record %zu differs between the forms", i);
    ck_assert_msg(i == 0 || when(&j[i - 1]) <= when(&j[i]), "record %zu (%llu) before %llu", i,
                  (unsigned long long)when(&j[i]), (unsigned long long)when(&j[i - 1]));
    ck_assert_uint_ge(when(&j[i]), 1000000000ull);
    kinds[j[i].kind < 6 ? j[i].kind : 0]++;
  }
  ck_assert_uint_eq(kinds[C4_REC_COMM], 2 * 8); /* world and pipeline, per rank */
  ck_assert_uint_gt(kinds[C4_REC_XFER], 0);
  ck_assert_uint_gt(kinds[C4_REC_COLL], 0);
  ck_assert_uint_ge(kinds[C4_REC_RANK], 8 * 11); /* a heartbeat a second per rank */
  free(j);
  free(b);
}
END_TEST

/* The trace of one variant (JSON lines, or the binary form), read back; *n gets the count. */
static struct c4_record *variant(const char *v, int bin, size_t *n) {
  ck_assert_int_eq(scen("gen " SMALL " --blips 2 --fault link:src=1:dst=2:dev=0:rate=0.3:t=3 "
                        "--variant %s %s --out %s/%s%d --truth %s/t",
                        v, bin ? "--bin" : "", dir, v, bin, dir),
                   0);
  char p[128];
  snprintf(p, sizeof p, "%s/%s%d", dir, v, bin);
  return read_all(p, n);
}

static size_t count_dir(const struct c4_record *r, size_t n, int dir_) {
  size_t k = 0;
  for (size_t i = 0; i < n; i++)
    k += r[i].kind == C4_REC_XFER && r[i].xfer.dir == dir_;
  return k;
}

START_TEST(each_variant_writes_what_its_tracer_would_record) {
  size_t nf, nm, nmb, ns, nr, nw;
  struct c4_record *full = variant("full", 0, &nf), *min = variant("minimal", 0, &nm),
                   *minb = variant("minimal", 1, &nmb), *snd = variant("send", 0, &ns),
                   *rcv = variant("recv", 0, &nr), *wrap = variant("wrap", 0, &nw);
  size_t sends = count_dir(full, nf, C4_DIR_SEND), recvs = count_dir(full, nf, C4_DIR_RECV);
  ck_assert_uint_gt(sends, 100);
  /* one end of each transfer only */
  ck_assert_uint_eq(count_dir(snd, ns, C4_DIR_SEND), sends);
  ck_assert_uint_eq(count_dir(snd, ns, C4_DIR_RECV), 0);
  ck_assert_uint_eq(count_dir(rcv, nr, C4_DIR_RECV), recvs);
  ck_assert_uint_eq(count_dir(rcv, nr, C4_DIR_SEND), 0);
  ck_assert_uint_eq(ns, nf - recvs);
  /* wrap mode: no first-byte times, receives without their peer, sends with it */
  ck_assert_uint_eq(nw, nf);
  for (size_t i = 0; i < nw; i++) {
    if (wrap[i].kind != C4_REC_XFER) continue;
    ck_assert_uint_eq(wrap[i].xfer.t_first_byte, 0);
    if (wrap[i].xfer.dir == C4_DIR_RECV) {
      ck_assert_int_eq(wrap[i].xfer.peer.rank, -1);
      ck_assert_str_eq(wrap[i].xfer.peer.host, "");
    } else {
      ck_assert_int_eq(wrap[i].xfer.peer.rank, full[i].xfer.peer.rank);
    }
    ck_assert_uint_eq(wrap[i].xfer.conn_id, full[i].xfer.conn_id);
  }
  /* minimal: the required fields only, and the binary form holds what the lines read as */
  char cmd[256];
  snprintf(cmd, sizeof cmd, "grep -qE '\"(t_first|conn|dev|pid|algo|t_enqueued)\"' %s/minimal0",
           dir);
  ck_assert_msg(system(cmd) != 0, "a minimal trace has an optional field");
  ck_assert_uint_eq(nm, nf);
  ck_assert_uint_eq(nmb, nm);
  for (size_t i = 0; i < nm; i++)
    ck_assert_msg(!memcmp(&min[i], &minb[i], sizeof min[i]),
                  "record %zu differs between the minimal lines and the minimal binary form", i);
  for (size_t i = 0; i < nm; i++)
    if (min[i].kind == C4_REC_XFER) {
      ck_assert_int_eq(min[i].xfer.self.dev, -1);
      ck_assert_uint_eq(min[i].xfer.t_first_byte, 0);
    }
  ck_assert_int_eq(scen("gen " SMALL " --variant odd --truth %s/t", dir), 2);
  ck_assert_ptr_nonnull(strstr(err_text(), "--variant odd"));
  free(full);
  free(min);
  free(minb);
  free(snd);
  free(rcv);
  free(wrap);
}
END_TEST

static json_t *load_json(const char *name) {
  char p[128];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  json_error_t je;
  json_t *doc = json_load_file(p, 0, &je);
  ck_assert_msg(doc != NULL, "%s: %s", p, je.text);
  return doc;
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

START_TEST(a_straggler_is_in_the_truth_and_arrives_later_from_its_onset) {
  ck_assert_int_eq(scen("gen --hosts 4 --gpus 2 --seconds 16 --seed 3 --fault "
                        "straggler:rank=5:factor=1.5:t=8 --out %s/s --truth %s/t",
                        dir, dir),
                   0);
  json_t *truth = load_json("t");
  json_t *f = json_array_get(json_object_get(truth, "faults"), 0);
  ck_assert_str_eq(json_string_value(json_object_get(f, "kind")), "straggler");
  ck_assert_str_eq(json_string_value(json_object_get(f, "where")), "gpu");
  ck_assert_int_eq(json_integer_value(json_array_get(json_object_get(f, "ranks"), 0)), 5);
  uint64_t onset = (uint64_t)json_integer_value(json_object_get(f, "onset_ns"));
  ck_assert_uint_eq(onset, 1000000000ull + 8000000000ull);
  json_decref(truth);
  char p[128];
  size_t n;
  snprintf(p, sizeof p, "%s/s", dir);
  struct c4_record *r = read_all(p, &n);
  /* per world collective: rank 5's arrival minus the median arrival of the others */
  enum { MAXSEQ = 256, R = 8 };
  static uint64_t arrive[MAXSEQ][R];
  memset(arrive, 0, sizeof arrive);
  for (size_t i = 0; i < n; i++)
    if (r[i].kind == C4_REC_COLL && !r[i].coll.is_p2p && r[i].coll.seq < MAXSEQ)
      arrive[r[i].coll.seq][r[i].coll.rank] = r[i].coll.t_arrive;
  int late_before = 0, late_after = 0, before = 0, after = 0;
  for (int s = 0; s < MAXSEQ && arrive[s][0]; s++) {
    uint64_t others[R - 1];
    for (int k = 0, m = 0; k < R; k++)
      if (k != 5) others[m++] = arrive[s][k];
    qsort(others, R - 1, sizeof *others, cmp_u64);
    int64_t lead = (int64_t)arrive[s][5] - (int64_t)others[R / 2 - 1];
    if (others[0] < onset) { /* computed before the onset */
      before++;
      late_before += lead > 10000000;
    } else {
      after++;
      late_after += lead > 10000000; /* 10 ms: a sixth of a 60 ms compute */
    }
  }
  ck_assert_int_gt(before, 20);
  ck_assert_int_gt(after, 20);
  ck_assert_int_le(late_before, before / 10);
  ck_assert_int_ge(late_after, after * 9 / 10);
  free(r);
}
END_TEST

START_TEST(a_comm_hang_leaves_pending_transfers_and_nothing_completes_after_it) {
  ck_assert_int_eq(scen("gen --hosts 4 --gpus 2 --seconds 12 --seed 5 --fault "
                        "comm_hang:src=h0000:dst=h0001:dev=1:t=6 --out %s/h --truth %s/t",
                        dir, dir),
                   0);
  json_t *truth = load_json("t");
  json_t *f = json_array_get(json_object_get(truth, "faults"), 0);
  ck_assert_str_eq(json_string_value(json_object_get(f, "kind")), "comm_hang");
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(f, "link"), 0)), "h0000");
  ck_assert_str_eq(json_string_value(json_array_get(json_object_get(f, "link"), 1)), "h0001");
  uint64_t onset = (uint64_t)json_integer_value(json_object_get(f, "onset_ns"));
  uint64_t stall = (uint64_t)json_integer_value(json_object_get(f, "stall_ns"));
  ck_assert_uint_eq(onset, 7000000000ull);
  ck_assert_uint_ge(stall, onset);
  ck_assert_uint_lt(stall, onset + 200000000ull); /* the next collective at the latest */
  json_decref(truth);
  char p[128];
  size_t n;
  snprintf(p, sizeof p, "%s/h", dir);
  struct c4_record *r = read_all(p, &n);
  int pending_send = 0, pending_recv = 0, open_colls = 0;
  uint64_t last_hb_entered = 0, last_hb_done = 0;
  for (size_t i = 0; i < n; i++) {
    if (r[i].kind == C4_REC_XFER && r[i].xfer.status == C4_XFER_PENDING) {
      ck_assert_uint_eq(r[i].xfer.t_done, 0);
      if (r[i].xfer.dir == C4_DIR_SEND) {
        pending_send++;
        ck_assert_int_eq(r[i].xfer.self.rank, 1); /* (h0000, dev 1) */
        ck_assert_int_eq(r[i].xfer.peer.rank, 3); /* (h0001, dev 1) */
      } else {
        pending_recv++;
      }
    }
    if (r[i].kind == C4_REC_XFER && r[i].xfer.t_done)
      ck_assert_uint_le(r[i].xfer.t_done, stall + 100000000ull);
    if (r[i].kind == C4_REC_COLL) {
      ck_assert_msg(r[i].coll.t_done <= onset, "a collective completed at %llu, after the hang",
                    (unsigned long long)r[i].coll.t_done);
      open_colls += r[i].coll.t_done == 0;
    }
    if (r[i].kind == C4_REC_RANK && r[i].rank.t > stall + 1000000000ull) {
      last_hb_entered = r[i].rank.entered;
      last_hb_done = r[i].rank.done;
    }
  }
  ck_assert_int_ge(pending_send, 1);
  ck_assert_int_ge(pending_recv, 1);
  ck_assert_int_ge(open_colls, 8); /* every rank entered the hung collective */
  ck_assert_uint_eq(last_hb_entered, last_hb_done + 1);
  free(r);
}
END_TEST

START_TEST(a_rank_that_never_arrives_or_dies_leaves_the_others_waiting) {
  for (int lost = 0; lost < 2; lost++) {
    ck_assert_int_eq(scen("gen --hosts 2 --gpus 2 --seconds 10 --seed 4 --fault %s:rank=2:t=5 "
                          "--out %s/n --truth %s/t",
                          lost ? "rank_lost" : "noncomm_hang", dir, dir),
                     0);
    char p[128];
    size_t n;
    snprintf(p, sizeof p, "%s/n", dir);
    struct c4_record *r = read_all(p, &n);
    const uint64_t onset = 6000000000ull;
    int waiting = 0, ends = 0, late_hb = 0;
    uint64_t entered_2 = 0, entered_0 = 0, done_0 = 0;
    for (size_t i = 0; i < n; i++) {
      if (r[i].kind == C4_REC_COLL) {
        if (r[i].coll.rank == 2) ck_assert_uint_lt(r[i].coll.t_arrive, onset);
        ck_assert_uint_le(r[i].coll.t_done, onset + 200000000ull);
        waiting += !r[i].coll.t_done;
      }
      if (r[i].kind == C4_REC_RANK && r[i].rank.event != C4_RANK_HB) {
        ends++;
        ck_assert_int_eq(r[i].rank.rank, 2);
        ck_assert_int_eq(r[i].rank.event, C4_RANK_LOST);
        ck_assert_uint_eq(r[i].rank.t, onset);
      }
      if (r[i].kind == C4_REC_RANK && r[i].rank.event == C4_RANK_HB && r[i].rank.t > onset + 2e9) {
        if (r[i].rank.rank == 2) {
          late_hb++;
          entered_2 = r[i].rank.entered;
        }
        if (r[i].rank.rank == 0) {
          entered_0 = r[i].rank.entered;
          done_0 = r[i].rank.done;
        }
      }
      ck_assert_msg(!lost || when(&r[i]) < onset || r[i].kind != C4_REC_XFER ||
                        r[i].xfer.self.rank != 2,
                    "the lost rank wrote after it died");
    }
    ck_assert_int_ge(waiting, 3); /* ranks 0, 1, 3 wait in the collective rank 2 never joins */
    ck_assert_int_eq(ends, lost);
    ck_assert_uint_eq(entered_0, done_0 + 1);
    if (lost) {
      ck_assert_int_eq(late_hb, 0);
    } else {
      ck_assert_int_gt(late_hb, 0);
      ck_assert_uint_eq(entered_2, done_0); /* it stopped entering */
    }
    free(r);
  }
}
END_TEST

START_TEST(bad_fault_specs_are_usage_errors_naming_the_problem) {
  ck_assert_int_eq(scen("gen " SMALL " --fault straggler:rank=99:factor=2:t=1 --truth %s/t", dir),
                   2);
  ck_assert_ptr_nonnull(strstr(err_text(), "rank=99"));
  ck_assert_int_eq(scen("gen " SMALL " --fault path:id=spine1:rate=0.5:t=1 --truth %s/t", dir), 2);
  ck_assert_ptr_nonnull(strstr(err_text(), "--plan"));
  ck_assert_int_eq(scen("gen " SMALL " --fault nic_tx:host=1:dev=0:t=1 --truth %s/t", dir), 2);
  ck_assert_ptr_nonnull(strstr(err_text(), "rate= is missing"));
  ck_assert_int_eq(scen("gen " SMALL " --out /dev/null"), 2);
  ck_assert_int_eq(scen("gen --help >/dev/null"), 0);
  ck_assert_int_eq(scen("--version >/dev/null"), 0);
}
END_TEST

/* ---- the scorer ---- */

static void put(const char *name, const char *text) {
  char p[128];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  FILE *f = fopen(p, "w");
  ck_assert_ptr_nonnull(f);
  fputs(text, f);
  fclose(f);
}

static const char *truth_text =
    "{\"v\":1,\"hosts\":4,\"gpus\":2,\"ranks\":8,\"seconds\":30,\"start_ns\":1000000000,\n"
    " \"trace_end_ns\":31000000000,\"hang_threshold_ns\":3000000000,\n"
    " \"faults\":[\n"
    "  {\"kind\":\"straggler\",\"where\":\"gpu\",\"ranks\":[5],\"hosts\":[\"h0002\"],\"nic\":null,"
    "\"link\":null,\"path\":null,\"onset_ns\":11000000000,\"end_ns\":null,\"factor\":1.5},\n"
    "  {\"kind\":\"comm_slow\",\"where\":\"nic_tx\",\"ranks\":[2],\"hosts\":[\"h0001\"],"
    "\"nic\":{\"host\":\"h0001\",\"dev\":0},\"link\":null,\"path\":null,\"onset_ns\":5000000000,"
    "\"end_ns\":9000000000,\"factor\":2},\n"
    "  {\"kind\":\"comm_hang\",\"where\":\"link\",\"ranks\":[1,3],\"hosts\":[\"h0000\",\"h0001\"],"
    "\"nic\":null,\"link\":[\"h0000\",\"h0001\"],\"link_devs\":[1,1],\"path\":null,"
    "\"onset_ns\":20000000000,\"end_ns\":null,\"stall_ns\":20200000000,\"factor\":0}],\n"
    " \"blips\":[{\"what\":\"xfer_slow\",\"t_ns\":15000000000}]}\n";

#define EV_STRAGGLER                                                                               \
  "{\"v\":1,\"id\":1,\"kind\":\"straggler\",\"t\":13500000000,\"where\":\"gpu\",\"ranks\":[5],"    \
  "\"hosts\":[\"h0002\"],\"nic\":null,\"link\":null,\"factor\":1.75}\n"
#define EV_NIC                                                                                     \
  "{\"v\":1,\"id\":2,\"kind\":\"comm_slow\",\"t\":6000000000,\"where\":\"nic_tx\",\"ranks\":[2],"  \
  "\"hosts\":[\"h0001\"],\"nic\":{\"host\":\"h0001\",\"dev\":0},\"link\":null,\"factor\":1.5}\n"
#define EV_HANG                                                                                    \
  "{\"v\":1,\"id\":3,\"kind\":\"comm_hang\",\"t\":23500000000,\"where\":\"link\",\"ranks\":[1,3]," \
  "\"hosts\":[\"h0000\",\"h0001\"],\"nic\":null,\"link\":[\"h0000\",\"h0001\"],"                   \
  "\"link_devs\":[1,1]}\n"
#define EV_RECOVERED                                                                               \
  "{\"v\":1,\"id\":4,\"kind\":\"recovered\",\"t\":10000000000,\"clears\":2,\"where\":\"nic_tx\"}"  \
  "\n"

/* Scores DIR/truth against DIR/events as JSON; the caller owns the document. */
static json_t *score(void) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' score --truth '%s/truth' --events '%s/events' --json", bin, dir,
           dir);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  json_error_t je;
  json_t *doc = json_loadf(p, 0, &je);
  ck_assert_int_eq(pclose(p), 0);
  ck_assert_msg(doc != NULL, "score --json printed no JSON: %s", je.text);
  return doc;
}

static double num(const json_t *doc, const char *key) {
  json_t *v = json_object_get(doc, key);
  ck_assert_msg(json_is_number(v), "\"%s\" is not a number", key);
  return json_number_value(v);
}

START_TEST(events_that_match_every_fault_score_precision_and_recall_one) {
  put("truth", truth_text);
  put("events", EV_NIC EV_RECOVERED EV_STRAGGLER EV_HANG);
  json_t *doc = score();
  ck_assert_double_eq_tol(num(doc, "precision"), 1, 1e-5);
  ck_assert_double_eq_tol(num(doc, "recall"), 1, 1e-5);
  ck_assert_double_eq_tol(num(doc, "location"), 1, 1e-5);
  ck_assert_int_eq((int)num(doc, "false_alarms"), 0);
  ck_assert_double_eq_tol(num(doc, "median_flag_slow_s"), (2.5 + 1.0) / 2, 1e-5);
  /* a hang from when the job stalled (stall_ns) plus the threshold */
  ck_assert_double_eq_tol(num(doc, "median_flag_hang_s"), 23.5 - 20.2 - 3.0, 1e-5);
  json_t *f0 = json_array_get(json_object_get(doc, "faults"), 0);
  ck_assert(json_is_true(json_object_get(f0, "detected")));
  ck_assert_double_eq_tol(num(f0, "flag_s"), 2.5, 1e-5);
  /* the straggler's 1.75 is within 20% of 1.5; the NIC's 1.5 is not within 20% of 2 */
  ck_assert(json_is_true(json_object_get(f0, "factor_right")));
  ck_assert(json_is_false(
      json_object_get(json_array_get(json_object_get(doc, "faults"), 1), "factor_right")));
  ck_assert_double_eq_tol(num(doc, "factor_right"), 0.5, 1e-5);
  json_decref(doc);
  /* the human form ends with the summary line */
  ck_assert_int_eq(scen("score --truth %s/truth --events %s/events > %s/out", dir, dir, dir), 0);
  put("expect", "precision 1.000 recall 1.000 location 1.000 median_flag_slow_s 1.750 "
                "median_flag_hang_s 0.300 false_alarms 0 factor_right 0.500\n");
  char cmd[512];
  snprintf(cmd, sizeof cmd, "tail -n 1 %s/out | cmp -s - %s/expect", dir, dir);
  ck_assert_msg(system(cmd) == 0, "the summary line is not as documented");
}
END_TEST

START_TEST(an_event_matching_nothing_is_a_false_positive_and_a_missed_fault_lowers_recall) {
  put("truth", truth_text);
  /* no event for the nic fault; a link event after the blip, past the nic fault's window (its
   * end, 9 s, + 10 s) */
  put("events", EV_STRAGGLER
      "{\"v\":1,\"id\":9,\"kind\":\"comm_slow\",\"t\":20500000000,\"where\":\"link\",\"ranks\":[],"
      "\"hosts\":[\"h0002\",\"h0003\"],\"nic\":null,\"link\":[\"h0002\",\"h0003\"]}\n" EV_HANG);
  json_t *doc = score();
  ck_assert_double_eq_tol(num(doc, "precision"), 2.0 / 3, 1e-5);
  ck_assert_double_eq_tol(num(doc, "recall"), 2.0 / 3, 1e-5);
  ck_assert_int_eq((int)num(doc, "false_alarms"), 1);
  json_t *fp = json_array_get(json_object_get(doc, "false_positives"), 0);
  ck_assert_int_eq((int)num(fp, "id"), 9);
  ck_assert_int_eq((int)num(fp, "near_blip"), 0);
  json_t *b0 = json_array_get(json_object_get(doc, "blips"), 0);
  ck_assert(json_is_true(json_object_get(b0, "alarmed")));
  json_t *f1 = json_array_get(json_object_get(doc, "faults"), 1);
  ck_assert(json_is_false(json_object_get(f1, "detected")));
  json_decref(doc);
}
END_TEST

START_TEST(an_event_at_the_wrong_place_is_detected_but_not_located) {
  put("truth", truth_text);
  put("events", EV_NIC EV_HANG
      "{\"v\":1,\"id\":5,\"kind\":\"straggler\",\"t\":12000000000,\"where\":\"gpu\",\"ranks\":[4],"
      "\"hosts\":[\"h0002\"],\"nic\":null,\"link\":null}\n");
  json_t *doc = score();
  ck_assert_double_eq_tol(num(doc, "precision"), 1, 1e-5);
  ck_assert_double_eq_tol(num(doc, "recall"), 1, 1e-5);
  ck_assert_double_eq_tol(num(doc, "location"), 2.0 / 3, 1e-5);
  json_t *f0 = json_array_get(json_object_get(doc, "faults"), 0);
  ck_assert(json_is_true(json_object_get(f0, "detected")));
  ck_assert(json_is_false(json_object_get(f0, "place_right")));
  json_decref(doc);
}
END_TEST

START_TEST(unreadable_truth_or_events_fail_naming_the_file_and_line) {
  put("truth", "{\"v\":1,\n \"faults\":[\n  {\"kind\":\"straggler\",,}]}\n");
  put("events", EV_NIC);
  ck_assert_int_eq(scen("score --truth %s/truth --events %s/events", dir, dir), 1);
  char want[128];
  snprintf(want, sizeof want, "%s/truth:3:", dir);
  ck_assert_msg(strstr(err_text(), want), "\"%s\" does not name %s", err_text(), want);
  put("truth", truth_text);
  put("events", EV_NIC "{\"v\":1,\"kind\":\"straggler\"\n");
  ck_assert_int_eq(scen("score --truth %s/truth --events %s/events", dir, dir), 1);
  snprintf(want, sizeof want, "%s/events:2:", dir);
  ck_assert_msg(strstr(err_text(), want), "\"%s\" does not name %s", err_text(), want);
  put("events", EV_NIC "{\"v\":1,\"kind\":\"straggler\",\"where\":\"gpu\"}\n");
  ck_assert_int_eq(scen("score --truth %s/truth --events %s/events", dir, dir), 1);
  ck_assert_msg(strstr(err_text(), "events:2: \"t\""), "%s", err_text());
  put("truth", "{\"v\":1,\"seconds\":5,\"faults\":[{\"kind\":\"slow\",\"where\":\"gpu\"}]}");
  ck_assert_int_eq(scen("score --truth %s/truth --events %s/events", dir, dir), 1);
  ck_assert_msg(strstr(err_text(), "faults[0].kind"), "%s", err_text());
  ck_assert_int_eq(scen("score --truth %s/nonexistent --events %s/events", dir, dir), 1);
  ck_assert_msg(strstr(err_text(), "nonexistent"), "%s", err_text());
  ck_assert_int_eq(scen("score --truth %s/truth", dir), 2);
}
END_TEST

int main(void) {
  Suite *s = suite_create("scenario");
  TCase *gen = tcase_create("gen");
  tcase_add_checked_fixture(gen, setup, teardown);
  tcase_set_timeout(gen, 120);
  tcase_add_test(gen, a_trace_is_the_same_bytes_for_a_seed_and_differs_for_another);
  tcase_add_test(gen, records_are_in_time_order_and_the_binary_form_holds_the_same_ones);
  tcase_add_test(gen, each_variant_writes_what_its_tracer_would_record);
  tcase_add_test(gen, a_straggler_is_in_the_truth_and_arrives_later_from_its_onset);
  tcase_add_test(gen, a_comm_hang_leaves_pending_transfers_and_nothing_completes_after_it);
  tcase_add_test(gen, a_rank_that_never_arrives_or_dies_leaves_the_others_waiting);
  tcase_add_test(gen, bad_fault_specs_are_usage_errors_naming_the_problem);
  suite_add_tcase(s, gen);
  TCase *sc = tcase_create("score");
  tcase_add_checked_fixture(sc, setup, teardown);
  tcase_add_test(sc, events_that_match_every_fault_score_precision_and_recall_one);
  tcase_add_test(sc,
                 an_event_matching_nothing_is_a_false_positive_and_a_missed_fault_lowers_recall);
  tcase_add_test(sc, an_event_at_the_wrong_place_is_detected_but_not_located);
  tcase_add_test(sc, unreadable_truth_or_events_fail_naming_the_file_and_line);
  suite_add_tcase(s, sc);
  return c4_check_run(s);
}
