/* scen_out.c -- holds generated records, sorts them by time (a stable radix sort: equal times
 * keep the order they were made in) and encodes them as trace lines or binary records. */
#include "scen_out.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "c4_frame.h"
#include "c4_trace_bin.h"
#include "c4_trace_json.h"
#include "c4_trace_read.h"
#include "scen_fault.h"
#include "scen_sink.h"

struct c4_scen_sortitem {
  uint64_t key;
  uint32_t idx;
};

uint64_t c4_scen_record_time(const struct c4_record *r) {
  switch (r->kind) {
  case C4_REC_XFER:
    if (r->xfer.t_done) return r->xfer.t_done;
    return r->xfer.status == C4_XFER_PENDING ? r->xfer.t_posted + C4_SCEN_STUCK_NS
                                             : r->xfer.t_posted;
  case C4_REC_COLL: return r->coll.t_done ? r->coll.t_done : r->coll.t_arrive;
  case C4_REC_COMM: return r->comm.t;
  case C4_REC_LINK: return r->link.t;
  case C4_REC_RANK: return r->rank.t;
  default: return 0;
  }
}

int c4_scen_variant_of(const char *s) {
  static const char *const names[] = {"full", "minimal", "send", "recv", "wrap"};
  for (int i = 0; i < (int)(sizeof names / sizeof *names); i++)
    if (!strcmp(s, names[i])) return i;
  return C4_NONE;
}

int c4_scen_out_open(struct c4_scen_out *o, const char *path, int bin, int variant) {
  memset(o, 0, sizeof *o);
  o->drop_rank = -1;
  o->bin = bin;
  o->variant = variant;
  int rc = c4_scen_sink_open(&o->sink, path);
  if (!rc && bin) rc = c4_scen_sink_put(o->sink, C4_TRACE_BIN_MAGIC, C4_TRACE_BIN_MAGIC_LEN);
  return o->err = rc;
}

struct c4_record *c4_scen_out_add(struct c4_scen_out *o, uint32_t kind) {
  if (o->err) return NULL;
  if (o->n == o->cap) {
    size_t cap = o->cap ? 2 * o->cap : 1 << 16;
    struct c4_record *rec = realloc(o->rec, cap * sizeof *rec);
    if (rec) o->rec = rec;
    struct c4_record *keep = realloc(o->keep, cap * sizeof *keep);
    if (keep) o->keep = keep;
    struct c4_scen_sortitem *items = realloc(o->items, cap * sizeof *items);
    if (items) o->items = items;
    struct c4_scen_sortitem *tmp = realloc(o->tmp, cap * sizeof *tmp);
    if (tmp) o->tmp = tmp;
    if (!rec || !keep || !items || !tmp) {
      o->err = C4_ENOMEM;
      return NULL;
    }
    o->cap = cap;
  }
  struct c4_record *r = &o->rec[o->n++];
  memset(r, 0, sizeof *r);
  r->kind = kind;
  return r;
}

/* Sorts a[0..n) by key, stably, 11 bits a pass over the keys' range. */
static void radix_sort(struct c4_scen_sortitem *a, struct c4_scen_sortitem *tmp, size_t n) {
  uint64_t lo = UINT64_MAX, hi = 0;
  for (size_t i = 0; i < n; i++) {
    if (a[i].key < lo) lo = a[i].key;
    if (a[i].key > hi) hi = a[i].key;
  }
  size_t count[1 << 11];
  for (int shift = 0; shift < 64 && ((hi - lo) >> shift); shift += 11) {
    memset(count, 0, sizeof count);
    for (size_t i = 0; i < n; i++)
      count[((a[i].key - lo) >> shift) & 2047]++;
    for (size_t b = 0, sum = 0; b < 2048; b++) {
      size_t c = count[b];
      count[b] = sum;
      sum += c;
    }
    for (size_t i = 0; i < n; i++)
      tmp[count[((a[i].key - lo) >> shift) & 2047]++] = a[i];
    memcpy(a, tmp, n * sizeof *a);
  }
}

/* The launcher rank a record belongs to (in this trace, communicator ranks are launcher ranks). */
static int owner(const struct c4_record *r) {
  switch (r->kind) {
  case C4_REC_XFER: return r->xfer.self.rank;
  case C4_REC_COLL: return r->coll.rank;
  case C4_REC_COMM: return r->comm.rank;
  case C4_REC_RANK: return r->rank.event == C4_RANK_HB ? r->rank.rank : -1;
  default: return C4_NONE;
  }
}

/* The fields a line keeps in the minimal variant: the required ones of its type
 * (docs/trace-format.md). */
