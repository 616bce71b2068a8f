/* mon_cmd_events.c -- `c4mon events`: reads an events file (or follows one c4mon is writing),
 * keeps the events a filter passes, and prints them, their count, a summary, the verdicts still
 * active, or a score against a table of expected verdicts (common/c4_score.h). */

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "c4_cli.h"
#include "c4_clock.h"
#include "c4_err.h"
#include "c4_score.h"
#include "mon_cli.h"
#include "mon_evq.h"

struct evq {
  const char *prog, *path, *steps, *marks, *score, *where, *host, *job;
  char *kinds; /* comma-separated, or NULL: every kind */
  long rank;   /* -1: any */
  uint64_t since, until;
  int text, count, summary, active, follow;
  /* state */
  json_t *step_times; /* c4_score_steps_load's object, for --text labels */
  uint64_t t0;        /* the run's first event's time, for labels without steps */
  json_t *live;       /* --active: "run:id" -> verdict */
  long run;           /* the c4mon run the last event came from: ids start again with each */
  long shown_run;     /* --text: the run of the last line printed, -1 before the first */
  json_int_t last_id;
  json_t *places; /* --summary: "kind where place" -> entry */
  json_t *by_kind;
  size_t passed, lines, dropped, verdicts;
};

static int in_list(const char *list, const char *s) {
  size_t n = strlen(s);
  for (const char *p = list; p && *p;) {
    const char *c = strchr(p, ',');
    size_t len = c ? (size_t)(c - p) : strlen(p);
    if (len == n && !memcmp(p, s, n)) return 1;
    p = c ? c + 1 : p + len;
  }
  return 0;
}

static int has_int(const json_t *a, long v) {
  size_t i;
  json_t *x;
  json_array_foreach(a, i, x) if (json_integer_value(x) == v) return 1;
  return 0;
}

static int has_str(const json_t *a, const char *s) {
  size_t i;
  json_t *x;
  json_array_foreach(a, i,
                     x) if (json_string_value(x) && !strcmp(json_string_value(x), s)) return 1;
  return 0;
}

static int passes(const struct evq *q, const json_t *ev) {
  const char *kind = json_string_value(json_object_get(ev, "kind"));
  const char *where = json_string_value(json_object_get(ev, "where"));
  const char *job = json_string_value(json_object_get(ev, "job"));
  uint64_t t = (uint64_t)json_integer_value(json_object_get(ev, "t"));
  if (q->kinds && !in_list(q->kinds, kind)) return 0;
  if (q->where && (!where || strcmp(q->where, where))) return 0;
  if (q->job && (!job || strcmp(q->job, job))) return 0;
  if (q->rank >= 0 && !has_int(json_object_get(ev, "ranks"), q->rank)) return 0;
  if (q->host) {
    const char *nh = json_string_value(json_object_get(json_object_get(ev, "nic"), "host"));
    if (!has_str(json_object_get(ev, "hosts"), q->host) &&
        !has_str(json_object_get(ev, "link"), q->host) && !(nh && !strcmp(nh, q->host)))
      return 0;
  }
  return t >= q->since && t <= q->until;
}

/* "step N" (the last step begun by t) with --steps, else seconds from the run's first event (or
 * from --since). */
static void label(struct evq *q, uint64_t t, char *buf, size_t n) {
  if (q->steps) {
    char err[300];
    json_t *st = NULL;
    if (!c4_score_steps_load(q->steps, &st, err, sizeof err)) { /* re-read: it grows */
      json_decref(q->step_times);
      q->step_times = st;
    }
    long best = 0;
    const char *key;
    json_t *v;
    json_object_foreach(q->step_times, key, v) {
      long s = strtol(key, NULL, 10);
      if ((uint64_t)json_integer_value(json_array_get(v, 0)) <= t && s > best) best = s;
    }
    snprintf(buf, n, "step %ld", best);
    return;
  }
  if (!q->t0) q->t0 = q->since ? q->since : t;
  snprintf(buf, n, "%8.3f s", ((double)t - (double)q->t0) / 1e9);
}

/* Whether an event of kind is a verdict: not a recovery, nor a job's end, an action or a note of
 * lines dropped. */
