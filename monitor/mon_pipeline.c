/* mon_pipeline.c -- c4mon's per-record path, shared by serve and replay. */
#include "mon_pipeline.h"

#include <jansson.h>

#include "c4_trace_json.h"
#include "det.h"

static void shift(uint64_t *t, int64_t off) {
  if (*t) *t = (uint64_t)((int64_t)*t + off);
}

void c4_mon_take_record(struct mon_sink *s, const char *job, int64_t offset, struct c4_record *r) {
  if (r->kind == C4_REC_XFER) {
    shift(&r->xfer.t_posted, offset);
    shift(&r->xfer.t_first_byte, offset);
    shift(&r->xfer.t_done, offset);
  } else if (r->kind == C4_REC_COLL) {
    shift(&r->coll.t_arrive, offset);
    shift(&r->coll.t_enqueued, offset);
    shift(&r->coll.t_done, offset);
  } else if (r->kind == C4_REC_COMM) {
    shift(&r->comm.t, offset);
  } else if (r->kind == C4_REC_LINK) {
    shift(&r->link.t, offset);
  } else if (r->kind == C4_REC_RANK) {
    shift(&r->rank.t, offset);
  }
  if (r->kind == C4_REC_RANK)
    s->heartbeats += r->rank.event == C4_RANK_HB;
  else
    s->records++;
  c4_det_take(job, r);
  if (!s->out) return;
  json_t *j = c4_record_json(r);
  if (!j) return;
  json_object_set_new(j, "job", json_string(job));
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
  default: return 0;
  }
}
