/* c4_trace_read.c -- trace lines back into records, checking every field it takes. */
#include "c4_trace_read.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>

#include "c4_err.h"
#include "c4_frame.h"
#include "c4_hash.h"
#include "c4_text.h"
#include "c4_trace_bin.h"

/* Field readers: the first failure names its field in err, and later ones keep quiet. */
struct parse {
  json_t *j;
  char *err;
  size_t errlen;
  int bad;
};

static void fail(struct parse *p, const char *field, const char *why) {
  if (!p->bad) snprintf(p->err, p->errlen, "field \"%s\" %s", field, why);
  p->bad = 1;
}

static int64_t get_int(struct parse *p, const char *f, int64_t lo, int64_t hi) {
  json_t *v = json_object_get(p->j, f);
  if (!json_is_integer(v)) {
    fail(p, f, v ? "is not an integer" : "is missing");
    return 0;
  }
  json_int_t x = json_integer_value(v);
  if (x < lo || x > hi) fail(p, f, "is out of range");
  return x;
}

/* A time: a non-negative integer, or null for "not (yet)" (read as 0). */
/* A time in ns, null for "not (yet)": at most 2^62 ns (146 years of a clock), what the stream
 * and detection take; a larger one is refused here, where its field can be named. */
static uint64_t get_time(struct parse *p, const char *f) {
  json_t *v = json_object_get(p->j, f);
  if (json_is_null(v)) return 0;
  return (uint64_t)get_int(p, f, 0, (int64_t)C4_FRAME_TIME_MAX);
}

static void get_str(struct parse *p, const char *f, char *out, size_t cap) {
  json_t *v = json_object_get(p->j, f);
  if (!json_is_string(v)) {
    fail(p, f, v ? "is not a string" : "is missing");
    return;
  }
  size_t n = json_string_length(v);
  if (n >= cap || memchr(json_string_value(v), 0, n)) {
    fail(p, f, "is too long or holds a NUL");
    return;
  }
  memcpy(out, json_string_value(v), n + 1);
}

/* A 16-hex-digit id, or null (read as 0). */
static uint64_t get_id(struct parse *p, const char *f, int nullable) {
  json_t *v = json_object_get(p->j, f);
  if (nullable && json_is_null(v)) return 0;
  if (!v) {
    fail(p, f, "is missing");
    return 0;
  }
  const char *s = json_string_value(v);
  char *end = NULL;
  errno = 0;
  uint64_t x = s && strlen(s) == 16 ? strtoull(s, &end, 16) : 0;
  if (!s || strlen(s) != 16 || errno || *end || s[0] == '-' || s[0] == '+')
    fail(p, f, "is not 16 hex digits");
  return x;
}

/* Optional fields: absent (or null) reads as the default given; present, it is checked like a
 * required one. */
static int64_t opt_int(struct parse *p, const char *f, int64_t lo, int64_t hi, int64_t dflt) {
  json_t *v = json_object_get(p->j, f);
  return v && !json_is_null(v) ? get_int(p, f, lo, hi) : dflt;
}

static void opt_str(struct parse *p, const char *f, char *out, size_t cap) {
  json_t *v = json_object_get(p->j, f);
  if (v && !json_is_null(v)) get_str(p, f, out, cap);
}

static uint64_t opt_id(struct parse *p, const char *f, uint64_t dflt) {
  json_t *v = json_object_get(p->j, f);
  return v && !json_is_null(v) ? get_id(p, f, 0) : dflt;
}

/* The connection id a trace without "conn" gets: a hash of the sending and the receiving end
 * (host and rank), so both ends of a connection read the same id. */
static uint64_t conn_of_ends(const struct c4_identity *from, const struct c4_identity *to) {
  uint64_t h = C4_FNV_BASIS_OLD;
  const struct c4_identity *e[2] = {from, to};
  for (int k = 0; k < 2; k++) {
    h = c4_fnv1a_str(h, e[k]->host);
    h = (h ^ (uint32_t)e[k]->rank) * C4_FNV_PRIME;
    h = (h ^ 0xff) * C4_FNV_PRIME; /* ends the field: "a"+"1b" differs from "a1"+"b" */
  }
  return h ? h : 1;
}

