/* test_assign.c -- the traffic planner's assignment: topology errors name the field, every flow
 * gets a valid path, flows within a leaf take no spine, NIC ports share the load, the plan is
 * within 5% of the lower bound on ring and random traffic and beats random hashing, it is exact on
 * tiny cases (brute force), the bound never exceeds the optimum (brute force), and the plan file
 * carries c4mon's paths consistent with the flows. */
#include <check.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../check_run.h"
#include "assign.h"
#include "flows.h"
#include "plan.h"
#include "topo.h"

static const char *GOOD =
    "{\"v\":1,\"name\":\"c4f\",\"hosts\":[{\"name\":\"h0\",\"ns\":\"c4f-h0\",\"ports\":["
    "{\"port\":0,\"ifname\":\"eth0\",\"addr\":\"198.18.0.2\",\"leaf\":\"l0\",\"gbps\":1.0},"
    "{\"port\":1,\"ifname\":\"eth1\",\"addr\":\"198.18.0.3\",\"leaf\":\"l0\",\"gbps\":1.0}]},"
    "{\"name\":\"h1\",\"ns\":\"c4f-h1\",\"ports\":[{\"port\":0,\"ifname\":\"eth0\",\"addr\":"
    "\"198.18.1.2\",\"leaf\":\"l1\",\"gbps\":1.0}]}],"
    "\"leaves\":[{\"name\":\"l0\",\"ns\":\"c4f-l0\"},{\"name\":\"l1\",\"ns\":\"c4f-l1\"}],"
    "\"spines\":[{\"name\":\"s0\",\"ns\":\"c4f-s0\"}],"
    "\"links\":[{\"id\":\"h0p0-l0\",\"a\":\"h0\",\"b\":\"l0\",\"gbps\":1.0},"
    "{\"id\":\"l0-s0\",\"a\":\"l0\",\"b\":\"s0\",\"gbps\":2.0},"
    "{\"id\":\"l1-s0\",\"a\":\"s0\",\"b\":\"l1\",\"gbps\":1.0}]}";

/* GOOD with the first `from` replaced by `to`; parses it and returns the error. */
static const char *parse_error(const char *from, const char *to) {
  static char text[4096], err[256];
  const char *at = strstr(GOOD, from);
  ck_assert_ptr_nonnull(at);
  snprintf(text, sizeof text, "%.*s%s%s", (int)(at - GOOD), GOOD, to, at + strlen(from));
  err[0] = 0;
  struct c4_plan_topo *t = c4_plan_topo_parse(text, strlen(text), "topo.json", err, sizeof err);
  ck_assert_ptr_null(t);
  return err;
}

START_TEST(topology_is_read_and_errors_name_the_file_and_field) {
  char err[256];
  struct c4_plan_topo *t = c4_plan_topo_parse(GOOD, strlen(GOOD), "topo.json", err, sizeof err);
  ck_assert_msg(t != NULL, "%s", err);
  ck_assert_int_eq(t->nhosts, 2);
  ck_assert_int_eq(t->nports, 3);
  ck_assert_int_eq(t->hosts[1].port0, 2);
  ck_assert_int_eq(t->ports[2].leaf, 1);
  ck_assert_double_eq(t->uplink_gbps[0], 2.0);
  ck_assert_double_eq(t->uplink_gbps[1], 1.0); /* link written spine first */
  ck_assert_int_eq(c4_plan_topo_host(t, "h1"), 1);
  ck_assert_int_eq(c4_plan_topo_host(t, "h9"), -1);
  c4_plan_topo_free(t);
  ck_assert_str_eq(parse_error("\"leaf\":\"l1\"", "\"leaf\":\"l9\""),
                   "topo.json: hosts[1].ports[0].leaf: no leaf \"l9\"");
  ck_assert_str_eq(parse_error("\"gbps\":1.0}]}]", "\"gbps\":0}]}]"),
                   "topo.json: hosts[1].ports[0].gbps: missing or not a rate > 0");
  ck_assert_str_eq(parse_error("\"v\":1", "\"v\":2"), "topo.json: v: missing or not 1");
  ck_assert_str_eq(parse_error("\"b\":\"l1\"", "\"b\":\"x\""),
                   "topo.json: links[2].b: no host, leaf or spine \"x\" to join");
  ck_assert_str_eq(parse_error("\"name\":\"h1\"", "\"name\":\"h0\""),
                   "topo.json: hosts[1].name: used twice");
  ck_assert_ptr_nonnull(strstr(parse_error("{\"v\"", "[{\"v\""), "topo.json: line 1"));
  ck_assert_ptr_null(c4_plan_topo_load("/nonexistent/topo.json", err, sizeof err));
  ck_assert_ptr_nonnull(strstr(err, "/nonexistent/topo.json: "));
}
END_TEST

