/* det.c -- detection's front: routes records to the detectors, keeps the clock, and owns the
 * verdicts: a finding becomes an event once, and a recovered event when it clears. */
#include "det.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "det_internal.h"
#include "mon_events.h"
#include "mon_windows.h"

struct c4_det_config c4_det_cfg;
uint64_t c4_det_now;

#define MAX_ACTIVE 4096

struct verdict {
  char key[320];
  json_t *event;
};

static struct {
  struct verdict active[MAX_ACTIVE];
  int nactive;
  int next_id;
  uint64_t counts[7];
  uint64_t periodic_at; /* next time the periodic checks run */
} det;

static const char *const kinds[] = {"straggler", "comm_slow", "comm_hang", "noncomm_hang",
                                    "rank_lost", "recovered", "job_end"};
#define NKINDS 7

static void count_kind(const char *kind) {
  for (int i = 0; i < NKINDS; i++)
    if (!strcmp(kinds[i], kind)) det.counts[i]++;
}

static json_t *opt_str(const char *s) { return s ? json_string(s) : json_null(); }

static json_t *comm_hex(uint64_t comm) {
  char hex[17];
  snprintf(hex, sizeof hex, "%016" PRIx64, comm);
  return comm ? json_string(hex) : json_null();
}

int det_active(const char *key) {
  for (int i = 0; i < det.nactive; i++)
    if (!strcmp(det.active[i].key, key)) return 1;
  return 0;
}

/* f as a new event with the next id (f's arrays stolen), counted; NULL when it cannot be built. */
static json_t *event_of(struct det_finding *f) {
  int id = ++det.next_id;
  json_t *ev = json_pack("{s:i, s:i, s:s, s:I, s:I, s:s, s:s, s:o, s:o}", "v", 1, "id", id, "kind",
                         f->kind, "t", (json_int_t)c4_det_now, "first_seen",
                         (json_int_t)(f->first_seen ? f->first_seen : c4_det_now), "job", f->job,
                         "where", f->where, "ranks", f->ranks ? f->ranks : json_array(), "hosts",
                         f->hosts ? f->hosts : json_array());
  if (!ev) return NULL;
  json_object_set_new(ev, "nic",
                      f->nic_host ? json_pack("{s:s, s:i}", "host", f->nic_host, "dev", f->nic_dev)
                                  : json_null());
  json_object_set_new(ev, "link",
                      f->link_src ? json_pack("[s, s]", f->link_src, f->link_dst) : json_null());
  json_object_set_new(ev, "link_devs",
                      f->link_src ? json_pack("[i, i]", f->link_src_dev, f->link_dst_dev)
                                  : json_null());
  json_object_set_new(ev, "path", opt_str(f->path));
  json_object_set_new(ev, "factor", json_real(f->factor));
  json_object_set_new(ev, "confidence", json_real(f->confidence));
  json_object_set_new(ev, "comm", comm_hex(f->comm));
  json_object_set_new(ev, "detail", json_string(f->detail));
  count_kind(f->kind);
  return ev;
}

int det_raise(const char *key, struct det_finding *f) {
  for (int i = 0; i < det.nactive; i++)
    if (!strcmp(det.active[i].key, key)) {
      json_decref(f->ranks);
      json_decref(f->hosts);
      return (int)json_integer_value(json_object_get(det.active[i].event, "id"));
    }
  json_t *ev = event_of(f);
  if (!ev) return 0;
  if (det.nactive < MAX_ACTIVE) {
    struct verdict *v = &det.active[det.nactive++];
    snprintf(v->key, sizeof v->key, "%s", key);
    v->event = json_incref(ev);
  }
  int id = (int)json_integer_value(json_object_get(ev, "id"));
  c4_mon_events_emit(ev);
  return id;
}

void det_note(struct det_finding *f) { c4_mon_events_emit(event_of(f)); }

static void clear_at(int i, const char *why) {
  json_t *old = det.active[i].event;
  json_t *cleared = json_object();
  static const char *const copy[] = {"kind", "where", "ranks", "hosts", "link", "nic", "path"};
  for (size_t k = 0; k < sizeof copy / sizeof *copy; k++)
    json_object_set(cleared, copy[k], json_object_get(old, copy[k]));
  json_t *ev =
      json_pack("{s:i, s:i, s:s, s:I, s:I, s:O, s:O, s:O, s:O, s:O, s:f, s:f, s:O, s:s}", "v", 1,
                "id", ++det.next_id, "kind", "recovered", "t", (json_int_t)c4_det_now, "first_seen",
                (json_int_t)c4_det_now, "job", json_object_get(old, "job"), "where",
                json_object_get(old, "where"), "ranks", json_object_get(old, "ranks"), "hosts",
                json_object_get(old, "hosts"), "link", json_object_get(old, "link"), "factor", 0.0,
                "confidence", 0.0, "comm", json_object_get(old, "comm"), "detail", why);
  if (ev) {
    json_object_set_new(ev, "clears",
                        json_object_get(old, "id") ? json_incref(json_object_get(old, "id"))
                                                   : json_null());
    json_object_set_new(ev, "cleared", cleared);
    count_kind("recovered");
    c4_mon_events_emit(ev);
  } else {
    json_decref(cleared);
  }
  json_decref(old);
  det.active[i] = det.active[--det.nactive];
}

