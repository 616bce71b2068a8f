/* c4_score_load.c -- reads a truth file and c4mon's events for scoring, refusing what it cannot
 * use with the file and the line (or field) named. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_cli.h"
#include "c4_err.h"
#include "c4_score.h"

static const char *const fault_kinds[] = {"straggler",    "comm_slow", "comm_hang",
                                          "noncomm_hang", "rank_lost", NULL};
static const char *const wheres[] = {"gpu", "host", "nic_tx", "nic_rx", "link", "path", NULL};

static int one_of(const char *s, const char *const *set) {
  for (; s && *set; set++)
    if (!strcmp(s, *set)) return 1;
  return 0;
}

static int fail(char *err, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, n, fmt, ap);
  va_end(ap);
  return 1;
}

/* A non-negative integer field; dflt when absent (or -1: required). Returns 0 or -1. */
static int get_time(const json_t *o, const char *key, long long dflt, uint64_t *out) {
  json_t *v = json_object_get(o, key);
  if (!v && dflt >= 0) {
    *out = (uint64_t)dflt;
    return 0;
  }
  if (!json_is_integer(v) || json_integer_value(v) < 0) return C4_EINVAL;
  *out = (uint64_t)json_integer_value(v);
  return 0;
}

/* Checks the place fields a fault may carry: each absent, null or of its type. */
static const char *place_fields_bad(const json_t *f) {
  json_t *v;
  size_t i;
  json_t *x;
  if ((v = json_object_get(f, "ranks")) && !json_is_array(v)) return "ranks";
  json_array_foreach(v, i, x) if (!json_is_integer(x)) return "ranks";
  if ((v = json_object_get(f, "hosts")) && !json_is_array(v)) return "hosts";
  json_array_foreach(v, i, x) if (!json_is_string(x)) return "hosts";
  v = json_object_get(f, "nic");
  if (v && !json_is_null(v) &&
      (!json_is_string(json_object_get(v, "host")) || !json_is_integer(json_object_get(v, "dev"))))
    return "nic";
  v = json_object_get(f, "link");
  if (v && !json_is_null(v) &&
      (json_array_size(v) != 2 || !json_is_string(json_array_get(v, 0)) ||
       !json_is_string(json_array_get(v, 1))))
    return "link";
  v = json_object_get(f, "link_devs");
  if (v && !json_is_null(v) &&
      (json_array_size(v) != 2 || !json_is_integer(json_array_get(v, 0)) ||
       !json_is_integer(json_array_get(v, 1))))
    return "link_devs";
  v = json_object_get(f, "path");
  if (v && !json_is_null(v) && !json_is_string(v)) return "path";
  return NULL;
}

/* The fault's where: a place kind, or (an expected table) a non-empty array of them, any of which
 * is right; the first in *where. 0, or -1 when it is neither. */
static int load_where(const json_t *w, const char **where) {
  if (json_is_string(w)) {
    *where = json_string_value(w);
    return one_of(*where, wheres) ? 0 : -1;
  }
  if (!json_array_size(w)) return C4_EINVAL;
  size_t i;
  json_t *x;
  json_array_foreach(w, i, x) if (!one_of(json_string_value(x), wheres)) return C4_EINVAL;
  *where = json_string_value(json_array_get(w, 0));
  return 0;
}

static int load_fault(const char *path, const char *list, size_t i, json_t *o,
                      struct c4_score_fault *f, char *err, size_t n) {
  if (!json_is_object(o)) return fail(err, n, "%s: %s[%zu] is not an object", path, list, i);
  f->obj = o;
  f->kind = json_string_value(json_object_get(o, "kind"));
  f->early = C4_SCORE_EARLY_NS;
  f->late = C4_SCORE_LATE_NS;
  if (!one_of(f->kind, fault_kinds))
    return fail(err, n,
                "%s: %s[%zu].kind is missing or not straggler, comm_slow, comm_hang, "
                "noncomm_hang or rank_lost",
                path, list, i);
  if (load_where(json_object_get(o, "where"), &f->where))
    return fail(err, n,
                "%s: %s[%zu].where is missing or not gpu, host, nic_tx, nic_rx, link or path "
                "(or an array of them)",
                path, list, i);
  if (get_time(o, "onset_ns", -1, &f->onset))
    return fail(err, n, "%s: %s[%zu].onset_ns is missing or not a time in ns", path, list, i);
  json_t *end = json_object_get(o, "end_ns");
  if (end && !json_is_null(end) && get_time(o, "end_ns", -1, &f->end))
    return fail(err, n, "%s: %s[%zu].end_ns is not a time in ns or null", path, list, i);
  uint64_t stall;
  json_t *st = json_object_get(o, "stall_ns");
  if (st && !json_is_null(st) && get_time(o, "stall_ns", -1, &stall))
    return fail(err, n, "%s: %s[%zu].stall_ns is not a time in ns or null", path, list, i);
  const char *bad = place_fields_bad(o);
  if (bad) return fail(err, n, "%s: %s[%zu].%s is not of its type", path, list, i, bad);
  return 0;
}

int c4_score_truth_load(const char *path, struct c4_score_truth *t, char *err, size_t n) {
  memset(t, 0, sizeof *t);
  json_error_t je;
  json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
  if (!doc) {
    char why[300];
    if (je.line < 1) return fail(err, n, "%s: %s", path, c4_cli_json_why(&je, why, sizeof why));
    return fail(err, n, "%s:%d: %s", path, je.line, je.text);
  }
  return c4_score_truth_from_doc(path, doc, "faults", t, err, n);
}