/* Checks every path and that flows within a leaf take no spine; returns the max load. */
static double check_paths(const struct c4_plan_topo *t, const struct c4_plan_flow *f, int n,
                          const struct c4_plan_path *p) {
  for (int i = 0; i < n; i++) {
    int a = t->ports[t->hosts[f[i].src].port0 + p[i].src_port].leaf;
    int b = t->ports[t->hosts[f[i].dst].port0 + p[i].dst_port].leaf;
    ck_assert_int_eq(p[i].spine < 0, a == b);
  }
  double m = c4_plan_max_load(t, f, n, p);
  ck_assert_double_gt(m, 0);
  return m;
}

START_TEST(ring_and_random_traffic_plan_within_5_percent_of_the_bound_and_beat_hashing) {
  static const int sizes[][5] = {/* hosts, ports, leaves, spines, flows per host */
                                 {8, 2, 2, 2, 2},
                                 {16, 2, 4, 2, 4},
                                 {64, 2, 4, 4, 16},
                                 {128, 8, 8, 8, 64},
                                 {1024, 8, 32, 16, 64}};
  for (size_t s = 0; s < sizeof sizes / sizeof sizes[0]; s++) {
    const int *z = sizes[s];
    struct c4_plan_topo *t = c4_plan_topo_synth(z[0], z[1], z[2], z[3], 100, 0);
    for (int kind = 0; kind < 2; kind++) {
      struct c4_plan_flow *f;
      int n = kind ? c4_plan_flows_random(t, z[4], 1 << 24, 7, &f)
                   : c4_plan_flows_ring(t, z[4], 1 << 24, &f);
      struct c4_plan_path *p = malloc(sizeof *p * (size_t)n), *h = malloc(sizeof *h * (size_t)n);
      ck_assert_int_eq(c4_plan_assign(t, f, n, p), 0);
      ck_assert_int_eq(c4_plan_hash(t, f, n, 3, h), 0);
      double bound = c4_plan_lower_bound(t, f, n), plan = check_paths(t, f, n, p);
      double hash = check_paths(t, f, n, h);
      ck_assert_msg(plan <= 1.05 * bound, "%d hosts %s: plan %.4f x bound", z[0],
                    kind ? "random" : "ring", plan / bound);
      ck_assert_double_ge(plan, bound * (1 - 1e-9));
      ck_assert_msg(plan < hash, "%d hosts: plan %g, hashing %g", z[0], plan, hash);
      free(p);
      free(h);
      free(f);
    }
    c4_plan_topo_free(t);
  }
}
END_TEST

START_TEST(both_ports_of_a_nic_carry_equal_traffic_and_intra_leaf_flows_take_no_spine) {
  struct c4_plan_topo *t = c4_plan_topo_synth(4, 2, 2, 2, 100, 0); /* h0,h1 on l0; h2,h3 on l1 */
  struct c4_plan_flow f[8];
  for (int i = 0; i < 8; i++)
    f[i] = (struct c4_plan_flow){0, i < 4 ? 1 : 2, 1000};
  struct c4_plan_path p[8];
  ck_assert_int_eq(c4_plan_assign(t, f, 8, p), 0);
  int per_port[2] = {0};
  for (int i = 0; i < 8; i++) {
    per_port[p[i].src_port]++;
    ck_assert_int_eq(p[i].spine < 0, i < 4);
  }
  ck_assert_int_eq(per_port[0], 4);
  ck_assert_int_eq(per_port[1], 4);
  c4_plan_topo_free(t);
}
END_TEST

