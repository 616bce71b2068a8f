/* c4_frame.c -- little-endian frame and record codec for the stream protocol, with bounds
 * checked on every read, and the HELLO's HMAC-SHA256 (OpenSSL's libcrypto). */
#include "c4_frame.h"

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <string.h>

#include "c4_err.h"

#define MAGIC 0x3443
#define VERSION 2 /* 2: records' strings are length-prefixed */

/* A cursor over a buffer; any read or write past the end sets bad and does nothing. */
struct cur {
  uint8_t *w;
  const uint8_t *r;
  size_t left;
  int bad;
};

static void put(struct cur *c, const void *p, size_t n) {
  if (c->bad || n > c->left) {
    c->bad = 1;
    return;
  }
  memcpy(c->w, p, n);
  c->w += n;
  c->left -= n;
}

static void put_le(struct cur *c, uint64_t v, int n) {
  uint8_t b[8];
  for (int i = 0; i < n; i++)
    b[i] = (uint8_t)(v >> (8 * i));
  put(c, b, (size_t)n);
}

/* Writes a string into a NUL-padded field of n bytes (always terminated). */
static void put_str(struct cur *c, const char *s, size_t n) {
  uint8_t f[C4_FRAME_NAME] = {0};
  size_t len = strnlen(s, n - 1);
  memcpy(f, s, len);
  put(c, f, n);
}

static void get(struct cur *c, void *p, size_t n) {
  if (c->bad || n > c->left) {
    c->bad = 1;
    memset(p, 0, n);
    return;
  }
  memcpy(p, c->r, n);
  c->r += n;
  c->left -= n;
}

static uint64_t get_le(struct cur *c, int n) {
  uint8_t b[8] = {0};
  get(c, b, (size_t)n);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  uint64_t v; /* the wire's order is the host's: one load (c4mon decodes millions a second) */
  memcpy(&v, b, sizeof v);
  return v;
#else
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; i--)
    v = (v << 8) | b[i];
  return v;
#endif
}

/* Reads a NUL-padded field of n bytes into s (capacity >= n, zeroed by the caller: both callers
 * clear their whole struct first); a field without NUL is bad. A word at a time up to the NUL,
 * with no string call: c4mon replays millions of records a second, four strings each, and
 * strnlen there cost a quarter of the replay. */
