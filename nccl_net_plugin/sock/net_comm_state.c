/* net_comm_state.c -- what the caller's thread, the helper threads and the watch all do to a comm
 * and its requests: mark the comm failed, complete a request, fill a request's record. Kept apart
 * from net_comm.c so that the helpers (net_helper.c) and the watch (net_watch.c) depend on these
 * alone and never call back into the comm's own code. */
#include <stdarg.h>

#include "c4_clock.h"
#include "c4_log.h"
#include "net_comm.h"
#include "net_xfer_record.h"

void c4_comm_fail(struct c4_comm *c, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int first = c4_comm_fail_first(&c->failed, c->failure, sizeof c->failure, code, fmt, ap);
  va_end(ap);
  if (!first) return;
  int in_flight = 0;
  for (int i = 0; i < C4_MAX_REQUESTS; i++)
    in_flight += atomic_load(&c->reqs[i].state) == C4_REQ_POSTED;
  /* A peer closing an idle comm is the normal end of a job, not worth a warning. */
  c4_log(in_flight ? C4_LOG_WARN : C4_LOG_INFO, __FILE__, __LINE__, "%s comm %016llx: %s%s",
         c->is_send ? "send" : "receive", (unsigned long long)c->conn_id, c->failure,
         in_flight ? "" : " (no request in flight)");
}

void c4_request_complete(struct c4_request *r) {
  if (r->comm->cfg.timing) atomic_store_explicit(&r->t_done, c4_now_ns(), memory_order_relaxed);
  atomic_store_explicit(&r->state, C4_REQ_DONE, memory_order_release);
}

void c4_request_record(const struct c4_comm *c, struct c4_request *r, int status, uint64_t bytes,
                       uint64_t t_done, struct c4_xfer_record *rec) {
  C4_XFER_RECORD_FILL(rec, c, r, status, bytes, t_done);
}
