/* mon_pipeline.c -- c4mon's per-record path, shared by serve and replay. */
#include "mon_pipeline.h"

#include <string.h>

#include <jansson.h>

#include "c4_err.h"
#include "c4_text.h"
#include "c4_trace_json.h"
#include "det.h"

static void shift(uint64_t *t, int64_t off) {
  if (*t) *t = (uint64_t)((int64_t)*t + off); /* c4_mon_record_check made it safe */
}

/* Every time of r moved by off (c4_mon_record_check made it safe). */
void c4_mon_record_shift(struct c4_record *r, int64_t off) {
  if (r->kind == C4_REC_XFER) {
    shift(&r->xfer.t_posted, off);
    shift(&r->xfer.t_first_byte, off);
    shift(&r->xfer.t_done, off);
  } else if (r->kind == C4_REC_COLL) {
    shift(&r->coll.t_arrive, off);
    shift(&r->coll.t_enqueued, off);
    shift(&r->coll.t_done, off);
  } else if (r->kind == C4_REC_COMM) {
    shift(&r->comm.t, off);
  } else if (r->kind == C4_REC_LINK) {
    shift(&r->link.t, off);
  } else if (r->kind == C4_REC_RANK) {
    shift(&r->rank.t, off);
  } else if (r->kind == C4_REC_PATH) {
    shift(&r->path.t, off);
  }
}

int c4_mon_time_ok(uint64_t t, int64_t off) {
  if (!t) return 0;
  if (t > C4_FRAME_TIME_MAX || off > (int64_t)C4_FRAME_TIME_MAX ||
      off < -(int64_t)C4_FRAME_TIME_MAX)
    return C4_EPROTO;
  if (off < 0) return t > (uint64_t)-off ? 0 : C4_EPROTO;          /* stays above 0 */
  return t <= (uint64_t)INT64_MAX - (uint64_t)off ? 0 : C4_EPROTO; /* fits an int64_t */
}

/* Whether any of three times is out of range under offset off; without one (a replay), a single
 * comparison of the latest does (0, a time not known, is in range then). */
static int times_bad(int64_t off, uint64_t a, uint64_t b, uint64_t c) {
  if (!off) {
    uint64_t latest = a > b ? a : b;
    return (latest > c ? latest : c) > C4_FRAME_TIME_MAX;
  }
  return c4_mon_time_ok(a, off) || c4_mon_time_ok(b, off) || c4_mon_time_ok(c, off);
}

/* Whether a host name holds a control character or is not UTF-8: it would reach an operator's
 * terminal raw through events --text, status and top (an escape sequence that clears the screen
 * and prints "ALL CLEAR"), or make the JSON writer refuse the verdict it is in, and names no real
 * host. ASCII, the common case, is read here; the rest from its first byte past ASCII on. */
static int host_bad(const char *h) {
  for (size_t i = 0; i < C4_HOST_MAX && h[i]; i++) {
    unsigned char c = (unsigned char)h[i];
    if (c >= 0x80) return !c4_text_ok(h + i);
    if (c4_is_control(c)) return 1;
  }
  return 0;
}

/* The field of r whose host name is not clean text ("host" or "peer_host", as the trace
 * format names them), or NULL when none. */
static const char *host_field_bad(const struct c4_record *r) {
  const char *self = NULL, *peer = NULL;
  switch (r->kind) {
  case C4_REC_XFER: self = r->xfer.self.host, peer = r->xfer.peer.host; break;
  case C4_REC_COMM: self = r->comm.host; break;
  case C4_REC_RANK: self = r->rank.host; break;
  case C4_REC_PATH: self = r->path.self.host, peer = r->path.peer.host; break;
  default: return NULL;
  }
  return self && host_bad(self) ? "host" : peer && host_bad(peer) ? "peer_host" : NULL;
}

