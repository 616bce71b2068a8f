/* test_c4cap.c -- c4cap's parser on hand-built frames (Ethernet/IPv4/TCP, IPv6/UDP, VLAN tags,
 * RoCEv2's BTH, IP options, fragments, cooked captures, every truncation), its flow aggregation
 * and path balance, and c4cap -r on a pcap file written with libpcap, checked to the byte. */
#include <arpa/inet.h>
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <pcap/pcap.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../../tools/c4cap/aggregate.h"
#include "../../tools/c4cap/packet.h"
#include "../../tools/c4cap/paths.h"
#include "../../tools/c4cap/report.h"
#include "../check_run.h"

/* What a hand-built frame holds. */
struct spec {
  int link;   /* C4CAP_LINK_* */
  int family; /* 4 or 6 */
  int proto;  /* 6 or 17 (or any other number: no transport header is written) */
  const char *src, *dst;
  uint16_t sport, dport;
  uint32_t qp;        /* written as a BTH when dport is 4791 */
  int vlans;          /* 802.1Q tags before the IP header */
  int ip_opts;        /* IPv4 option words (4 bytes each) */
  uint16_t frag;      /* IPv4 flags+offset field */
  uint32_t payload;   /* bytes after the headers, counted in the IP length but not written */
  uint32_t ifindex;   /* SLL2 */
  uint16_t ethertype; /* overrides the IP ethertype (ARP) */
};

static void put16(uint8_t *p, uint16_t v) {
  p[0] = (uint8_t)(v >> 8);
  p[1] = (uint8_t)v;
}

/* Writes the frame's headers into b and returns their length; *ip_len gets the IP length. */
static size_t frame(const struct spec *s, uint8_t *b, uint32_t *ip_len) {
  size_t n = 0;
  uint16_t et = s->ethertype ? s->ethertype : s->family == 6 ? 0x86DD : 0x0800;
  memset(b, 0, 256);
  if (s->link == C4CAP_LINK_EN10MB) {
    memset(b, 0x02, 12);
    n = 12;
    for (int i = 0; i < s->vlans; i++, n += 4) {
      put16(b + n, 0x8100);
      put16(b + n + 2, (uint16_t)(100 + i));
    }
    put16(b + n, et);
    n += 2;
  } else if (s->link == C4CAP_LINK_LINUX_SLL) {
    put16(b + 14, et);
    n = 16;
  } else if (s->link == C4CAP_LINK_LINUX_SLL2) {
    put16(b, et);
    b[4] = (uint8_t)(s->ifindex >> 24), b[5] = (uint8_t)(s->ifindex >> 16);
    b[6] = (uint8_t)(s->ifindex >> 8), b[7] = (uint8_t)s->ifindex;
    n = 20;
  }
  if (s->ethertype) return n + 28; /* an ARP body: zeros */
  int roce = s->proto == 17 && s->dport == C4CAP_ROCE_PORT;
  size_t l4 = s->proto == 6 ? 20 : s->proto == 17 ? 8 + (roce ? 12 : 0) : 0;
  size_t ip = n;
  if (s->family == 4) {
    size_t ihl = 20 + 4 * (size_t)s->ip_opts;
    *ip_len = (uint32_t)(ihl + l4 + s->payload);
    b[ip] = (uint8_t)(0x40 | ihl / 4);
    put16(b + ip + 2, (uint16_t)*ip_len);
    put16(b + ip + 6, s->frag);
    b[ip + 8] = 64;
    b[ip + 9] = (uint8_t)s->proto;
    inet_pton(AF_INET, s->src, b + ip + 12);
    inet_pton(AF_INET, s->dst, b + ip + 16);
    n += ihl;
  } else {
    *ip_len = (uint32_t)(40 + l4 + s->payload);
    b[ip] = 0x60;
    put16(b + ip + 4, (uint16_t)(l4 + s->payload));
    b[ip + 6] = (uint8_t)s->proto;
    inet_pton(AF_INET6, s->src, b + ip + 8);
    inet_pton(AF_INET6, s->dst, b + ip + 24);
    n += 40;
  }
  if (l4) {
    put16(b + n, s->sport);
    put16(b + n + 2, s->dport);
    if (s->proto == 6) b[n + 12] = 0x50; /* data offset: 5 words */
    if (roce) {
      b[n + 8] = 0x0A; /* RC RDMA WRITE middle */
      b[n + 13] = (uint8_t)(s->qp >> 16), b[n + 14] = (uint8_t)(s->qp >> 8);
      b[n + 15] = (uint8_t)s->qp;
    }
    n += l4;
  }
  return n;
}

