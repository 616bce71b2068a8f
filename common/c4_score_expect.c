/* c4_score_expect.c -- a table of expected verdicts (docs/events.md, "Scoring") turned into a
 * strict truth: each entry's window, given as nanoseconds, a training step of c4train's JSON lines
 * or a mark a script wrote, resolved to times on the events' clock. */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_cli.h"
#include "c4_err.h"
#include "c4_score.h"

#define OPEN_END (INT64_C(1) << 62) /* "to": null: the window stays open */

static int fail(char *err, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, n, fmt, ap);
  va_end(ap);
  return 1;
}

/* What the references resolve against: the files, read once when first needed. */
struct refs {
  const char *steps_path, *marks_path;
  json_t *steps; /* object: "N" -> [t_start_ns, t_ns] (the first line of step N) */
  json_t *marks; /* object: NAME -> T_NS (the last line naming it) */
};

/* Reads c4train's JSON lines: the "step" lines' start and end times. */
static int read_steps(struct refs *r, char *err, size_t n) {
  FILE *f = fopen(r->steps_path, "r");
  if (!f) return fail(err, n, "%s: %s", r->steps_path, strerror(errno));
  r->steps = json_object();
  char *line = NULL;
  size_t cap = 0;
  int rc = 0;
  for (long no = 1; !rc && getline(&line, &cap, f) >= 0; no++) {
    json_error_t je;
    json_t *o = json_loads(line, 0, &je);
    if (!o) {
      rc = fail(err, n, "%s:%ld: %s", r->steps_path, no, je.text);
      break;
    }
    const char *ev = json_string_value(json_object_get(o, "event"));
    json_t *step = json_object_get(o, "step"), *t0 = json_object_get(o, "t_start_ns"),
           *t1 = json_object_get(o, "t_ns");
    if (ev && !strcmp(ev, "step")) {
      if (!json_is_integer(step) || !json_is_integer(t0) || !json_is_integer(t1)) {
        rc = fail(err, n, "%s:%ld: a step line without integer step, t_start_ns and t_ns",
                  r->steps_path, no);
      } else {
        char key[32];
        snprintf(key, sizeof key, "%" JSON_INTEGER_FORMAT, json_integer_value(step));
        if (!json_object_get(r->steps, key))
          json_object_set_new(r->steps, key, json_pack("[O, O]", t0, t1));
      }
    }
    json_decref(o);
  }
  if (!rc && ferror(f)) rc = fail(err, n, "%s: %s", r->steps_path, strerror(errno));
  free(line);
  fclose(f);
  return rc;
}

/* Reads "NAME T_NS" lines (blank lines and lines from '#' skipped). */
static int read_marks(struct refs *r, char *err, size_t n) {
  FILE *f = fopen(r->marks_path, "r");
  if (!f) return fail(err, n, "%s: %s", r->marks_path, strerror(errno));
  r->marks = json_object();
  char *line = NULL;
  size_t cap = 0;
  int rc = 0;
  for (long no = 1; !rc && getline(&line, &cap, f) >= 0; no++) {
    char name[128];
    long long t;
    char extra;
    if (line[strspn(line, " \t\r\n")] == 0 || line[strspn(line, " \t")] == '#') continue;
    if (sscanf(line, "%127s %lld %c", name, &t, &extra) != 2 || t < 0)
      rc = fail(err, n, "%s:%ld: not \"NAME T_NS\"", r->marks_path, no);
    else
      json_object_set_new(r->marks, name, json_integer(t));
  }
  if (!rc && ferror(f)) rc = fail(err, n, "%s: %s", r->marks_path, strerror(errno));
  free(line);
  fclose(f);
  return rc;
}

/* Resolves reference s ("step:N", "mark:NAME" or decimal nanoseconds), named what in errors, to
 * *t: the end of a step when is_to, its start otherwise. */
