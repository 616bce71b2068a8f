/* net_plan.h -- the traffic plan as the plugin follows it (C4_PLAN, docs/plan-format.md): which
 * source port and interface each data socket to a peer host binds to before it connects. */
#ifndef C4_NET_PLAN_H
#define C4_NET_PLAN_H

#include <net/if.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "c4_record.h"

/* One planned flow of a host pair: a data socket binds to src_port (0: ephemeral) on the IPv4
 * address of ifname ("": any address). A verbs QP takes flow_label (RoCEv2), sl and path_bits
 * (InfiniBand: the destination LID's offset under its LMC); -1 where the plan gives none. */
struct c4_netplan_bind {
  uint64_t path_hash; /* the flow's path (c4_netplan_path_hash), 0: the plan names none */
  uint16_t src_port;
  char ifname[IFNAMSIZ];
  int32_t flow_label;
  int16_t sl;
  int16_t path_bits;
};

/* The flows of one directed host pair, in the plan file's order. */
struct c4_netplan_pair {
  char src[C4_HOST_MAX];
  char dst[C4_HOST_MAX];
  int nbinds;
  struct c4_netplan_bind *binds;
};

/* A parsed plan. Immutable once c4_netplan_parse has returned it. avoid: the paths (their
 * hashes) the plan asks to keep traffic off. */
struct c4_netplan {
  int npairs;
  struct c4_netplan_pair *pairs;
  int navoid;
  uint64_t *avoid;
};

/* What the plugin compares path names by: FNV-1a of the name, never 0. */
uint64_t c4_netplan_path_hash(const char *name);

/* The paths to keep traffic off, for comms already connected: the `avoid` of the plan c4mon
 * pushed last (docs/plan-format.md; c4mon pushes it while its `path` verdict stands), also when
 * C4_PLAN is set: the file places the sockets, c4mon's verdicts say what to avoid (a file's own
 * `avoid` is not followed). A generation that changes with every new set lets a comm look only
 * then; both calls are lock-free and never wait. */
uint64_t c4_netplan_avoid_gen(void);
int c4_netplan_avoided(uint64_t path_hash); /* 1 when the current set names it (0 never) */

/* Parses a plan file's bytes (len bytes, no NUL needed) with the plan reader (c4_planfile_parse,
 * its flows only: what it checks and the errors it gives are there) and groups the flows by
 * directed host pair. On success sets *out (owned by the caller, freed with c4_netplan_free) and
 * returns 0. On error returns C4_EINVAL with what is wrong in err ("flows[3].src_port is not an
 * integer 1..65535 or null"). Pure: no I/O. */
int c4_netplan_parse(const char *buf, size_t len, struct c4_netplan **out, char *err,
                     size_t errlen);

/* Frees a plan from c4_netplan_parse; NULL is fine. */
void c4_netplan_free(struct c4_netplan *p);

/* The flows planned from host src to host dst, or NULL when the plan has none. */
const struct c4_netplan_pair *c4_netplan_find(const struct c4_netplan *p, const char *src,
                                              const char *dst);

/* For a connect from host src to host dst: copies the bindings of the plan named by C4_PLAN (up
 * to max) into out and returns their count; 0 when C4_PLAN is unset, the plan is bad or has no
 * flow for the pair. Re-reads the file when its identity, size or mtime changed, checking at most
 * once a second; a bad file is logged once (file and what is wrong), counted and ignored. Never
 * fails and never waits for another thread. Thread-safe; call at connect time only. */
int c4_netplan_bindings(const char *src, const char *dst, struct c4_netplan_bind *out, int max);

/* A plan c4mon pushed (JSON bytes, the plan file's format): parsed at once (a bad one is logged,
 * counted and ignored) and installed at the next connect, when C4_PLAN is unset (a C4_PLAN file
 * takes precedence). Called on the telemetry thread; never waits for a connect. */
void c4_netplan_push(const char *json, size_t len);

/* Frees the current plan and every replaced one, and forgets the file's state (tests; finalize
 * once no connect is in progress). */
void c4_netplan_reset(void);

/* Counters, for logs and tests. */
struct c4_netplan_stats {
  atomic_ulong loads;          /* plan files read and accepted */
  atomic_ulong bad_plans;      /* plan files missing or rejected, and rejected pushes */
  atomic_ulong pushes;         /* plans c4mon pushed and accepted */
  atomic_ulong bound;          /* data sockets bound as planned */
  atomic_ulong bind_fallbacks; /* planned binds that failed: the socket used an ephemeral port */
  atomic_ulong avoid_sets;     /* sets of paths to avoid c4mon pushed */
};
extern struct c4_netplan_stats c4_netplan_stats;

#endif
