/* net_connect.c -- the connecting side: opens the control and data connections to a handle,
 * says hello on each and waits for the listener's ack, all without blocking (NCCL polls). */
#include <arpa/inet.h>
#include <errno.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_log.h"
#include "c4_random.h"
#include "net_comm.h"
#include "net_handshake.h"
#include "net_path_probe.h"
#include "net_plan.h"
#include "net_sock.h"

struct conn_sock {
  int fd;
  int connected;
  size_t hello_sent;
  uint8_t hello[C4_HELLO_SIZE];
  int bind_local;                /* C4_PLAN or the probe: bind to local before connecting */
  int probed;                    /* local's port is the probe's pick, not the plan's */
  uint64_t path_hash;            /* the plan's path for this socket (0: none named) */
  struct sockaddr_storage local; /* the planned source address and port (0: any) */
};

struct connect_state {
  struct c4_wire_handle target;
  uint64_t conn_id;
  uint64_t t_start;
  int nsocks;
  struct conn_sock sock[C4_MAX_NSOCKS + 1]; /* [0] control, [1..nsocks] data */
  uint8_t ack[C4_ACK_SIZE];
  size_t ack_got;
  struct c4_identity self;
  char where[96];
  int probing; /* data sockets wait for the path probe (no plan for them) */
  struct c4_path_probe probe;
};

static void state_free(void *handle, struct connect_state *s) {
  if (s->probing) c4_path_probe_abort(&s->probe);
  for (int i = 0; i <= s->nsocks; i++)
    if (s->sock[i].fd >= 0) close(s->sock[i].fd);
  free(s);
  c4_handshake_scratch_set(handle, NULL);
}

/* The first IPv4 address of interface ifname into *out. Returns 0 or C4_ENOTFOUND. */
static int iface_ipv4(const char *ifname, struct in_addr *out) {
  struct ifaddrs *all = NULL;
  int rc = C4_ENOTFOUND;
  if (getifaddrs(&all) != 0) return rc;
  for (struct ifaddrs *i = all; i; i = i->ifa_next)
    if (i->ifa_addr && i->ifa_addr->sa_family == AF_INET && strcmp(i->ifa_name, ifname) == 0) {
      *out = ((struct sockaddr_in *)i->ifa_addr)->sin_addr;
      rc = 0;
      break;
    }
  freeifaddrs(all);
  return rc;
}

/* C4_PLAN: the data sockets' planned source ports and interface addresses for this host -> the
 * listener's host, taken in turn; sockets beyond the plan's flows stay unbound. */
static void plan_binds(struct connect_state *s) {
  struct c4_netplan_bind b[C4_MAX_NSOCKS];
  int n = c4_netplan_bindings(s->self.host, s->target.id.host, b, s->nsocks);
  const char *warned = "";
  for (int i = 0; i < n; i++) {
    struct conn_sock *cs = &s->sock[i + 1];
    int family = s->target.addr.ss_family;
    cs->path_hash = b[i].path_hash;
    memset(&cs->local, 0, sizeof cs->local);
    cs->local.ss_family = (sa_family_t)family;
    struct in_addr in;
    if (b[i].ifname[0] && family == AF_INET && iface_ipv4(b[i].ifname, &in) == 0) {
      ((struct sockaddr_in *)&cs->local)->sin_addr = in;
      cs->bind_local = 1;
    } else if (b[i].ifname[0] && strcmp(warned, b[i].ifname) != 0) {
      C4_WARN("connect to %s (%s): the plan's interface %s has no IPv4 address here%s; not binding "
              "to it",
              s->where, s->target.id.host, b[i].ifname,
              family == AF_INET ? " (no such interface?)" : " (the listener is IPv6)");
      warned = b[i].ifname;
    }
    if (b[i].src_port) {
      if (family == AF_INET)
        ((struct sockaddr_in *)&cs->local)->sin_port = htons(b[i].src_port);
      else
        ((struct sockaddr_in6 *)&cs->local)->sin6_port = htons(b[i].src_port);
      cs->bind_local = 1;
    }
  }
}

/* A planned bind that failed: this socket goes on with an ephemeral port. */
static void bind_fallback(struct connect_state *s, struct conn_sock *cs, int e) {
  char local[96];
  C4_WARN("connect to %s: cannot use the %s source %s for a data socket: %s; it uses an "
          "ephemeral port",
          s->where, cs->probed ? "probed" : "planned",
          c4_sock_addr_str(&cs->local, local, sizeof local), strerror(e));
  if (!cs->probed) atomic_fetch_add(&c4_netplan_stats.bind_fallbacks, 1);
  cs->bind_local = 0;
  cs->probed = 0;
}