/* Required: dir, host, peer_host, peer, bytes, t_post, t_done (null while pending); the rest
 * has the defaults docs/trace-format.md gives. */
static void parse_xfer(struct parse *p, struct c4_xfer_record *x) {
  x->version = C4_RECORD_VERSION;
  x->nccl_comm = opt_id(p, "comm", 0);
  x->self.rank = (int32_t)opt_int(p, "rank", -1, INT32_MAX, -1);
  x->peer.rank = (int32_t)get_int(p, "peer", -1, INT32_MAX); /* -1: not known */
  get_str(p, "host", x->self.host, C4_HOST_MAX);
  get_str(p, "peer_host", x->peer.host, C4_HOST_MAX);
  x->self.pid = (uint32_t)opt_int(p, "pid", 0, UINT32_MAX, x->self.rank >= 0 ? x->self.rank : 0);
  x->peer.pid =
      (uint32_t)opt_int(p, "peer_pid", 0, UINT32_MAX, x->peer.rank >= 0 ? x->peer.rank : 0);
  x->self.dev = (int32_t)opt_int(p, "dev", INT32_MIN, INT32_MAX, -1);
  x->peer.dev = (int32_t)opt_int(p, "peer_dev", INT32_MIN, INT32_MAX, -1);
  x->seq = (uint64_t)opt_int(p, "seq", 0, INT64_MAX, 0);
  x->bytes = (uint64_t)get_int(p, "bytes", 0, INT64_MAX);
  x->t_posted = get_time(p, "t_post");
  x->t_first_byte = json_object_get(p->j, "t_first") ? get_time(p, "t_first") : 0;
  x->t_done = get_time(p, "t_done");
  if (!p->bad && x->t_done && x->t_done < x->t_posted) /* one process's clock: cannot be */
    fail(p, "t_done", "is before t_post");
  if (!p->bad && x->t_done && x->t_first_byte > x->t_done) fail(p, "t_first", "is after t_done");
  char dir[C4_NAME_MAX] = "", status[8] = ""; /* room for a wrong word, so it is named as such */
  get_str(p, "dir", dir, sizeof dir);
  snprintf(status, sizeof status, "%s", x->t_done ? "ok" : "pending");
  opt_str(p, "status", status, sizeof status);
  if (!p->bad && strcmp(dir, "send") && strcmp(dir, "recv")) fail(p, "dir", "is not send or recv");
  x->dir = strcmp(dir, "recv") ? C4_DIR_SEND : C4_DIR_RECV;
  x->status = !strcmp(status, "ok")        ? C4_XFER_OK
              : !strcmp(status, "pending") ? C4_XFER_PENDING
                                           : C4_XFER_ERROR;
  if (!p->bad && strcmp(status, "ok") && strcmp(status, "error") && strcmp(status, "pending"))
    fail(p, "status", "is not ok, error or pending");
  int send = x->dir == C4_DIR_SEND;
  x->tag = (int32_t)opt_int(p, "tag", INT32_MIN, INT32_MAX, send ? x->self.rank : x->peer.rank);
  x->conn_id =
      opt_id(p, "conn", send ? conn_of_ends(&x->self, &x->peer) : conn_of_ends(&x->peer, &x->self));
}

