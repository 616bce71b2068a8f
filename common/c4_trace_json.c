/* c4_trace_json.c -- one record as one trace line (docs/trace-format.md), with Jansson. */
#include "c4_trace_json.h"

#include <inttypes.h>
#include <stdio.h>

/* A time, or JSON null for "not (yet) happened". */
static json_t *time_json(uint64_t t) { return t ? json_integer((json_int_t)t) : json_null(); }

static json_t *comm_json(uint64_t id) {
  char hex[17];
  snprintf(hex, sizeof hex, "%016" PRIx64, id);
  return id ? json_string(hex) : json_null();
}

static json_t *xfer_json(const struct c4_xfer_record *r) {
  static const char *const status[] = {"ok", "error", "pending"};
  char conn[17];
  snprintf(conn, sizeof conn, "%016" PRIx64, r->conn_id);
  json_t *j = json_pack("{s:i, s:s, s:o, s:i, s:i, s:s, s:s, s:s, s:I, s:o, s:o, s:o}", "v",
                        C4_RECORD_VERSION, "type", "xfer", "comm", comm_json(r->nccl_comm), "rank",
                        r->self.rank, "peer", r->peer.rank, "host", r->self.host, "peer_host",
                        r->peer.host, "dir", r->dir == C4_DIR_SEND ? "send" : "recv", "bytes",
                        (json_int_t)r->bytes, "t_post", time_json(r->t_posted), "t_first",
                        time_json(r->t_first_byte), "t_done", time_json(r->t_done));
  if (j) {
    json_t *more = json_pack("{s:s, s:I, s:i, s:s, s:I, s:I, s:i, s:i}", "conn", conn, "seq",
                             (json_int_t)r->seq, "tag", r->tag, "status",
                             status[r->status <= C4_XFER_PENDING ? r->status : C4_XFER_ERROR],
                             "pid", (json_int_t)r->self.pid, "peer_pid", (json_int_t)r->peer.pid,
                             "dev", r->self.dev, "peer_dev", r->peer.dev);
    json_object_update(j, more);
    json_decref(more);
  }
  return j;
}

static json_t *coll_json(const struct c4_coll_record *c) {
  return json_pack(
      "{s:i, s:s, s:o, s:i, s:i, s:I, s:s, s:b, s:I, s:I, s:i, s:s, s:s, s:s, s:i, s:i, s:I, "
      "s:I, s:o}",
      "v", C4_RECORD_VERSION, "type", "coll", "comm", comm_json(c->comm), "rank", c->rank, "nranks",
      c->nranks, "seq", (json_int_t)c->seq, "func", c->func, "p2p", c->is_p2p, "count",
      (json_int_t)c->count, "bytes", (json_int_t)c->bytes, "root", c->root, "datatype", c->dtype,
      "algo", c->algo, "proto", c->proto, "nchannels", c->nchannels, "nops", c->nops, "t_arrive",
      (json_int_t)c->t_arrive, "t_enqueued", (json_int_t)c->t_enqueued, "t_done",
      time_json(c->t_done));
}

static json_t *comm_record_json(const struct c4_comm_record *c) {
  return json_pack("{s:i, s:s, s:o, s:s, s:i, s:i, s:i, s:s, s:I, s:I}", "v", C4_RECORD_VERSION,
                   "type", "comm", "comm", comm_json(c->comm), "name", c->name, "nranks", c->nranks,
                   "rank", c->rank, "nnodes", c->nnodes, "host", c->host, "pid", (json_int_t)c->pid,
                   "t", (json_int_t)c->t);
}

static json_t *link_json(const struct c4_link_record *l) {
  char conn[17];
  snprintf(conn, sizeof conn, "%016" PRIx64, l->conn_id);
  return json_pack("{s:i, s:s, s:o, s:i, s:i, s:s, s:s, s:I}", "v", C4_RECORD_VERSION, "type",
                   "link", "comm", comm_json(l->comm), "rank", l->rank, "peer", l->peer, "conn",
                   conn, "dir", l->dir == C4_DIR_SEND ? "send" : "recv", "t", (json_int_t)l->t);
}

/* One data socket's rate over a span (the plugin's multipath weights). */
static json_t *path_json(const struct c4_path_record *a) {
  char conn[17];
  snprintf(conn, sizeof conn, "%016" PRIx64, a->conn_id);
  json_t *j =
      json_pack("{s:i, s:s, s:o, s:s, s:i, s:i, s:s, s:s, s:i, s:i, s:i}", "v", C4_RECORD_VERSION,
                "type", "path", "comm", comm_json(a->nccl_comm), "conn", conn, "rank", a->self.rank,
                "peer", a->peer.rank, "host", a->self.host, "peer_host", a->peer.host, "sock",
                a->sock, "nsocks", a->nsocks, "src_port", a->src_port);
  if (j) {
    json_t *more =
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:i, s:i}", "bytes", (json_int_t)a->bytes, "busy_ns",
                  (json_int_t)a->busy_ns, "t", (json_int_t)a->t, "pid", (json_int_t)a->self.pid,
                  "peer_pid", (json_int_t)a->peer.pid, "dev", a->self.dev, "peer_dev", a->peer.dev);
    json_object_update(j, more);
    json_decref(more);
  }
  return j;
}

/* A heartbeat c4mon received ("hb"), the end of a rank's stream ("end"), or a trace's header
 * line read back ("header"). */
static json_t *rank_json(const struct c4_rank_record *k) {
  if (k->event == C4_RANK_HELLO) /* a header line read back */
    return json_pack("{s:i, s:s, s:s, s:I, s:i, s:I}", "v", C4_RECORD_VERSION, "type", "header",
                     "host", k->host, "pid", (json_int_t)k->pid, "rank", k->rank, "mono_ns",
                     (json_int_t)k->t);
  if (k->event == C4_RANK_HB)
    return json_pack("{s:i, s:s, s:i, s:s, s:I, s:I, s:I, s:I, s:I}", "v", C4_RECORD_VERSION,
                     "type", "hb", "rank", k->rank, "host", k->host, "pid", (json_int_t)k->pid, "t",
                     (json_int_t)k->t, "entered", (json_int_t)k->entered, "done",
                     (json_int_t)k->done, "dropped", (json_int_t)k->dropped);
  return json_pack("{s:i, s:s, s:i, s:s, s:I, s:I, s:b}", "v", C4_RECORD_VERSION, "type", "end",
                   "rank", k->rank, "host", k->host, "pid", (json_int_t)k->pid, "t",
                   (json_int_t)k->t, "clean", k->event == C4_RANK_BYE);
}

json_t *c4_record_json(const struct c4_record *r) {
  switch (r->kind) {
  case C4_REC_XFER: return xfer_json(&r->xfer);
  case C4_REC_COLL: return coll_json(&r->coll);
  case C4_REC_COMM: return comm_record_json(&r->comm);
  case C4_REC_LINK: return link_json(&r->link);
  case C4_REC_RANK: return rank_json(&r->rank);
  case C4_REC_PATH: return path_json(&r->path);
  default: return NULL;
  }
}
