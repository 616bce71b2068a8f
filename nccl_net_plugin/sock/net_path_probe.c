/* net_path_probe.c -- which source ports cross which routers to a listener, found from the
 * connecting process without privilege: a socket with IP_RECVERR gets the ICMP errors its own
 * packets caused on its error queue, with the address of the router that sent them. */
#include "net_path_probe.h"

#include <arpa/inet.h>
#include <errno.h>
#include <linux/errqueue.h>
#include <netinet/ip_icmp.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "c4_err.h"

struct c4_probe_stats c4_probe_stats;

/* One ICMP error from fd's error queue: its type and the router (or host) that sent it. Returns
 * 1 when one was read, 0 when none is queued. */
static int read_icmp(int fd, int *type, int *code, uint32_t *from) {
  char ctl[512];
  char data[64];
  struct iovec iov = {.iov_base = data, .iov_len = sizeof data};
  struct sockaddr_in name;
  struct msghdr m = {.msg_name = &name,
                     .msg_namelen = sizeof name,
                     .msg_iov = &iov,
                     .msg_iovlen = 1,
                     .msg_control = ctl,
                     .msg_controllen = sizeof ctl};
  while (recvmsg(fd, &m, MSG_ERRQUEUE | MSG_DONTWAIT) >= 0) {
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c)) {
      if (c->cmsg_level != SOL_IP || c->cmsg_type != IP_RECVERR) continue;
      struct sock_extended_err *ee = (struct sock_extended_err *)CMSG_DATA(c);
      if (ee->ee_origin != SO_EE_ORIGIN_ICMP) continue;
      const struct sockaddr_in *off = (const struct sockaddr_in *)SO_EE_OFFENDER(ee);
      *type = ee->ee_type;
      *code = ee->ee_code;
      *from = off->sin_family == AF_INET ? off->sin_addr.s_addr : 0;
      return 1;
    }
    m.msg_controllen = sizeof ctl;
    m.msg_namelen = sizeof name;
  }
  return 0;
}

/* A non-blocking socket of the given type with IP_RECVERR and TTL ttl, bound to source port
 * sport (0: the kernel's choice) and connecting to the target. Returns the fd or -1. */
static int probe_socket(const struct c4_path_probe *pp, int type, int ttl, uint16_t sport) {
  int fd = socket(AF_INET, type | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
  if (fd < 0) return C4_NONE;
  int one = 1;
  struct sockaddr_in local = {.sin_family = AF_INET, .sin_port = htons(sport)};
  if (setsockopt(fd, SOL_IP, IP_RECVERR, &one, sizeof one) != 0 ||
      setsockopt(fd, IPPROTO_IP, IP_TTL, &ttl, sizeof ttl) != 0 ||
      setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) != 0 ||
      bind(fd, (struct sockaddr *)&local, sizeof local) != 0 ||
      (connect(fd, (const struct sockaddr *)&pp->target, sizeof pp->target) != 0 &&
       errno != EINPROGRESS)) {
    close(fd);
    return C4_NONE;
  }
  if (type == SOCK_DGRAM && send(fd, "c4", 2, MSG_DONTWAIT) != 2) {
    close(fd);
    return C4_NONE;
  }
  return fd;
}

static void close_fd(int *fd) {
  if (*fd >= 0) close(*fd);
  *fd = -1;
}

void c4_path_probe_abort(struct c4_path_probe *pp) {
  for (int i = 0; i < C4_PROBE_UDP_TTLS; i++)
    close_fd(&pp->udp_fd[i]);
  for (int i = 0; i < C4_PROBE_PORTS; i++)
    close_fd(&pp->fd[i]);
}

static int finish(struct c4_path_probe *pp, int outcome) {
  c4_path_probe_abort(pp);
  pp->phase = 2;
  pp->outcome = outcome;
  atomic_ulong *counter = outcome == C4_PROBE_SPREAD     ? &c4_probe_stats.spread
                          : outcome == C4_PROBE_ONE_PATH ? &c4_probe_stats.one_path
                          : outcome == C4_PROBE_SILENT   ? &c4_probe_stats.silent
                                                         : &c4_probe_stats.failed;
  atomic_fetch_add(counter, 1);
  return 1;
}