int c4_mon_record_check(const struct c4_record *r, int64_t offset, const char **why) {
  if (offset > (int64_t)C4_FRAME_TIME_MAX || offset < -(int64_t)C4_FRAME_TIME_MAX) {
    *why = "clock offset beyond 2^62 ns";
    return C4_EPROTO;
  }
  int t_bad = 0, n_bad = 0;
  switch (r->kind) {
  case C4_REC_XFER:
    t_bad = times_bad(offset, r->xfer.t_posted, r->xfer.t_first_byte, r->xfer.t_done);
    n_bad = r->xfer.bytes > INT64_MAX || r->xfer.seq > INT64_MAX;
    break;
  case C4_REC_COLL:
    t_bad = times_bad(offset, r->coll.t_arrive, r->coll.t_enqueued, r->coll.t_done);
    n_bad = r->coll.bytes > INT64_MAX || r->coll.count > INT64_MAX || r->coll.seq > INT64_MAX ||
            r->coll.nranks < -1 || r->coll.rank < -1 ||
            (r->coll.nranks > 0 && r->coll.rank >= r->coll.nranks) || r->coll.root < -1;
    break;
  case C4_REC_COMM:
    t_bad = c4_mon_time_ok(r->comm.t, offset);
    n_bad = r->comm.nranks < -1 || r->comm.nnodes < -1 || r->comm.rank < -1 ||
            (r->comm.nranks > 0 && r->comm.rank >= r->comm.nranks);
    break;
  case C4_REC_LINK:
    t_bad = c4_mon_time_ok(r->link.t, offset);
    n_bad = r->link.rank < -1 || r->link.peer < -1;
    break;
  case C4_REC_RANK:
    t_bad = c4_mon_time_ok(r->rank.t, offset);
    n_bad = r->rank.entered > INT64_MAX || r->rank.done > INT64_MAX || r->rank.dropped > INT64_MAX;
    break;
  case C4_REC_PATH:
    t_bad = c4_mon_time_ok(r->path.t, offset);
    n_bad =
        r->path.bytes > INT64_MAX || r->path.busy_ns > INT64_MAX || r->path.sock >= r->path.nsocks;
    break;
  default: *why = "unknown record kind"; return C4_EPROTO;
  }
  const char *host = t_bad || n_bad ? NULL : host_field_bad(r);
  if (host) {
    *why = !strcmp(host, "host")
               ? "field \"host\": a control character or a byte that is not UTF-8"
               : "field \"peer_host\": a control character or a byte that is not UTF-8";
    return C4_EPROTO;
  }
  if (t_bad)
    *why = "a time beyond 2^62 ns, or at or below 0 in c4mon's clock";
  else if (n_bad)
    *why = "a count, size, sequence number or rank out of range";
  return t_bad || n_bad ? C4_EPROTO : 0;
}

void c4_mon_take_record(struct mon_sink *s, const struct c4_det_job *job, int64_t offset,
                        struct c4_record *r) {
  if (offset) c4_mon_record_shift(r, offset);
  if (r->kind == C4_REC_RANK)
    s->heartbeats += r->rank.event == C4_RANK_HB;
  else
    s->records++;
  c4_det_take(job, r);
  if (!s->out) return;
  json_t *j = c4_record_json(r);
  if (!j) return;
  json_object_set_new(j, "job", json_string(job->name));
  if (json_dumpf(j, s->out, JSON_COMPACT) == 0) fputc('\n', s->out);
  json_decref(j);
}

uint64_t c4_mon_record_time(const struct c4_record *r) {
  switch (r->kind) {
  case C4_REC_XFER: return r->xfer.t_done ? r->xfer.t_done : r->xfer.t_posted;
  case C4_REC_COLL: return r->coll.t_done ? r->coll.t_done : r->coll.t_arrive;
  case C4_REC_COMM: return r->comm.t;
  case C4_REC_LINK: return r->link.t;
  case C4_REC_RANK: return r->rank.t;
  case C4_REC_PATH: return r->path.t;
  default: return 0;
  }
}