static void get_str(struct cur *c, char *s, size_t n) {
  if (c->bad || n > c->left) {
    c->bad = 1;
    return;
  }
  const uint8_t *f = c->r;
  size_t i = 0;
  for (uint64_t w; i + 8 <= n; i += 8) { /* whole words, up to the one holding the NUL */
    memcpy(&w, f + i, 8);
    if ((w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull) break;
    memcpy(s + i, &w, 8);
  }
  for (; i < n && f[i]; i++)
    s[i] = (char)f[i];
  if (i == n) c->bad = 1;
  c->r += n;
  c->left -= n;
}

/* A record's string: a length byte, then that many bytes, none of them NUL; the length is below
 * the field's size n, so the decoded string fits with its NUL. Version 1 padded every string to
 * its field: three fifths of a transfer record were padding, and a 16,384-rank stream or trace
 * is millions of them a second. */
static void put_lstr(struct cur *c, const char *s, size_t n) {
  size_t len = strnlen(s, n - 1);
  put_le(c, len, 1);
  put(c, s, len);
}

/* Decodes such a string into s (n bytes), zero-filled after it; a length of n or more, or a NUL
 * inside, is bad. */
static void get_lstr(struct cur *c, char *s, size_t n) {
  size_t len = (size_t)get_le(c, 1);
  if (c->bad || len >= n || len > c->left) {
    c->bad = 1;
    memset(s, 0, n);
    return;
  }
  memcpy(s, c->r, len);
  memset(s + len, 0, n - len);
  if (memchr(s, 0, len)) c->bad = 1;
  c->r += len;
  c->left -= len;
}

void c4_frame_put_header(uint8_t out[C4_FRAME_HDR], int type, uint32_t length) {
  struct cur c = {.w = out, .left = C4_FRAME_HDR};
  put_le(&c, MAGIC, 2);
  put_le(&c, VERSION, 1);
  put_le(&c, (uint64_t)type, 1);
  put_le(&c, length, 4);
}

int c4_frame_get_header(const uint8_t in[C4_FRAME_HDR], int *type, uint32_t *length) {
  struct cur c = {.r = in, .left = C4_FRAME_HDR};
  uint64_t magic = get_le(&c, 2), version = get_le(&c, 1);
  *type = (int)get_le(&c, 1);
  *length = (uint32_t)get_le(&c, 4);
  if (magic != MAGIC || version != VERSION || *type < C4_FRAME_CHALLENGE || *type > C4_FRAME_PLAN ||
      *length > C4_FRAME_MAX_PAYLOAD)
    return C4_EPROTO;
  return 0;
}

static void put_end(struct cur *c, const struct c4_identity *id) {
  put_le(c, (uint32_t)id->rank, 4);
  put_le(c, id->pid, 4);
  put_le(c, (uint32_t)id->dev, 4);
  put_lstr(c, id->host, C4_HOST_MAX);
}

static void get_end(struct cur *c, struct c4_identity *id) {
  id->rank = (int32_t)get_le(c, 4);
  id->pid = (uint32_t)get_le(c, 4);
  id->dev = (int32_t)get_le(c, 4);
  get_lstr(c, id->host, C4_HOST_MAX);
}

/* Each kind's layout: runs of fixed-size fields (positive: their bytes) and strings (STR: a length
 * byte and at most the field's size minus one bytes), from the kind byte on. */
#define STR (-1)
static const int8_t layouts[][8] = {
    [C4_REC_XFER] = {1 + 8 * 3 + 1 + 1 + 4 + 8 * 4 + 12, STR, 12, STR},
    [C4_REC_COLL] = {1 + 8 + 8 + 4 + 4 + 1 + 1 + 2 + 4 + 8 + 8, STR, STR, STR, STR, 3 * 8},
    [C4_REC_COMM] = {1 + 8, STR, 4 * 4, STR, 8},
    [C4_REC_LINK] = {1 + 8 + 8 + 4 + 4 + 1 + 8},
    [C4_REC_RANK] = {1 + 4 + 4 + 1, STR, 8 * 4},
    [C4_REC_PATH] = {1 + 8 + 8 + 1 + 1 + 2 + 8 * 3 + 12, STR, 12, STR},
};
static const uint8_t string_sizes[][4] = {
    [C4_REC_XFER] = {C4_HOST_MAX, C4_HOST_MAX},
    [C4_REC_COLL] = {C4_NAME_MAX, C4_NAME_MAX, C4_NAME_MAX, C4_NAME_MAX},
    [C4_REC_COMM] = {64, C4_HOST_MAX},
    [C4_REC_RANK] = {C4_HOST_MAX},
    [C4_REC_PATH] = {C4_HOST_MAX, C4_HOST_MAX},
};

static int known_kind(uint32_t kind) { return kind >= C4_REC_XFER && kind <= C4_REC_PATH; }

size_t c4_frame_record_size(uint32_t kind) {
  if (!known_kind(kind)) return 0;
  size_t n = 0;
  for (int i = 0, s = 0; i < 8 && layouts[kind][i]; i++)
    n += layouts[kind][i] == STR ? string_sizes[kind][s++] : (size_t)layouts[kind][i];
  return n;
}

size_t c4_frame_record_length(const uint8_t *in, size_t len) {
  if (len < 1) return 1; /* not even its kind yet */
  if (!known_kind(in[0])) return 0;
  size_t n = 0;
  for (int i = 0; i < 8 && layouts[in[0]][i]; i++) {
    if (layouts[in[0]][i] != STR) {
      n += (size_t)layouts[in[0]][i];
      continue;
    }
    if (n >= len) return len + 1; /* the length byte is not there yet */
    n += 1 + (size_t)in[n];
  }
  return n;
}

static void put_xfer(struct cur *c, const struct c4_xfer_record *x) {
  put_le(c, x->conn_id, 8);
  put_le(c, x->nccl_comm, 8);
  put_le(c, x->seq, 8);
  put_le(c, x->dir, 1);
  put_le(c, x->status, 1);
  put_le(c, (uint32_t)x->tag, 4);
  put_le(c, x->bytes, 8);
  put_le(c, x->t_posted, 8);
  put_le(c, x->t_first_byte, 8);
  put_le(c, x->t_done, 8);
  put_end(c, &x->self);
  put_end(c, &x->peer);
}

static void put_coll(struct cur *c, const struct c4_coll_record *k) {
  put_le(c, k->comm, 8);
  put_le(c, k->seq, 8);
  put_le(c, (uint32_t)k->rank, 4);
  put_le(c, (uint32_t)k->nranks, 4);
  put_le(c, k->is_p2p, 1);
  put_le(c, k->nchannels, 1);
  put_le(c, k->nops, 2);
  put_le(c, (uint32_t)k->root, 4);
  put_le(c, k->count, 8);
  put_le(c, k->bytes, 8);
  put_lstr(c, k->func, C4_NAME_MAX);
  put_lstr(c, k->dtype, C4_NAME_MAX);
  put_lstr(c, k->algo, C4_NAME_MAX);
  put_lstr(c, k->proto, C4_NAME_MAX);
  put_le(c, k->t_arrive, 8);
  put_le(c, k->t_enqueued, 8);
  put_le(c, k->t_done, 8);
}

static void put_link(struct cur *c, const struct c4_link_record *l) {
  put_le(c, l->comm, 8);
  put_le(c, l->conn_id, 8);
  put_le(c, (uint32_t)l->rank, 4);
  put_le(c, (uint32_t)l->peer, 4);
  put_le(c, l->dir, 1);
  put_le(c, l->t, 8);
}

static void put_rank(struct cur *c, const struct c4_rank_record *k) {
  put_le(c, (uint32_t)k->rank, 4);
  put_le(c, k->pid, 4);
  put_le(c, k->event, 1);
  put_lstr(c, k->host, C4_HOST_MAX);
  put_le(c, k->t, 8);
  put_le(c, k->entered, 8);
  put_le(c, k->done, 8);
  put_le(c, k->dropped, 8);
}

static void put_path(struct cur *c, const struct c4_path_record *a) {
  put_le(c, a->conn_id, 8);
  put_le(c, a->nccl_comm, 8);
  put_le(c, a->sock, 1);
  put_le(c, a->nsocks, 1);
  put_le(c, a->src_port, 2);
  put_le(c, a->bytes, 8);
  put_le(c, a->busy_ns, 8);
  put_le(c, a->t, 8);
  put_end(c, &a->self);
  put_end(c, &a->peer);
}

static void put_comm(struct cur *c, const struct c4_comm_record *m) {
  put_le(c, m->comm, 8);
  put_lstr(c, m->name, 64);
  put_le(c, (uint32_t)m->rank, 4);
  put_le(c, (uint32_t)m->nranks, 4);
  put_le(c, (uint32_t)m->nnodes, 4);
  put_le(c, m->pid, 4);
  put_lstr(c, m->host, C4_HOST_MAX);
  put_le(c, m->t, 8);
}

size_t c4_frame_put_record(uint8_t *out, size_t cap, const struct c4_record *r) {
  if (!known_kind(r->kind)) return 0;
  struct cur c = {.w = out, .left = cap};
  put_le(&c, r->kind, 1);
  if (r->kind == C4_REC_XFER)
    put_xfer(&c, &r->xfer);
  else if (r->kind == C4_REC_COLL)
    put_coll(&c, &r->coll);
  else if (r->kind == C4_REC_LINK)
    put_link(&c, &r->link);
  else if (r->kind == C4_REC_RANK)
    put_rank(&c, &r->rank);
  else if (r->kind == C4_REC_PATH)
    put_path(&c, &r->path);
  else
    put_comm(&c, &r->comm);
  return c.bad ? 0 : cap - c.left;
}

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
static uint64_t ld64(const uint8_t *p) {
  uint64_t v;
  memcpy(&v, p, 8);
  return v;
}

/* Nonzero when some byte of w is zero (the lowest flagged byte is the first zero). */
static uint64_t zero_byte(uint64_t w) {
  return (w - 0x0101010101010101ull) & ~w & 0x8080808080808080ull;
}

/* Copies a record's string (its length byte at f) into s, n bytes (a multiple of 8), zero-filled
 * after it, so the caller need not clear s first. Returns 0 for a length of n or more, or a NUL
 * inside. A word at a time, the last partial word loaded so that it ends with the string: that
 * load may start up to 7 bytes before the string, which is safe because every string the fast
 * decoders read sits 9 bytes or more into its record (string calls here were a third of a
 * replay). The caller has checked that the whole string is in the buffer. */
__attribute__((always_inline)) static inline int copy_lstr(char *s, const uint8_t *f, size_t n) {
  size_t len = f[0], i = 0;
  if (len >= n) return 0;
  uint64_t nul = 0;
  memset(s, 0, n);
  for (; i + 8 <= len; i += 8) {
    uint64_t w = ld64(f + 1 + i);
    nul |= zero_byte(w);
    memcpy(s + i, &w, 8);
  }
  if (i < len) {
    unsigned tail = (unsigned)(len - i); /* 1..7 bytes, the last ones of an 8-byte load */
    uint64_t w = ld64(f + 1 + len - 8) >> (8 * (8 - tail));
    nul |= zero_byte(w | ~0ull << (8 * tail));
    memcpy(s + i, &w, 8);
  }
  return !nul;
}

static uint32_t ld32(const uint8_t *p) {
  uint32_t v;
  memcpy(&v, p, 4);
  return v;
}

/* One end of a transfer at p: rank, pid, dev, then the host string. Returns 0 when the host is
 * bad. */
__attribute__((always_inline)) static inline int get_end_at(const uint8_t *p,
                                                            struct c4_identity *id) {
  id->rank = (int32_t)ld32(p);
  id->pid = ld32(p + 4);
  id->dev = (int32_t)ld32(p + 8);
  return copy_lstr(id->host, p + 12, C4_HOST_MAX);
}

/* The transfer record, most of any stream or trace, at its offsets after bounds checks on its
 * two string lengths, and every field of the union written, so the record needs no clearing
 * first: the generic cursor below cost c4mon's replay a sixth of its time. Returns its length,
 * or 0 (truncated, or a field out of range). */
static size_t get_xfer_fast(const uint8_t *p, size_t len, struct c4_record *r) {
  struct c4_xfer_record *x = &r->xfer;
  _Static_assert(sizeof r->xfer == sizeof *r - offsetof(struct c4_record, xfer),
                 "the transfer record fills the union: nothing else needs clearing");
  const size_t self = 63, peer = self + 13 + (len > self + 12 ? p[self + 12] : 0);
  if (len < peer + 13) return 0;
  const size_t n = peer + 13 + p[peer + 12];
  if (len < n) return 0;
  r->kind = C4_REC_XFER;
  r->reserved = 0;
  x->version = C4_RECORD_VERSION;
  x->conn_id = ld64(p + 1);
  x->nccl_comm = ld64(p + 9);
  x->seq = ld64(p + 17);
  x->dir = p[25];
  x->status = p[26];
  x->tag = (int32_t)ld32(p + 27);
  x->bytes = ld64(p + 31);
  x->t_posted = ld64(p + 39);
  x->t_first_byte = ld64(p + 47);
  x->t_done = ld64(p + 55);
  int ok = get_end_at(p + self, &x->self);
  ok &= get_end_at(p + peer, &x->peer);
  return ok && x->dir <= C4_DIR_RECV && x->status <= C4_XFER_PENDING ? n : 0;
}

/* The collective record, the next most common (one per rank and collective), the same way: its
 * four names through the generic cursor were a tenth of a replay. */
static size_t get_coll_fast(const uint8_t *p, size_t len, struct c4_record *r) {
  struct c4_coll_record *k = &r->coll;
  size_t name[4], at = 49;
  for (int i = 0; i < 4; i++) {
    if (at >= len) return 0;
    name[i] = at;
    at += 1 + (size_t)p[at];
  }
  if (len < at + 24) return 0;
  r->kind = C4_REC_COLL;
  r->reserved = 0;
  k->comm = ld64(p + 1);
  k->seq = ld64(p + 9);
  k->rank = (int32_t)ld32(p + 17);
  k->nranks = (int32_t)ld32(p + 21);
  k->is_p2p = p[25];
  k->nchannels = p[26];
  k->nops = (uint16_t)(p[27] | p[28] << 8);
  k->root = (int32_t)ld32(p + 29);
  k->count = ld64(p + 33);
  k->bytes = ld64(p + 41);
  int ok = copy_lstr(k->func, p + name[0], C4_NAME_MAX);
  ok &= copy_lstr(k->dtype, p + name[1], C4_NAME_MAX);
  ok &= copy_lstr(k->algo, p + name[2], C4_NAME_MAX);
  ok &= copy_lstr(k->proto, p + name[3], C4_NAME_MAX);
  k->t_arrive = ld64(p + at);
  k->t_enqueued = ld64(p + at + 8);
  k->t_done = ld64(p + at + 16);
  /* the rest of the union reads as zero, as after the generic path's clearing */
  memset((char *)k + sizeof *k, 0, sizeof *r - offsetof(struct c4_record, coll) - sizeof *k);
  return ok && k->is_p2p <= 1 ? at + 24 : 0;
}
#endif

/* The generic decoders, one per kind, through the bounds-checked cursor: each sets c->bad on a
 * field out of range. */
static void get_xfer(struct cur *c, struct c4_xfer_record *x) {
  x->version = C4_RECORD_VERSION;
  x->conn_id = get_le(c, 8);
  x->nccl_comm = get_le(c, 8);
  x->seq = get_le(c, 8);
  x->dir = (uint8_t)get_le(c, 1);
  x->status = (uint8_t)get_le(c, 1);
  x->tag = (int32_t)get_le(c, 4);
  x->bytes = get_le(c, 8);
  x->t_posted = get_le(c, 8);
  x->t_first_byte = get_le(c, 8);
  x->t_done = get_le(c, 8);
  get_end(c, &x->self);
  get_end(c, &x->peer);
  if (x->dir > C4_DIR_RECV || x->status > C4_XFER_PENDING) c->bad = 1;
}

static void get_coll(struct cur *c, struct c4_coll_record *k) {
  k->comm = get_le(c, 8);
  k->seq = get_le(c, 8);
  k->rank = (int32_t)get_le(c, 4);
  k->nranks = (int32_t)get_le(c, 4);
  k->is_p2p = (uint8_t)get_le(c, 1);
  k->nchannels = (uint8_t)get_le(c, 1);
  k->nops = (uint16_t)get_le(c, 2);
  k->root = (int32_t)get_le(c, 4);
  k->count = get_le(c, 8);
  k->bytes = get_le(c, 8);
  get_lstr(c, k->func, C4_NAME_MAX);
  get_lstr(c, k->dtype, C4_NAME_MAX);
  get_lstr(c, k->algo, C4_NAME_MAX);
  get_lstr(c, k->proto, C4_NAME_MAX);
  k->t_arrive = get_le(c, 8);
  k->t_enqueued = get_le(c, 8);
  k->t_done = get_le(c, 8);
  if (k->is_p2p > 1) c->bad = 1;
}

static void get_link(struct cur *c, struct c4_link_record *l) {
  l->comm = get_le(c, 8);
  l->conn_id = get_le(c, 8);
  l->rank = (int32_t)get_le(c, 4);
  l->peer = (int32_t)get_le(c, 4);
  l->dir = (uint8_t)get_le(c, 1);
  l->t = get_le(c, 8);
  if (l->dir > C4_DIR_RECV) c->bad = 1;
}

static void get_rank(struct cur *c, struct c4_rank_record *k) {
  k->rank = (int32_t)get_le(c, 4);
  k->pid = (uint32_t)get_le(c, 4);
  k->event = (uint8_t)get_le(c, 1);
  get_lstr(c, k->host, C4_HOST_MAX);
  k->t = get_le(c, 8);
  k->entered = get_le(c, 8);
  k->done = get_le(c, 8);
  k->dropped = get_le(c, 8);
  if (k->event > C4_RANK_HELLO) c->bad = 1;
}

static void get_path(struct cur *c, struct c4_path_record *a) {
  a->conn_id = get_le(c, 8);
  a->nccl_comm = get_le(c, 8);
  a->sock = (uint8_t)get_le(c, 1);
  a->nsocks = (uint8_t)get_le(c, 1);
  a->src_port = (uint16_t)get_le(c, 2);
  a->bytes = get_le(c, 8);
  a->busy_ns = get_le(c, 8);
  a->t = get_le(c, 8);
  get_end(c, &a->self);
  get_end(c, &a->peer);
  if (a->sock >= a->nsocks) c->bad = 1;
}

static void get_comm(struct cur *c, struct c4_comm_record *m) {
  m->comm = get_le(c, 8);
  get_lstr(c, m->name, 64);
  m->rank = (int32_t)get_le(c, 4);
  m->nranks = (int32_t)get_le(c, 4);
  m->nnodes = (int32_t)get_le(c, 4);
  m->pid = (uint32_t)get_le(c, 4);
  get_lstr(c, m->host, C4_HOST_MAX);
  m->t = get_le(c, 8);
}

int c4_frame_get_record(const uint8_t *in, size_t len, struct c4_record *r) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
  if (len && (in[0] == C4_REC_XFER || in[0] == C4_REC_COLL)) {
    size_t n = in[0] == C4_REC_XFER ? get_xfer_fast(in, len, r) : get_coll_fast(in, len, r);
    if (n) return (int)n;
    memset(r, 0, sizeof *r);
    return C4_EPROTO;
  }
#endif
  size_t need = c4_frame_record_length(in, len);
  memset(r, 0, sizeof *r);
  if (!need || need > len) return C4_EPROTO;
  struct cur c = {.r = in, .left = need};
  r->kind = (uint32_t)get_le(&c, 1);
  if (r->kind == C4_REC_XFER)
    get_xfer(&c, &r->xfer);
  else if (r->kind == C4_REC_COLL)
    get_coll(&c, &r->coll);
  else if (r->kind == C4_REC_LINK)
    get_link(&c, &r->link);
  else if (r->kind == C4_REC_RANK)
    get_rank(&c, &r->rank);
  else if (r->kind == C4_REC_PATH)
    get_path(&c, &r->path);
  else
    get_comm(&c, &r->comm);
  return c.bad ? C4_EPROTO : (int)need;
}