/* Parses exactly n bytes in a buffer of their own, so that ASan sees any read past the end. */
static int parse_n(const uint8_t *b, size_t n, int link, struct c4cap_pkt *p) {
  uint8_t *copy = malloc(n ? n : 1);
  memcpy(copy, b, n);
  int rc = c4cap_parse(copy, n, link, p);
  free(copy);
  return rc;
}

static const struct spec tcp4 = {.link = C4CAP_LINK_EN10MB,
                                 .family = 4,
                                 .proto = 6,
                                 .src = "10.0.0.1",
                                 .dst = "10.0.0.2",
                                 .sport = 40000,
                                 .dport = 5201,
                                 .payload = 1448};
static const struct spec udp6 = {.link = C4CAP_LINK_EN10MB,
                                 .family = 6,
                                 .proto = 17,
                                 .src = "fd00::1",
                                 .dst = "fd00::2",
                                 .sport = 123,
                                 .dport = 53,
                                 .payload = 100};
static const struct spec roce = {.link = C4CAP_LINK_EN10MB,
                                 .family = 4,
                                 .proto = 17,
                                 .src = "192.168.1.1",
                                 .dst = "192.168.1.2",
                                 .sport = 49152,
                                 .dport = 4791,
                                 .qp = 0xABCDEF,
                                 .payload = 4096 + 4};

START_TEST(ethernet_ipv4_tcp_gives_the_5_tuple_and_the_ip_length) {
  uint8_t b[256];
  uint32_t len;
  size_t n = frame(&tcp4, b, &len);
  struct c4cap_pkt p;
  ck_assert_int_eq(parse_n(b, n, C4CAP_LINK_EN10MB, &p), 0);
  ck_assert_int_eq(p.key.family, 4);
  ck_assert_int_eq(p.key.proto, 6);
  ck_assert_int_eq(p.key.sport, 40000);
  ck_assert_int_eq(p.key.dport, 5201);
  ck_assert_uint_eq(p.key.qp, C4CAP_NO_QP);
  ck_assert_uint_eq(p.ip_len, 20 + 20 + 1448);
  ck_assert_int_eq(memcmp(p.key.src, "\x0a\x00\x00\x01\x00", 5), 0);
  ck_assert_int_eq(memcmp(p.key.dst, "\x0a\x00\x00\x02\x00", 5), 0);
  ck_assert_int_eq(p.fragment, 0);
}
END_TEST

START_TEST(ipv6_udp_and_vlan_tags_and_cooked_headers_give_the_same_key) {
  uint8_t b[256];
  uint32_t len;
  struct c4cap_pkt plain, p;
  size_t n = frame(&udp6, b, &len);
  ck_assert_int_eq(parse_n(b, n, C4CAP_LINK_EN10MB, &plain), 0);
  ck_assert_int_eq(plain.key.family, 6);
  ck_assert_int_eq(plain.key.proto, 17);
  ck_assert_int_eq(plain.key.sport, 123);
  ck_assert_int_eq(plain.key.dport, 53);
  ck_assert_uint_eq(plain.ip_len, 40 + 8 + 100);
  ck_assert_uint_eq(len, plain.ip_len);
  uint8_t fd01[16] = {0xfd, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1};
  ck_assert_int_eq(memcmp(plain.key.src, fd01, 16), 0);
  for (int vlans = 1; vlans <= 4; vlans++) {
    struct spec s = udp6;
    s.vlans = vlans;
    n = frame(&s, b, &len);
    ck_assert_int_eq(parse_n(b, n, C4CAP_LINK_EN10MB, &p), 0);
    ck_assert_int_eq(memcmp(&p.key, &plain.key, sizeof p.key), 0);
  }
  struct spec s = udp6;
  s.vlans = 5; /* more tags than any real network stacks */
  n = frame(&s, b, &len);
  ck_assert_int_eq(parse_n(b, n, C4CAP_LINK_EN10MB, &p), -EBADMSG);
  s = udp6;
  s.link = C4CAP_LINK_LINUX_SLL;
  n = frame(&s, b, &len);
  ck_assert_int_eq(parse_n(b, n, s.link, &p), 0);
  ck_assert_int_eq(memcmp(&p.key, &plain.key, sizeof p.key), 0);
  s.link = C4CAP_LINK_LINUX_SLL2;
  s.ifindex = 7;
  n = frame(&s, b, &len);
  ck_assert_int_eq(parse_n(b, n, s.link, &p), 0);
  ck_assert_int_eq(memcmp(&p.key, &plain.key, sizeof p.key), 0);
  ck_assert_uint_eq(p.ifindex, 7);
}
END_TEST

