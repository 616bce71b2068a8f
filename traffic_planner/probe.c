/* probe.c -- TTL-limited probes that hold the 5-tuple fixed, and the ICMP time-exceeded replies
 * that say which hop each source port's flow reached. */
#include "probe.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <netinet/tcp.h>
#include <netinet/udp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "c4_err.h"

/* The Internet checksum over a pseudo header (source, destination, protocol, length) and the
 * transport segment, as TCP needs it (a UDP checksum of 0 means "none" in IPv4). */
static uint16_t l4_checksum(uint32_t src, uint32_t dst, uint8_t proto, const void *seg,
                            size_t len) {
  uint32_t sum = 0;
  const uint8_t *p = seg;
  sum += (ntohl(src) >> 16) + (ntohl(src) & 0xffff);
  sum += (ntohl(dst) >> 16) + (ntohl(dst) & 0xffff);
  sum += proto + (uint32_t)len;
  for (size_t i = 0; i + 1 < len; i += 2)
    sum += (uint32_t)(p[i] << 8 | p[i + 1]);
  if (len & 1) sum += (uint32_t)(p[len - 1] << 8);
  while (sum >> 16)
    sum = (sum & 0xffff) + (sum >> 16);
  return htons((uint16_t)~sum);
}

/* One probe's transport segment into buf; returns its length. The kernel adds the IP header. */
static size_t build_segment(const struct c4_plan_probe_req *r, uint16_t sport, uint8_t *buf) {
  if (r->proto == C4_PLAN_TCP) {
    struct tcphdr *t = (struct tcphdr *)buf;
    memset(t, 0, sizeof *t);
    t->source = htons(sport);
    t->dest = htons(r->dst_port);
    t->seq = htonl(0xc4000000u | sport); /* lets a capture tell probes apart */
    t->doff = sizeof *t / 4;
    t->syn = 1;
    t->window = htons(65535);
    t->check = l4_checksum(r->src_addr, r->dst_addr, IPPROTO_TCP, t, sizeof *t);
    return sizeof *t;
  }
  /* UDP: a zeroed 12-byte base transport header after the UDP header, as RoCEv2 sends; switches
   * hash only the headers in front of it. */
  struct udphdr *u = (struct udphdr *)buf;
  size_t len = sizeof *u + 12;
  memset(buf, 0, len);
  u->source = htons(sport);
  u->dest = htons(r->dst_port);
  u->len = htons((uint16_t)len);
  return len;
}

/* If pkt (an IPv4 packet read from the ICMP socket) is a time-exceeded reply to one of r's
 * probes, returns the probed source port and sets *from to the answering address; else 0. */
static uint16_t match_reply(const struct c4_plan_probe_req *r, const uint8_t *pkt, size_t n,
                            uint32_t *from) {
  const struct iphdr *ip = (const struct iphdr *)pkt;
  if (n < sizeof *ip || ip->ihl * 4u + 8 > n) return 0;
  const struct icmphdr *ic = (const struct icmphdr *)(pkt + ip->ihl * 4);
  if (ic->type != ICMP_TIME_EXCEEDED) return 0;
  const uint8_t *q = (const uint8_t *)ic + 8; /* the quoted probe: its IP header, 8 bytes more */
  size_t qn = n - ip->ihl * 4u - 8;
  const struct iphdr *qip = (const struct iphdr *)q;
  if (qn < sizeof *qip || qip->ihl * 4u + 4 > qn) return 0;
  uint8_t want = r->proto == C4_PLAN_TCP ? IPPROTO_TCP : IPPROTO_UDP;
  if (qip->protocol != want || qip->saddr != r->src_addr || qip->daddr != r->dst_addr) return 0;
  const uint8_t *l4 = q + qip->ihl * 4;
  uint16_t sport = (uint16_t)(l4[0] << 8 | l4[1]), dport = (uint16_t)(l4[2] << 8 | l4[3]);
  if (dport != r->dst_port || sport < r->sport_lo || sport > r->sport_hi) return 0;
  *from = ip->saddr;
  return sport;
}

static long now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* Reads replies until deadline (ms, CLOCK_MONOTONIC) or until every port is answered; with
 * deadline 0, only what is already queued. Returns the ports newly answered. */