static int is_verdict(const char *kind) {
  return strcmp(kind, "recovered") && strcmp(kind, "job_end") && strcmp(kind, "plan") &&
         strcmp(kind, "dropped");
}

/* Adds an event to the summary's counts and place table. */
static void summarize(struct evq *q, const json_t *ev) {
  const char *kind = json_string_value(json_object_get(ev, "kind"));
  json_t *c = json_object_get(q->by_kind, kind);
  json_object_set_new(q->by_kind, kind, json_integer(json_integer_value(c) + 1));
  q->verdicts += is_verdict(kind);
  if (!strcmp(kind, "recovered")) return;
  char place[400], key[500];
  c4_mon_evq_place(ev, place, sizeof place);
  const char *where = json_string_value(json_object_get(ev, "where"));
  snprintf(key, sizeof key, "%s|%s|%s", kind, where ? where : "", place);
  json_t *t = json_object_get(ev, "t"), *factor = json_object_get(ev, "factor");
  json_t *p = json_object_get(q->places, key);
  if (!p) {
    p = json_pack("{s:s, s:s?, s:s, s:i, s:O, s:O, s:f}", "kind", kind, "where", where, "place",
                  place, "count", 0, "first_t", t, "last_t", t, "max_factor", 0.0);
    json_object_set_new(q->places, key, p);
  }
  json_object_set_new(p, "count",
                      json_integer(json_integer_value(json_object_get(p, "count")) + 1));
  json_object_set(p, "last_t", t);
  if (json_number_value(factor) > json_number_value(json_object_get(p, "max_factor")))
    json_object_set(p, "max_factor", factor);
}

/* One event line: the active set, the filter, then what the mode prints as it goes. A file that
 * several c4mon runs appended to numbers each run's events from 1 again: an id not above the last
 * one begins a run, and a recovery clears its own run's verdict (by id alone, a later run's
 * recovery of its #15 cleared an earlier run's #15 still standing). */
static void take(struct evq *q, json_t *ev, const char *line) {
  const char *kind = json_string_value(json_object_get(ev, "kind"));
  json_int_t at = json_integer_value(json_object_get(ev, "id"));
  if (at <= q->last_id) {
    /* its times are its own c4mon's (a replay's are the trace's): read from the file's first
     * event, a later run's were negative */
    q->run++;
    if (!q->since) q->t0 = 0;
  }
  q->last_id = at;
  char id[48];
  if (!strcmp(kind, "dropped"))
    q->dropped += (size_t)json_integer_value(json_object_get(ev, "count"));
  if (!strcmp(kind, "recovered")) {
    snprintf(id, sizeof id, "%ld:%" JSON_INTEGER_FORMAT, q->run,
             json_integer_value(json_object_get(ev, "clears")));
    json_object_del(q->live, id);
  } else if (is_verdict(kind)) {
    snprintf(id, sizeof id, "%ld:%" JSON_INTEGER_FORMAT, q->run, at);
    json_object_set(q->live, id, ev);
  }
  if (q->active || !passes(q, ev)) return;
  q->passed++;
  if (q->summary) summarize(q, ev);
  if (q->count || q->summary) return;
  if (q->text) {
    char at[48];
    if (q->shown_run >= 0 && q->shown_run != q->run)
      printf("-- another c4mon run appended here: ids and times from its start\n");
    q->shown_run = q->run;
    label(q, (uint64_t)json_integer_value(json_object_get(ev, "t")), at, sizeof at);
    c4_mon_evq_print(stdout, ev, at);
  } else {
    fputs(line, stdout);
    fputc('\n', stdout);
  }
  if (q->follow) fflush(stdout);
}

/* Checks one line; NULL when it is an event this reader can use, else why not. */
static const char *bad_event(const json_t *o) {
  if (!json_is_object(o)) return "not a JSON object";
  json_t *v = json_object_get(o, "v");
  if (v && (!json_is_integer(v) || json_integer_value(v) != 1))
    return "\"v\" is not 1 (an events version this reader knows)";
  if (!json_is_string(json_object_get(o, "kind"))) return "\"kind\" is missing or not a string";
  const char *kind = json_string_value(json_object_get(o, "kind"));
  if (strcmp(kind, "dropped") && !json_is_integer(json_object_get(o, "t")))
    return "\"t\" is missing or not an integer";
  return NULL;
}

