/* c4_score.c -- matching c4mon's events to injected faults: an event matches a fault of its
 * kind whose window (onset - 0.5 s to its end or the trace's, + 10 s) holds it (and, strict, that
 * names its place); precision, recall, location and time to flag follow (docs/scenarios.md). */
#include "c4_score.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EARLY_NS C4_SCORE_EARLY_NS
#define LATE_NS C4_SCORE_LATE_NS

static int streq(const char *a, const char *b) { return a && b && !strcmp(a, b); }

static const char *str(const json_t *o, const char *key) {
  return json_string_value(json_object_get(o, key));
}

static int cmp_int(const void *a, const void *b) {
  json_int_t x = *(const json_int_t *)a, y = *(const json_int_t *)b;
  return x < y ? -1 : x > y;
}

/* 1 when the integer arrays a and b hold the same set. */
static int same_ints(const json_t *a, const json_t *b) {
  size_t na = json_array_size(a), nb = json_array_size(b);
  if (!na || !nb) return 0;
  json_int_t *x = calloc(na + nb, sizeof *x);
  if (!x) return 0;
  for (size_t i = 0; i < na; i++)
    x[i] = json_integer_value(json_array_get(a, i));
  for (size_t i = 0; i < nb; i++)
    x[na + i] = json_integer_value(json_array_get(b, i));
  qsort(x, na, sizeof *x, cmp_int);
  qsort(x + na, nb, sizeof *x, cmp_int);
  size_t ua = 0, ub = 0; /* dedupe each, then compare */
  for (size_t i = 0; i < na; i++)
    if (!ua || x[ua - 1] != x[i]) x[ua++] = x[i];
  for (size_t i = 0; i < nb; i++)
    if (!ub || x[na + ub - 1] != x[na + i]) x[na + ub++] = x[na + i];
  int same = ua == ub && !memcmp(x, x + na, ua * sizeof *x);
  free(x);
  return same;
}

/* 1 when the string arrays a and b hold the same set (small arrays: quadratic). */
static int same_strs(const json_t *a, const json_t *b) {
  if (!json_array_size(a) || !json_array_size(b)) return 0;
  for (int pass = 0; pass < 2; pass++) {
    const json_t *x = pass ? b : a, *y = pass ? a : b;
    for (size_t i = 0; i < json_array_size(x); i++) {
      int found = 0;
      for (size_t k = 0; k < json_array_size(y) && !found; k++)
        found =
            streq(json_string_value(json_array_get(x, i)), json_string_value(json_array_get(y, k)));
      if (!found) return 0;
    }
  }
  return 1;
}

/* 1 when the fault's where (a string, or an array of alternatives) allows where. */
static int where_allowed(const json_t *w, const char *where) {
  if (json_is_string(w)) return streq(json_string_value(w), where);
  size_t i;
  json_t *x;
  json_array_foreach(w, i, x) if (streq(json_string_value(x), where)) return 1;
  return 0;
}

int c4_score_place_right(const json_t *tf, const json_t *ev) {
  const char *where = str(ev, "where");
  if (!where || !where_allowed(json_object_get(tf, "where"), where)) return 0;
  if (!strcmp(where, "gpu"))
    return same_ints(json_object_get(tf, "ranks"), json_object_get(ev, "ranks"));
  if (!strcmp(where, "nic_tx") || !strcmp(where, "nic_rx")) {
    json_t *tn = json_object_get(tf, "nic"), *en = json_object_get(ev, "nic");
    if (json_is_object(en) && json_integer_value(json_object_get(en, "dev")) < 0)
      return streq(str(tn, "host"), str(en, "host")) && /* no device: the rank names the NIC */
             same_ints(json_object_get(tf, "ranks"), json_object_get(ev, "ranks"));
    if (json_is_object(en))
      return streq(str(tn, "host"), str(en, "host")) &&
             json_integer_value(json_object_get(tn, "dev")) ==
                 json_integer_value(json_object_get(en, "dev"));
    json_t *hosts = json_object_get(ev, "hosts");
    return json_array_size(hosts) == 1 &&
           streq(str(tn, "host"), json_string_value(json_array_get(hosts, 0)));
  }
  if (!strcmp(where, "link")) {
    json_t *tl = json_object_get(tf, "link"), *el = json_object_get(ev, "link");
    json_t *td = json_object_get(tf, "link_devs"), *ed = json_object_get(ev, "link_devs");
    if (!json_is_array(el) || !json_is_array(tl) ||
        !streq(json_string_value(json_array_get(tl, 0)),
               json_string_value(json_array_get(el, 0))) ||
        !streq(json_string_value(json_array_get(tl, 1)), json_string_value(json_array_get(el, 1))))
      return 0;
    return !json_is_array(td) || !json_is_array(ed) ||
           json_integer_value(json_array_get(ed, 0)) < 0 || /* the trace gave no devices */
           (json_integer_value(json_array_get(td, 0)) ==
                json_integer_value(json_array_get(ed, 0)) &&
            json_integer_value(json_array_get(td, 1)) == json_integer_value(json_array_get(ed, 1)));
  }
  if (!strcmp(where, "path")) return streq(str(tf, "path"), str(ev, "path"));
  return same_strs(json_object_get(tf, "hosts"), json_object_get(ev, "hosts"));
}