size_t c4_frame_hello_size(void) { return 2 * C4_FRAME_NAME + 4 + 4 + C4_FRAME_MAC; }

void c4_frame_crypto_init(void) { OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, NULL); }

/* The MAC's message: the nonce, then the HELLO's fields as laid out on the wire. */
static void hello_mac(const struct c4_hello *h, const uint8_t nonce[C4_FRAME_NONCE],
                      const char *token, uint8_t mac[C4_FRAME_MAC]) {
  uint8_t msg[C4_FRAME_NONCE + 2 * C4_FRAME_NAME + 8];
  struct cur c = {.w = msg, .left = sizeof msg};
  put(&c, nonce, C4_FRAME_NONCE);
  put_str(&c, h->job, C4_FRAME_NAME);
  put_str(&c, h->host, C4_FRAME_NAME);
  put_le(&c, h->pid, 4);
  put_le(&c, (uint32_t)h->rank, 4);
  unsigned len = C4_FRAME_MAC;
  const char *key = token ? token : "";
  HMAC(EVP_sha256(), key, (int)strlen(key), msg, sizeof msg, mac, &len);
}

void c4_frame_put_hello(uint8_t *out, const struct c4_hello *h, const uint8_t nonce[C4_FRAME_NONCE],
                        const char *token) {
  uint8_t mac[C4_FRAME_MAC];
  hello_mac(h, nonce, token, mac);
  struct cur c = {.w = out, .left = c4_frame_hello_size()};
  put_str(&c, h->job, C4_FRAME_NAME);
  put_str(&c, h->host, C4_FRAME_NAME);
  put_le(&c, h->pid, 4);
  put_le(&c, (uint32_t)h->rank, 4);
  put(&c, mac, C4_FRAME_MAC);
}