static void nap_ms(long ms) {
  struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
  nanosleep(&ts, NULL);
}

/* Appends len bytes of line (and its NUL) to the unfinished line in *part (*plen bytes).
 * Returns 0, or -1 when out of memory. */
static int append_part(char **part, size_t *plen, const char *line, size_t len) {
  char *p = realloc(*part, *plen + len + 1);
  if (!p) return C4_ENOMEM;
  memcpy(p + *plen, line, len + 1);
  *part = p;
  *plen += len;
  return 0;
}

/* One whole line of the file: skipped when blank, else checked and taken. Returns 0, or 1 after
 * naming a bad line (without --follow: with it, the line is skipped). */
static int take_line(struct evq *q, const char *text) {
  q->lines++;
  if (q->lines == 1 && !strncmp(text, "\xef\xbb\xbf", 3)) text += 3; /* a UTF-8 BOM: an editor's */
  size_t tl = strlen(text);
  while (tl && (text[tl - 1] == '\n' || text[tl - 1] == '\r'))
    tl--;
  if (strspn(text, " \t\r\n") >= tl) return 0;
  json_error_t je;
  json_t *o = json_loadb(text, tl, JSON_REJECT_DUPLICATES, &je);
  const char *why = o ? bad_event(o) : je.text;
  if (why) {
    c4_cli_fail(q->prog, "%s: line %zu: %s", q->path, q->lines, why);
    json_decref(o);
    return !q->follow;
  }
  char *copy = strndup(text, tl);
  if (copy) take(q, o, copy);
  free(copy);
  json_decref(o);
  return 0;
}

/* Whether the file being followed is now shorter than where reading got to. */
static int was_truncated(FILE *f) {
  struct stat st;
  long at = ftell(f);
  return at > 0 && fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && st.st_size < at;
}

/* Reads the file line by line (following it with --follow: a line counts once it is whole).
 * Returns 0, or 1 after naming a bad line or an unreadable file. */
static int read_events(struct evq *q) {
  FILE *f = strcmp(q->path, "-") ? fopen(q->path, "r") : stdin;
  if (!f) {
    return c4_cli_fail(q->prog, "%s: %s", q->path, strerror(errno));
  }
  char *line = NULL, *part = NULL;
  size_t cap = 0, plen = 0;
  ssize_t len;
  int rc = 0;
  while (!c4_mon_stop && !rc) {
    len = getline(&line, &cap, f);
    if (len < 0) {
      if (ferror(f)) {
        rc = c4_cli_fail(q->prog, "%s: %s", q->path, strerror(errno));
      }
      if (!q->follow && !rc && plen) { /* the last line has no newline: whole, or said */
        json_t *o = json_loadb(part, plen, 0, NULL);
        if (o)
          rc = take_line(q, part);
        else
          fprintf(stderr, "%s: %s: line %zu is unfinished (no newline, not whole JSON): not read\n",
                  q->prog, q->path, q->lines + 1);
        json_decref(o);
      }
      if (!q->follow || rc) break;
      clearerr(f);
      if (was_truncated(f)) { /* copytruncate, or `: > FILE`: read it again from its start */
        fprintf(stderr, "%s: %s was truncated: reading it from its start\n", q->prog, q->path);
        rewind(f);
        plen = 0;
      }
      nap_ms(200);
      continue;
    }
    if (line[len - 1] != '\n') { /* the writer is mid-line: keep it for later */
      if (append_part(&part, &plen, line, (size_t)len) != 0) break;
      continue;
    }
    const char *text = line;
    if (plen) {
      if (append_part(&part, &plen, line, (size_t)len) != 0) break;
      text = part;
      plen = 0;
    }
    rc = take_line(q, text);
  }
  free(line);
  free(part);
  if (f != stdin) fclose(f);
  return rc;
}

