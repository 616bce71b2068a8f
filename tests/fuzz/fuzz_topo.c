/* fuzz_topo.c -- fuzz target for the planner's readers of files other processes write: the bytes
 * as a topology, then as a flows file and a probe map against a fixed topology. A reader accepts
 * or gives a reason; whatever topology it accepts is planned and written as a plan. */
#include <stdlib.h>
#include <string.h>

#include "assign.h"
#include "flows.h"
#include "fuzz.h"
#include "plan.h"
#include "portmap.h"
#include "topo.h"

static void must(int cond) {
  if (!cond) abort();
}

/* Everything the planner does with an accepted topology must work on it. */
static void plan_on(const struct c4_plan_topo *t) {
  struct c4_plan_flow f[4];
  struct c4_plan_path p[4];
  for (int i = 0; i < 4; i++)
    f[i] = (struct c4_plan_flow){i % t->nhosts, (i + 1) % t->nhosts, 1000u * (unsigned)(i + 1)};
  if (c4_plan_assign(t, f, 4, p) < 0) return; /* hosts on leaves no spine joins */
  must(c4_plan_max_load(t, f, 4, p) >= 0);
  must(c4_plan_lower_bound(t, f, 4) >= 0);
  json_decref(c4_plan_json(t, f, 4, p, NULL));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  char err[256];
  const char *text = (const char *)data;
  struct c4_plan_topo *t = c4_plan_topo_parse(text, size, "fuzz", err, sizeof err);
  must(t != NULL || !strncmp(err, "fuzz: ", 6));
  if (t) {
    plan_on(t);
    c4_plan_topo_free(t);
  }
  /* the same bytes as the other two readers, against a small fixed fabric */
  t = c4_plan_topo_synth(4, 2, 2, 2, 1, 0);
  if (!t) return 0;
  struct c4_plan_flow *flows;
  int n = c4_plan_flows_parse(text, size, "fuzz", t, &flows, err, sizeof err);
  must(n >= 0 || (flows == NULL && !strncmp(err, "fuzz: ", 6)));
  for (int i = 0; i < n; i++)
    must(flows[i].src >= 0 && flows[i].src < 4 && flows[i].dst >= 0 && flows[i].dst < 4);
  free(flows);
  struct c4_plan_portmap m = {0};
  if (c4_plan_portmap_parse(&m, text, size, "fuzz", t, err, sizeof err) == 0) {
    int tcp;
    must(m.n == 1);
    for (int s = 0; s < 2; s++) {
      int port = c4_plan_portmap_pick(&m, m.e[0].src, m.e[0].dst, s, 3, &tcp);
      must(port == -1 || (port >= 1 && port <= 65535));
    }
  } else {
    must(m.n == 0 && !strncmp(err, "fuzz: ", 6));
  }
  c4_plan_portmap_free(&m);
  c4_plan_topo_free(t);
  return 0;
}

size_t c4_fuzz_seed(int i, uint8_t *buf, size_t cap) {
  static const char *const seeds[] = {
      "{\"v\":1,\"name\":\"c4f\",\"hosts\":[{\"name\":\"h0\",\"ns\":\"c4f-h0\",\"ports\":[{"
      "\"port\":"
      "0,\"ifname\":\"eth0\",\"addr\":\"198.18.0.2\",\"leaf\":\"l0\",\"gbps\":1.0}]},{\"name\":"
      "\"h1\",\"ports\":[{\"port\":0,\"ifname\":\"eth0\",\"addr\":\"198.18.1.2\",\"leaf\":\"l1\","
      "\"gbps\":1.0}]}],\"leaves\":[{\"name\":\"l0\"},{\"name\":\"l1\"}],\"spines\":[{\"name\":"
      "\"s0\"}],\"links\":[{\"id\":\"h0p0-l0\",\"a\":\"h0\",\"b\":\"l0\",\"gbps\":1.0},{\"id\":"
      "\"l0-s0\",\"a\":\"l0\",\"b\":\"s0\",\"gbps\":1.0},{\"id\":\"l1-s0\",\"a\":\"l1\",\"b\":"
      "\"s0\",\"gbps\":1.0}]}",
      "{\"v\":1,\"flows\":[{\"src\":\"h0\",\"dst\":\"h3\",\"bytes\":100},{\"src\":\"h1\",\"dst\":"
      "\"h2\",\"bytes\":5}]}",
      "{\"v\":1,\"src\":\"h0\",\"dst\":\"h3\",\"proto\":\"udp\",\"dst_port\":4791,\"map\":[{"
      "\"src_port\":49153,\"path\":\"s1\"},{\"src_port\":49154,\"path\":\"s0\"}]}"};
  if (i < 0 || i >= 3 || strlen(seeds[i]) > cap) return 0;
  memcpy(buf, seeds[i], strlen(seeds[i]));
  return strlen(seeds[i]);
}