int c4_frame_get_hello(const uint8_t *in, size_t len, struct c4_hello *h) {
  memset(h, 0, sizeof *h);
  if (len != c4_frame_hello_size()) return C4_EPROTO;
  struct cur c = {.r = in, .left = len};
  get_str(&c, h->job, C4_FRAME_NAME);
  get_str(&c, h->host, C4_FRAME_NAME);
  h->pid = (uint32_t)get_le(&c, 4);
  h->rank = (int32_t)get_le(&c, 4);
  get(&c, h->mac, C4_FRAME_MAC);
  return c.bad ? C4_EPROTO : 0;
}

int c4_frame_hello_verify(const struct c4_hello *h, const uint8_t nonce[C4_FRAME_NONCE],
                          const char *token) {
  uint8_t mac[C4_FRAME_MAC];
  hello_mac(h, nonce, token, mac);
  return CRYPTO_memcmp(mac, h->mac, C4_FRAME_MAC) == 0;
}

/* The STATUS MAC's message: the nonce, then a label no HELLO can produce (a HELLO's message is
 * 152 bytes long, this one 25). */
static void status_mac(const uint8_t nonce[C4_FRAME_NONCE], const char *token,
                       uint8_t mac[C4_FRAME_MAC]) {
  static const char label[] = "c4 status";
  uint8_t msg[C4_FRAME_NONCE + sizeof label - 1];
  memcpy(msg, nonce, C4_FRAME_NONCE);
  memcpy(msg + C4_FRAME_NONCE, label, sizeof label - 1);
  unsigned len = C4_FRAME_MAC;
  const char *key = token ? token : "";
  HMAC(EVP_sha256(), key, (int)strlen(key), msg, sizeof msg, mac, &len);
}

