/* prof_plugin_api.c -- the exported NCCL profiler plugin tables (v5, v4): thin shims that turn
 * NCCL's event descriptors into c4_prof_event and call prof_core. The same library is the net
 * plugin, so NCCL finds these symbols there, or through libnccl-profiler-c4.so. */
#include <dlfcn.h>
#include <string.h>
#include <unistd.h>

#include "c4_log.h"
#include "c4_reporter.h"
#include "c4_telemetry.h"
#include "nccl_profiler_abi.h"
#include "prof_core.h"

#define C4_EXPORT __attribute__((visibility("default")))

/* The heartbeat's counts: collectives entered and completed in this process. */
static void progress(uint64_t *entered, uint64_t *done) { c4_prof_counters(entered, done, NULL); }

/* With the LD_PRELOAD shim in the process too, every collective would be reported twice, on two
 * connections. The profiler keeps reporting and the shim stands down, because the profiler sees
 * more: NCCL's own communicator id (the one the net plugin's transfers and link records carry),
 * the algorithm, protocol and channels, each network operation and kernel channel, the
 * connections each rank pair uses; and every call, however the program reaches NCCL (dlopen +
 * dlsym, a static link). All the shim has on top are calls NCCL refuses before enqueuing them.
 * The shim, preloaded, is in the global scope, where dlsym(RTLD_DEFAULT) finds it. */
static void stand_the_shim_down(void) {
  void (*stand_down)(void) = (void (*)(void))dlsym(RTLD_DEFAULT, C4_SHIM_STAND_DOWN);
  if (stand_down) stand_down();
}

static ncclResult_t init_common(void **context, uint64_t comm, int *mask, const char *name,
                                int nnodes, int nranks, int rank, ncclDebugLogger_t logfn) {
  if (logfn) c4_log_set_logger((c4_logger_fn)logfn);
  if (!c4_telemetry_enabled()) { /* C4_TIMING=0: NCCL is asked for no events; nothing recorded */
    *context = NULL;
    if (mask) *mask = 0;
    return ncclSuccess;
  }
  c4_telemetry_add_periodic(c4_prof_scan);
  c4_reporter_set_progress(progress);
  c4_telemetry_start();
  struct c4_prof_ctx *ctx = NULL;
  if (c4_prof_init(&ctx, comm, name, nnodes, nranks, rank) != 0) return ncclSystemError;
  stand_the_shim_down(); /* only now: a profiler NCCL drops leaves the shim recording */
  *context = ctx;
  if (mask) *mask = C4_PROF_MASK; /* only what c4 uses (prof_core.h says why) */
  return ncclSuccess;
}

static ncclResult_t stop_event(void *handle) {
  c4_prof_stop(handle);
  return ncclSuccess;
}

static ncclResult_t record_state(void *handle, ncclProfilerEventState_t state,
                                 ncclProfilerEventStateArgs_t *args) {
  (void)handle, (void)state, (void)args; /* c4 times events by their start and stop */
  return ncclSuccess;
}

static ncclResult_t finalize(void *context) {
  return c4_prof_finalize(context) ? ncclInternalError : ncclSuccess;
}

/* ---- v5 ---------------------------------------------------------------------------------- */

static ncclResult_t init_v5(void **context, uint64_t comm_id, int *mask, const char *name,
                            int nnodes, int nranks, int rank, ncclDebugLogger_t logfn) {
  return init_common(context, comm_id, mask, name, nnodes, nranks, rank, logfn);
}

/* v5 and v4 descriptors lay these fields out differently but name them alike, so one
 * translation, written once, serves both (d: a pointer to either; e: a struct c4_prof_event). */
#define DESCR_TO_EVENT(d, e)                                                                       \
  do {                                                                                             \
    (e).parent = (d)->parentObj;                                                                   \
    (e).root_or_peer = -1;                                                                         \
    (e).pid = getpid();                                                                            \
    if ((d)->type == ncclProfileColl) {                                                            \
      (e).type = C4_PEV_COLL;                                                                      \
      (e).seq = (d)->coll.seqNumber;                                                               \
      (e).func = (d)->coll.func;                                                                   \
      (e).count = (d)->coll.count;                                                                 \
      (e).datatype = (d)->coll.datatype;                                                           \
      (e).root_or_peer = (d)->coll.root;                                                           \
      (e).nchannels = (d)->coll.nChannels;                                                         \
      (e).algo = (d)->coll.algo;                                                                   \
      (e).proto = (d)->coll.proto;                                                                 \
    } else if ((d)->type == ncclProfileP2p) {                                                      \
      (e).type = C4_PEV_P2P;                                                                       \
      (e).func = (d)->p2p.func;                                                                    \
      (e).count = (d)->p2p.count;                                                                  \
      (e).datatype = (d)->p2p.datatype;                                                            \
      (e).root_or_peer = (d)->p2p.peer;                                                            \
      (e).nchannels = (d)->p2p.nChannels;                                                          \
    } else if ((d)->type == ncclProfileProxyOp) {                                                  \
      (e).type = C4_PEV_OP;                                                                        \
      (e).pid = (d)->proxyOp.pid;                                                                  \
      (e).root_or_peer = (d)->proxyOp.peer;                                                        \
      (e).is_send = (d)->proxyOp.isSend;                                                           \
    } else if ((d)->type == ncclProfileProxyStep) {                                                \
      (e).type = C4_PEV_STEP;                                                                      \
    } else if ((d)->type == ncclProfileNetPlugin) {                                                \
      (e).type = C4_PEV_NET;                                                                       \
      (e).net_plugin_id = (d)->netPlugin.id;                                                       \
      (e).net_data = (d)->netPlugin.data;                                                          \
    } else if ((d)->type == ncclProfileKernelCh) {                                                 \
      (e).type = C4_PEV_KERNEL;                                                                    \
    }                                                                                              \
  } while (0)

static ncclResult_t start_v5(void *context, void **handle, ncclProfilerEventDescr_v5_t *d) {
  struct c4_prof_event e = {0};
  DESCR_TO_EVENT(d, e);
  c4_prof_start(context, handle, &e); /* type 0: an event c4 does not use; *handle = NULL */
  return ncclSuccess;
}

C4_EXPORT const ncclProfiler_v5_t ncclProfiler_v5 = {
    .name = "c4",
    .init = init_v5,
    .startEvent = start_v5,
    .stopEvent = stop_event,
    .recordEventState = record_state,
    .finalize = finalize,
};

/* ---- v4 ---------------------------------------------------------------------------------- */

static ncclResult_t init_v4(void **context, int *mask, const char *name, uint64_t comm_hash,
                            int nnodes, int nranks, int rank, ncclDebugLogger_t logfn) {
  return init_common(context, comm_hash, mask, name, nnodes, nranks, rank, logfn);
}

static ncclResult_t start_v4(void *context, void **handle, ncclProfilerEventDescr_v4_t *d) {
  struct c4_prof_event e = {0};
  DESCR_TO_EVENT(d, e);
  c4_prof_start(context, handle, &e);
  return ncclSuccess;
}

C4_EXPORT const ncclProfiler_v4_t ncclProfiler_v4 = {
    .name = "c4",
    .init = init_v4,
    .startEvent = start_v4,
    .stopEvent = stop_event,
    .recordEventState = record_state,
    .finalize = finalize,
};