int c4_score_truth_from_doc(const char *path, json_t *doc, const char *list,
                            struct c4_score_truth *t, char *err, size_t n) {
  memset(t, 0, sizeof *t);
  t->doc = doc;
  if (!json_is_object(t->doc)) return fail(err, n, "%s:1: not a JSON object", path);
  json_t *v = json_object_get(t->doc, "v"), *faults = json_object_get(t->doc, "faults");
  if (!json_is_integer(v) || json_integer_value(v) != 1)
    return fail(err, n, "%s: \"v\" is missing or not 1 (a truth file version this reader knows)",
                path);
  if (!json_is_array(faults))
    return fail(err, n, "%s: \"faults\" is missing or not an array", path);
  if (get_time(t->doc, "start_ns", 1000000000ll, &t->start))
    return fail(err, n, "%s: \"start_ns\" is not a time in ns", path);
  if (get_time(t->doc, "hang_threshold_ns", 3000000000ll, &t->hang_ns))
    return fail(err, n, "%s: \"hang_threshold_ns\" is not a time in ns", path);
  json_t *secs = json_object_get(t->doc, "seconds");
  if (json_object_get(t->doc, "trace_end_ns")) {
    if (get_time(t->doc, "trace_end_ns", -1, &t->trace_end))
      return fail(err, n, "%s: \"trace_end_ns\" is not a time in ns", path);
  } else if (json_is_number(secs) && json_number_value(secs) > 0) {
    t->trace_end = t->start + (uint64_t)(json_number_value(secs) * 1e9);
  } else {
    return fail(err, n, "%s: neither \"trace_end_ns\" nor \"seconds\" gives the end of the trace",
                path);
  }
  t->blips = json_object_get(t->doc, "blips");
  if (t->blips && !json_is_array(t->blips))
    return fail(err, n, "%s: \"blips\" is not an array", path);
  size_t i;
  json_t *x;
  json_array_foreach(t->blips, i, x) {
    if (!json_is_integer(json_object_get(x, "t_ns")))
      return fail(err, n, "%s: blips[%zu].t_ns is missing or not a time in ns", path, i);
  }
  t->n = json_array_size(faults);
  t->f = calloc(t->n + 1, sizeof *t->f);
  if (!t->f) return fail(err, n, "%s: out of memory", path);
  json_array_foreach(faults, i, x) {
    if (load_fault(path, list, i, x, &t->f[i], err, n)) return 1;
  }
  return 0;
}

void c4_score_truth_free(struct c4_score_truth *t) {
  json_decref(t->doc);
  free(t->f);
  memset(t, 0, sizeof *t);
}

static const char *const event_kinds[] = {"straggler", "comm_slow", "comm_hang", "noncomm_hang",
                                          "rank_lost", "recovered", NULL};

/* Checks one event line's object; NULL when good, else the reason (maybe in buf). */
static const char *event_bad(const json_t *o, char *buf, size_t n) {
  if (!json_is_object(o)) return "not a JSON object";
  json_t *v = json_object_get(o, "v");
  if (v && (!json_is_integer(v) || json_integer_value(v) != 1))
    return "\"v\" is not 1 (an events version this reader knows)";
  if (!json_is_string(json_object_get(o, "kind"))) return "\"kind\" is missing or not a string";
  const char *kind = json_string_value(json_object_get(o, "kind"));
  if (!one_of(kind, event_kinds)) return NULL; /* "dropped" and kinds to come: not verdicts */
  json_t *t = json_object_get(o, "t");
  if (!json_is_integer(t) || json_integer_value(t) < 0) return "\"t\" is missing or not a time";
  json_t *w = json_object_get(o, "where");
  if (strcmp(kind, "recovered") && w && !json_is_null(w) && !json_is_string(w))
    return "\"where\" is not a string";
  const char *bad = place_fields_bad(o);
  if (bad) snprintf(buf, n, "\"%s\" is not of its type", bad);
  return bad ? buf : NULL;
}

int c4_score_events_load(const char *path, struct c4_score_events *e, char *err, size_t n) {
  memset(e, 0, sizeof *e);
  FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
  if (!f) return fail(err, n, "%s: %s", path, strerror(errno));
  char *line = NULL;
  size_t cap = 0, have = 0;
  ssize_t len;
  int rc = 0;
  for (long no = 1; (len = getline(&line, &cap, f)) >= 0; no++) {
    while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r'))
      line[--len] = 0;
    if (strspn(line, " \t") == (size_t)len) continue;
    json_error_t je;
    char buf[80];
    json_t *o = json_loadb(line, (size_t)len, JSON_REJECT_DUPLICATES, &je);
    const char *why = o ? event_bad(o, buf, sizeof buf) : je.text;
    if (why) {
      rc = fail(err, n, "%s:%ld: %s", path, no, why);
      json_decref(o);
      break;
    }
    const char *kind = json_string_value(json_object_get(o, "kind"));
    if (!strcmp(kind, "recovered")) e->recovered++;
    if (!one_of(kind, fault_kinds)) {
      json_decref(o);
      continue;
    }
    if (e->n == have) {
      have = have ? 2 * have : 64;
      struct c4_score_event *ev = realloc(e->ev, have * sizeof *ev);
      if (!ev) {
        json_decref(o);
        rc = fail(err, n, "%s: out of memory", path);
        break;
      }
      e->ev = ev;
    }
    e->ev[e->n++] =
        (struct c4_score_event){o, kind, (uint64_t)json_integer_value(json_object_get(o, "t")), no};
  }
  if (!rc && ferror(f)) rc = fail(err, n, "%s: %s", path, strerror(errno));
  free(line);
  if (f != stdin) fclose(f);
  return rc;
}

void c4_score_events_free(struct c4_score_events *e) {
  for (size_t i = 0; i < e->n; i++)
    json_decref(e->ev[i].obj);
  free(e->ev);
  memset(e, 0, sizeof *e);
}