/* Required: comm, rank, nranks, seq, func, bytes, t_arrive, t_done (null when unknown). */
static void parse_coll(struct parse *p, struct c4_coll_record *c) {
  c->comm = get_id(p, "comm", 1);
  c->rank = (int32_t)get_int(p, "rank", INT32_MIN, INT32_MAX);
  c->nranks = (int32_t)get_int(p, "nranks", 1, INT32_MAX);
  if (!p->bad && (c->rank < 0 || c->rank >= c->nranks)) fail(p, "rank", "is not in [0, nranks)");
  c->seq = (uint64_t)get_int(p, "seq", 0, INT64_MAX);
  get_str(p, "func", c->func, C4_NAME_MAX);
  json_t *p2p = json_object_get(p->j, "p2p");
  if (json_is_null(p2p)) p2p = NULL; /* null reads as absent, as every optional field's does */
  if (p2p && !json_is_boolean(p2p)) fail(p, "p2p", "is not true or false");
  c->is_p2p = p2p ? json_is_true(p2p) : !strcmp(c->func, "Send") || !strcmp(c->func, "Recv");
  c->bytes = (uint64_t)get_int(p, "bytes", 0, INT64_MAX);
  c->count = (uint64_t)opt_int(p, "count", 0, INT64_MAX, (int64_t)c->bytes);
  c->root = (int32_t)opt_int(p, "root", INT32_MIN, INT32_MAX, -1);
  opt_str(p, "datatype", c->dtype, C4_NAME_MAX);
  opt_str(p, "algo", c->algo, C4_NAME_MAX);
  opt_str(p, "proto", c->proto, C4_NAME_MAX);
  c->nchannels = (uint8_t)opt_int(p, "nchannels", 0, UINT8_MAX, 0);
  c->nops = (uint16_t)opt_int(p, "nops", 0, UINT16_MAX, 0);
  c->t_arrive = get_time(p, "t_arrive");
  json_t *enq = json_object_get(p->j, "t_enqueued");
  c->t_enqueued = enq && !json_is_null(enq) ? get_time(p, "t_enqueued") : c->t_arrive;
  c->t_done = get_time(p, "t_done");
  if (!p->bad && c->t_done && c->t_done < c->t_arrive) fail(p, "t_done", "is before t_arrive");
}

/* Required: comm, nranks, rank. */
static void parse_comm(struct parse *p, struct c4_comm_record *c) {
  c->comm = get_id(p, "comm", 1);
  opt_str(p, "name", c->name, sizeof c->name);
  c->nranks = (int32_t)get_int(p, "nranks", INT32_MIN, INT32_MAX);
  c->rank = (int32_t)get_int(p, "rank", INT32_MIN, INT32_MAX);
  c->nnodes = (int32_t)opt_int(p, "nnodes", INT32_MIN, INT32_MAX, -1);
  opt_str(p, "host", c->host, C4_HOST_MAX);
  c->pid = (uint32_t)opt_int(p, "pid", 0, UINT32_MAX, c->rank >= 0 ? c->rank : 0);
  c->t = json_object_get(p->j, "t") ? get_time(p, "t") : 0;
}

static void parse_link(struct parse *p, struct c4_link_record *l) {
  l->comm = get_id(p, "comm", 1);
  l->conn_id = get_id(p, "conn", 0);
  l->rank = (int32_t)get_int(p, "rank", INT32_MIN, INT32_MAX);
  l->peer = (int32_t)get_int(p, "peer", INT32_MIN, INT32_MAX);
  l->t = get_time(p, "t");
  char dir[C4_NAME_MAX] = "";
  get_str(p, "dir", dir, sizeof dir);
  if (!p->bad && strcmp(dir, "send") && strcmp(dir, "recv")) fail(p, "dir", "is not send or recv");
  l->dir = strcmp(dir, "recv") ? C4_DIR_SEND : C4_DIR_RECV;
}