static int finish(struct evq *q) {
  if (q->active) {
    const char *key;
    json_t *ev;
    json_object_foreach(q->live, key, ev) {
      if (!passes(q, ev)) continue;
      q->passed++;
      if (q->count) continue;
      if (q->text) {
        char at[48];
        label(q, (uint64_t)json_integer_value(json_object_get(ev, "t")), at, sizeof at);
        c4_mon_evq_print(stdout, ev, at);
      } else {
        json_dumpf(ev, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
        fputc('\n', stdout);
      }
    }
  }
  if (q->count) printf("%zu\n", q->passed);
  if (q->summary) {
    json_t *places = json_array();
    const char *key;
    json_t *p;
    json_object_foreach(q->places, key, p) json_array_append(places, p);
    size_t rec = (size_t)json_integer_value(json_object_get(q->by_kind, "recovered"));
    if (q->text) {
      printf("%zu events passed: %zu verdicts, %zu recovered, %zu still active, %zu dropped\n",
             q->passed, q->verdicts, rec, json_object_size(q->live), q->dropped);
      size_t i;
      double t0 = 0; /* times from the first verdict listed */
      json_array_foreach(places, i, p) {
        double t = (double)json_integer_value(json_object_get(p, "first_t"));
        if (!i || t < t0) t0 = t;
      }
      json_array_foreach(places, i, p) {
        double factor = json_number_value(json_object_get(p, "max_factor"));
        char up[32] = "";
        if (factor > 0) snprintf(up, sizeof up, ", up to %.2fx", factor);
        printf("  %3lld x %-12s %-44s first %.3f s, last %.3f s%s\n",
               (long long)json_integer_value(json_object_get(p, "count")),
               json_string_value(json_object_get(p, "kind")),
               json_string_value(json_object_get(p, "place")),
               ((double)json_integer_value(json_object_get(p, "first_t")) - t0) / 1e9,
               ((double)json_integer_value(json_object_get(p, "last_t")) - t0) / 1e9, up);
      }
    } else {
      json_t *doc =
          json_pack("{s:I, s:I, s:I, s:I, s:I, s:O, s:o}", "events", (json_int_t)q->passed,
                    "verdicts", (json_int_t)q->verdicts, "recovered", (json_int_t)rec, "active",
                    (json_int_t)json_object_size(q->live), "dropped", (json_int_t)q->dropped,
                    "kinds", q->by_kind, "places", places);
      places = NULL;
      json_dumpf(doc, stdout, JSON_COMPACT | JSON_PRESERVE_ORDER);
      fputc('\n', stdout);
      json_decref(doc);
    }
    json_decref(places);
  }
  return fflush(stdout) ? 1 : 0;
}

static int score(const struct evq *q) {
  struct c4_score_truth t;
  struct c4_score_events e;
  char err[700];
  memset(&e, 0, sizeof e);
  int rc = 1;
  if (c4_score_expect_load(q->score, q->steps, q->marks, &t, err, sizeof err) ||
      c4_score_events_load(q->path, &e, err, sizeof err)) {
    c4_cli_fail(q->prog, "%s", err);
  } else {
    json_t *doc = c4_score_run(&t, &e);
    if (!doc) {
      c4_cli_fail(q->prog, "out of memory");
    } else {
      if (q->text)
        c4_mon_evq_print_score(stdout, doc);
      else {
        json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_REAL_PRECISION(6));
        putchar('\n');
      }
      rc = json_is_true(json_object_get(doc, "ok")) && !fflush(stdout) ? 0 : 1;
      json_decref(doc);
    }
  }
  c4_score_events_free(&e);
  c4_score_truth_free(&t);
  return rc;
}

/* The first name in the comma-separated list that no event has, or NULL: a misspelt kind would
 * match nothing and say nothing. */
static const char *unknown_kind(const char *list) {
  static const char *known[] = {"straggler", "comm_slow", "comm_hang", "noncomm_hang", "rank_lost",
                                "recovered", "job_end",   "plan",      "dropped"};
  for (const char *k = list; *k; k += strcspn(k, ",") + (k[strcspn(k, ",")] == ',')) {
    size_t n = strcspn(k, ","), i = 0;
    while (i < sizeof known / sizeof *known && (strlen(known[i]) != n || strncmp(known[i], k, n)))
      i++;
    if (i == sizeof known / sizeof *known) return k;
  }
  return NULL;
}