void c4_score_place_name(const json_t *o, char *buf, size_t n) {
  const char *where = str(o, "where");
  json_t *nic = json_object_get(o, "nic"), *link = json_object_get(o, "link");
  json_t *devs = json_object_get(o, "link_devs"), *ranks = json_object_get(o, "ranks");
  if (json_is_object(nic)) {
    snprintf(buf, n, "%s/%lld", str(nic, "host") ? str(nic, "host") : "?",
             (long long)json_integer_value(json_object_get(nic, "dev")));
  } else if (json_is_array(link)) {
    char d[48] = "";
    if (json_is_array(devs))
      snprintf(d, sizeof d, " dev %lld->%lld",
               (long long)json_integer_value(json_array_get(devs, 0)),
               (long long)json_integer_value(json_array_get(devs, 1)));
    snprintf(buf, n, "%s->%s%s", json_string_value(json_array_get(link, 0)),
             json_string_value(json_array_get(link, 1)), d);
  } else if (str(o, "path")) {
    snprintf(buf, n, "%s", str(o, "path"));
  } else if (json_array_size(ranks) && streq(where, "gpu")) {
    size_t len = (size_t)snprintf(buf, n, "rank%s ", json_array_size(ranks) > 1 ? "s" : "");
    for (size_t i = 0; i < json_array_size(ranks) && len < n; i++)
      len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? "," : "",
                              (long long)json_integer_value(json_array_get(ranks, i)));
  } else {
    json_t *hosts = json_object_get(o, "hosts");
    size_t len = 0;
    buf[0] = 0;
    for (size_t i = 0; i < json_array_size(hosts) && len < n; i++)
      len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? "," : "",
                              json_string_value(json_array_get(hosts, i)));
    if (!len) snprintf(buf, n, "-");
  }
}

/* 1 when event e falls in fault f's window and is of its kind. */
static int matches(const struct c4_score_truth *t, const struct c4_score_fault *f,
                   const struct c4_score_event *e) {
  uint64_t lo = f->onset > f->early ? f->onset - f->early : 0;
  uint64_t hi = (f->end ? f->end : t->trace_end) + f->late;
  return !strcmp(e->kind, f->kind) && e->t >= lo && e->t <= hi &&
         (!t->strict || c4_score_place_right(f->obj, e->obj));
}