static int resolve_str(struct refs *r, const char *what, const char *s, int is_to, json_int_t *t,
                       char *err, size_t n) {
  if (!strncmp(s, "step:", 5)) {
    if (!r->steps_path)
      return fail(err, n, "%s: \"%s\" needs the trainer's lines (--steps FILE)", what, s);
    if (!r->steps && read_steps(r, err, n)) return 1;
    json_t *se = json_object_get(r->steps, s + 5);
    if (!se)
      return fail(err, n, "%s: step %s is not in %s (the run did not reach it)", what, s + 5,
                  r->steps_path);
    *t = json_integer_value(json_array_get(se, is_to ? 1 : 0));
    return 0;
  }
  if (!strncmp(s, "mark:", 5)) {
    if (!r->marks_path)
      return fail(err, n, "%s: \"%s\" needs the marks file (--marks FILE)", what, s);
    if (!r->marks && read_marks(r, err, n)) return 1;
    json_t *m = json_object_get(r->marks, s + 5);
    if (!m) return fail(err, n, "%s: mark %s is not in %s", what, s + 5, r->marks_path);
    *t = json_integer_value(m);
    return 0;
  }
  char *end;
  errno = 0;
  long long v = strtoll(s, &end, 10);
  if (!*s || *end || errno || v < 0)
    return fail(err, n, "%s: \"%s\" is not a time: nanoseconds, \"step:N\" or \"mark:NAME\"", what,
                s);
  *t = v;
  return 0;
}

/* Resolves entry i's field key (an integer, or a reference as above; "to" may be null: open). */
static int resolve(struct refs *r, const char *path, size_t i, const json_t *e, const char *key,
                   json_int_t *t, char *err, size_t n) {
  json_t *v = json_object_get(e, key);
  int is_to = !strcmp(key, "to");
  char what[600];
  snprintf(what, sizeof what, "%s: expect[%zu].%s", path, i, key);
  if (json_is_integer(v) && json_integer_value(v) >= 0) {
    *t = json_integer_value(v);
    return 0;
  }
  if (is_to && json_is_null(v)) {
    *t = OPEN_END;
    return 0;
  }
  if (json_is_string(v)) return resolve_str(r, what, json_string_value(v), is_to, t, err, n);
  return fail(err, n, "%s is missing or not a time: nanoseconds, \"step:N\" or \"mark:NAME\"%s",
              what, is_to ? " (or null)" : "");
}

int c4_score_time_ref(const char *ref, const char *steps, const char *marks, int is_end,
                      uint64_t *t, char *err, size_t n) {
  struct refs r = {.steps_path = steps, .marks_path = marks};
  json_int_t v = 0;
  int rc = resolve_str(&r, ref, ref, is_end, &v, err, n);
  json_decref(r.steps);
  json_decref(r.marks);
  *t = (uint64_t)v;
  return rc;
}

int c4_score_steps_load(const char *path, json_t **steps, char *err, size_t n) {
  struct refs r = {.steps_path = path};
  int rc = read_steps(&r, err, n);
  *steps = rc ? NULL : r.steps;
  if (rc) json_decref(r.steps);
  return rc;
}

/* A number of seconds field, dflt when absent; -1 when present and not a number >= 0. */
static int seconds(const json_t *o, const char *key, uint64_t dflt, uint64_t *ns) {
  json_t *v = json_object_get(o, key);
  if (!v) {
    *ns = dflt;
    return 0;
  }
  if (!json_is_number(v) || json_number_value(v) < 0 || json_number_value(v) > 1e6)
    return C4_EINVAL;
  *ns = (uint64_t)(json_number_value(v) * 1e9);
  return 0;
}