/* Required: conn, host, peer_host, sock, nsocks, bytes, busy_ns, t. */
static void parse_path(struct parse *p, struct c4_path_record *a) {
  a->conn_id = get_id(p, "conn", 0);
  a->nccl_comm = opt_id(p, "comm", 0);
  get_str(p, "host", a->self.host, C4_HOST_MAX);
  get_str(p, "peer_host", a->peer.host, C4_HOST_MAX);
  a->self.rank = (int32_t)opt_int(p, "rank", INT32_MIN, INT32_MAX, -1);
  a->peer.rank = (int32_t)opt_int(p, "peer", INT32_MIN, INT32_MAX, -1);
  a->self.pid = (uint32_t)opt_int(p, "pid", 0, UINT32_MAX, a->self.rank >= 0 ? a->self.rank : 0);
  a->peer.pid =
      (uint32_t)opt_int(p, "peer_pid", 0, UINT32_MAX, a->peer.rank >= 0 ? a->peer.rank : 0);
  a->self.dev = (int32_t)opt_int(p, "dev", INT32_MIN, INT32_MAX, -1);
  a->peer.dev = (int32_t)opt_int(p, "peer_dev", INT32_MIN, INT32_MAX, -1);
  a->nsocks = (uint8_t)get_int(p, "nsocks", 1, UINT8_MAX);
  a->sock = (uint8_t)get_int(p, "sock", 0, UINT8_MAX);
  if (!p->bad && a->sock >= a->nsocks) fail(p, "sock", "is not below nsocks");
  a->src_port = (uint16_t)opt_int(p, "src_port", 0, UINT16_MAX, 0);
  a->bytes = (uint64_t)get_int(p, "bytes", 0, INT64_MAX);
  a->busy_ns = (uint64_t)get_int(p, "busy_ns", 0, INT64_MAX);
  a->t = get_time(p, "t");
}

void c4_trace_minimal(struct c4_record *r) {
  if (r->kind == C4_REC_XFER) {
    struct c4_xfer_record *x = &r->xfer;
    int send = x->dir == C4_DIR_SEND;
    x->nccl_comm = 0;
    x->self.pid = x->self.rank >= 0 ? (uint32_t)x->self.rank : 0;
    x->peer.pid = x->peer.rank >= 0 ? (uint32_t)x->peer.rank : 0;
    x->self.dev = x->peer.dev = -1;
    x->seq = 0;
    x->t_first_byte = 0;
    x->status = x->t_done ? C4_XFER_OK : C4_XFER_PENDING;
    x->tag = send ? x->self.rank : x->peer.rank;
    x->conn_id = send ? conn_of_ends(&x->self, &x->peer) : conn_of_ends(&x->peer, &x->self);
  } else if (r->kind == C4_REC_COLL) {
    struct c4_coll_record *c = &r->coll;
    c->is_p2p = !strcmp(c->func, "Send") || !strcmp(c->func, "Recv");
    c->count = c->bytes;
    c->root = -1;
    c->dtype[0] = c->algo[0] = c->proto[0] = 0;
    c->nchannels = 0;
    c->nops = 0;
    c->t_enqueued = c->t_arrive;
  } else if (r->kind == C4_REC_COMM) {
    struct c4_comm_record *c = &r->comm;
    memset(c->name, 0, sizeof c->name);
    memset(c->host, 0, sizeof c->host);
    c->nnodes = -1;
    c->pid = c->rank >= 0 ? (uint32_t)c->rank : 0;
    c->t = 0;
  } else if (r->kind == C4_REC_RANK) {
    r->rank.pid = 0;
    r->rank.dropped = 0;
  }
}

/* "hb" and "end" lines; an hb line from before pids were written has none (read as 0), and one
 * without "dropped" reads as 0 dropped. */
static void parse_rank(struct parse *p, struct c4_rank_record *k, int is_end) {
  k->rank = (int32_t)get_int(p, "rank", INT32_MIN, INT32_MAX);
  get_str(p, "host", k->host, C4_HOST_MAX);
  k->t = get_time(p, "t");
  k->pid = (uint32_t)opt_int(p, "pid", 0, UINT32_MAX, 0);
  if (is_end) {
    json_t *clean = json_object_get(p->j, "clean");
    if (!json_is_boolean(clean)) fail(p, "clean", "is not true or false");
    k->event = json_is_true(clean) ? C4_RANK_BYE : C4_RANK_LOST;
    return;
  }
  k->event = C4_RANK_HB;
  k->entered = (uint64_t)get_int(p, "entered", 0, INT64_MAX);
  k->done = (uint64_t)get_int(p, "done", 0, INT64_MAX);
  k->dropped = (uint64_t)opt_int(p, "dropped", 0, INT64_MAX, 0);
}

