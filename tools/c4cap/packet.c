/* packet.c -- c4cap's packet parser: link layer, IPv4/IPv6, TCP/UDP ports, RoCEv2's BTH. Every
 * read goes through need() first: the bytes come from the wire or from a file, never trusted. */
#include "packet.h"

#include <errno.h>
#include <string.h>

#define ETH_IPV4 0x0800
#define ETH_IPV6 0x86DD
#define ETH_VLAN 0x8100
#define ETH_QINQ 0x88A8
#define MAX_VLAN_TAGS 4
#define MAX_V6_EXT 8 /* extension headers followed before giving up */
#define BTH_LEN 12

static int need(size_t caplen, size_t off, size_t n) { return off <= caplen && n <= caplen - off; }

static uint16_t be16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }

static uint32_t be32(const uint8_t *p) {
  return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The link header: sets *ethertype and *off to where the network header starts. */
static int link_header(const uint8_t *d, size_t caplen, int linktype, uint16_t *ethertype,
                       size_t *off, uint32_t *ifindex) {
  switch (linktype) {
  case C4CAP_LINK_EN10MB:
    if (!need(caplen, 0, 14)) return -EBADMSG;
    *ethertype = be16(d + 12);
    *off = 14;
    for (int tags = 0; *ethertype == ETH_VLAN || *ethertype == ETH_QINQ; tags++) {
      if (tags == MAX_VLAN_TAGS || !need(caplen, *off, 4)) return -EBADMSG;
      *ethertype = be16(d + *off + 2);
      *off += 4;
    }
    return 0;
  case C4CAP_LINK_LINUX_SLL: /* packet type, ARPHRD, address length, address[8], protocol */
    if (!need(caplen, 0, 16)) return -EBADMSG;
    *ethertype = be16(d + 14);
    *off = 16;
    return 0;
  case C4CAP_LINK_LINUX_SLL2: /* protocol, reserved, ifindex, ARPHRD, type, addr len, addr[8] */
    if (!need(caplen, 0, 20)) return -EBADMSG;
    *ethertype = be16(d);
    *ifindex = be32(d + 4);
    *off = 20;
    return 0;
  case C4CAP_LINK_RAW:
    if (!need(caplen, 0, 1)) return -EBADMSG;
    *ethertype = (d[0] >> 4) == 6 ? ETH_IPV6 : ETH_IPV4;
    *off = 0;
    return 0;
  default: return -EPROTONOSUPPORT;
  }
}

/* IPv4: addresses, protocol, total length; *off moves to the transport header. */
static int ipv4(const uint8_t *d, size_t caplen, size_t *off, struct c4cap_pkt *out) {
  if (!need(caplen, *off, 20)) return -EBADMSG;
  const uint8_t *ip = d + *off;
  size_t ihl = (size_t)(ip[0] & 0x0F) * 4;
  if ((ip[0] >> 4) != 4 || ihl < 20 || !need(caplen, *off, ihl)) return -EBADMSG;
  out->ip_len = be16(ip + 2);
  if (out->ip_len < ihl) return -EBADMSG;
  out->key.family = 4;
  out->key.proto = ip[9];
  memcpy(out->key.src, ip + 12, 4);
  memcpy(out->key.dst, ip + 16, 4);
  out->fragment = (be16(ip + 6) & 0x3FFF) != 0; /* more-fragments flag or a fragment offset */
  *off += ihl;
  return 0;
}

/* IPv6: the fixed header, then the extension headers that can stand before TCP or UDP. */
static int ipv6(const uint8_t *d, size_t caplen, size_t *off, struct c4cap_pkt *out) {
  if (!need(caplen, *off, 40)) return -EBADMSG;
  const uint8_t *ip = d + *off;
  if ((ip[0] >> 4) != 6) return -EBADMSG;
  out->ip_len = 40u + be16(ip + 4);
  out->key.family = 6;
  memcpy(out->key.src, ip + 8, 16);
  memcpy(out->key.dst, ip + 24, 16);
  uint8_t next = ip[6];
  *off += 40;
  for (int i = 0;; i++) {
    size_t len;
    switch (next) {
    case 0:  /* hop-by-hop options */
    case 43: /* routing */
    case 60: /* destination options */
      if (!need(caplen, *off, 2)) return -EBADMSG;
      len = ((size_t)d[*off + 1] + 1) * 8;
      break;
    case 44: /* fragment: offset or more-fragments set means a piece of a larger packet */
      if (!need(caplen, *off, 8)) return -EBADMSG;
      if (be16(d + *off + 2) & 0xFFF9) out->fragment = 1;
      len = 8;
      break;
    case 51: /* authentication header */
      if (!need(caplen, *off, 2)) return -EBADMSG;
      len = ((size_t)d[*off + 1] + 2) * 4;
      break;
    default: out->key.proto = next; return 0;
    }
    if (i == MAX_V6_EXT || !need(caplen, *off, len)) return -EBADMSG;
    next = d[*off];
    *off += len;
  }
}

int c4cap_parse(const uint8_t *data, size_t caplen, int linktype, struct c4cap_pkt *out) {
  memset(out, 0, sizeof *out);
  out->key.qp = C4CAP_NO_QP;
  uint16_t ethertype = 0;
  size_t off = 0;
  int rc = link_header(data, caplen, linktype, &ethertype, &off, &out->ifindex);
  if (rc) return rc;
  out->ip_off = (uint32_t)off;
  if (ethertype == ETH_IPV4)
    rc = ipv4(data, caplen, &off, out);
  else if (ethertype == ETH_IPV6)
    rc = ipv6(data, caplen, &off, out);
  else
    return -EPROTONOSUPPORT;
  if (rc || out->fragment) return rc;
  if (out->key.proto == 6) { /* TCP: ports, and the header must at least be the minimum */
    if (!need(caplen, off, 20)) return -EBADMSG;
  } else if (out->key.proto == 17) {
    if (!need(caplen, off, 8)) return -EBADMSG;
  } else {
    return 0;
  }
  out->key.sport = be16(data + off);
  out->key.dport = be16(data + off + 2);
  if (out->key.proto == 17 && out->key.dport == C4CAP_ROCE_PORT) {
    /* the InfiniBand BTH: opcode, flags, P_Key, reserved byte, then the 24-bit dest QP */
    if (!need(caplen, off + 8, BTH_LEN)) return -EBADMSG;
    const uint8_t *bth = data + off + 8;
    out->key.qp = (uint32_t)bth[5] << 16 | (uint32_t)bth[6] << 8 | bth[7];
  }
  return 0;
}