static int is_hang(const char *kind) {
  return !strcmp(kind, "comm_hang") || !strcmp(kind, "noncomm_hang") || !strcmp(kind, "rank_lost");
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* The median of v[0..n) (sorted in place), or JSON null when n is 0. */
static json_t *median(double *v, size_t n) {
  if (!n) return json_null();
  qsort(v, n, sizeof *v, cmp_double);
  return json_real(n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2);
}

/* The first event (by time, then file order) that matches fault i and is not the right place
 * of another fault it does not also fit: concurrent faults of one kind each get their own. */
static const struct c4_score_event *first_match(const struct c4_score_truth *t, size_t i,
                                                const struct c4_score_events *e) {
  const struct c4_score_event *best = NULL;
  for (size_t k = 0; k < e->n; k++) {
    const struct c4_score_event *ev = &e->ev[k];
    if (!matches(t, &t->f[i], ev) || (best && best->t <= ev->t)) continue;
    int mine = c4_score_place_right(t->f[i].obj, ev->obj), other = 0;
    for (size_t g = 0; g < t->n && !mine && !other; g++)
      other = g != i && matches(t, &t->f[g], ev) && c4_score_place_right(t->f[g].obj, ev->obj);
    if (!other) best = ev;
  }
  return best;
}

/* An event's factor is right within 20% of the injected one. */
static int factor_right(double truth, double event) { return fabs(event / truth - 1) <= 0.2; }

static json_t *fault_result(const struct c4_score_truth *t, size_t i,
                            const struct c4_score_event *m, double *flag) {
  const struct c4_score_fault *f = &t->f[i];
  char place[160];
  c4_score_place_name(f->obj, place, sizeof place);
  json_t *r =
      json_pack("{s:s, s:s, s:s, s:I, s:o, s:b}", "kind", f->kind, "where", f->where, "place",
                place, "onset_ns", (json_int_t)f->onset, "end_ns",
                f->end ? json_integer((json_int_t)f->end) : json_null(), "detected", m != NULL);
  if (!r) return NULL;
  json_t *spec = json_object_get(f->obj, "spec"), *name = json_object_get(f->obj, "name");
  if (json_is_string(spec)) json_object_set(r, "spec", spec);
  if (json_is_string(name)) json_object_set(r, "name", name);
  if (!m) {
    json_object_set_new(r, "place_right", json_null());
    json_object_set_new(r, "flag_s", json_null());
    json_object_set_new(r, "event_id", json_null());
    return r;
  }
  /* a hang is flaggable once the job has stalled (stall_ns, when the truth has it) for the
   * threshold; a lost rank and a slowdown from the onset */
  uint64_t from = f->onset;
  if (is_hang(f->kind) && strcmp(f->kind, "rank_lost")) {
    json_t *stall = json_object_get(f->obj, "stall_ns");
    if (json_is_integer(stall) && (uint64_t)json_integer_value(stall) > from)
      from = (uint64_t)json_integer_value(stall);
    from += t->hang_ns;
  }
  *flag = ((double)m->t - (double)from) / 1e9;
  char eplace[160];
  c4_score_place_name(m->obj, eplace, sizeof eplace);
  json_object_set_new(r, "place_right", json_boolean(c4_score_place_right(f->obj, m->obj)));
  json_object_set_new(r, "flag_s", json_real(*flag));
  json_t *id = json_object_get(m->obj, "id");
  json_object_set_new(r, "event_id", json_is_integer(id) ? json_incref(id) : json_null());
  json_object_set_new(r, "event_t", json_integer((json_int_t)m->t));
  json_object_set_new(r, "event_where",
                      json_string(str(m->obj, "where") ? str(m->obj, "where") : ""));
  json_object_set_new(r, "event_place", json_string(eplace));
  double tf = json_number_value(json_object_get(f->obj, "factor")),
         ef = json_number_value(json_object_get(m->obj, "factor"));
  json_object_set_new(r, "event_factor", json_real(ef));
  json_object_set_new(r, "factor_right", tf > 0 ? json_boolean(factor_right(tf, ef)) : json_null());
  return r;
}

/* The blip (index) an unmatched event probably answers: one shortly before it; -1 if none. */
static long near_blip(const struct c4_score_truth *t, uint64_t at) {
  long best = -1;
  size_t i;
  json_t *b;
  json_array_foreach(t->blips, i, b) {
    uint64_t bt = (uint64_t)json_integer_value(json_object_get(b, "t_ns"));
    if (at + EARLY_NS >= bt && at <= bt + LATE_NS) best = (long)i;
  }
  return best;
}

/* An event's copy for a listing, with its line in the events file. */
static json_t *listed(const struct c4_score_event *ev) {
  json_t *c = json_deep_copy(ev->obj);
  if (c) json_object_set_new(c, "line", json_integer(ev->line));
  return c;
}

/* What a scoring run counts and lists. */
struct tally {
  json_t *faults, *fps, *blips, *repeats;
  const struct c4_score_event **first; /* each fault's first matching event, or NULL */
  double *slow, *hang;                 /* flag times of found slowdowns and hangs */
  char *alarmed;                       /* per blip: an unmatched event came near it */
  size_t nslow, nhang, found, right, tp, nfactor, factor_ok;
};

/* Each fault of the truth: its result, and whether (and how well) an event answered it. */
static void score_faults(const struct c4_score_truth *t, const struct c4_score_events *e,
                         struct tally *y) {
  for (size_t i = 0; i < t->n; i++) {
    const struct c4_score_event *m = y->first[i] = first_match(t, i, e);
    double flag = 0;
    json_t *res = fault_result(t, i, m, &flag);
    json_t *fr = json_object_get(res, "factor_right");
    y->nfactor += json_is_boolean(fr);
    y->factor_ok += json_is_true(fr);
    json_array_append_new(y->faults, res);
    if (!m) continue;
    y->found++;
    y->right += c4_score_place_right(t->f[i].obj, m->obj);
    if (is_hang(t->f[i].kind))
      y->hang[y->nhang++] = flag;
    else
      y->slow[y->nslow++] = flag;
  }
}

/* Each event: a true positive (strict: a repeat when it is not a fault's first answer), or a
 * false alarm with the blip it probably answers. */
static void score_events(const struct c4_score_truth *t, const struct c4_score_events *e,
                         struct tally *y) {
  for (size_t k = 0; k < e->n; k++) {
    int hit = 0, firsts = 0;
    for (size_t i = 0; i < t->n; i++) {
      hit |= matches(t, &t->f[i], &e->ev[k]);
      firsts |= y->first[i] == &e->ev[k];
    }
    if (hit) {
      y->tp++;
      /* strict: a fault answered again (raised, recovered, raised) is one fault, listed */
      if (t->strict && !firsts) json_array_append_new(y->repeats, listed(&e->ev[k]));
      continue;
    }
    json_t *fp = listed(&e->ev[k]);
    long b = near_blip(t, e->ev[k].t);
    if (b >= 0) y->alarmed[b] = 1;
    json_object_set_new(fp, "near_blip", b >= 0 ? json_integer(b) : json_null());
    json_array_append_new(y->fps, fp);
  }
  size_t i;
  json_t *b;
  json_array_foreach(t->blips, i, b) {
    json_t *c = json_deep_copy(b);
    json_object_set_new(c, "alarmed", json_boolean(y->alarmed[i]));
    json_array_append_new(y->blips, c);
  }
}

/* The score document from the tally (its lists go in with new references). */
static json_t *score_doc(const struct c4_score_truth *t, const struct c4_score_events *e,
                         const struct tally *y) {
  json_t *doc = json_pack(
      "{s:f, s:f, s:o, s:o, s:o, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:O, s:O, s:O}", "precision",
      e->n ? (double)y->tp / (double)e->n : 1.0, "recall",
      t->n ? (double)y->found / (double)t->n : 1.0, "location",
      y->found ? json_real((double)y->right / (double)y->found) : json_null(), "median_flag_slow_s",
      median(y->slow, y->nslow), "median_flag_hang_s", median(y->hang, y->nhang), "factor_right",
      y->nfactor ? json_real((double)y->factor_ok / (double)y->nfactor) : json_null(),
      "false_alarms", (json_int_t)json_array_size(y->fps), "events", (json_int_t)e->n,
      "true_positives", (json_int_t)y->tp, "faults_total", (json_int_t)t->n, "faults_detected",
      (json_int_t)y->found, "start_ns", (json_int_t)t->start, "faults", y->faults,
      "false_positives", y->fps, "blips", y->blips);
  if (doc && t->strict) {
    json_object_set_new(doc, "ok", json_boolean(y->found == t->n && !json_array_size(y->fps)));
    json_object_set(doc, "repeats", y->repeats);
  }
  return doc;
}

json_t *c4_score_run(const struct c4_score_truth *t, const struct c4_score_events *e) {
  struct tally y = {.faults = json_array(),
                    .fps = json_array(),
                    .blips = json_array(),
                    .repeats = json_array(),
                    .first = calloc(t->n + 1, sizeof *y.first),
                    .slow = calloc(t->n + 1, sizeof *y.slow),
                    .hang = calloc(t->n + 1, sizeof *y.hang),
                    .alarmed = calloc(json_array_size(t->blips) + 1, 1)};
  json_t *doc = NULL;
  if (y.faults && y.fps && y.blips && y.repeats && y.first && y.slow && y.hang && y.alarmed) {
    score_faults(t, e, &y);
    score_events(t, e, &y);
    doc = score_doc(t, e, &y);
  }
  json_decref(y.repeats);
  free(y.first);
  json_decref(y.faults);
  json_decref(y.fps);
  json_decref(y.blips);
  free(y.slow);
  free(y.hang);
  free(y.alarmed);
  return doc;
}