/* A "header" line (docs/trace-format.md) with a host, a pid and a launcher rank: who the process
 * is, so that a communicator's ranks (its comm lines' host and pid) can be told by their
 * launcher ranks where no transfer or heartbeat says them. Returns 1 with *k filled, or 0 for a
 * header without all three (a line with no record, as every header was before). */
static int parse_header(json_t *j, struct c4_rank_record *k) {
  json_t *host = json_object_get(j, "host"), *pid = json_object_get(j, "pid"),
         *rank = json_object_get(j, "rank"), *mono = json_object_get(j, "mono_ns");
  if (!json_is_string(host) || json_string_length(host) >= C4_HOST_MAX ||
      memchr(json_string_value(host), 0, json_string_length(host)) || !json_is_integer(pid) ||
      !json_is_integer(rank) || json_integer_value(pid) < 0 ||
      json_integer_value(pid) > UINT32_MAX || json_integer_value(rank) < 0 ||
      json_integer_value(rank) > INT32_MAX)
    return 0;
  k->event = C4_RANK_HELLO;
  k->rank = (int32_t)json_integer_value(rank);
  k->pid = (uint32_t)json_integer_value(pid);
  memcpy(k->host, json_string_value(host), json_string_length(host) + 1);
  if (json_is_integer(mono) && json_integer_value(mono) > 0 &&
      (uint64_t)json_integer_value(mono) <= C4_FRAME_TIME_MAX)
    k->t = (uint64_t)json_integer_value(mono);
  return 1;
}

int c4_trace_parse_line(const char *line, size_t len, struct c4_record *out, char *err,
                        size_t errlen) {
  return c4_trace_parse_line_job(line, len, out, NULL, 0, err, errlen);
}

/* The name of the field whose value runs up to byte pos of line: the quoted key before the last
 * ':' ahead of pos (jansson refuses an integer past 2^63 before any field is read, and its
 * message names the number, not the field). Returns 1 with it in key, 0 when none is found. */
static int key_before(const char *line, size_t pos, char *key, size_t cap) {
  size_t i = pos;
  while (i > 0 && line[i - 1] != ':')
    i--;
  if (i == 0) return 0;
  size_t end = i - 1;
  while (end > 0 && (line[end - 1] == ' ' || line[end - 1] == '\t'))
    end--;
  if (end < 2 || line[end - 1] != '"') return 0;
  size_t start = end - 1;
  while (start > 0 && line[start - 1] != '"')
    start--;
  if (start == 0 || end - 1 - start >= cap) return 0;
  memcpy(key, line + start, end - 1 - start);
  key[end - 1 - start] = 0;
  c4_text_clean(key);
  return 1;
}

/* Whether header line j pairs its process's clocks, and then *clock, its wall_ns - mono_ns: what
 * puts the process's CLOCK_MONOTONIC times on the wall clock. */
static int header_clock(json_t *j, int64_t *clock) {
  json_t *wall = json_object_get(j, "wall_ns"), *mono = json_object_get(j, "mono_ns");
  if (!json_is_integer(wall) || !json_is_integer(mono) || json_integer_value(wall) <= 0 ||
      json_integer_value(mono) <= 0)
    return 0;
  *clock = (int64_t)json_integer_value(wall) - (int64_t)json_integer_value(mono);
  return 1;
}

/* c4_trace_parse_line_job, and for a header line that pairs its clocks, *clocked set with the
 * pair's difference in *clock (clock NULL: not asked). */