static const char *minimal_keys(const struct c4_record *r) {
  switch (r->kind) {
  case C4_REC_XFER: return " v type rank peer host peer_host dir bytes t_post t_done ";
  case C4_REC_COLL: return " v type comm rank nranks seq func bytes t_arrive t_done ";
  case C4_REC_COMM: return " v type comm nranks rank ";
  case C4_REC_RANK: return " v type rank host t entered done clean ";
  case C4_REC_LINK: return " v type comm rank peer conn dir t ";
  default: return " v type ";
  }
}

/* A record's line as another tool could write it: the required fields only. */
static json_t *minimal_json(const struct c4_record *r) {
  json_t *j = c4_record_json(r), *v;
  const char *k, *keep = minimal_keys(r);
  void *tmp;
  char word[32];
  json_object_foreach_safe(j, tmp, k, v) {
    snprintf(word, sizeof word, " %s ", k);
    if (!strstr(keep, word)) json_object_del(j, k);
  }
  return j;
}

/* What a tracer of the variant would have recorded of r: 0 when it records nothing of it. The
 * minimal variant's fields are dropped at encoding. */
static int as_variant(int variant, struct c4_record *r) {
  if (r->kind != C4_REC_XFER) return 1;
  struct c4_xfer_record *x = &r->xfer;
  if (variant == C4_SCEN_SEND) return x->dir == C4_DIR_SEND;
  if (variant == C4_SCEN_RECV) return x->dir == C4_DIR_RECV;
  if (variant == C4_SCEN_WRAP) {
    x->t_first_byte = 0; /* the wrapped plugin does not tell */
    if (x->dir == C4_DIR_RECV) x->peer = (struct c4_identity){.rank = -1, .dev = -1};
  }
  return 1;
}

/* Encodes r as the binary form's record (the stream codec) or as a trace line. A minimal binary
 * record is what the reader makes of the minimal line (tests/unit/test_scenario.c holds them to
 * that). */
static void write_one(struct c4_scen_out *o, const struct c4_record *orig) {
  if (o->err) return;
  struct c4_record copy = *orig;
  const struct c4_record *r = &copy;
  if (!as_variant(o->variant, &copy)) return;
  if (o->variant == C4_SCEN_MINIMAL && o->bin) c4_trace_minimal(&copy);
  if (o->bin) {
    size_t room = c4_frame_record_size(r->kind), n = 0;
    uint8_t *p = room ? c4_scen_sink_space(o->sink, room) : NULL;
    if (!p || !(n = c4_frame_put_record(p, room, r))) {
      o->err = p || !room ? C4_EINVAL : C4_ESYS;
      return;
    }
    c4_scen_sink_wrote(o->sink, n);
  } else {
    json_t *j = o->variant == C4_SCEN_MINIMAL ? minimal_json(r) : c4_record_json(r);
    char *line = j ? json_dumps(j, JSON_COMPACT) : NULL;
    json_decref(j);
    if (!line) {
      o->err = C4_ENOMEM;
      return;
    }
    size_t n = strlen(line);
    line[n] = '\n'; /* over the NUL: the line goes out whole */
    if (c4_scen_sink_put(o->sink, line, n + 1)) o->err = C4_ESYS;
    free(line);
  }
  if (!o->err) o->written++;
}

int c4_scen_out_flush(struct c4_scen_out *o, uint64_t upto) {
  if (o->err || !o->n) return o->err;
  for (size_t i = 0; i < o->n; i++)
    o->items[i] = (struct c4_scen_sortitem){c4_scen_record_time(&o->rec[i]), (uint32_t)i};
  radix_sort(o->items, o->tmp, o->n);
  size_t w = 0;
  for (; w < o->n && o->items[w].key <= upto; w++) {
    const struct c4_record *r = &o->rec[o->items[w].idx];
    if (o->drop_rank < 0 || owner(r) != o->drop_rank || o->items[w].key < o->drop_from)
      write_one(o, r);
  }
  size_t left = o->n - w;
  for (size_t i = 0; i < left; i++)
    o->keep[i] = o->rec[o->items[w + i].idx];
  memcpy(o->rec, o->keep, left * sizeof *o->rec);
  o->n = left;
  return o->err;
}

int c4_scen_out_close(struct c4_scen_out *o) {
  if (o->sink) {
    c4_scen_out_flush(o, UINT64_MAX);
    int rc = c4_scen_sink_close(o->sink);
    if (rc && !o->err) o->err = rc;
    o->sink = NULL;
  }
  free(o->rec);
  free(o->keep);
  free(o->items);
  free(o->tmp);
  o->rec = o->keep = NULL;
  o->items = o->tmp = NULL;
  return o->err;
}