START_TEST(rocev2_is_keyed_by_the_bth_destination_qp) {
  uint8_t b[256];
  uint32_t len;
  struct c4cap_pkt p;
  size_t n = frame(&roce, b, &len);
  ck_assert_int_eq(parse_n(b, n, C4CAP_LINK_EN10MB, &p), 0);
  ck_assert_uint_eq(p.key.qp, 0xABCDEF);
  ck_assert_int_eq(p.key.sport, 49152);
  ck_assert_uint_eq(p.ip_len, 20 + 8 + 12 + 4096 + 4);
  struct spec other = roce; /* port 4791 as a source only: plain UDP */
  other.sport = 4791, other.dport = 50000;
  n = frame(&other, b, &len);
  ck_assert_int_eq(parse_n(b, n, C4CAP_LINK_EN10MB, &p), 0);
  ck_assert_uint_eq(p.key.qp, C4CAP_NO_QP);
}
END_TEST

START_TEST(a_frame_cut_at_any_length_short_of_its_key_is_malformed_never_read_past) {
  const struct spec *specs[] = {&tcp4, &udp6, &roce};
  for (int i = 0; i < 3; i++)
    for (int vlans = 0; vlans <= 1; vlans++)
      for (int link = 0; link < 3; link++) {
        static const int links[] = {C4CAP_LINK_EN10MB, C4CAP_LINK_LINUX_SLL, C4CAP_LINK_LINUX_SLL2};
        struct spec s = *specs[i];
        s.vlans = links[link] == C4CAP_LINK_EN10MB ? vlans : 0;
        s.link = links[link];
        s.ip_opts = s.family == 4 ? vlans * 3 : 0;
        uint8_t b[256];
        uint32_t len;
        struct c4cap_pkt p;
        size_t full = frame(&s, b, &len);
        for (size_t n = 0; n < full; n++)
          ck_assert_msg(parse_n(b, n, s.link, &p) == -EBADMSG, "spec %d link %d cut at %zu", i,
                        s.link, n);
        ck_assert_int_eq(parse_n(b, full, s.link, &p), 0);
        ck_assert_uint_eq(p.ip_len, len);
      }
}
END_TEST

START_TEST(ipv4_options_are_skipped_and_a_bad_header_length_is_malformed) {
  struct spec s = tcp4;
  s.ip_opts = 10; /* the largest: IHL 15 */
  uint8_t b[256];
  uint32_t len;
  struct c4cap_pkt p;
  size_t n = frame(&s, b, &len);
  ck_assert_int_eq(parse_n(b, n, s.link, &p), 0);
  ck_assert_int_eq(p.key.sport, 40000);
  ck_assert_int_eq(p.key.dport, 5201);
  ck_assert_uint_eq(p.ip_len, 60 + 20 + 1448);
  b[14] = 0x44; /* IHL 4: shorter than the fixed header */
  ck_assert_int_eq(parse_n(b, n, s.link, &p), -EBADMSG);
  n = frame(&tcp4, b, &len);
  put16(b + 16, 19); /* total length shorter than the header */
  ck_assert_int_eq(parse_n(b, n, s.link, &p), -EBADMSG);
}
END_TEST