/* Parses the options into q; returns -1 to go on, else the exit status to return now. */
static int parse(const struct mon_cmd *cmd, int argc, char **argv, struct evq *q,
                 const char **since, const char **until, int *now) {
  static const struct option opts[] = {{"kind", required_argument, 0, 'k'},
                                       {"where", required_argument, 0, 'w'},
                                       {"rank", required_argument, 0, 'r'},
                                       {"host", required_argument, 0, 'H'},
                                       {"job", required_argument, 0, 'j'},
                                       {"since", required_argument, 0, 's'},
                                       {"until", required_argument, 0, 'u'},
                                       {"text", no_argument, 0, 'T'},
                                       {"count", no_argument, 0, 'c'},
                                       {"summary", no_argument, 0, 'S'},
                                       {"active", no_argument, 0, 'a'},
                                       {"follow", no_argument, 0, 'f'},
                                       {"score", required_argument, 0, 'x'},
                                       {"steps", required_argument, 0, 'p'},
                                       {"marks", required_argument, 0, 'm'},
                                       {"now", no_argument, 0, 'n'},
                                       MON_CLI_HELP_OPTIONS,
                                       {0, 0, 0, 0}};
  int c, rc;
  long v;
  while ((c = getopt_long(argc, argv, ":hV", opts, NULL)) != -1) {
    switch (c) {
    case 'k': q->kinds = optarg; break;
    case 'w': q->where = optarg; break;
    case 'r':
      if (c4_cli_long(q->prog, "--rank", optarg, 0, 1 << 30, &v) != 0) return C4_EXIT_USAGE;
      q->rank = v;
      break;
    case 'H': q->host = optarg; break;
    case 'j': q->job = optarg; break;
    case 's': *since = optarg; break;
    case 'u': *until = optarg; break;
    case 'T': q->text = 1; break;
    case 'c': q->count = 1; break;
    case 'S': q->summary = 1; break;
    case 'a': q->active = 1; break;
    case 'f': q->follow = 1; break;
    case 'x': q->score = optarg; break;
    case 'p': q->steps = optarg; break;
    case 'm': q->marks = optarg; break;
    case 'n': *now = 1; break;
    default:
      if (c4_mon_cli_common(cmd, c, argv, NULL, &rc) != 0) return rc;
    }
  }
  if (optind < argc - 1) return c4_cli_usage(q->prog, "unexpected argument '%s'", argv[optind + 1]);
  if (optind == argc - 1) q->path = argv[optind];
  if (q->count + q->summary + q->active + q->follow + !!q->score > 1 && !(q->count && q->active))
    return c4_cli_usage(q->prog, "--count, --summary, --active, --follow and --score go one at a "
                                 "time (--active --count counts the active verdicts)");
  if (q->score && (q->kinds || q->where || q->rank >= 0 || q->host || q->job || *since || *until))
    return c4_cli_usage(q->prog, "--score reads every event: give it no filter");
  const char *bad = q->kinds ? unknown_kind(q->kinds) : NULL;
  if (bad)
    return c4_cli_usage(q->prog,
                        "--kind: '%.*s' is not an event kind (straggler, comm_slow, comm_hang, "
                        "noncomm_hang, rank_lost, recovered, job_end, plan, dropped)",
                        (int)strcspn(bad, ","), bad);
  static const char *const places[] = {"gpu", "host", "nic_tx", "nic_rx", "link", "path", "job"};
  int known = !q->where;
  for (size_t i = 0; !known && i < sizeof places / sizeof *places; i++)
    known = !strcmp(q->where, places[i]);
  if (!known) /* a misspelt place counted 0 verdicts, which reads as none raised there */
    return c4_cli_usage(q->prog,
                        "--where: '%s' is not a place (gpu, host, nic_tx, nic_rx, link, path, job)",
                        q->where);
  return C4_NONE;
}

/* Whether T has the form of a time reference (nanoseconds, step:N, mark:NAME): one that has not
 * is bad usage, one that names what no file holds is a failure. */
static int time_ref_form(const char *t) {
  if (!strncmp(t, "step:", 5) || !strncmp(t, "mark:", 5)) return t[5] != 0;
  return *t && strspn(t, "0123456789") == strlen(t);
}