static int state_new(const struct c4_transport_config *cfg, int dev, void *handle,
                     struct connect_state **out) {
  struct connect_state *s = calloc(1, sizeof *s);
  if (!s) return C4_ENOMEM;
  char err[160];
  if (c4_wire_get_handle(handle, &s->target, err, sizeof err) != 0) {
    C4_WARN("connect on device %d: %s", dev, err);
    free(s);
    return C4_EPROTO;
  }
  c4_sock_addr_str(&s->target.addr, s->where, sizeof s->where);
  s->conn_id = c4_random_u64();
  s->t_start = c4_now_ns();
  s->nsocks = cfg->nsocks;
  c4_wire_self_identity(&s->self, dev);
  for (int i = 0; i <= s->nsocks; i++) {
    struct c4_wire_hello h = {.version = C4_WIRE_VERSION,
                              .kind = i == 0 ? C4_HELLO_CTRL : C4_HELLO_DATA,
                              .nonce = s->target.nonce,
                              .conn_id = s->conn_id,
                              .nsocks = (uint16_t)s->nsocks,
                              .index = (uint16_t)(i == 0 ? 0 : i - 1),
                              .id = s->self};
    c4_wire_put_hello(s->sock[i].hello, &h);
    s->sock[i].fd = -1;
  }
  plan_binds(s);
  int planned = 0;
  for (int i = 1; i <= s->nsocks; i++)
    planned |= s->sock[i].bind_local;
  if (!planned && s->nsocks > 1 &&
      c4_path_probe_start(&s->probe, &s->target.addr, cfg->path_probe_ms, s->t_start) == 0)
    s->probing = 1;
  *out = s;
  return 0;
}

/* What the probe did, for the log: where the data sockets went. */
static void probe_outcome(int outcome, int used, char *out, size_t len) {
  switch (outcome) {
  case C4_PROBE_SPREAD: snprintf(out, len, "spread over %d paths", used); break;
  case C4_PROBE_ONE_PATH: snprintf(out, len, "left to ECMP: one path found"); break;
  case C4_PROBE_SILENT:
    snprintf(out, len, "left to ECMP: no answers in time (ICMP filtered?)");
    break;
  default: snprintf(out, len, "left to ECMP: a socket call failed"); break;
  }
}

/* Advances the path probe; once it is done, binds the data sockets to the source ports it
 * picked (distinct paths in turn). Returns 1 when the data sockets may dial. */
static int probe_step(struct connect_state *s) {
  if (!s->probing) return 1;
  if (!c4_path_probe_step(&s->probe, c4_now_ns())) return 0;
  s->probing = 0;
  uint16_t ports[C4_MAX_NSOCKS];
  int npaths = 0, n = 0;
  if (s->probe.outcome == C4_PROBE_SPREAD)
    n = c4_path_probe_pick(s->probe.port, (const uint32_t(*)[C4_PROBE_HOPS])s->probe.sig,
                           C4_PROBE_PORTS, s->probe.hops, ports, s->nsocks, &npaths);
  for (int i = 0; i < n; i++) {
    struct conn_sock *cs = &s->sock[i + 1];
    struct sockaddr_in *local = (struct sockaddr_in *)&cs->local;
    memset(&cs->local, 0, sizeof cs->local);
    local->sin_family = AF_INET;
    local->sin_port = htons(ports[i]);
    cs->bind_local = cs->probed = 1;
  }
  char what[96];
  probe_outcome(s->probe.outcome, npaths < n ? npaths : n, what, sizeof what);
  C4_INFO("connect to %s (%s): data sockets %s after %.1f ms (%d router hops)", s->where,
          s->target.id.host, what, (double)(c4_now_ns() - s->t_start) / 1e6, s->probe.hops);
  return 1;
}

/* Advances one socket: (re)connect, then write its hello. Returns 1 when its hello is out. */
static int sock_step(const struct c4_transport_config *cfg, struct connect_state *s,
                     struct conn_sock *cs) {
  if (cs->fd < 0) {
    int bind_errno;
    cs->fd = c4_sock_connect_from(&s->target.addr, cs->bind_local ? &cs->local : NULL, &bind_errno);
    if (cs->fd < 0 && cs->bind_local && (errno == EADDRNOTAVAIL || errno == EADDRINUSE)) {
      bind_fallback(s, cs,
                    errno); /* the planned 4-tuple is taken: connect from an ephemeral port */
      cs->fd = c4_sock_connect_from(&s->target.addr, NULL, &bind_errno);
    }
    if (cs->fd < 0) {
      C4_WARN("connect to %s: socket failed: %s", s->where, strerror(errno));
      return C4_ESYS;
    }
    if (bind_errno) bind_fallback(s, cs, bind_errno);
  }
  if (!cs->connected) {
    int e;
    int rc = c4_sock_connect_check(cs->fd, &e);
    if (rc == 0) return 0;
    if (rc < 0 && cs->bind_local && (e == EADDRNOTAVAIL || e == EADDRINUSE)) {
      bind_fallback(s, cs, e); /* the planned 4-tuple is taken: retry from an ephemeral port */
      close(cs->fd);
      cs->fd = -1;
      return 0;
    }
    if (rc < 0) {
      uint64_t waited_ms = (c4_now_ns() - s->t_start) / 1000000ull;
      if ((e == ECONNREFUSED || e == ETIMEDOUT || e == EHOSTUNREACH) &&
          waited_ms < (uint64_t)cfg->connect_timeout_ms) {
        close(cs->fd); /* retry on the next poll, as NCCL does for refused connects */
        cs->fd = -1;
        return 0;
      }
      C4_WARN("connect to %s (pid %u, rank %d) failed after %llu ms: %s", s->where,
              s->target.id.pid, s->target.id.rank, (unsigned long long)waited_ms, strerror(e));
      return C4_EREMOTE;
    }
    cs->connected = 1;
  }
  if (cs->hello_sent < C4_HELLO_SIZE) {
    ssize_t k =
        c4_sock_send_some(cs->fd, cs->hello + cs->hello_sent, C4_HELLO_SIZE - cs->hello_sent);
    if (k < 0) {
      C4_WARN("connect to %s: the listener closed the connection during the handshake", s->where);
      return C4_EREMOTE;
    }
    cs->hello_sent += (size_t)k;
  }
  return cs->hello_sent == C4_HELLO_SIZE;
}