static int parse_line(const char *line, size_t len, struct c4_record *out, char *job, size_t joblen,
                      int64_t *clock, int *clocked, char *err, size_t errlen) {
  memset(out, 0, sizeof *out);
  if (job && joblen) job[0] = 0;
  json_error_t je;
  json_t *j = json_loadb(line, len, JSON_REJECT_DUPLICATES, &je);
  char key[64];
  if (!j && strstr(je.text, "too big integer") &&
      key_before(line, (size_t)je.position < len ? (size_t)je.position : len, key, sizeof key)) {
    snprintf(err, errlen, "field \"%s\" is an integer past 2^63", key);
    return C4_EPROTO;
  }
  if (!j || !json_is_object(j)) {
    snprintf(err, errlen, "not a JSON object%s%s", j ? "" : ": ", j ? "" : je.text);
    json_decref(j);
    return C4_EPROTO;
  }
  struct parse p = {.j = j, .err = err, .errlen = errlen};
  int64_t v = get_int(&p, "v", 0, INT32_MAX);
  const char *type = json_string_value(json_object_get(j, "type"));
  if (!p.bad && v != 1) fail(&p, "v", "is a version this reader does not know");
  if (!p.bad && !type) fail(&p, "type", "is missing or not a string");
  json_t *named = json_object_get(j, "job");
  if (!p.bad && named && !json_is_string(named) && !json_is_null(named))
    fail(&p, "job", "is not a string");
  if (!p.bad && json_is_string(named) && job && joblen)
    snprintf(job, joblen, "%s", json_string_value(named));
  int rc = 0;
  if (!p.bad && !strcmp(type, "xfer")) {
    out->kind = C4_REC_XFER;
    parse_xfer(&p, &out->xfer);
    rc = 1;
  } else if (!p.bad && !strcmp(type, "coll")) {
    out->kind = C4_REC_COLL;
    parse_coll(&p, &out->coll);
    rc = 1;
  } else if (!p.bad && !strcmp(type, "link")) {
    out->kind = C4_REC_LINK;
    parse_link(&p, &out->link);
    rc = 1;
  } else if (!p.bad && !strcmp(type, "path")) {
    out->kind = C4_REC_PATH;
    parse_path(&p, &out->path);
    rc = 1;
  } else if (!p.bad && !strcmp(type, "comm")) {
    out->kind = C4_REC_COMM;
    parse_comm(&p, &out->comm);
    rc = 1;
  } else if (!p.bad && !strcmp(type, "header")) {
    out->kind = C4_REC_RANK;
    if (clock) *clocked = header_clock(j, clock);
    rc = parse_header(j, &out->rank);
    if (!rc) memset(out, 0, sizeof *out);
  } else if (!p.bad && (!strcmp(type, "hb") || !strcmp(type, "end"))) {
    out->kind = C4_REC_RANK;
    parse_rank(&p, &out->rank, type[0] == 'e');
    rc = 1;
  }
  json_decref(j);
  if (p.bad) {
    memset(out, 0, sizeof *out);
    return C4_EPROTO;
  }
  return rc;
}

int c4_trace_parse_line_job(const char *line, size_t len, struct c4_record *out, char *job,
                            size_t joblen, char *err, size_t errlen) {
  return parse_line(line, len, out, job, joblen, NULL, NULL, err, errlen);
}

#define BIN_BUF (1 << 20)

int c4_trace_open(struct c4_trace_reader *r, const char *path) {
  FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
  if (!f) {
    memset(r, 0, sizeof *r);
    return C4_ENOTFOUND;
  }
  return c4_trace_open_stream(r, f);
}

/* A binary trace in a regular file is read through a mapping of the whole file: replaying a
 * 16,384-rank trace moves gigabytes, and copying them out of the page cache cost as much as
 * decoding them. Pipes and memory streams keep the buffered path. */
static void map_whole(struct c4_trace_reader *r) {
  struct stat st;
  int fd = fileno(r->f);
  if (fd < 0 || fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= C4_TRACE_BIN_MAGIC_LEN)
    return;
  void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
  if (p == MAP_FAILED) return;
  madvise(p, (size_t)st.st_size, MADV_SEQUENTIAL);
  r->map = p;
  r->map_len = (size_t)st.st_size;
}