static int run(const struct mon_cmd *cmd, int argc, char **argv) {
  struct evq q = {
      .prog = c4_mon_cli_prog(cmd), .path = "-", .rank = -1, .until = UINT64_MAX, .shown_run = -1};
  const char *since = NULL, *until = NULL;
  int now = 0;
  int rc = parse(cmd, argc, argv, &q, &since, &until, &now);
  if (rc >= 0) return rc;
  if (now) {
    printf("%" PRIu64 "\n", c4_now_ns());
    return 0;
  }
  if (q.score) return score(&q);
  const char *bad_t = since && !time_ref_form(since)   ? since
                      : until && !time_ref_form(until) ? until
                                                       : NULL;
  if (bad_t)
    return c4_cli_usage(q.prog, "--%s: '%s' is not a time: nanoseconds, step:N or mark:NAME",
                        bad_t == since ? "since" : "until", bad_t);
  /* a time that names what was not given is a usage error, as a missing value is (docs/cli.md) */
  const char *flag = NULL, *ref = NULL, *needs = NULL;
  for (int i = 0; i < 2 && !needs; i++) {
    flag = i ? "until" : "since";
    ref = i ? until : since;
    needs = !ref                                    ? NULL
            : !strncmp(ref, "step:", 5) && !q.steps ? "the trainer's lines (--steps FILE)"
            : !strncmp(ref, "mark:", 5) && !q.marks ? "the marks (--marks FILE)"
                                                    : NULL;
  }
  if (needs) return c4_cli_usage(q.prog, "--%s %s needs %s", flag, ref, needs);
  char err[700];
  if (q.steps) { /* read now, so that a wrong file is said instead of labelling all "step 0" */
    if (c4_score_steps_load(q.steps, &q.step_times, err, sizeof err))
      return c4_cli_fail(q.prog, "--steps %s", err);
    if (!q.follow && json_object_size(q.step_times) == 0) {
      json_decref(q.step_times);
      return c4_cli_fail(q.prog,
                         "--steps %s: no c4train step line (c4train --json's "
                         "{\"event\":\"step\",...} lines)",
                         q.steps);
    }
  }
  if ((since && c4_score_time_ref(since, q.steps, q.marks, 0, &q.since, err, sizeof err)) ||
      (until && c4_score_time_ref(until, q.steps, q.marks, 1, &q.until, err, sizeof err))) {
    json_decref(q.step_times);
    return c4_cli_fail(q.prog, "%s", err);
  }
  q.live = json_object();
  q.places = json_object();
  q.by_kind = json_object();
  if (q.follow) c4_mon_cli_signals();
  rc = read_events(&q);
  if (!rc) rc = finish(&q);
  json_decref(q.live);
  json_decref(q.places);
  json_decref(q.by_kind);
  json_decref(q.step_times);
  return rc;
}

const struct mon_cmd c4_mon_cmd_events = {
    .name = "events",
    .args = "[FILE] [FILTER] [--text] [--count | --summary | --active | --follow]\n"
            "       c4mon events [FILE] --score EXPECTED [--steps FILE] [--marks FILE] [--text]\n"
            "       c4mon events --now",
    .summary = "filter, summarize, follow or score an events file (for people and scripts)",
    .help =
        "Reads c4mon's events (JSON lines, docs/events.md; FILE, or - for standard input) and\n"
        "prints those the filter passes: as they are (JSON lines, for scripts) or one line each\n"
        "for people (--text), naming the rank, host, NIC, link or path, and the job.\n"
        "FILTER: --kind K[,K...] --where W --rank R --host H --job J --since T --until T\n"
        "  T: nanoseconds on the events' clock, step:N (a step of --steps), mark:NAME (--marks)\n"
        "  --text              one line per event for people\n"
        "  --count             only how many passed\n"
        "  --summary           counts by kind and place, first and last time, largest factor\n"
        "  --active            the verdicts not yet recovered at the end of the file\n"
        "  --follow            keep reading as the file grows (until SIGINT or SIGTERM)\n"
        "  --score EXPECTED    score against a table of expected verdicts (kind, place, time\n"
        "                      window): each found or missed, repeats, false alarms; JSON, or\n"
        "                      --text; exit 1 on a miss or a false alarm\n"
        "  --steps FILE        c4train's JSON lines: step:N times; --text labels events by step\n"
        "  --marks FILE        \"NAME T_NS\" lines a script wrote as it injected or lifted faults\n"
        "  --now               the time now on the clock of the events c4mon writes when it\n"
        "                      serves on this machine (ns), to date the faults a script injects\n",
    .run = run};