void c4_frame_put_status(uint8_t out[C4_FRAME_MAC], const uint8_t nonce[C4_FRAME_NONCE],
                         const char *token) {
  status_mac(nonce, token, out);
}

int c4_frame_status_verify(const uint8_t *in, size_t len, const uint8_t nonce[C4_FRAME_NONCE],
                           const char *token) {
  uint8_t mac[C4_FRAME_MAC];
  if (len != C4_FRAME_MAC) return 0;
  status_mac(nonce, token, mac);
  return CRYPTO_memcmp(mac, in, C4_FRAME_MAC) == 0;
}

void c4_frame_put_heartbeat(uint8_t out[C4_FRAME_HEARTBEAT_SIZE], const struct c4_heartbeat *h) {
  struct cur c = {.w = out, .left = C4_FRAME_HEARTBEAT_SIZE};
  put_le(&c, h->t, 8);
  put_le(&c, h->entered, 8);
  put_le(&c, h->done, 8);
  put_le(&c, h->dropped, 8);
  put_le(&c, (uint64_t)h->offset, 8);
  put_le(&c, h->rtt, 8);
}

int c4_frame_get_heartbeat(const uint8_t *in, size_t len, struct c4_heartbeat *h) {
  if (len != C4_FRAME_HEARTBEAT_SIZE) return C4_EPROTO;
  struct cur c = {.r = in, .left = len};
  h->t = get_le(&c, 8);
  h->entered = get_le(&c, 8);
  h->done = get_le(&c, 8);
  h->dropped = get_le(&c, 8);
  h->offset = (int64_t)get_le(&c, 8);
  h->rtt = get_le(&c, 8);
  if (h->t > C4_FRAME_TIME_MAX || h->rtt > C4_FRAME_TIME_MAX || h->entered > INT64_MAX ||
      h->done > INT64_MAX || h->dropped > INT64_MAX || h->offset > (int64_t)C4_FRAME_TIME_MAX ||
      h->offset < -(int64_t)C4_FRAME_TIME_MAX)
    return C4_EPROTO;
  return 0;
}