int c4_trace_open_stream(struct c4_trace_reader *r, FILE *f) {
  memset(r, 0, sizeof *r);
  r->f = f;
  /* Peek for the binary magic; what was read is kept (stdin cannot seek) and parsed as the
   * start of the buffer either way. */
  r->buf = malloc(BIN_BUF);
  if (!r->buf) {
    c4_trace_close(r);
    return C4_ENOMEM;
  }
  r->cap = BIN_BUF;
  r->have = fread(r->buf, 1, C4_TRACE_BIN_MAGIC_LEN, r->f);
  if (r->have == C4_TRACE_BIN_MAGIC_LEN &&
      !memcmp(r->buf, C4_TRACE_BIN_MAGIC, C4_TRACE_BIN_MAGIC_LEN)) {
    r->binary = 1;
    r->pos = r->have;
    map_whole(r);
  } else if (r->have == C4_TRACE_BIN_MAGIC_LEN &&
             !memcmp(r->buf, C4_TRACE_BIN_MAGIC, C4_TRACE_BIN_MAGIC_LEN - 1)) {
    r->binary = 3; /* its records are not this build's: read none */
  }
  return 0;
}

/* Refills the buffer, keeping the undecoded bytes from pos on; grows it (up to 64 MiB) when
 * it is full without a whole line or record. Returns the bytes added (0 at the end). */
static size_t refill(struct c4_trace_reader *r) {
  size_t left = r->have - r->pos;
  memmove(r->buf, r->buf + r->pos, left);
  r->offset += r->pos;
  r->pos = 0;
  if (left == r->cap && r->cap < (64u << 20)) {
    uint8_t *b = realloc(r->buf, r->cap * 2);
    if (!b) return 0;
    r->buf = b;
    r->cap *= 2;
  }
  size_t n = fread(r->buf + left, 1, r->cap - left, r->f);
  r->have = left + n;
  return n;
}

#define READ_AHEAD 4096
#define POPULATE_CHUNK (16u << 20)

/* Fills the mapping's page tables a chunk ahead of pos, in one call per chunk: read page by page,
 * a 1.5 GB trace took 42,000 page faults, a tenth of its replay's time on this VM (each fault a
 * trap into a paravirtualized kernel). Kernels before 5.14 refuse the advice; the pages then
 * fault in as before. */
static void populate_ahead(struct c4_trace_reader *r, size_t pos) {
#ifdef MADV_POPULATE_READ
  while (r->populated < r->map_len && r->populated < pos + POPULATE_CHUNK) {
    size_t len =
        r->map_len - r->populated < POPULATE_CHUNK ? r->map_len - r->populated : POPULATE_CHUNK;
    (void)madvise((void *)(r->map + r->populated), len, MADV_POPULATE_READ);
    r->populated += len;
  }
#else
  (void)r;
  (void)pos;
#endif
}

/* Decodes the next record of a binary trace. */
static int next_binary(struct c4_trace_reader *r, struct c4_record *out, char *err, size_t errlen) {
  for (;;) {
    if (r->binary == 2) return 0;
    const uint8_t *b = r->map ? r->map : r->buf;
    size_t have = r->map ? r->map_len : r->have;
    if (r->pos < have) {
      /* the records READ_AHEAD bytes on: the hardware's prefetch stops at each page's end;
       * each line once (records are shorter than the 256 bytes looked ahead) */
      if (r->map) populate_ahead(r, r->pos);
      if (r->map && r->ahead < r->pos + READ_AHEAD + 256) {
        size_t to = r->pos + READ_AHEAD + 256 < have ? r->pos + READ_AHEAD + 256 : have;
        if (r->ahead < r->pos + READ_AHEAD) r->ahead = r->pos + READ_AHEAD;
        for (; r->ahead < to; r->ahead += 64)
          __builtin_prefetch(b + r->ahead, 0, 0);
      }
      int n = c4_frame_get_record(b + r->pos, have - r->pos, out);
      if (n > 0) {
        r->pos += (size_t)n;
        r->lineno++;
        return 1;
      }
      size_t need = c4_frame_record_length(b + r->pos, have - r->pos);
      if (need && need > have - r->pos && !r->map && refill(r)) continue;
      r->bad++;
      r->binary = 2; /* no way to find the next record: stop after this error */
      snprintf(err, errlen, "byte %" PRIu64 ": %s", r->offset + r->pos,
               !need                  ? "not a record kind this reader knows"
               : need > have - r->pos ? "truncated record"
                                      : "a field is out of range");
      return C4_EPROTO;
    }
    if (r->map || !refill(r)) return 0;
  }
}