/* Advances the control socket and, once the probe lets them dial, the data sockets. Returns 1
 * when every hello is out, 0 while some is not, or a negative code (logged). */
static int socks_step(const struct c4_transport_config *cfg, struct connect_state *s) {
  int all_sent = 1, data_may_dial = probe_step(s);
  for (int i = 0; i <= s->nsocks; i++) {
    if (i > 0 && !data_may_dial) {
      all_sent = 0;
      continue;
    }
    int rc = sock_step(cfg, s, &s->sock[i]);
    if (rc < 0) return rc;
    all_sent &= rc;
  }
  return all_sent;
}

/* Reads the listener's ack on the control socket once every hello is out, within the connect
 * and handshake timeouts. Returns 1 when an OK ack is in, 0 while it is not, or a negative code
 * (logged). */
static int ack_step(const struct c4_transport_config *cfg, struct connect_state *s, int all_sent) {
  uint64_t waited_ms = (c4_now_ns() - s->t_start) / 1000000ull;
  if (all_sent && s->ack_got < C4_ACK_SIZE) {
    ssize_t k = c4_sock_recv_some(s->sock[0].fd, s->ack + s->ack_got, C4_ACK_SIZE - s->ack_got);
    if (k < 0) {
      C4_WARN("connect to %s (pid %u, rank %d): the listener closed the connection instead of "
              "acknowledging; it is not a c4 plugin of this version, or it rejected us (see its "
              "log)",
              s->where, s->target.id.pid, s->target.id.rank);
      return C4_EREMOTE;
    }
    s->ack_got += (size_t)k;
  }
  if (s->ack_got < C4_ACK_SIZE) {
    if (waited_ms > (uint64_t)cfg->connect_timeout_ms + (uint64_t)cfg->handshake_timeout_ms) {
      C4_WARN("connect to %s: no handshake ack after %llu ms", s->where,
              (unsigned long long)waited_ms);
      return C4_EREMOTE;
    }
    return 0;
  }
  int status = c4_wire_get_ack(s->ack);
  if (status != C4_ACK_OK) {
    C4_WARN("connect to %s: %s", s->where, c4_handshake_ack_why(status));
    return C4_EPROTO;
  }
  return 1;
}

/* Hands the acknowledged sockets over to a new comm; the state keeps none of them. */
static int comm_from_state(const struct c4_transport_config *cfg, int dev, uint64_t nccl_comm,
                           struct connect_state *s, struct c4_comm **out) {
  int data_fd[C4_MAX_NSOCKS];
  uint64_t data_path[C4_MAX_NSOCKS];
  for (int i = 0; i < s->nsocks; i++) {
    data_path[i] = s->sock[i + 1].path_hash;
    if (s->sock[i + 1].bind_local && !s->sock[i + 1].probed)
      atomic_fetch_add(&c4_netplan_stats.bound, 1);
    data_fd[i] = s->sock[i + 1].fd;
    s->sock[i + 1].fd = -1;
  }
  int ctrl_fd = s->sock[0].fd;
  s->sock[0].fd = -1;
  return c4_comm_create(1, cfg, dev, nccl_comm, s->conn_id, &s->self, &s->target.id, ctrl_fd,
                        data_fd, data_path, s->nsocks, out);
}

int c4_transport_connect(const struct c4_transport_config *cfg, int dev, uint64_t nccl_comm,
                         void *handle, struct c4_comm **out) {
  *out = NULL;
  struct connect_state *s = c4_handshake_scratch_get(handle);
  int rc;
  if (!s) {
    if ((rc = state_new(cfg, dev, handle, &s)) != 0) return rc;
    c4_handshake_scratch_set(handle, s);
  }
  int all_sent = socks_step(cfg, s);
  rc = all_sent < 0 ? all_sent : ack_step(cfg, s, all_sent);
  if (rc == 0) return 0; /* NCCL polls again */
  if (rc > 0) rc = comm_from_state(cfg, dev, nccl_comm, s, out);
  state_free(handle, s);
  return rc;
}
