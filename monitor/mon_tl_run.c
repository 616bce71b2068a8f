/* mon_tl_run.c -- reads a run for `c4mon timeline`: c4train's step lines, c4mon's events and the
 * table of the faults injected, each a file of JSON (Jansson), into spans and samples by step. */
#include "mon_tl_run.h"

#include <errno.h>
#include <jansson.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "c4_score.h"

static int fail(char *err, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, n, fmt, ap);
  va_end(ap);
  return 1;
}

/* Calls one(r, obj, err) for each non-blank JSON line of path (- : standard input); stops at the
 * first failure, whose reason it prefixes with "FILE:LINE: ". */
static int each_line(struct tl_run *r, const char *path,
                     int (*one)(struct tl_run *, const json_t *, char *, size_t), char *err,
                     size_t n) {
  FILE *f = strcmp(path, "-") ? fopen(path, "r") : stdin;
  if (!f) return fail(err, n, "%s: %s", path, strerror(errno));
  char *line = NULL, why[160];
  size_t cap = 0;
  ssize_t len;
  int rc = 0;
  for (long no = 1; !rc && (len = getline(&line, &cap, f)) >= 0; no++) {
    if (strspn(line, " \t\r\n") == (size_t)len) continue;
    json_error_t je;
    json_t *o = json_loadb(line, (size_t)len, 0, &je);
    if (!o)
      rc = fail(err, n, "%s:%ld: %s", path, no, je.text);
    else if (!json_is_object(o))
      rc = fail(err, n, "%s:%ld: not a JSON object", path, no);
    else if (one(r, o, why, sizeof why))
      rc = fail(err, n, "%s:%ld: %s", path, no, why);
    json_decref(o);
  }
  if (!rc && ferror(f)) rc = fail(err, n, "%s: %s", path, strerror(errno));
  free(line);
  if (f != stdin) fclose(f);
  return rc;
}

/* Room for one more of *p's have items: capacities are 16, 32, 64, ... */
static int grow(void **p, size_t have, size_t size) {
  if (have && (have < 16 || (have & (have - 1)))) return 0;
  void *q = realloc(*p, (have ? 2 * have : 16) * size);
  if (!q) return C4_ENOMEM;
  *p = q;
  return 0;
}

/* A "step" line: the job's tokens/s and each rank's (rank_tokens_per_s, when the log has it). A
 * step number not above the last one kept (a restarted run appending to the file) is skipped:
 * the first line of each step counts, as in c4mon events --steps. */
static int one_step(struct tl_run *r, const json_t *o, char *why, size_t n) {
  const char *ev = json_string_value(json_object_get(o, "event"));
  if (ev && !strcmp(ev, "start") && !r->world)
    r->world = (int)json_integer_value(json_object_get(o, "ranks"));
  const char *job = json_string_value(json_object_get(o, "job"));
  if (ev && !strcmp(ev, "start") && job && !r->job_of_steps) {
    snprintf(r->job, sizeof r->job, "%s", job);
    r->job_of_steps = 1;
  }
  if (!ev || strcmp(ev, "step")) return 0;
  const json_t *step = json_object_get(o, "step"), *t0 = json_object_get(o, "t_start_ns"),
               *t1 = json_object_get(o, "t_ns"), *tps = json_object_get(o, "tokens_per_s"),
               *ranks = json_object_get(o, "rank_tokens_per_s");
  if (!json_is_integer(step) || !json_is_integer(t0) || !json_is_integer(t1) ||
      !json_is_number(tps) || json_integer_value(t0) < 0 ||
      json_integer_value(t1) < json_integer_value(t0))
    return fail(why, n, "a step line without integer step, t_start_ns <= t_ns and tokens_per_s");
  if (ranks && !json_is_array(ranks)) return fail(why, n, "rank_tokens_per_s is not an array");
  if (r->nsteps && json_integer_value(step) <= r->steps[r->nsteps - 1].step) return 0;
  if (grow((void **)&r->steps, r->nsteps, sizeof *r->steps)) return fail(why, n, "out of memory");
  struct tl_step *s = &r->steps[r->nsteps++];
  memset(s, 0, sizeof *s);
  s->step = (int)json_integer_value(step);
  s->t0 = (uint64_t)json_integer_value(t0);
  s->t1 = (uint64_t)json_integer_value(t1);
  s->tps = json_number_value(tps);
  size_t i;
  const json_t *v;
  json_array_foreach(ranks, i, v) {
    if (i >= TL_MAX_RANKS) break;
    if (!json_is_number(v)) return fail(why, n, "rank_tokens_per_s[%zu] is not a number", i);
    s->rank_tps[i] = json_number_value(v);
    if ((int)i + 1 > r->ranks) r->ranks = (int)i + 1;
  }
  return 0;
}

int tl_read_steps(struct tl_run *r, const char *path, char *err, size_t n) {
  if (each_line(r, path, one_step, err, n)) return 1;
  return r->nsteps ? 0 : fail(err, n, "%s: no step lines (c4train --json-out writes them)", path);
}

static struct tl_span *new_span(struct tl_run *r) {
  if (grow((void **)&r->spans, r->nspans, sizeof *r->spans)) return NULL;
  struct tl_span *s = &r->spans[r->nspans++];
  memset(s, 0, sizeof *s);
  return s;
}

/* "straggler rank 3 1.70x": the kind, the place and how much slower. */
static void verdict_label(const json_t *o, const char *kind, char *buf, size_t n) {
  char place[96];
  c4_score_place_name(o, place, sizeof place);
  double f = json_number_value(json_object_get(o, "factor"));
  if (f > 0)
    snprintf(buf, n, "%s %s %.*fx", kind, place, f < 10 ? 2 : 0, f);
  else
    snprintf(buf, n, "%s %s", kind, place);
}

