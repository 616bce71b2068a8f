/* packet.h -- c4cap's packet parser: one captured frame in, its flow key out. Pure (no libpcap, no
 * allocation) so that it can be fuzzed on its own. */
#ifndef C4CAP_PACKET_H
#define C4CAP_PACKET_H

#include <stddef.h>
#include <stdint.h>

/* Link types, numbered as libpcap's DLT_ values (pcap_datalink()) so callers pass them through. */
enum {
  C4CAP_LINK_EN10MB = 1,       /* Ethernet, with up to 4 802.1Q / 802.1ad tags */
  C4CAP_LINK_RAW = 12,         /* bare IPv4 or IPv6 (tun devices) */
  C4CAP_LINK_LINUX_SLL = 113,  /* Linux cooked v1: tcpdump -i any before libpcap 1.10 */
  C4CAP_LINK_LINUX_SLL2 = 276, /* Linux cooked v2: tcpdump -i any, carries the ifindex */
};

#define C4CAP_ROCE_PORT 4791 /* RoCEv2's UDP destination port */
#define C4CAP_NO_QP 0xFFFFFFFFu

/* What identifies a flow. Addresses are 16 bytes; IPv4 uses the first 4 (the rest zero), so that
 * keys compare with memcmp. Ports are 0 when the protocol has none or the packet is a fragment. */
struct c4cap_key {
  uint8_t src[16], dst[16];
  uint16_t sport, dport;
  uint32_t qp;    /* RoCEv2: the BTH destination QP (24 bits); else C4CAP_NO_QP */
  uint8_t family; /* 4 or 6 */
  uint8_t proto;  /* IP protocol number: 6 TCP, 17 UDP, ... */
  uint8_t pad[2]; /* zero: keys are hashed and compared as bytes */
};

struct c4cap_pkt {
  struct c4cap_key key;
  uint32_t ip_len;  /* the IP header's own length: IPv4 total length, IPv6 40 + payload length */
  uint32_t ip_off;  /* where the IP header starts in the frame (after the link header) */
  uint32_t ifindex; /* SLL2's interface index, set once the link header is read; else 0 */
  uint8_t fragment; /* an IP fragment: counted, but without ports */
};

/* Parses one frame of the given link type, data[0..caplen) (caplen may be short of the wire length
 * when the capture was cut by a snap length). Fills *out and returns 0 for an IPv4 or IPv6 packet
 * whose headers up to the key (the TCP or UDP header, the BTH for RoCEv2) are all captured.
 * Returns -EPROTONOSUPPORT for a frame that is not IP (ARP, LLDP) or an unknown link type, and
 * -EBADMSG for one cut short or malformed; *out is then unspecified but
 * for ifindex. Never reads past caplen. */
int c4cap_parse(const uint8_t *data, size_t caplen, int linktype, struct c4cap_pkt *out);

#endif
