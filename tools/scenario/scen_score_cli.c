/* scen_score_cli.c -- c4scen score: reads the truth and the events, prints the score as a table
 * and a summary line, or as one JSON document (--json). */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "c4_cli.h"
#include "c4_score.h"
#include "scen_cli.h"

static void usage(FILE *f) {
  fprintf(f, "usage: c4scen score --truth FILE --events FILE [--json]\n"
             "Scores c4mon's events (JSON lines, docs/events.md) against the truth c4scen gen\n"
             "wrote: per fault whether it was found, at the right place, how fast; then\n"
             "precision, recall, location, median time to flag and false alarms.\n\n"
             "  --truth FILE    the truth file\n"
             "  --events FILE   c4mon's events (- for standard input)\n"
             "  --json          one JSON document instead of the table\n"
             "  -h, --help   -V, --version\n"
             "exit: 0 scored (however well), 1 a file could not be read, 2 bad usage\n");
}

/* A number of the document as text, "-" for null. */
static const char *num(const json_t *doc, const char *key, const char *fmt, char *buf, size_t n) {
  json_t *v = json_object_get(doc, key);
  if (!json_is_number(v)) return "-";
  snprintf(buf, n, fmt, json_number_value(v));
  return buf;
}

static void print_human(const json_t *doc, FILE *f) {
  double start = (double)json_integer_value(json_object_get(doc, "start_ns"));
  size_t i;
  json_t *x;
  char a[32], b[32], c[32], d[32], e[32], g[32];
  fprintf(f, "%-5s %-13s %-7s %-28s %9s %-9s %-6s %8s\n", "fault", "kind", "where", "place",
          "onset_s", "detected", "place", "flag_s");
  json_array_foreach(json_object_get(doc, "faults"), i, x) {
    json_t *pr = json_object_get(x, "place_right");
    fprintf(f, "%-5zu %-13s %-7s %-28s %9.3f %-9s %-6s %8s\n", i + 1,
            json_string_value(json_object_get(x, "kind")),
            json_string_value(json_object_get(x, "where")),
            json_string_value(json_object_get(x, "place")),
            ((double)json_integer_value(json_object_get(x, "onset_ns")) - start) / 1e9,
            json_is_true(json_object_get(x, "detected")) ? "yes" : "no",
            json_is_null(pr)   ? "-"
            : json_is_true(pr) ? "right"
                               : "wrong",
            num(x, "flag_s", "%.3f", a, sizeof a));
    if (json_is_false(pr))
      fprintf(f, "      (event %s said %s %s)\n", num(x, "event_id", "%.0f", b, sizeof b),
              json_string_value(json_object_get(x, "event_where")),
              json_string_value(json_object_get(x, "event_place")));
  }
  json_t *fps = json_object_get(doc, "false_positives");
  if (json_array_size(fps)) fprintf(f, "false positives:\n");
  json_array_foreach(fps, i, x) {
    char place[160];
    c4_score_place_name(x, place, sizeof place);
    json_t *nb = json_object_get(x, "near_blip");
    fprintf(f, "  line %lld: id %s at %.3f s: %s %s %s",
            (long long)json_integer_value(json_object_get(x, "line")),
            num(x, "id", "%.0f", a, sizeof a),
            ((double)json_integer_value(json_object_get(x, "t")) - start) / 1e9,
            json_string_value(json_object_get(x, "kind")),
            json_string_value(json_object_get(x, "where"))
                ? json_string_value(json_object_get(x, "where"))
                : "-",
            place);
    if (json_is_integer(nb)) {
      json_t *bl = json_array_get(json_object_get(doc, "blips"), (size_t)json_integer_value(nb));
      fprintf(f, " (after blip %s at %.3f s)", json_string_value(json_object_get(bl, "what")),
              ((double)json_integer_value(json_object_get(bl, "t_ns")) - start) / 1e9);
    }
    fputc('\n', f);
  }
  fprintf(f,
          "precision %s recall %s location %s median_flag_slow_s %s median_flag_hang_s %s "
          "false_alarms %lld factor_right %s\n",
          num(doc, "precision", "%.3f", a, sizeof a), num(doc, "recall", "%.3f", b, sizeof b),
          num(doc, "location", "%.3f", c, sizeof c),
          num(doc, "median_flag_slow_s", "%.3f", d, sizeof d),
          num(doc, "median_flag_hang_s", "%.3f", e, sizeof e),
          (long long)json_integer_value(json_object_get(doc, "false_alarms")),
          num(doc, "factor_right", "%.3f", g, sizeof g));
}

int c4_scen_score_main(int argc, char **argv) {
  static const struct option longs[] = {{"truth", 1, 0, 't'},   {"events", 1, 0, 'e'},
                                        {"json", 0, 0, 'j'},    {"help", 0, 0, 'h'},
                                        {"version", 0, 0, 'V'}, {0, 0, 0, 0}};
  const char *truth = NULL, *events = NULL;
  int json = 0, c;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":hV", longs, NULL)) != -1) {
    switch (c) {
    case 't': truth = optarg; break;
    case 'e': events = optarg; break;
    case 'j': json = 1; break;
    case 'h': usage(stdout); return 0;
    case 'V': c4_cli_version("c4scen"); return 0;
    default: return c4_cli_bad_option("c4scen score", argv, c);
    }
  }
  if (optind < argc) return c4_cli_usage("c4scen score", "unexpected argument '%s'", argv[optind]);
  if (!truth || !events)
    return c4_cli_usage("c4scen score", "--truth FILE and --events FILE are required");
  struct c4_score_truth t;
  struct c4_score_events e;
  char err[512];
  int rc = 1;
  memset(&e, 0, sizeof e);
  if (c4_score_truth_load(truth, &t, err, sizeof err) ||
      c4_score_events_load(events, &e, err, sizeof err)) {
    fprintf(stderr, "c4scen score: %s\n", err);
  } else {
    json_t *doc = c4_score_run(&t, &e);
    if (!doc) {
      fprintf(stderr, "c4scen score: out of memory\n");
    } else {
      if (json) {
        json_dumpf(doc, stdout, JSON_INDENT(2) | JSON_REAL_PRECISION(6));
        putchar('\n');
      } else {
        print_human(doc, stdout);
      }
      json_decref(doc);
      rc = fflush(stdout) ? 1 : 0;
    }
  }
  c4_score_events_free(&e);
  c4_score_truth_free(&t);
  return rc;
}