/* A verdict opens a span; a recovered event closes the span of the id it clears; others
 * (job_end, dropped, kinds to come) are not drawn. */
static int one_event(struct tl_run *r, const json_t *o, char *why, size_t n) {
  static const char *const verdicts[] = {"straggler", "comm_slow", "comm_hang", "noncomm_hang",
                                         "rank_lost"};
  const char *kind = json_string_value(json_object_get(o, "kind"));
  const json_t *t = json_object_get(o, "t"), *id = json_object_get(o, "id");
  if (!kind) return fail(why, n, "\"kind\" is missing or not a string");
  const char *job = json_string_value(json_object_get(o, "job"));
  if (r->job_of_steps && job && strcmp(job, r->job)) return 0; /* another job's (one c4mon) */
  if (job && !r->job[0]) snprintf(r->job, sizeof r->job, "%s", job);
  int verdict = 0;
  for (size_t k = 0; k < sizeof verdicts / sizeof verdicts[0]; k++)
    verdict |= !strcmp(kind, verdicts[k]);
  if (!verdict && strcmp(kind, "recovered")) return 0;
  if (!json_is_integer(t) || json_integer_value(t) < 0)
    return fail(why, n, "\"t\" is missing or not a time");
  if (!strcmp(kind, "recovered")) {
    json_int_t clears = json_integer_value(json_object_get(o, "clears"));
    for (size_t i = 0; i < r->nspans; i++)
      if (r->spans[i].id == clears && clears > 0 && !r->spans[i].off)
        r->spans[i].off = (uint64_t)json_integer_value(t);
    return 0;
  }
  struct tl_span *s = new_span(r);
  if (!s) return fail(why, n, "out of memory");
  snprintf(s->kind, sizeof s->kind, "%s", kind);
  s->on = (uint64_t)json_integer_value(t);
  s->id = json_is_integer(id) ? (long)json_integer_value(id) : -1;
  verdict_label(o, kind, s->label, sizeof s->label);
  size_t i;
  const json_t *v;
  json_array_foreach(json_object_get(o, "ranks"), i, v) {
    json_int_t rk = json_integer_value(v);
    if (json_is_integer(v) && rk >= 0 && rk < TL_MAX_RANKS) s->ranks |= 1ull << rk;
  }
  return 0;
}

int tl_read_events(struct tl_run *r, const char *path, char *err, size_t n) {
  return each_line(r, path, one_event, err, n);
}

int tl_read_faults(struct tl_run *r, const char *expect, const char *steps, const char *marks,
                   char *err, size_t n) {
  struct c4_score_truth t;
  if (c4_score_expect_load(expect, steps, marks, &t, err, n)) return 1;
  int rc = 0;
  for (size_t i = 0; i < t.n && !rc; i++) {
    struct tl_span *s = new_span(r);
    if (!s) {
      rc = fail(err, n, "%s: out of memory", expect);
      break;
    }
    const char *name = json_string_value(json_object_get(t.f[i].obj, "name"));
    if (name) {
      snprintf(s->label, sizeof s->label, "%s", name);
    } else {
      char place[96];
      c4_score_place_name(t.f[i].obj, place, sizeof place);
      snprintf(s->label, sizeof s->label, "%s %s", t.f[i].kind, place);
    }
    snprintf(s->kind, sizeof s->kind, "fault");
    s->on = t.f[i].onset;
    s->off = t.f[i].end;
  }
  c4_score_truth_free(&t);
  return rc;
}

void tl_run_free(struct tl_run *r) {
  free(r->steps);
  free(r->spans);
  memset(r, 0, sizeof *r);
}

double tl_step_at(const struct tl_run *r, uint64_t t) {
  if (!r->nsteps) return 0;
  size_t lo = 0, hi = r->nsteps; /* the first step that ends at or after t */
  while (lo < hi) {
    size_t mid = (lo + hi) / 2;
    if (r->steps[mid].t1 < t)
      lo = mid + 1;
    else
      hi = mid;
  }
  if (lo == r->nsteps) return r->steps[lo - 1].step;
  const struct tl_step *s = &r->steps[lo];
  if (t <= s->t0) return s->step - 1; /* before it began: between two steps */
  return s->step - 1 + (double)(t - s->t0) / (double)(s->t1 - s->t0);
}

int tl_smooth_steps(size_t nsteps) {
  size_t w = nsteps / 25;
  if (w > 51) w = 51;
  return (int)(w | 1);
}

static int cmp_double(const void *x, const void *y) {
  double a = *(const double *)x, b = *(const double *)y;
  return a < b ? -1 : a > b;
}

int tl_lane_median(const struct tl_run *r, int rank, int window, double *out) {
  double *v = malloc((size_t)(window > 0 ? window : 1) * sizeof *v);
  if (!v) return C4_ENOMEM;
  long half = window / 2, n = (long)r->nsteps;
  for (long i = 0; i < n; i++) {
    int k = 0;
    for (long j = i - half; j <= i + half; j++)
      if (j >= 0 && j < n) v[k++] = rank < 0 ? r->steps[j].tps : r->steps[j].rank_tps[rank];
    qsort(v, (size_t)k, sizeof *v, cmp_double);
    out[i] = k % 2 ? v[k / 2] : 0.5 * (v[k / 2 - 1] + v[k / 2]);
  }
  free(v);
  return 0;
}