int c4_path_probe_start(struct c4_path_probe *pp, const struct sockaddr_storage *target,
                        int budget_ms, uint64_t now) {
  memset(pp, 0, sizeof *pp);
  for (int i = 0; i < C4_PROBE_UDP_TTLS; i++)
    pp->udp_fd[i] = -1;
  for (int i = 0; i < C4_PROBE_PORTS; i++)
    pp->fd[i] = -1;
  if (target->ss_family != AF_INET || budget_ms <= 0) return C4_EINVAL;
  memcpy(&pp->target, target, sizeof pp->target);
  if ((ntohl(pp->target.sin_addr.s_addr) >> 24) == 127) return C4_EINVAL; /* loopback */
  atomic_fetch_add(&c4_probe_stats.started, 1);
  pp->t_start = now;
  pp->deadline = now + (uint64_t)budget_ms * 1000000ull;
  /* The hop count first, by UDP (a UDP probe that reaches the host is answered with port
   * unreachable and opens nothing): TCP probes then stop short of the listener. */
  for (int i = 0; i < C4_PROBE_UDP_TTLS; i++)
    if ((pp->udp_fd[i] = probe_socket(pp, SOCK_DGRAM, i + 1, 0)) < 0)
      return finish(pp, C4_PROBE_FAILED), 0;
  return 0;
}

/* Phase 0: the answers to the UDP probes. Once the target answered at some TTL and every TTL
 * below it was answered by a router, those routers are the hops to probe. */
static void step_hops(struct c4_path_probe *pp, uint64_t now) {
  for (int i = 0; i < C4_PROBE_UDP_TTLS; i++) {
    int type, code;
    uint32_t from;
    if (pp->udp_fd[i] < 0 || pp->udp_from[i] || !read_icmp(pp->udp_fd[i], &type, &code, &from))
      continue;
    pp->udp_from[i] = from ? from : 1;
    pp->udp_reached[i] = type == ICMP_DEST_UNREACH && from == pp->target.sin_addr.s_addr;
  }
  int hops = -1;
  for (int i = 0; i < C4_PROBE_UDP_TTLS && hops < 0; i++) {
    if (!pp->udp_from[i]) break; /* not yet answered */
    if (pp->udp_reached[i]) hops = i;
  }
  if (hops < 0) {
    /* Half of the time for the hop count; then the TTLs routers answered in a row from the first
     * (a target that does not answer UDP still has them). */
    if (now < pp->t_start + (pp->deadline - pp->t_start) / 2) return;
    for (hops = 0; hops < C4_PROBE_UDP_TTLS && pp->udp_from[hops] && !pp->udp_reached[hops];)
      hops++;
    if (hops == C4_PROBE_UDP_TTLS) { /* no sign of where the target is: do not risk it */
      finish(pp, C4_PROBE_SILENT);
      return;
    }
  }
  for (int i = 0; i < C4_PROBE_UDP_TTLS; i++)
    close_fd(&pp->udp_fd[i]);
  if (hops == 0) { /* the target answered the first TTL, or nothing answered at all */
    finish(pp, pp->udp_from[0] ? C4_PROBE_ONE_PATH : C4_PROBE_SILENT);
    return;
  }
  pp->hops = hops > C4_PROBE_HOPS ? C4_PROBE_HOPS : hops;
  pp->phase = 1;
  int open = 0;
  for (int p = 0; p < C4_PROBE_PORTS; p++) {
    pp->fd[p] = probe_socket(pp, SOCK_STREAM, 1, 0);
    struct sockaddr_in me;
    socklen_t len = sizeof me;
    if (pp->fd[p] >= 0 && getsockname(pp->fd[p], (struct sockaddr *)&me, &len) == 0) {
      pp->port[p] = ntohs(me.sin_port);
      open++;
    } else {
      close_fd(&pp->fd[p]);
    }
  }
  if (!open) finish(pp, C4_PROBE_FAILED);
}

/* Phase 1: each port's TCP SYN at TTL ttl_at + 1 answered by a router; the next TTL follows. A
 * SYN that reached the listener after all (a path longer for UDP) is reset at once. */