/* The truth document for table doc: each entry with onset_ns and end_ns resolved. */
static json_t *to_truth(const char *path, json_t *doc, struct refs *r, char *err, size_t n) {
  json_t *v = json_object_get(doc, "v"), *expect = json_object_get(doc, "expect");
  if (!json_is_integer(v) || json_integer_value(v) != 1) {
    fail(err, n, "%s: \"v\" is missing or not 1 (a table version this reader knows)", path);
    return NULL;
  }
  if (!json_is_array(expect)) {
    fail(err, n, "%s: \"expect\" is missing or not an array", path);
    return NULL;
  }
  uint64_t hang = 3000000000ull;
  json_t *hang_ms = json_object_get(doc, "hang_ms");
  if (hang_ms && (!json_is_integer(hang_ms) || json_integer_value(hang_ms) <= 0)) {
    fail(err, n, "%s: \"hang_ms\" is not a positive integer", path);
    return NULL;
  }
  if (hang_ms) hang = (uint64_t)json_integer_value(hang_ms) * 1000000ull;
  json_t *faults = json_array();
  json_int_t start = OPEN_END, end = 0;
  size_t i;
  json_t *e;
  json_array_foreach(expect, i, e) {
    json_int_t from, to;
    if (!json_is_object(e)) {
      fail(err, n, "%s: expect[%zu] is not an object", path, i);
      goto bad;
    }
    if (resolve(r, path, i, e, "from", &from, err, n) || resolve(r, path, i, e, "to", &to, err, n))
      goto bad;
    if (to < from) {
      fail(err, n,
           "%s: expect[%zu]: \"to\" (%" JSON_INTEGER_FORMAT
           ") is before \"from\" (%" JSON_INTEGER_FORMAT ")",
           path, i, to, from);
      goto bad;
    }
    json_t *f = json_deep_copy(e);
    json_object_set_new(f, "onset_ns", json_integer(from));
    json_object_set_new(f, "end_ns", to == OPEN_END ? json_null() : json_integer(to));
    json_array_append_new(faults, f);
    if (from < start) start = from;
    if (to != OPEN_END && to > end) end = to;
  }
  if (start == OPEN_END) start = 0;
  return json_pack("{s:i, s:I, s:I, s:I, s:o}", "v", 1, "start_ns", start, "trace_end_ns",
                   (json_int_t)(end > start ? end : start), "hang_threshold_ns", (json_int_t)hang,
                   "faults", faults);
bad:
  json_decref(faults);
  return NULL;
}

int c4_score_expect_load(const char *path, const char *steps, const char *marks,
                         struct c4_score_truth *t, char *err, size_t n) {
  memset(t, 0, sizeof *t);
  json_error_t je;
  json_t *doc = json_load_file(path, JSON_REJECT_DUPLICATES, &je);
  if (!doc) { /* "PATH: No such file or directory", not jansson's "unable to open PATH: ..." */
    char why[300];
    if (je.line < 1) return fail(err, n, "%s: %s", path, c4_cli_json_why(&je, why, sizeof why));
    return fail(err, n, "%s:%d: %s", path, je.line, je.text);
  }
  if (!json_is_object(doc)) {
    json_decref(doc);
    return fail(err, n, "%s:1: not a JSON object", path);
  }
  struct refs r = {.steps_path = steps, .marks_path = marks};
  json_t *truth = to_truth(path, doc, &r, err, n);
  json_decref(r.steps);
  json_decref(r.marks);
  if (!truth) {
    json_decref(doc);
    return 1;
  }
  json_decref(doc);
  if (c4_score_truth_from_doc(path, truth, "expect", t, err, n)) return 1;
  /* each entry's own slack (the truth's faults are the table's entries, in order) */
  for (size_t i = 0; i < t->n; i++)
    if (seconds(t->f[i].obj, "early_s", C4_SCORE_EARLY_NS, &t->f[i].early) ||
        seconds(t->f[i].obj, "late_s", C4_SCORE_LATE_NS, &t->f[i].late))
      return fail(err, n, "%s: expect[%zu]: early_s or late_s is not a number of seconds >= 0",
                  path, i);
  t->strict = 1;
  return 0;
}