START_TEST(fragments_count_their_bytes_without_ports) {
  static const uint16_t frags[] = {0x2000 /* first, more to come */, 0x00B9 /* last, offset */,
                                   0x20B9};
  for (int i = 0; i < 3; i++) {
    struct spec s = tcp4;
    s.frag = frags[i];
    uint8_t b[256];
    uint32_t len;
    struct c4cap_pkt p;
    size_t n = frame(&s, b, &len);
    ck_assert_int_eq(parse_n(b, n - 20, s.link, &p), 0); /* no transport header needed */
    ck_assert_int_eq(p.fragment, 1);
    ck_assert_int_eq(p.key.sport, 0);
    ck_assert_int_eq(p.key.dport, 0);
    ck_assert_int_eq(p.key.proto, 6);
    ck_assert_uint_eq(p.ip_len, len);
  }
  /* IPv6: a fragment header (next header 44) holding UDP, offset 0 and more fragments */
  uint8_t b[256];
  uint32_t len;
  struct c4cap_pkt p;
  size_t n = frame(&udp6, b, &len);
  memmove(b + 14 + 48, b + 14 + 40, n - 14 - 40);
  memset(b + 14 + 40, 0, 8);
  b[14 + 40] = 17;
  b[14 + 6] = 44;
  put16(b + 14 + 42, 0x0001);
  put16(b + 14 + 4, (uint16_t)(len - 40 + 8));
  ck_assert_int_eq(parse_n(b, n + 8, C4CAP_LINK_EN10MB, &p), 0);
  ck_assert_int_eq(p.fragment, 1);
  ck_assert_int_eq(p.key.proto, 17);
  ck_assert_int_eq(p.key.sport, 0);
  ck_assert_uint_eq(p.ip_len, len + 8);
  put16(b + 14 + 42, 0); /* an atomic fragment: a whole packet, ports read through it */
  ck_assert_int_eq(parse_n(b, n + 8, C4CAP_LINK_EN10MB, &p), 0);
  ck_assert_int_eq(p.fragment, 0);
  ck_assert_int_eq(p.key.sport, 123);
}
END_TEST

START_TEST(arp_and_unknown_link_types_are_not_ip) {
  struct spec s = tcp4;
  s.ethertype = 0x0806;
  uint8_t b[256];
  uint32_t len;
  struct c4cap_pkt p;
  size_t n = frame(&s, b, &len);
  ck_assert_int_eq(parse_n(b, n, s.link, &p), -EPROTONOSUPPORT);
  n = frame(&tcp4, b, &len);
  ck_assert_int_eq(parse_n(b, n, 105 /* 802.11 */, &p), -EPROTONOSUPPORT);
  ck_assert_int_eq(parse_n(b + 14, n - 14, C4CAP_LINK_RAW, &p), 0);
  ck_assert_int_eq(p.key.sport, 40000);
}
END_TEST

/* Adds frame s to a at time t (wire length = headers + payload, as a capture would see it). */
static void add(struct c4cap_agg *a, int iface, double t, const struct spec *s) {
  uint8_t b[256];
  uint32_t len;
  size_t n = frame(s, b, &len);
  ck_assert_int_eq(c4cap_agg_add(a, iface, t, (uint32_t)(n + s->payload), b, n), 0);
}

START_TEST(aggregation_sums_flows_interfaces_and_intervals) {
  struct c4cap_agg a;
  ck_assert_int_eq(c4cap_agg_init(&a, 0.5), 0);
  int e0 = c4cap_agg_iface(&a, "eth0", C4CAP_LINK_EN10MB);
  int e1 = c4cap_agg_iface(&a, "eth1", C4CAP_LINK_EN10MB);
  struct spec arp = tcp4;
  arp.ethertype = 0x0806;
  arp.payload = 0;
  for (int i = 0; i < 10; i++) {
    add(&a, e0, 100.0 + 0.1 * i, &tcp4); /* intervals 0 and 1 */
    add(&a, e1, 100.0 + 0.3 * i, &roce); /* intervals 0..5 */
  }
  struct spec qp2 = roce;
  qp2.qp = 17;
  add(&a, e1, 101.2, &qp2); /* same 5-tuple, another QP: another flow */
  add(&a, e0, 100.0, &tcp4 + 0);
  add(&a, e0, 100.5, &arp);
  uint32_t tcp_len = 20 + 20 + 1448, roce_len = 20 + 20 + 4100;
  ck_assert_uint_eq(a.nflows, 3);
  ck_assert_uint_eq(a.total.packets, 23);
  ck_assert_uint_eq(a.total.ip_packets, 22);
  ck_assert_uint_eq(a.not_ip, 1);
  ck_assert_uint_eq(a.total.ip_bytes, 11ull * tcp_len + 11ull * roce_len);
  ck_assert_uint_eq(a.total.wire_bytes, 11ull * (tcp_len + 14) + 11ull * (roce_len + 14) + 42);
  ck_assert_uint_eq(a.ifaces[e0].n.packets, 12);
  ck_assert_uint_eq(c4cap_agg_intervals(&a), 6); /* 100.0 .. 102.7 in 0.5 s slots */
  size_t n;
  const struct c4cap_flow **v = c4cap_agg_sorted(&a, &n);
  ck_assert_uint_eq(n, 3);
  ck_assert_uint_eq(v[0]->key.qp, 0xABCDEF); /* most bytes first */
  ck_assert_uint_eq(v[0]->n.packets, 10);
  ck_assert_uint_eq(v[1]->n.ip_bytes, 11ull * tcp_len);
  ck_assert_uint_eq(v[1]->series.first, 0);
  ck_assert_uint_eq(v[1]->series.bytes[0], 6ull * tcp_len); /* 100.0 twice .. 100.4 */
  ck_assert_uint_eq(v[1]->series.bytes[1], 5ull * tcp_len);
  ck_assert_uint_eq(v[2]->key.qp, 17);
  ck_assert_uint_eq(v[2]->series.first, 2);
  ck_assert_double_eq_tol(v[2]->first_ts, 1.2, 1e-9);
  free(v);
  /* an IP length beyond the frame the wire carried (not cut by a snap length) is a wrong
   * header: malformed, its bytes not counted */
  uint8_t b[256];
  uint32_t len;
  size_t fl = frame(&tcp4, b, &len);
  b[14 + 2] = 0xEA, b[14 + 3] = 0x60; /* 60000 */
  uint64_t ip_bytes = a.total.ip_bytes;
  ck_assert_int_eq(c4cap_agg_add(&a, e0, 102.8, (uint32_t)fl, b, fl), 0);
  ck_assert_uint_eq(a.malformed, 1);
  ck_assert_uint_eq(a.total.ip_bytes, ip_bytes);
  c4cap_agg_free(&a);
}
END_TEST

