/* fuzz_plan.c -- fuzz target for the one plan reader (c4_planfile_parse), as the plugin, c4mon's
 * detection and c4mon's plan push call it: any bytes either give a plan whose every host name is
 * a NUL-terminated string, whose every flow written back reads as the same flow, and which the
 * plugin groups into pairs found again by lookup, or an error that says what is wrong. */
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "c4_planfile.h"
#include "fuzz.h"
#include "net_plan.h"

static void must(int cond) {
  if (!cond) abort();
}

static int is_name(const char *s, size_t cap) {
  const char *nul = memchr(s, 0, cap);
  return nul && nul > s;
}

/* Each flow, written back as c4mon pushes it, reads as the same flow. */
static void flows_round_trip(const struct c4_planfile *p) {
  for (size_t i = 0; i < p->nflows; i++) {
    const struct c4_planfile_flow *f = &p->flows[i];
    must(is_name(f->src, sizeof f->src) && is_name(f->dst, sizeof f->dst));
    must(memchr(f->ifname, 0, sizeof f->ifname) != NULL);
    json_t *doc = json_pack("{s:i, s:[o]}", "v", 1, "flows", c4_planfile_flow_json(f));
    char *text = doc ? json_dumps(doc, JSON_COMPACT) : NULL;
    struct c4_planfile *again = NULL;
    char err[256];
    must(text &&
         c4_planfile_parse(text, strlen(text), C4_PLANFILE_FLOWS, &again, err, sizeof err) == 0);
    struct c4_planfile_flow a = again->flows[0], b = *f;
    must(again->nflows == 1 && !a.path == !b.path && (!a.path || !strcmp(a.path, b.path)));
    a.path = b.path = NULL;
    must(memcmp(&a, &b, sizeof a) == 0);
    c4_planfile_free(again);
    free(text);
    json_decref(doc);
  }
}

/* The plugin's grouping of the same bytes: it accepts them exactly when the reader does, and
 * every pair holds at least one flow and is found again by lookup. */
static void plugin_groups(const uint8_t *data, size_t size, const struct c4_planfile *flows) {
  struct c4_netplan *p = NULL;
  char err[256] = "";
  int rc = c4_netplan_parse((const char *)data, size, &p, err, sizeof err);
  must((rc == 0) == (flows != NULL));
  if (rc != 0) {
    must(rc == C4_EINVAL && p == NULL && strlen(err) > 0);
    return;
  }
  int total = 0;
  for (int i = 0; i < p->npairs; i++) {
    const struct c4_netplan_pair *pair = &p->pairs[i];
    must(pair->nbinds >= 1 && c4_netplan_find(p, pair->src, pair->dst) == pair);
    total += pair->nbinds;
  }
  must((size_t)total == flows->nflows);
  c4_netplan_free(p);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const unsigned parts[] = {C4_PLANFILE_FLOWS, C4_PLANFILE_PATHS,
                                   C4_PLANFILE_FLOWS | C4_PLANFILE_PATHS};
  struct c4_planfile *flows = NULL;
  for (int k = 0; k < 3; k++) {
    struct c4_planfile *p = (struct c4_planfile *)1;
    char err[256] = "";
    int rc = c4_planfile_parse((const char *)data, size, parts[k], &p, err, sizeof err);
    if (rc != 0) {
      must((rc == C4_EINVAL || rc == C4_ENOMEM) && p == NULL && strlen(err) > 0);
      continue;
    }
    must(p != NULL);
    flows_round_trip(p);
    for (size_t i = 0; i < p->npaths; i++) {
      must(p->paths[i].id != NULL);
      for (size_t j = 0; j < p->paths[i].npairs; j++)
        must(is_name(p->paths[i].pairs[j].src, C4_HOST_MAX) &&
             is_name(p->paths[i].pairs[j].dst, C4_HOST_MAX));
    }
    if (parts[k] == C4_PLANFILE_FLOWS)
      flows = p;
    else
      c4_planfile_free(p);
  }
  plugin_groups(data, size, flows);
  c4_planfile_free(flows);
  return 0;
}

size_t c4_fuzz_seed(int i, uint8_t *buf, size_t cap) {
  static const char *const seeds[] = {
      "{\"v\":1,\"paths\":[{\"id\":\"s1\",\"pairs\":[[\"h0\",\"h3\"]]}],\"flows\":[{\"src\":\"h0\","
      "\"dst\":\"h3\",\"bytes\":1048576,\"src_port_idx\":1,\"dst_port_idx\":0,\"ifname\":\"eth1\","
      "\"path\":\"s1\",\"src_port\":49160,\"flow_label\":8},{\"src\":\"h0\",\"dst\":\"h3\","
      "\"src_port_idx\":0,\"ifname\":null,\"path\":\"s2\",\"src_port\":null}]}",
      "{\"v\":1,\"flows\":[{\"src\":\"a\",\"dst\":\"b\",\"src_port\":1},{\"src\":\"b\",\"dst\":"
      "\"a\",\"src_port\":65535,\"ifname\":\"lo\"}]}",
      "{\"v\":1,\"paths\":[{\"id\":\"s2\",\"pairs\":[[\"a\",\"b\"],[\"b\",\"a\"]]},{\"id\":"
      "\"l0\",\"pairs\":[]}],\"flows\":[{\"src\":\"a\",\"dst\":\"b\",\"sl\":3,\"path_bits\":1,"
      "\"flow_label\":1048575}]}",
      "{\"v\":1}"};
  if (i < 0 || i >= 4 || strlen(seeds[i]) > cap) return 0;
  memcpy(buf, seeds[i], strlen(seeds[i]));
  return strlen(seeds[i]);
}
