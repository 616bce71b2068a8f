/* fuzz_packet.c -- fuzz target for c4cap's packet parser: any bytes as a frame of every link type
 * it reads; whatever it accepts must be a consistent key (and ASan catches any read past the
 * end, since the drivers hand over exactly size bytes). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "../../tools/c4cap/packet.h"
#include "fuzz.h"

static void must(int cond) {
  if (!cond) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static const int links[] = {C4CAP_LINK_EN10MB, C4CAP_LINK_RAW, C4CAP_LINK_LINUX_SLL,
                              C4CAP_LINK_LINUX_SLL2};
  for (size_t i = 0; i < sizeof links / sizeof *links; i++) {
    struct c4cap_pkt p;
    int rc = c4cap_parse(data, size, links[i], &p);
    must(rc == 0 || rc == -EBADMSG || rc == -EPROTONOSUPPORT);
    if (rc) continue;
    must(p.key.family == 4 || p.key.family == 6);
    must(p.ip_len >= (p.key.family == 4 ? 20u : 40u));
    must(p.key.pad[0] == 0 && p.key.pad[1] == 0);
    if (p.key.family == 4) must(!memcmp(p.key.src + 4, "\0\0\0\0\0\0\0\0\0\0\0\0", 12));
    if (p.fragment || (p.key.proto != 6 && p.key.proto != 17))
      must(p.key.sport == 0 && p.key.dport == 0);
    must(p.key.qp == C4CAP_NO_QP ||
         (p.key.qp <= 0xFFFFFF && p.key.proto == 17 && p.key.dport == C4CAP_ROCE_PORT));
  }
  return 0;
}

/* Seeds: Ethernet/IPv4/TCP, Ethernet/VLAN/IPv6/UDP, and RoCEv2 with its BTH. */

size_t c4_fuzz_seed(int i, uint8_t *buf, size_t cap) {
  static const char *const seeds[] = {
      "020202020202020202020202080045000028000040004006000a0a000001"
      "0a0000029c4014510000000000000000500200000000000000",
      "0202020202020202020202028100006486dd6000000000101140fd000000000000000000000000000001"
      "fd000000000000000000000000000002007b00350010000001020304",
      "02020202020202020202020208004500003c0000400040110000c0a80101c0a80102c00012b70028000"
      "00a00ffff00abcdef00000001"};
  if (i < 0 || i >= 3) return 0;
  size_t n = strlen(seeds[i]) / 2;
  if (n > cap) return 0;
  for (size_t k = 0; k < n; k++)
    buf[k] = (uint8_t)strtoul((char[3]){seeds[i][2 * k], seeds[i][2 * k + 1], 0}, NULL, 16);
  return n;
}