START_TEST(many_flows_grow_the_table_and_cooked_captures_split_by_ifindex) {
  struct c4cap_agg a;
  ck_assert_int_eq(c4cap_agg_init(&a, 1), 0);
  int any = c4cap_agg_iface(&a, "any", C4CAP_LINK_LINUX_SLL2);
  struct spec s = tcp4;
  s.link = C4CAP_LINK_LINUX_SLL2;
  for (int i = 0; i < 3000; i++) {
    s.sport = (uint16_t)(10000 + i / 2);
    s.ifindex = 1 + (uint32_t)(i % 2);
    add(&a, any, 1.0, &s);
  }
  ck_assert_uint_eq(a.nflows, 3000); /* 1500 ports on each of two interfaces */
  ck_assert_int_eq(a.nifaces, 3);
  ck_assert_str_eq(a.ifaces[1].name, "any:if1");
  ck_assert_uint_eq(a.ifaces[1].n.packets, 1500);
  ck_assert_uint_eq(a.ifaces[2].n.packets, 1500);
  ck_assert_uint_eq(a.ifaces[any].n.packets, 0);
  c4cap_agg_free(&a);
  /* the flows table names each flow's interface whole: one 5-tuple on if1 and if2 of a file are
   * two rows that say which is which (cut at 10 characters, both read "capture.pc") */
  ck_assert_int_eq(c4cap_agg_init(&a, 1), 0);
  int file = c4cap_agg_iface(&a, "capture.pcap", C4CAP_LINK_LINUX_SLL2);
  for (uint32_t k = 1; k <= 2; k++) {
    s.ifindex = k;
    add(&a, file, 1.0, &s);
  }
  char *text = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&text, &len);
  struct c4cap_run run = {.source = "test", .top = 2};
  ck_assert_int_eq(c4cap_report_table(f, &a, NULL, &run), 0);
  fclose(f);
  const char *flows = strstr(text, "\nflows:"); /* the interface table above names them too */
  ck_assert_ptr_nonnull(flows);
  ck_assert_msg(strstr(flows, "\ncapture.pcap:if1 ") && strstr(flows, "\ncapture.pcap:if2 "), "%s",
                text);
  free(text);
  c4cap_agg_free(&a);
}
END_TEST