/* The best max load over every assignment of n flows (ports x ports x spines each), by
 * enumeration. */
static double brute(const struct c4_plan_topo *t, const struct c4_plan_flow *f, int n,
                    struct c4_plan_path *p, int i) {
  if (i == n) return c4_plan_max_load(t, f, n, p);
  double best = -1;
  const struct c4_plan_host *a = &t->hosts[f[i].src], *b = &t->hosts[f[i].dst];
  for (int x = 0; x < a->nports; x++)
    for (int y = 0; y < b->nports; y++)
      for (int s = -1; s < t->nspines; s++) {
        p[i] = (struct c4_plan_path){x, y, s};
        double m = brute(t, f, n, p, i + 1); /* -1: an invalid path somewhere */
        if (m >= 0 && (best < 0 || m < best)) best = m;
      }
  return best;
}

START_TEST(tiny_cases_are_exact_against_brute_force) {
  /* 4 hosts x 2 ports on 2 leaves, 2 spines with uplinks as slow as a port: spines matter */
  struct c4_plan_topo *t = c4_plan_topo_synth(4, 2, 2, 2, 1, 1);
  uint64_t seed = 11;
  for (int trial = 0; trial < 20; trial++) {
    struct c4_plan_flow f[4];
    struct c4_plan_path p[4], q[4];
    for (int i = 0; i < 4; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      int src = (int)(seed >> 33) % 4, dst = (src + 1 + (int)(seed >> 40) % 3) % 4;
      f[i] = (struct c4_plan_flow){src, dst, 1000 * (1 + (seed >> 50) % 4)};
    }
    ck_assert_int_eq(c4_plan_assign(t, f, 4, p), 0);
    double best = brute(t, f, 4, q, 0), plan = check_paths(t, f, 4, p);
    ck_assert_msg(plan <= best * (1 + 1e-9), "trial %d: plan %g, best %g", trial, plan, best);
    ck_assert_double_le(c4_plan_lower_bound(t, f, 4), best * (1 + 1e-9));
  }
  c4_plan_topo_free(t);
}
END_TEST

START_TEST(the_bound_never_exceeds_the_optimum_and_is_it_when_only_ports_matter) {
  /* 3 hosts x 3 ports on one leaf: no spine is used, so the optimum is each host's best
   * placement of its flows out and in on its ports, which the bound computes exactly */
  struct c4_plan_topo *t = c4_plan_topo_synth(3, 3, 1, 1, 1, 1);
  uint64_t seed = 29;
  for (int trial = 0; trial < 40; trial++) {
    struct c4_plan_flow f[4];
    struct c4_plan_path q[4];
    for (int i = 0; i < 4; i++) {
      seed = seed * 6364136223846793005ull + 1442695040888963407ull;
      int src = (int)(seed >> 33) % 3, dst = (src + 1 + (int)(seed >> 40) % 2) % 3;
      f[i] = (struct c4_plan_flow){src, dst, 1000 + (seed >> 44) % 3000};
    }
    double best = brute(t, f, 4, q, 0), bound = c4_plan_lower_bound(t, f, 4);
    ck_assert_msg(bound <= best * (1 + 1e-9), "trial %d: bound %g, best %g", trial, bound, best);
    ck_assert_msg(bound >= best * (1 - 1e-6), "trial %d: bound %g, best %g", trial, bound, best);
  }
  c4_plan_topo_free(t);
}
END_TEST

