/* fuzz_plan.c -- fuzz target for the plugin's plan reader (C4_PLAN): any bytes either give a plan
 * whose every host pair is found again by lookup and holds at least one flow, or an error that
 * says what is wrong. */
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "fuzz.h"
#include "net_plan.h"

static void must(int cond) {
  if (!cond) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  struct c4_netplan *p = NULL;
  char err[256] = "";
  int rc = c4_netplan_parse((const char *)data, size, &p, err, sizeof err);
  if (rc != 0) {
    must(rc == C4_EINVAL && p == NULL && strlen(err) > 0);
    return 0;
  }
  must(p != NULL && p->npairs >= 0);
  for (int i = 0; i < p->npairs; i++) {
    const struct c4_netplan_pair *pair = &p->pairs[i];
    must(memchr(pair->src, 0, sizeof pair->src) && memchr(pair->dst, 0, sizeof pair->dst));
    must(pair->nbinds >= 1 && c4_netplan_find(p, pair->src, pair->dst) == pair);
    for (int b = 0; b < pair->nbinds; b++)
      must(memchr(pair->binds[b].ifname, 0, sizeof pair->binds[b].ifname) != NULL);
  }
  c4_netplan_free(p);
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
      "{\"v\":1}"};
  if (i < 0 || i >= 3 || strlen(seeds[i]) > cap) return 0;
  memcpy(buf, seeds[i], strlen(seeds[i]));
  return strlen(seeds[i]);
}
