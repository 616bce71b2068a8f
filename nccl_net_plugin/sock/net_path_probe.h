/* net_path_probe.h -- path discovery without a plan: which source ports put a data socket on
 * which path to the listener, learned at connect time from TTL-limited probes that need no
 * privilege (the kernel hands ICMP time-exceeded replies to the probing socket's error queue,
 * IP_RECVERR), so a comm's data sockets can be spread over distinct paths. */
#ifndef C4_NET_PATH_PROBE_H
#define C4_NET_PATH_PROBE_H

#include <netinet/in.h>
#include <stdatomic.h>
#include <stdint.h>
#include <sys/socket.h>

#define C4_PROBE_PORTS 16   /* source ports tried per connection */
#define C4_PROBE_HOPS 4     /* router hops (TTLs) probed at most: a leaf-spine has 3 */
#define C4_PROBE_UDP_TTLS 8 /* TTLs the hop count is looked for within */

/* One connection's discovery, driven by c4_path_probe_step from connect's polls. */
struct c4_path_probe {
  struct sockaddr_in target;
  uint64_t t_start, deadline;
  int phase;                                   /* 0: counting hops (UDP), 1: ports (TCP), 2: done */
  int udp_fd[C4_PROBE_UDP_TTLS];               /* TTL i + 1 */
  uint32_t udp_from[C4_PROBE_UDP_TTLS];        /* who answered (network order), 0: nobody yet */
  int udp_reached[C4_PROBE_UDP_TTLS];          /* the answer came from the target itself */
  int hops;                                    /* routers before the target (TTLs 1..hops probed) */
  int fd[C4_PROBE_PORTS];                      /* the port's probe now in flight, -1: none */
  int ttl_at[C4_PROBE_PORTS];                  /* its TTL - 1: a port's TTLs go one after another */
  uint16_t port[C4_PROBE_PORTS];               /* host order, 0: not usable */
  uint32_t sig[C4_PROBE_PORTS][C4_PROBE_HOPS]; /* router that answered at TTL j + 1 */
  int outcome;                                 /* once done: one of enum c4_probe_outcome */
};

enum c4_probe_outcome {
  C4_PROBE_SPREAD = 1, /* two or more distinct paths found */
  C4_PROBE_ONE_PATH,   /* every port answered along one path (or no router between) */
  C4_PROBE_SILENT,     /* too few answers within the time allowed */
  C4_PROBE_FAILED,     /* a socket call failed */
};

/* Counters, for logs and tests. */
struct c4_probe_stats {
  atomic_ulong started;  /* connections probed */
  atomic_ulong spread;   /* ... whose data sockets got distinct paths */
  atomic_ulong one_path; /* ... that found a single path */
  atomic_ulong silent;   /* ... that timed out without enough answers (ICMP filtered?) */
  atomic_ulong failed;   /* ... where a socket call failed */
  atomic_ulong stray;    /* probes that reached the listener (closed at once) */
};
extern struct c4_probe_stats c4_probe_stats;

/* Starts probing the path to target (IPv4, not loopback) within budget_ms. Returns 0, or
 * C4_EINVAL when target cannot be probed (then nothing is open). */
int c4_path_probe_start(struct c4_path_probe *pp, const struct sockaddr_storage *target,
                        int budget_ms, uint64_t now);

/* Reads whatever answers arrived, never waiting. Returns 1 once done (pp->outcome set, every
 * probe socket closed), else 0. */
int c4_path_probe_step(struct c4_path_probe *pp, uint64_t now);

/* Closes whatever is open (a connect given up before the probe finished). */
void c4_path_probe_abort(struct c4_path_probe *pp);

/* Pure: the source ports for n data sockets, spread round robin over the distinct paths that
 * sigs names (ports[i]'s routers at each of hops TTLs; a port with any hop unanswered or port 0
 * is not used), each path's ports in turn. Returns how many of out[0..n) it filled (the rest are
 * left to the kernel) and sets *npaths to the distinct paths seen. */
int c4_path_probe_pick(const uint16_t *ports, const uint32_t (*sigs)[C4_PROBE_HOPS], int nports,
                       int hops, uint16_t *out, int n, int *npaths);

#endif