static int drain(int icmp, const struct c4_plan_probe_req *r, uint32_t *hops, int *left,
                 long deadline) {
  int got = 0;
  uint8_t pkt[1500];
  while (*left > 0) {
    long wait = deadline ? deadline - now_ms() : 0;
    struct pollfd pfd = {.fd = icmp, .events = POLLIN};
    if (poll(&pfd, 1, wait > 0 ? (int)wait : 0) <= 0) break;
    ssize_t n = recv(icmp, pkt, sizeof pkt, 0);
    if (n <= 0) continue;
    uint32_t from = 0;
    uint16_t sport = match_reply(r, pkt, (size_t)n, &from);
    if (sport && !hops[sport - r->sport_lo]) {
      hops[sport - r->sport_lo] = from;
      (*left)--;
      got++;
    }
  }
  return got;
}

int c4_plan_probe_run(const struct c4_plan_probe_req *r, uint32_t *hops, char *err, size_t errlen) {
  if (r->sport_lo == 0 || r->sport_hi < r->sport_lo || r->ttl < 1 || r->ttl > 255 || r->tries < 1 ||
      r->timeout_ms < 1) {
    snprintf(err, errlen, "bad probe request (ports %u-%u, ttl %d, tries %d, timeout %d ms)",
             r->sport_lo, r->sport_hi, r->ttl, r->tries, r->timeout_ms);
    return C4_EINVAL;
  }
  int nports = r->sport_hi - r->sport_lo + 1, left = nports, answered = 0, rc = C4_ESYS;
  memset(hops, 0, sizeof *hops * (size_t)nports);

  /* The ICMP socket opens first, so no reply to the first probes is missed. */
  int icmp = socket(AF_INET, SOCK_RAW, IPPROTO_ICMP);
  if (icmp < 0) {
    snprintf(err, errlen, "raw ICMP socket: %s (probing needs CAP_NET_RAW: run as root)",
             strerror(errno));
    return C4_ESYS;
  }
  int sock = socket(AF_INET, SOCK_RAW, r->proto == C4_PLAN_TCP ? IPPROTO_TCP : IPPROTO_UDP);
  if (sock < 0) {
    snprintf(err, errlen, "raw %s socket: %s (probing needs CAP_NET_RAW: run as root)",
             r->proto == C4_PLAN_TCP ? "TCP" : "UDP", strerror(errno));
    goto out_icmp;
  }
  /* Binding the raw socket fixes the source address (and so the NIC port) of every probe. */
  struct sockaddr_in src = {.sin_family = AF_INET, .sin_addr.s_addr = r->src_addr};
  char a[INET_ADDRSTRLEN];
  if (bind(sock, (struct sockaddr *)&src, sizeof src) < 0) {
    snprintf(err, errlen, "bind probe socket to %s: %s",
             inet_ntop(AF_INET, &r->src_addr, a, sizeof a), strerror(errno));
    goto out_sock;
  }
  if (setsockopt(sock, IPPROTO_IP, IP_TTL, &r->ttl, sizeof r->ttl) < 0) {
    snprintf(err, errlen, "setsockopt IP_TTL %d: %s", r->ttl, strerror(errno));
    goto out_sock;
  }
  struct sockaddr_in dst = {.sin_family = AF_INET, .sin_addr.s_addr = r->dst_addr};
  uint8_t seg[64];
  for (int t = 0; t < r->tries && left > 0; t++) {
    for (int i = 0; i < nports; i++) {
      if (hops[i]) continue;
      size_t len = build_segment(r, (uint16_t)(r->sport_lo + i), seg);
      if (sendto(sock, seg, len, 0, (struct sockaddr *)&dst, sizeof dst) < 0) {
        snprintf(err, errlen, "send probe to %s: %s", inet_ntop(AF_INET, &r->dst_addr, a, sizeof a),
                 strerror(errno));
        goto out_sock;
      }
      answered += drain(icmp, r, hops, &left, 0); /* keep the socket's queue short */
    }
    answered += drain(icmp, r, hops, &left, now_ms() + r->timeout_ms);
  }
  rc = answered;
out_sock:
  close(sock);
out_icmp:
  close(icmp);
  return rc;
}
