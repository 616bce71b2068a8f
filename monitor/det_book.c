/* det_book.c -- the verdict book: active verdicts by key, their events and recoveries. */
#include "det_book.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "c4_err.h"
#include "mon_events.h"

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
} book;

static const char *const kinds[] = {"straggler", "comm_slow", "comm_hang", "noncomm_hang",
                                    "rank_lost", "recovered", "job_end"};
#define NKINDS 7

static void count_kind(const char *kind) {
  for (int i = 0; i < NKINDS; i++)
    if (!strcmp(kinds[i], kind)) book.counts[i]++;
}

static json_t *opt_str(const char *s) { return s ? json_string(s) : json_null(); }

static json_t *comm_hex(uint64_t comm) {
  char hex[17];
  snprintf(hex, sizeof hex, "%016" PRIx64, comm);
  return comm ? json_string(hex) : json_null();
}

static int find(const char *key) {
  for (int i = 0; i < book.nactive; i++)
    if (!strcmp(book.active[i].key, key)) return i;
  return C4_NONE;
}

static json_t *event_of(const struct det_finding *f, int id, uint64_t now) {
  json_t *ev = json_pack("{s:i, s:i, s:s, s:I, s:I, s:s, s:s, s:o, s:o}", "v", 1, "id", id, "kind",
                         f->kind, "t", (json_int_t)now, "first_seen",
                         (json_int_t)(f->first_seen ? f->first_seen : now), "job", f->job, "where",
                         f->where, "ranks", f->ranks ? f->ranks : json_array(), "hosts",
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
  json_object_set_new(ev, "cost", json_real(f->cost));
  json_object_set_new(ev, "comm", comm_hex(f->comm));
  json_object_set_new(ev, "detail", json_string(f->detail));
  return ev;
}

int det_book_raise(const char *key, struct det_finding *f, uint64_t now) {
  int i = find(key);
  if (i >= 0) {
    json_decref(f->ranks);
    json_decref(f->hosts);
    return (int)json_integer_value(json_object_get(book.active[i].event, "id"));
  }
  int id = ++book.next_id;
  json_t *ev = event_of(f, id, now);
  if (!ev) return 0;
  count_kind(f->kind);
  if (book.nactive < MAX_ACTIVE) {
    struct verdict *v = &book.active[book.nactive++];
    snprintf(v->key, sizeof v->key, "%s", key);
    v->event = json_incref(ev);
  }
  c4_mon_events_emit(ev);
  return id;
}

void det_book_update(const char *key, double factor, double confidence, double cost) {
  int i = find(key);
  if (i < 0) return;
  json_t *ev = json_deep_copy(book.active[i].event); /* the emitted one may be held elsewhere */
  if (!ev) return;
  json_decref(book.active[i].event);
  book.active[i].event = ev;
  json_object_set_new(ev, "factor", json_real(factor));
  json_object_set_new(ev, "confidence", json_real(confidence));
  json_object_set_new(ev, "cost", json_real(cost));
}

static void clear_at(int i, const char *why, uint64_t now) {
  json_t *old = book.active[i].event;
  json_t *cleared = json_object();
  static const char *const copy[] = {"kind", "where", "ranks", "hosts", "link", "nic", "path"};
  for (size_t k = 0; k < sizeof copy / sizeof *copy; k++)
    json_object_set(cleared, copy[k], json_object_get(old, copy[k]));
  json_t *ev =
      json_pack("{s:i, s:i, s:s, s:I, s:I, s:O, s:O, s:O, s:O, s:O, s:f, s:f, s:O, s:s}", "v", 1,
                "id", ++book.next_id, "kind", "recovered", "t", (json_int_t)now, "first_seen",
                (json_int_t)now, "job", json_object_get(old, "job"), "where",
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
  book.active[i] = book.active[--book.nactive];
}

void det_book_clear(const char *key, const char *why, uint64_t now) {
  int i = find(key);
  if (i >= 0) clear_at(i, why, now);
}

int det_book_take_id(void) { return ++book.next_id; }

void det_book_note(struct det_finding *f, uint64_t now) {
  int id = ++book.next_id;
  json_t *ev = event_of(f, id, now);
  if (!ev) return;
  count_kind(f->kind);
  c4_mon_events_emit(ev);
}

void det_book_clear_job(const char *job, const char *keep_kind, const char *why, uint64_t now) {
  for (int i = 0; i < book.nactive;) {
    const json_t *ev = book.active[i].event;
    const char *j = json_string_value(json_object_get(ev, "job")),
               *kind = json_string_value(json_object_get(ev, "kind"));
    if (j && !strcmp(j, job) && !(keep_kind && kind && !strcmp(kind, keep_kind)))
      clear_at(i, why, now);
    else
      i++;
  }
}

void det_book_clear_all(const char *why, uint64_t now) {
  while (book.nactive)
    clear_at(book.nactive - 1, why, now);
}

void det_book_each(const char *kind, void (*fn)(const json_t *event, void *arg), void *arg) {
  for (int i = 0; i < book.nactive; i++)
    if (!strcmp(json_string_value(json_object_get(book.active[i].event, "kind")), kind))
      fn(book.active[i].event, arg);
}

json_t *det_book_verdicts(void) {
  json_t *verdicts = json_array();
  for (int i = 0; i < book.nactive; i++)
    json_array_append(verdicts, book.active[i].event);
  return verdicts;
}

json_t *det_book_counts(void) {
  json_t *counts = json_object();
  for (int i = 0; i < NKINDS; i++)
    json_object_set_new(counts, kinds[i], json_integer((json_int_t)book.counts[i]));
  return counts;
}

void det_book_reset(void) {
  for (int i = 0; i < book.nactive; i++)
    json_decref(book.active[i].event);
  memset(&book, 0, sizeof book);
}