void det_clear(const char *key, const char *why) {
  for (int i = 0; i < det.nactive; i++)
    if (!strcmp(det.active[i].key, key)) {
      clear_at(i, why);
      return;
    }
}

void det_clear_job(const char *job, const char *keep_kind, const char *why) {
  for (int i = 0; i < det.nactive;) {
    const json_t *ev = det.active[i].event;
    const char *j = json_string_value(json_object_get(ev, "job")),
               *kind = json_string_value(json_object_get(ev, "kind"));
    if (j && !strcmp(j, job) && !(keep_kind && kind && !strcmp(kind, keep_kind)))
      clear_at(i, why);
    else
      i++;
  }
}

void det_clear_unless(const char *prefix, int (*keep)(const char *key, void *arg), void *arg) {
  size_t n = strlen(prefix);
  for (int i = 0; i < det.nactive;) {
    if (!strncmp(det.active[i].key, prefix, n) && !keep(det.active[i].key, arg))
      clear_at(i, "the evidence is gone");
    else
      i++;
  }
}

/* (host, pid) -> launcher rank: never shrinks, bounded (det_index: 2^18 processes). */
struct ident {
  char host[C4_HOST_MAX];
  uint32_t pid;
  int rank;
};
struct ident_key {
  const char *host;
  uint32_t pid;
};
static struct det_index idents = {
    .item_size = sizeof(struct ident), .nslots = 1 << 19, .probes = 64};

static uint64_t ident_hash(const char *host, uint32_t pid) {
  uint64_t h = 1469598103934665603ull ^ pid;
  for (const char *p = host; *p; p++)
    h = (h ^ (uint8_t)*p) * 1099511628211ull;
  return h;
}

static int ident_match(const void *item, const void *key) {
  const struct ident *e = item;
  const struct ident_key *k = key;
  return e->pid == k->pid && !strcmp(e->host, k->host);
}

static struct ident *ident_slot(const char *host, uint32_t pid, int insert) {
  struct ident_key k = {host, pid};
  int added;
  struct ident *e = det_index_get(&idents, ident_hash(host, pid), ident_match, &k, insert, &added);
  if (e && added) {
    e->pid = pid;
    snprintf(e->host, sizeof e->host, "%s", host);
    e->rank = -1;
  }
  return e;
}

/* Called for every transfer: a cache in front keeps the identity table (a hash of the whole host,
 * a probe, a string compare) out of the common case, the same process seen again. An entry (half
 * a cache line) holds the pid, the rank, the host's first 16 bytes and its identity; the caller's
 * host is a record's C4_HOST_MAX field, NUL-padded as the decoders leave it, so comparing 16 bytes
 * is exact for a shorter host, and a longer one is compared with its identity's. Each process has
 * two places, from two hashes of its pid and its host's first 16 bytes: in containers every
 * rank's process can have the same pid on every host, and host names share their first letters,
 * so with one place (as before: the pid and the host's first letter) ranks evicted each other on
 * every transfer. */
struct seen_entry {
  _Alignas(32) uint32_t pid;
  int32_t rank;
  char host[16];
  const struct ident *id;
};
#define SEEN_SLOTS (1 << 16)
static struct seen_entry seen[SEEN_SLOTS];

static uint64_t seen_hash(const char *host, uint32_t pid) {
  uint64_t a, b;
  memcpy(&a, host, 8);
  memcpy(&b, host + 8, 8);
  return (a ^ (b << 29 | b >> 35) ^ pid) * 0x9e3779b97f4a7c15ull;
}

static struct seen_entry *seen_place(uint64_t h, int which) {
  return &seen[(which ? h >> 32 : h >> 48) & (SEEN_SLOTS - 1)];
}

static int seen_is(const struct seen_entry *e, const char *host, uint32_t pid, int rank) {
  return e->id && e->pid == pid && e->rank == rank && !memcmp(e->host, host, 16) &&
         (!host[15] || !strcmp(e->id->host, host));
}

void det_learn_rank(const char *host, uint32_t pid, int rank) {
  if (rank < 0) return;
  uint64_t h = seen_hash(host, pid);
  struct seen_entry *a = seen_place(h, 0), *b = seen_place(h, 1);
  if (seen_is(a, host, pid, rank) || seen_is(b, host, pid, rank)) return;
  struct ident *e = ident_slot(host, pid, 1);
  if (!e) return;
  e->rank = rank;
  /* the process's own entry (one at most: a rank it had before must not answer), else a free
   * place, else either */
  struct seen_entry *to = a->id == e ? a : b->id == e ? b : NULL;
  if (!to) to = !a->id ? a : !b->id ? b : h & 1 ? a : b;
  *to = (struct seen_entry){.pid = pid, .rank = rank, .id = e};
  memcpy(to->host, host, sizeof to->host);
}

