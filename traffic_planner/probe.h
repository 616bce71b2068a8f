/* probe.h -- finds the hop each source port's 5-tuple reaches at a given TTL (Paris traceroute:
 * every probe of a port carries the same addresses, ports and protocol, so ECMP hashes it the
 * same way), and `c4plan probe`, which names that hop's spine from the fabric's topology. */
#ifndef C4_PLAN_PROBE_H
#define C4_PLAN_PROBE_H

#include <stddef.h>
#include <stdint.h>

enum c4_plan_proto { C4_PLAN_TCP, C4_PLAN_UDP };

#define C4_PLAN_ROCE_PORT 4791 /* RoCEv2's UDP destination port */

struct c4_plan_probe_req {
  uint32_t src_addr, dst_addr; /* IPv4, network byte order; src_addr must be local */
  enum c4_plan_proto proto;    /* TCP: a SYN (the socket transport); UDP: a RoCEv2-like packet */
  uint16_t dst_port;
  uint16_t sport_lo, sport_hi; /* the source ports to probe, inclusive */
  int ttl;                     /* 2 on a leaf-spine fabric: host->leaf is hop 1, leaf->spine 2 */
  int timeout_ms;              /* how long to wait for the replies of one round */
  int tries;                   /* rounds; each resends the ports still unanswered */
};

/* Sends the probes and reads the ICMP time-exceeded replies. hops[i] receives the address
 * (network byte order) that answered for source port sport_lo + i, or 0 if none did; the caller
 * owns hops (sport_hi - sport_lo + 1 entries). Returns the number of ports answered, or a negative
 * C4_E* code with a message in err: C4_ESYS when raw sockets are refused (they need CAP_NET_RAW)
 * or a send fails, C4_EINVAL for a bad request. */
int c4_plan_probe_run(const struct c4_plan_probe_req *r, uint32_t *hops, char *err, size_t errlen);

/* `c4plan probe ...`: parses its arguments, probes, prints a table or JSON. Returns the exit
 * status: 0 every port mapped, 1 some did not answer or an error, 2 bad usage or no CAP_NET_RAW. */
int c4plan_probe_main(int argc, char **argv);

#endif