void c4_frame_put_time(uint8_t out[C4_FRAME_TIME_SIZE], const uint64_t t[3]) {
  struct cur c = {.w = out, .left = C4_FRAME_TIME_SIZE};
  for (int i = 0; i < 3; i++)
    put_le(&c, t[i], 8);
}

int c4_frame_get_time(const uint8_t *in, size_t len, uint64_t t[3]) {
  if (len != C4_FRAME_TIME_SIZE) return C4_EPROTO;
  struct cur c = {.r = in, .left = len};
  for (int i = 0; i < 3; i++)
    t[i] = get_le(&c, 8);
  return 0;
}

void c4_frame_put_challenge(uint8_t out[C4_FRAME_CHALLENGE_SIZE],
                            const uint8_t nonce[C4_FRAME_NONCE], uint64_t t_server) {
  struct cur c = {.w = out, .left = C4_FRAME_CHALLENGE_SIZE};
  put(&c, nonce, C4_FRAME_NONCE);
  put_le(&c, t_server, 8);
}

int c4_frame_get_challenge(const uint8_t *in, size_t len, uint8_t nonce[C4_FRAME_NONCE],
                           uint64_t *t_server) {
  if (len != C4_FRAME_CHALLENGE_SIZE) return C4_EPROTO;
  struct cur c = {.r = in, .left = len};
  get(&c, nonce, C4_FRAME_NONCE);
  *t_server = get_le(&c, 8);
  return 0;
}

void c4_frame_put_plan_hdr(uint8_t out[C4_FRAME_PLAN_HDR], uint32_t total, uint32_t offset) {
  struct cur c = {.w = out, .left = C4_FRAME_PLAN_HDR};
  put_le(&c, total, 4);
  put_le(&c, offset, 4);
}

int c4_frame_get_plan_part(const uint8_t *p, uint32_t len, uint32_t *total, uint32_t *offset,
                           const uint8_t **part, uint32_t *n) {
  struct cur c = {.r = p, .left = len};
  *total = (uint32_t)get_le(&c, 4);
  *offset = (uint32_t)get_le(&c, 4);
  if (c.bad || *total > C4_FRAME_PLAN_MAX || *offset > *total ||
      len - C4_FRAME_PLAN_HDR > *total - *offset)
    return C4_EPROTO;
  *part = p + C4_FRAME_PLAN_HDR;
  *n = len - C4_FRAME_PLAN_HDR;
  return 0;
}
