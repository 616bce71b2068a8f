/* prof_core.h -- the profiler plugin's core: per-communicator pools of collective and proxy
 * events, turned into comm and coll records (common/c4_record.h). Version-independent;
 * prof_plugin_api.c adapts NCCL's v5 and v4 tables onto it. */
#ifndef C4_PROF_CORE_H
#define C4_PROF_CORE_H

#include <stdint.h>
#include <sys/types.h>

/* The event types c4 asks NCCL for (its activation mask): Coll, P2p, ProxyOp and KernelCh for
 * timing; ProxyStep and NetPlugin only so that the net plugin's connections can be tied to the
 * proxy operation (and so the communicator ranks) that uses them. */
#define C4_PROF_MASK ((1 << 1) | (1 << 2) | (1 << 3) | (1 << 4) | (1 << 6) | (1 << 7))

enum {
  C4_PEV_COLL = 1,
  C4_PEV_P2P = 2,
  C4_PEV_OP = 3,
  C4_PEV_KERNEL = 4,
  C4_PEV_STEP = 5,
  C4_PEV_NET = 6
};

/* One startEvent, whatever NCCL version described it. */
struct c4_prof_event {
  int type;     /* C4_PEV_* */
  void *parent; /* NCCL's parentObj: for ops, the handle we gave the collective */
  uint64_t seq; /* collectives: NCCL's seqNumber */
  const char *func, *datatype, *algo, *proto;
  uint64_t count;
  int root_or_peer;
  int nchannels;
  pid_t pid;             /* ops: the process that owns the parent (PXN: another one) */
  int is_send;           /* ops */
  int64_t net_plugin_id; /* NetPlugin events: which net plugin reported it */
  void *net_data;        /* NetPlugin events: that plugin's data (c4's: struct c4_link_info) */
};

struct c4_prof_ctx;

/* One context per communicator: emits its comm record. Returns 0 or C4_ENOMEM. */
int c4_prof_init(struct c4_prof_ctx **out, uint64_t comm, const char *name, int nnodes, int nranks,
                 int rank);

/* Starts an event; *handle is NULL for events c4 does not keep (other types, a full pool: those
 * are counted). Never blocks or allocates. */
void c4_prof_start(struct c4_prof_ctx *ctx, void **handle, const struct c4_prof_event *e);

/* Stops an event started above (NULL is fine). */
void c4_prof_stop(void *handle);

/* Emits every collective that has settled: enqueued, every operation NCCL started for it stopped,
 * none started for C4_PROF_SETTLE_MS. Runs on the telemetry writer thread. */
void c4_prof_scan(void);

/* Emits what is left and frees the context. */
int c4_prof_finalize(struct c4_prof_ctx *ctx);

/* Collectives entered, completed (emitted) and events dropped for a full pool, over all
 * contexts of the process. */
void c4_prof_counters(uint64_t *entered, uint64_t *done, uint64_t *dropped);

#endif