START_TEST(the_plan_file_carries_every_flow_and_c4mons_paths_consistent_with_them) {
  struct c4_plan_topo *t = c4_plan_topo_synth(16, 2, 4, 2, 100, 0);
  struct c4_plan_flow *f;
  int n = c4_plan_flows_random(t, 4, 1 << 20, 5, &f);
  struct c4_plan_path *p = malloc(sizeof *p * (size_t)n);
  ck_assert_int_eq(c4_plan_assign(t, f, n, p), 0);
  char path[] = "/tmp/c4-test-plan-XXXXXX", err[256];
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  close(fd);
  json_t *plan = c4_plan_json(t, f, n, p, NULL);
  ck_assert_int_eq(c4_plan_write(path, plan, err, sizeof err), 0);
  json_decref(plan);
  json_error_t jerr;
  json_t *back = json_load_file(path, 0, &jerr), *flows = json_object_get(back, "flows");
  ck_assert_ptr_nonnull(back);
  ck_assert_int_eq(json_integer_value(json_object_get(back, "v")), 1);
  ck_assert_int_eq((int)json_array_size(flows), n);
  for (int i = 0; i < n; i++) {
    json_t *e = json_array_get(flows, (size_t)i);
    ck_assert_str_eq(json_string_value(json_object_get(e, "src")), t->hosts[f[i].src].name);
    ck_assert_int_eq(json_integer_value(json_object_get(e, "bytes")), (json_int_t)f[i].bytes);
    ck_assert_int_eq(json_integer_value(json_object_get(e, "src_port_idx")), p[i].src_port);
    ck_assert_int_eq(json_integer_value(json_object_get(e, "dst_port_idx")), p[i].dst_port);
    ck_assert(json_is_null(json_object_get(e, "src_port")));
  }
  /* every pair of c4mon's paths is listed once, under a path one of its flows takes */
  size_t i, j;
  json_t *entry, *pair;
  int listed = 0;
  json_array_foreach(json_object_get(back, "paths"), i, entry) {
    const char *id = json_string_value(json_object_get(entry, "id"));
    json_array_foreach(json_object_get(entry, "pairs"), j, pair) {
      int src = c4_plan_topo_host(t, json_string_value(json_array_get(pair, 0)));
      int dst = c4_plan_topo_host(t, json_string_value(json_array_get(pair, 1)));
      int found = 0;
      for (int k = 0; k < n; k++) {
        json_t *e = json_array_get(flows, (size_t)k);
        found |= f[k].src == src && f[k].dst == dst &&
                 !strcmp(json_string_value(json_object_get(e, "path")), id);
      }
      ck_assert_msg(found, "pair %d->%d under %s takes no flow there", src, dst, id);
      listed++;
    }
  }
  int pairs = 0;
  for (int k = 0; k < n; k++) {
    int first = 1;
    for (int m = 0; m < k; m++)
      first &= !(f[m].src == f[k].src && f[m].dst == f[k].dst);
    pairs += first;
  }
  ck_assert_int_eq(listed, pairs);
  json_decref(back);
  unlink(path);
  free(p);
  free(f);
  c4_plan_topo_free(t);
}
END_TEST

START_TEST(rocev2_flow_labels_follow_rdma_core) {
  /* ibv_flow_label_to_udp_sport(fl) = ((fl & 0x3fff) ^ ((fl & 0xfc000) >> 14)) | 0xc000 */
  for (int port = 0xc000; port <= 0xffff; port += 97) {
    long fl = c4_plan_flow_label(port);
    ck_assert_int_eq((((fl & 0x3fff) ^ ((fl & 0xfc000) >> 14)) | 0xc000), port);
  }
  ck_assert_int_eq(c4_plan_flow_label(40000), -1);
}
END_TEST

int main(void) {
  Suite *s = suite_create("assign");
  TCase *tc = tcase_create("assign");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, topology_is_read_and_errors_name_the_file_and_field);
  tcase_add_test(tc, ring_and_random_traffic_plan_within_5_percent_of_the_bound_and_beat_hashing);
  tcase_add_test(tc, both_ports_of_a_nic_carry_equal_traffic_and_intra_leaf_flows_take_no_spine);
  tcase_add_test(tc, tiny_cases_are_exact_against_brute_force);
  tcase_add_test(tc, the_bound_never_exceeds_the_optimum_and_is_it_when_only_ports_matter);
  tcase_add_test(tc, the_plan_file_carries_every_flow_and_c4mons_paths_consistent_with_them);
  tcase_add_test(tc, rocev2_flow_labels_follow_rdma_core);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