int det_rank_of(const char *host, uint32_t pid) {
  struct ident *e = ident_slot(host, pid, 0);
  return e ? e->rank : -1;
}

int c4_det_init(const struct c4_det_config *cfg) {
  c4_det_reset();
  c4_det_cfg = *cfg;
  if (!c4_det_cfg.hang_ns) c4_det_cfg.hang_ns = 3000000000ull;
  if (!c4_det_cfg.lost_ns) c4_det_cfg.lost_ns = 10000000000ull;
  if (!c4_det_cfg.forget_ns) c4_det_cfg.forget_ns = 120000000000ull;
  det_coll_init();
  if (cfg->plan && det_plan_load(cfg->plan) != 0) return C4_EINVAL;
  return 0;
}

void c4_det_prefetch(const struct c4_record *r, int stage) {
  if (r->kind != C4_REC_XFER) return;
  if (stage == 0) { /* both places of the sender's identity */
    uint64_t h = seen_hash(r->xfer.self.host, r->xfer.self.pid);
    __builtin_prefetch(seen_place(h, 0));
    __builtin_prefetch(seen_place(h, 1));
  }
  det_matrix_prefetch(&r->xfer, stage);
}

/* The clock moves to the record's time first, so a verdict it triggers carries that time. */
void c4_det_take(const char *job, const struct c4_record *r) {
  switch (r->kind) {
  case C4_REC_XFER:
    c4_det_advance(r->xfer.t_done ? r->xfer.t_done : r->xfer.t_posted);
    det_learn_rank(r->xfer.self.host, r->xfer.self.pid, r->xfer.self.rank);
    det_matrix_take(job, &r->xfer);
    det_hang_take_xfer(job, &r->xfer);
    break;
  case C4_REC_COLL:
    c4_det_advance(r->coll.t_done ? r->coll.t_done : r->coll.t_arrive);
    if (r->coll.t_done) /* a pipeline's p2p waits for its peer stage: not a collective's time */
      det_hang_take_progress(job, r->coll.t_done,
                             !r->coll.is_p2p && r->coll.t_done > r->coll.t_arrive
                                 ? r->coll.t_done - r->coll.t_arrive
                                 : 0);
    c4_mon_windows_take(job, r);
    break;
  case C4_REC_COMM:
    c4_det_advance(r->comm.t);
    det_coll_take_comm(job, &r->comm);
    c4_mon_windows_take(job, r);
    break;
  case C4_REC_RANK:
    c4_det_advance(r->rank.t);
    det_learn_rank(r->rank.host, r->rank.pid, r->rank.rank);
    det_ranks_take(job, &r->rank);
    break;
  default: break;
  }
}

/* The periodic checks run every 50 ms of detection time, not per record: at 16,384 ranks a scan
 * per record would cost more than the records. */
void c4_det_advance(uint64_t now) {
  if (now <= c4_det_now) return;
  c4_det_now = now;
  if (now < det.periodic_at) return;
  det.periodic_at = now + 50000000ull;
  det_matrix_advance();
  det_ranks_advance();
  det_hang_advance();
}

json_t *c4_det_state_json(void) {
  json_t *verdicts = json_array(), *counts = json_object();
  for (int i = 0; i < det.nactive; i++)
    json_array_append(verdicts, det.active[i].event);
  for (int i = 0; i < NKINDS; i++)
    json_object_set_new(counts, kinds[i], json_integer((json_int_t)det.counts[i]));
  json_t *matrix = det_matrix_state();
  if (det_ranks_job_gone(json_string_value(json_object_get(matrix, "job")))) { /* forgotten */
    json_decref(matrix);
    matrix = json_pack("{s:[], s:[], s:[], s:[], s:I}", "nodes", "cells", "rows", "cols", "t",
                       (json_int_t)0);
  }
  return json_pack("{s:I, s:o, s:o, s:o, s:o, s:o}", "t", (json_int_t)c4_det_now, "ranks",
                   det_ranks_state(), "gone", det_ranks_gone_json(), "matrix", matrix, "verdicts",
                   verdicts, "counts", counts);
}

void c4_det_reset(void) {
  for (int i = 0; i < det.nactive; i++)
    json_decref(det.active[i].event);
  memset(&det, 0, sizeof det);
  c4_det_now = 0;
  det_index_reset(&idents);
  memset(seen, 0, sizeof seen);
  c4_mon_windows_reset();
  det_coll_reset();
  det_hang_reset();
  det_matrix_reset();
  det_plan_reset();
  det_ranks_reset();
  memset(&c4_det_cfg, 0, sizeof c4_det_cfg);
}