int c4_trace_next_many(struct c4_trace_reader *r, struct c4_record *out, int max) {
  if (!r->map || r->binary != 1) return 0;
  const uint8_t *b = r->map;
  size_t have = r->map_len, pos = r->pos, ahead = r->ahead;
  int n = 0;
  populate_ahead(r, pos);
  for (; n < max && pos < have; n++) {
    if (ahead < pos + READ_AHEAD) ahead = pos + READ_AHEAD; /* as next_binary looks ahead */
    for (size_t to = pos + READ_AHEAD + 256 < have ? pos + READ_AHEAD + 256 : have; ahead < to;
         ahead += 64)
      __builtin_prefetch(b + ahead, 0, 0);
    int len = c4_frame_get_record(b + pos, have - pos, &out[n]);
    if (len <= 0) break; /* c4_trace_next decodes it again and says why */
    pos += (size_t)len;
  }
  r->pos = pos;
  r->ahead = ahead;
  r->lineno += (unsigned long)n;
  return n;
}

int c4_trace_next(struct c4_trace_reader *r, struct c4_record *out, char *err, size_t errlen) {
  if (r->binary == 3) {
    r->bad++;
    r->binary = 2;
    snprintf(err, errlen,
             "byte 7: a binary trace of stream protocol version %u; this build reads version %u "
             "(write the trace again with this build's c4scen or c4mon)",
             r->buf[C4_TRACE_BIN_MAGIC_LEN - 1],
             (unsigned)C4_TRACE_BIN_MAGIC[C4_TRACE_BIN_MAGIC_LEN - 1]);
    return C4_EPROTO;
  }
  if (r->binary) return next_binary(r, out, err, errlen);
  for (;;) {
    uint8_t *nl = r->pos < r->have ? memchr(r->buf + r->pos, '\n', r->have - r->pos) : NULL;
    if (!nl && refill(r)) continue;
    if (!nl && r->pos == r->have) return 0;
    /* a line, or the last one without a newline */
    char *line = (char *)r->buf + r->pos;
    size_t n = nl ? (size_t)(nl - (r->buf + r->pos)) : r->have - r->pos;
    r->pos += n + (nl != NULL);
    r->lineno++;
    if (r->lineno == 1 && n >= 3 && !memcmp(line, "\xef\xbb\xbf", 3)) { /* a UTF-8 mark */
      line += 3;
      n -= 3;
    }
    while (n > 0 && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
      n--;
    size_t lead = 0;
    while (lead < n && (line[lead] == ' ' || line[lead] == '\t'))
      lead++;
    if (lead == n) continue; /* blank */
    char why[200];
    int clocked = 0;
    int rc = parse_line(line, n, out, r->job, sizeof r->job, &r->clock, &clocked, why, sizeof why);
    if (clocked) r->clock_line = r->lineno;
    if (rc == 1) return 1;
    if (rc < 0) {
      r->bad++;
      c4_text_clean(why); /* a line's bytes quoted back must not drive a terminal */
      snprintf(err, errlen, "line %lu: %s", r->lineno, why);
      return rc;
    }
  }
}

void c4_trace_close(struct c4_trace_reader *r) {
  if (r->map) munmap((void *)r->map, r->map_len);
  if (r->f && r->f != stdin) fclose(r->f);
  free(r->buf);
  memset(r, 0, sizeof *r);
}