START_TEST(paths_by_interface_and_by_a_port_map_give_max_over_mean) {
  struct c4cap_agg a;
  ck_assert_int_eq(c4cap_agg_init(&a, 1), 0);
  int e0 = c4cap_agg_iface(&a, "eth0", C4CAP_LINK_EN10MB);
  int e1 = c4cap_agg_iface(&a, "eth1", C4CAP_LINK_EN10MB);
  struct spec s = tcp4;
  s.payload = 1000 - 40; /* 1000 IP bytes a packet */
  for (int i = 0; i < 3; i++) {
    s.sport = 1000;
    add(&a, e0, 0, &s); /* eth0: 3000 bytes on port 1000 */
    s.sport = 2000;
    add(&a, e1, 0, &s); /* eth1: 3000 on 2000 and 1000 on 3000 */
  }
  s.sport = 3000;
  add(&a, e1, 0, &s);
  char err[256];
  struct c4cap_paths p;
  ck_assert_int_eq(c4cap_paths_parse(&p, "iface", err, sizeof err), 0);
  size_t n;
  uint64_t unmapped;
  double imb;
  struct c4cap_path_load *v = c4cap_paths_sum(&p, &a, &n, &unmapped, &imb);
  ck_assert_uint_eq(n, 2);
  ck_assert_double_eq_tol(imb, 4000.0 / 3500.0, 1e-9);
  free(v);
  c4cap_paths_free(&p);

  char map[] = "/tmp/c4cap-map-XXXXXX";
  int fd = mkstemp(map);
  ck_assert_int_ge(fd, 0);
  const char *text = "# port path\n1000 spine1\n2000 spine2\n\n4000 spine3 # idle\n";
  ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
  ck_assert_int_eq(c4cap_paths_parse(&p, map, err, sizeof err), 0);
  v = c4cap_paths_sum(&p, &a, &n, &unmapped, &imb);
  ck_assert_uint_eq(n, 3);
  ck_assert_str_eq(v[2].name, "spine3");
  ck_assert_uint_eq(v[2].bytes, 0);
  ck_assert_uint_eq(unmapped, 1000);
  ck_assert_double_eq_tol(imb, 3000.0 / 2000.0, 1e-9); /* an idle path counts in the mean */
  free(v);
  c4cap_paths_free(&p);
  unlink(map);
  ck_assert_int_eq(c4cap_paths_parse(&p, "/nonexistent/map", err, sizeof err), -ENOENT);
  ck_assert_ptr_nonnull(strstr(err, "/nonexistent/map"));
  /* a header line, a port out of range (4294967297 wrapped to 1 before), a port glued to its
   * path, a third word, a port mapped twice: each is named by its line, none taken or skipped */
  static const char *const bad[] = {"sport path\n1 s0\n", "4294967297 s0\n", "49158s0\n",
                                    "1 s0 s1\n",          "0 s0\n",          "1 s0\n1 s1\n"};
  static const char *const line[] = {":1:", ":1:", ":1:", ":1:", ":1:", ":2:"};
  for (unsigned i = 0; i < sizeof bad / sizeof *bad; i++) {
    fd = open(map, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    ck_assert_int_ge(fd, 0);
    ck_assert_int_eq(write(fd, bad[i], strlen(bad[i])), (ssize_t)strlen(bad[i]));
    close(fd);
    ck_assert_msg(c4cap_paths_parse(&p, map, err, sizeof err) == -EINVAL, "map \"%s\" taken",
                  bad[i]);
    ck_assert_msg(strstr(err, line[i]) != NULL, "map \"%s\": %s", bad[i], err);
  }
  unlink(map);
  c4cap_agg_free(&a);
}
END_TEST

static char bin[4096], dir[64];

static void setup(void) {
  const char *b = getenv("C4_BUILD_DIR");
  ck_assert_msg(b && *b, "C4_BUILD_DIR is not set: run through tests/run.sh (it names the build)");
  snprintf(bin, sizeof bin, "%s/bin/c4cap", b);
  ck_assert_msg(access(bin, X_OK) == 0, "%s is missing: build it", bin);
  snprintf(dir, sizeof dir, "/tmp/c4cap-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void) {
  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  ck_assert_int_eq(system(cmd), 0);
}

/* Runs c4cap with args, stdout to DIR/out and stderr to DIR/err; returns its exit code. */
static int c4cap(const char *args) {
  char cmd[8192];
  snprintf(cmd, sizeof cmd, "'%s' %s >'%s/out' 2>'%s/err'", bin, args, dir, dir);
  int st = system(cmd);
  ck_assert_msg(st != -1 && WIFEXITED(st), "could not run %s", cmd);
  return WEXITSTATUS(st);
}

static json_int_t jint(json_t *o, const char *path1, const char *path2) {
  json_t *v = json_object_get(json_object_get(o, path1), path2);
  ck_assert_msg(json_is_integer(v), "%s.%s is not an integer", path1, path2);
  return json_integer_value(v);
}

START_TEST(c4cap_reads_a_pcap_file_and_its_json_totals_are_exact) {
  char file[128], args[512];
  snprintf(file, sizeof file, "%s/cap.pcap", dir);
  pcap_t *dead = pcap_open_dead(DLT_EN10MB, 65535);
  pcap_dumper_t *d = pcap_dump_open(dead, file);
  ck_assert_ptr_nonnull(d);
  /* 50 TCP packets (a snap length of 96 cuts them), 20 RoCEv2 on QP 0xABCDEF, 10 on QP 5,
   * 5 IPv6/UDP, one ARP; 0.25 s apart */
  struct spec qp5 = roce, arp = tcp4;
  qp5.qp = 5;
  arp.ethertype = 0x0806;
  const struct {
    const struct spec *s;
    int count;
  } mix[] = {{&tcp4, 50}, {&roce, 20}, {&qp5, 10}, {&udp6, 5}, {&arp, 1}};
  uint64_t wire = 0, ip = 0;
  int pkts = 0;
  for (int m = 0; m < 5; m++)
    for (int i = 0; i < mix[m].count; i++, pkts++) {
      uint8_t b[256] = {0};
      uint32_t len = 0;
      size_t n = frame(mix[m].s, b, &len);
      struct pcap_pkthdr h = {.ts = {.tv_sec = 1000 + pkts / 4, .tv_usec = (pkts % 4) * 250000},
                              .caplen = (uint32_t)n,
                              .len = (uint32_t)n + mix[m].s->payload};
      pcap_dump((u_char *)d, &h, b);
      wire += h.len;
      ip += len;
    }
  pcap_dump_close(d);
  pcap_close(dead);

  snprintf(args, sizeof args, "-r '%s' --json --paths flow", file);
  ck_assert_int_eq(c4cap(args), 0);
  char out[128];
  snprintf(out, sizeof out, "%s/out", dir);
  json_error_t jerr;
  json_t *j = json_load_file(out, 0, &jerr);
  ck_assert_msg(j != NULL, "c4cap --json is not JSON: %s", jerr.text);
  ck_assert_int_eq(jint(j, "totals", "packets"), 86);
  ck_assert_int_eq(jint(j, "totals", "ip_packets"), 85);
  ck_assert_int_eq(jint(j, "totals", "not_ip_packets"), 1);
  ck_assert_int_eq(jint(j, "totals", "wire_bytes"), (json_int_t)wire);
  ck_assert_int_eq(jint(j, "totals", "ip_bytes"), (json_int_t)ip);
  ck_assert_int_eq(jint(j, "totals", "flows"), 4);
  ck_assert_int_eq(json_integer_value(json_object_get(j, "intervals")), 22); /* 86 / 4 s */
  json_t *flows = json_object_get(j, "flows");
  ck_assert_uint_eq(json_array_size(flows), 4);
  json_t *f0 = json_array_get(flows, 0); /* most bytes: the RoCEv2 flow on QP 0xABCDEF */
  ck_assert_str_eq(json_string_value(json_object_get(f0, "kind")), "roce");
  ck_assert_int_eq(json_integer_value(json_object_get(f0, "qp")), 0xABCDEF);
  ck_assert_int_eq(json_integer_value(json_object_get(f0, "ip_bytes")), 20 * (20 + 20 + 4100));
  json_t *series = json_object_get(json_object_get(f0, "series"), "ip_bytes");
  json_int_t sum = 0;
  for (size_t i = 0; i < json_array_size(series); i++)
    sum += json_integer_value(json_array_get(series, i));
  ck_assert_int_eq(sum, 20 * (20 + 20 + 4100));
  json_t *paths = json_object_get(j, "paths");
  ck_assert_uint_eq(json_array_size(json_object_get(paths, "paths")), 4);
  ck_assert(json_real_value(json_object_get(paths, "imbalance")) > 1.0);
  json_decref(j);

  snprintf(args, sizeof args, "-r '%s'", file); /* the table says the same totals */
  ck_assert_int_eq(c4cap(args), 0);
  char cmd[512];
  snprintf(cmd, sizeof cmd, "grep -q '86 packets, %llu wire bytes, %llu IP bytes' '%s/out'",
           (unsigned long long)wire, (unsigned long long)ip, dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

START_TEST(a_missing_or_corrupt_file_is_a_clear_error_naming_it) {
  char args[512], cmd[512];
  ck_assert_int_eq(c4cap("-r /nonexistent/x.pcap"), 1);
  snprintf(cmd, sizeof cmd,
           "grep -qx 'c4cap: /nonexistent/x.pcap: No such file or directory' '%s/err'", dir);
  ck_assert_int_eq(system(cmd), 0);
  snprintf(cmd, sizeof cmd, "printf 'not a pcap at all, just text' > '%s/bad.pcap'", dir);
  ck_assert_int_eq(system(cmd), 0);
  snprintf(args, sizeof args, "-r '%s/bad.pcap'", dir);
  ck_assert_int_eq(c4cap(args), 1);
  snprintf(cmd, sizeof cmd, "grep -q 'bad.pcap' '%s/err'", dir);
  ck_assert_int_eq(system(cmd), 0);
  /* a valid header and a record claiming more bytes than follow: cut mid-packet */
  char file[128];
  snprintf(file, sizeof file, "%s/cut.pcap", dir);
  pcap_t *dead = pcap_open_dead(DLT_EN10MB, 65535);
  pcap_dumper_t *d = pcap_dump_open(dead, file);
  uint8_t b[256];
  uint32_t len;
  size_t n = frame(&tcp4, b, &len);
  struct pcap_pkthdr h = {.caplen = (uint32_t)n, .len = (uint32_t)n};
  pcap_dump((u_char *)d, &h, b);
  pcap_dump((u_char *)d, &h, b);
  pcap_dump_close(d);
  pcap_close(dead);
  ck_assert_int_eq(truncate(file, 24 + 16 + (off_t)n + 16 + 10), 0);
  snprintf(args, sizeof args, "-r '%s' --json", file);
  ck_assert_int_eq(c4cap(args), 1);
  snprintf(cmd, sizeof cmd, "grep -q 'cut.pcap: corrupt after 1 packets' '%s/err'", dir);
  ck_assert_int_eq(system(cmd), 0);
  ck_assert_int_eq(c4cap("-r x -i lo"), 2); /* one source only */
  ck_assert_int_eq(c4cap("--help"), 0);
}
END_TEST

START_TEST(a_missing_interface_is_a_clear_error) {
  ck_assert_int_eq(c4cap("-i c4nosuchif0 --seconds 1"), 1);
  char cmd[256];
  /* root is told the interface does not exist; anyone else that capturing needs CAP_NET_RAW */
  snprintf(cmd, sizeof cmd,
           "grep -Eq 'no interface c4nosuchif0|c4nosuchif0 needs CAP_NET_RAW' '%s/err'", dir);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

int main(void) {
  Suite *s = suite_create("c4cap");
  TCase *tc = tcase_create("parser");
  tcase_add_test(tc, ethernet_ipv4_tcp_gives_the_5_tuple_and_the_ip_length);
  tcase_add_test(tc, ipv6_udp_and_vlan_tags_and_cooked_headers_give_the_same_key);
  tcase_add_test(tc, rocev2_is_keyed_by_the_bth_destination_qp);
  tcase_add_test(tc, a_frame_cut_at_any_length_short_of_its_key_is_malformed_never_read_past);
  tcase_add_test(tc, ipv4_options_are_skipped_and_a_bad_header_length_is_malformed);
  tcase_add_test(tc, fragments_count_their_bytes_without_ports);
  tcase_add_test(tc, arp_and_unknown_link_types_are_not_ip);
  suite_add_tcase(s, tc);
  tc = tcase_create("aggregation");
  tcase_add_test(tc, aggregation_sums_flows_interfaces_and_intervals);
  tcase_add_test(tc, many_flows_grow_the_table_and_cooked_captures_split_by_ifindex);
  tcase_add_test(tc, paths_by_interface_and_by_a_port_map_give_max_over_mean);
  suite_add_tcase(s, tc);
  tc = tcase_create("program");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, c4cap_reads_a_pcap_file_and_its_json_totals_are_exact);
  tcase_add_test(tc, a_missing_or_corrupt_file_is_a_clear_error_naming_it);
  tcase_add_test(tc, a_missing_interface_is_a_clear_error);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
