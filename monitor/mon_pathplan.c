/* mon_pathplan.c -- path verdicts turned into the pushed plan's avoid list, and the events that
 * say what moved (mon_pathplan.h). */
#include "mon_pathplan.h"

#include <stdio.h>
#include <string.h>

#include "c4_err.h"
#include "det_book.h"
#include "mon_events.h"
#include "mon_planpush.h"

#define MAX_AVOID 64   /* paths avoided at once; more are not pushed (counted in the log) */
#define MAX_CHANGES 64 /* changes between two announcements */
#define NAME_MAX_LEN 256

struct change {
  char path[NAME_MAX_LEN];
  char job[NAME_MAX_LEN];
  int on;      /* 1: avoided, 0: let back */
  int verdict; /* the id of the verdict (or of the recovery) that made it */
};

static struct {
  char avoid[MAX_AVOID][NAME_MAX_LEN];
  int n;
  struct change changes[MAX_CHANGES];
  int nchanges;
} pl;

static const char *str(const json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

static int find(const char *path) {
  for (int i = 0; i < pl.n; i++)
    if (!strcmp(pl.avoid[i], path)) return i;
  return C4_NONE;
}

static void note_change(const char *path, const char *job, int on, int verdict) {
  if (pl.nchanges == MAX_CHANGES) return; /* the list itself is still right; only told less */
  struct change *c = &pl.changes[pl.nchanges++];
  snprintf(c->path, sizeof c->path, "%s", path);
  snprintf(c->job, sizeof c->job, "%s", job);
  c->on = on;
  c->verdict = verdict;
}

void mon_pathplan_event(const json_t *ev, const char *line, void *arg) {
  (void)line;
  (void)arg;
  const char *kind = str(ev, "kind");
  int id = (int)json_integer_value(json_object_get(ev, "id"));
  if (!strcmp(kind, "comm_slow") && !strcmp(str(ev, "where"), "path")) {
    const char *path = str(ev, "path");
    if (!path[0] || strlen(path) >= NAME_MAX_LEN || find(path) >= 0 || pl.n == MAX_AVOID) return;
    snprintf(pl.avoid[pl.n++], NAME_MAX_LEN, "%s", path);
    note_change(path, str(ev, "job"), 1, id);
  } else if (!strcmp(kind, "recovered")) {
    const json_t *was = json_object_get(ev, "cleared");
    int i = strcmp(str(was, "where"), "path") ? C4_NONE : find(str(was, "path"));
    if (i < 0) return;
    char path[NAME_MAX_LEN];
    memcpy(path, pl.avoid[i], sizeof path);
    note_change(path, str(ev, "job"), 0, id);
    memmove(pl.avoid[i], pl.avoid[i + 1], (size_t)(pl.n - i - 1) * NAME_MAX_LEN);
    pl.n--;
  }
}

json_t *mon_pathplan_avoid(void) {
  json_t *a = json_array();
  for (int i = 0; a && i < pl.n; i++)
    json_array_append_new(a, json_string(pl.avoid[i]));
  return a;
}

int mon_pathplan_pending(void) { return pl.nchanges > 0; }

void mon_pathplan_announce(int ranks, uint64_t now) {
  for (int i = 0; i < pl.nchanges; i++) {
    const struct change *c = &pl.changes[i];
    json_t *moved = mon_planpush_flows_on(c->path), *hosts = json_array();
    size_t k, nflows = 0;
    json_t *m;
    json_array_foreach(moved, k, m) {
      nflows += (size_t)json_integer_value(json_object_get(m, "flows"));
      json_array_append(hosts, json_object_get(m, "src"));
    }
    char detail[400];
    snprintf(detail, sizeof detail,
             c->on ? "path %s avoided (verdict #%d): %zu planned flow(s) of %zu host pair(s) moved "
                     "off it; the plan pushed to %d rank(s)"
                   : "path %s back in use (recovery #%d): %zu planned flow(s) of %zu host pair(s) "
                     "may use it again; the plan pushed to %d rank(s)",
             c->path, c->verdict, nflows, json_array_size(moved), ranks);
    json_t *ev = json_pack(
        "{s:i, s:i, s:s, s:I, s:I, s:s, s:s, s:s, s:s, s:i, s:o, s:o, s:o, s:i, s:n, s:n, s:f, "
        "s:f, s:f, s:n, s:s}",
        "v", 1, "id", det_book_take_id(), "kind", "plan", "t", (json_int_t)now, "first_seen",
        (json_int_t)now, "job", c->job, "where", "path", "path", c->path, "action",
        c->on ? "avoid" : "restore", "verdict", c->verdict, "moved", moved, "ranks", json_array(),
        "hosts", hosts, "pushed_to", ranks, "nic", "link", "factor", 0.0, "confidence", 0.0, "cost",
        0.0, "comm", "detail", detail);
    if (ev) c4_mon_events_emit(ev);
  }
  pl.nchanges = 0;
}

void mon_pathplan_reset(void) { memset(&pl, 0, sizeof pl); }