static int step_ports(struct c4_path_probe *pp) {
  int busy = 0;
  for (int p = 0; p < C4_PROBE_PORTS; p++) {
    if (pp->fd[p] < 0) continue;
    int type, code, err = 0;
    uint32_t from;
    socklen_t len = sizeof err;
    if (!read_icmp(pp->fd[p], &type, &code, &from)) {
      struct sockaddr_in peer;
      socklen_t plen = sizeof peer;
      if (getsockopt(pp->fd[p], SOL_SOCKET, SO_ERROR, &err, &len) == 0 && err == 0 &&
          getpeername(pp->fd[p], (struct sockaddr *)&peer, &plen) == 0) {
        struct linger reset = {.l_onoff = 1, .l_linger = 0};
        setsockopt(pp->fd[p], SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
        atomic_fetch_add(&c4_probe_stats.stray, 1);
        close_fd(&pp->fd[p]);
        pp->port[p] = 0;
        continue;
      }
      busy = 1;
      continue;
    }
    close_fd(&pp->fd[p]);
    if (type != ICMP_TIME_EXCEEDED || !from) {
      pp->port[p] = 0;
      continue;
    }
    pp->sig[p][pp->ttl_at[p]] = from;
    if (++pp->ttl_at[p] < pp->hops) {
      pp->fd[p] = probe_socket(pp, SOCK_STREAM, pp->ttl_at[p] + 1, pp->port[p]);
      if (pp->fd[p] < 0) pp->port[p] = 0;
      busy |= pp->fd[p] >= 0;
    }
  }
  return busy;
}

int c4_path_probe_step(struct c4_path_probe *pp, uint64_t now) {
  if (pp->phase == 2) return 1;
  if (pp->phase == 0) step_hops(pp, now);
  if (pp->phase != 1) return pp->phase == 2;
  if (step_ports(pp) && now < pp->deadline) return 0;
  uint16_t unused[C4_PROBE_PORTS];
  int npaths = 0;
  int usable = c4_path_probe_pick(pp->port, (const uint32_t(*)[C4_PROBE_HOPS])pp->sig,
                                  C4_PROBE_PORTS, pp->hops, unused, C4_PROBE_PORTS, &npaths);
  return finish(pp, npaths >= 2  ? C4_PROBE_SPREAD
                    : usable > 0 ? C4_PROBE_ONE_PATH
                                 : C4_PROBE_SILENT);
}

/* 1 when port p's probes were all answered. */
static int complete(const uint16_t *ports, const uint32_t (*sigs)[C4_PROBE_HOPS], int p, int hops) {
  if (!ports[p]) return 0;
  for (int j = 0; j < hops; j++)
    if (!sigs[p][j]) return 0;
  return 1;
}

int c4_path_probe_pick(const uint16_t *ports, const uint32_t (*sigs)[C4_PROBE_HOPS], int nports,
                       int hops, uint16_t *out, int n, int *npaths) {
  int path_of[C4_PROBE_PORTS], first[C4_PROBE_PORTS], used[C4_PROBE_PORTS] = {0};
  int paths = 0;
  if (nports > C4_PROBE_PORTS) nports = C4_PROBE_PORTS;
  if (hops > C4_PROBE_HOPS) hops = C4_PROBE_HOPS;
  for (int p = 0; p < nports; p++) {
    path_of[p] = -1;
    if (!complete(ports, sigs, p, hops)) continue;
    for (int k = 0; k < paths && path_of[p] < 0; k++)
      if (memcmp(sigs[first[k]], sigs[p], sizeof sigs[p][0] * (size_t)hops) == 0) path_of[p] = k;
    if (path_of[p] < 0) {
      first[paths] = p;
      path_of[p] = paths++;
    }
  }
  *npaths = paths;
  int filled = 0;
  for (int i = 0, miss = 0; filled < n && paths > 0 && miss < paths; i++) {
    int k = i % paths, p;
    for (p = 0; p < nports && (path_of[p] != k || used[p]); p++)
      ;
    if (p == nports) {
      miss++; /* path k has no port left: the others go on */
      continue;
    }
    miss = 0;
    used[p] = 1;
    out[filled++] = ports[p];
  }
  return filled;
}
