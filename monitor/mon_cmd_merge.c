/* mon_cmd_merge.c -- `c4mon merge`: per-process trace files (C4_TRACE writes one a process) into
 * one trace in time order, each file's times first moved onto the wall clock by its header line,
 * which pairs the process's CLOCK_MONOTONIC with CLOCK_REALTIME. Each host's monotonic clock
 * starts at its own boot: files of several hosts merged by their times as written put ranks
 * seconds apart (hand-written 8-rank traces 8-20 s apart hid a 2x straggler), and nothing in the
 * records can tell it. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "c4_cli.h"
#include "c4_err.h"
#include "c4_trace_json.h"
#include "c4_trace_read.h"
#include "mon_cli.h"
#include "mon_pipeline.h"

/* Lines read looking for a file's header: C4_TRACE writes it first, a shared file's other
 * processes' headers come among their records. */
#define HEADER_LINES 16

/* Bad lines said one by one before the rest are only counted (as replay does). */
#define BAD_SAID 100

/* One input file: its reader, the record it offers next (its time), and the move onto the
 * merged clock. */
struct source {
  const char *path;
  struct c4_trace_reader rd;
  struct c4_record next;
  char job[64];
  uint64_t t;
  int64_t offset;
  int live; /* next holds a record */
};

/* The offset from path's CLOCK_MONOTONIC to the wall clock, from the first header line of its
 * first HEADER_LINES lines that has both wall_ns and mono_ns. Returns 1 and *offset, or 0 when
 * there is none (a binary trace, a trace another tool wrote, a header without the pair). */
static int wall_offset(const char *path, int64_t *offset) {
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  char *line = NULL;
  size_t cap = 0;
  int found = 0;
  for (int n = 0; !found && n < HEADER_LINES && getline(&line, &cap, f) > 0; n++) {
    json_t *j = json_loads(line, JSON_DECODE_ANY, NULL);
    json_t *wall = json_object_get(j, "wall_ns"), *mono = json_object_get(j, "mono_ns");
    if (json_is_string(json_object_get(j, "type")) &&
        !strcmp(json_string_value(json_object_get(j, "type")), "header") && json_is_integer(wall) &&
        json_is_integer(mono) && json_integer_value(wall) > 0 && json_integer_value(mono) > 0) {
      *offset = (int64_t)json_integer_value(wall) - (int64_t)json_integer_value(mono);
      found = 1;
    }
    json_decref(j);
  }
  free(line);
  fclose(f);
  return found;
}

/* Reads s's next good record into s->next, moved by s->offset; bad lines are said (the first
 * BAD_SAID of all files) and counted. */
static void advance(const char *prog, struct source *s, unsigned long *said, unsigned long *bad) {
  char err[300];
  int rc;
  s->live = 0;
  while ((rc = c4_trace_next(&s->rd, &s->next, err, sizeof err)) != 0) {
    const char *why = NULL;
    if (rc > 0 && c4_mon_record_check(&s->next, s->offset, &why) != 0) {
      snprintf(err, sizeof err, "%s %lu: %s", s->rd.binary ? "record" : "line", s->rd.lineno, why);
      rc = C4_EPROTO;
    }
    if (rc < 0) {
      (*bad)++;
      if ((*said)++ < BAD_SAID) fprintf(stderr, "%s: %s: %s\n", prog, s->path, err);
      continue;
    }
    c4_mon_record_shift(&s->next, s->offset);
    memcpy(s->job, s->rd.job, sizeof s->job);
    s->t = c4_mon_record_time(&s->next);
    s->live = 1;
    return;
  }
}

/* The heap of sources with a record, earliest first (a file's own order kept for equal times). */
static int earlier(const struct source *a, const struct source *b) {
  return a->t < b->t || (a->t == b->t && a < b);
}

static void sift_down(struct source **h, int n, int i) {
  for (;;) {
    int l = 2 * i + 1, r = l + 1, m = i;
    if (l < n && earlier(h[l], h[m])) m = l;
    if (r < n && earlier(h[r], h[m])) m = r;
    if (m == i) return;
    struct source *x = h[i];
    h[i] = h[m];
    h[m] = x;
    i = m;
  }
}

/* Writes r as a trace line with its job (none: the line named none). Returns 0, C4_ENOMEM, or
 * C4_ESYS when the write failed (errno says why). */
static int write_line(FILE *out, const struct c4_record *r, const char *job) {
  json_t *j = c4_record_json(r);
  if (!j) return C4_ENOMEM;
  if (job[0]) json_object_set_new(j, "job", json_string(job));
  int rc = json_dumpf(j, out, JSON_COMPACT) == 0 && fputc('\n', out) != EOF ? 0 : C4_ESYS;
  json_decref(j);
  return rc;
}

/* Decides each source's offset: the wall clock's when every file's header gives it, none when no
 * file's does (or as_written). Returns 0, or the exit status after saying which file cannot be
 * aligned with the rest. */
static int choose_offsets(const char *prog, struct source *s, int n, int as_written) {
  int with = 0, first_without = -1;
  for (int i = 0; i < n; i++) {
    s[i].offset = 0;
    if (!as_written && wall_offset(s[i].path, &s[i].offset))
      with++;
    else if (first_without < 0)
      first_without = i;
  }
  if (as_written || with == n) return 0;
  if (with == 0) {
    if (n > 1)
      fprintf(stderr,
              "%s: no file has a header line with wall_ns and mono_ns: merged by their times as "
              "written, right only if they share one clock (one machine)\n",
              prog);
    return 0;
  }
  return c4_cli_fail(prog,
                     "%s has no header line with wall_ns and mono_ns, and %d other file%s do: "
                     "its times cannot be put on their clock (--as-written merges every file by "
                     "its times as written, for files of one machine)",
                     s[first_without].path, with, with == 1 ? "" : "s");
}

/* Lifts the soft limit on open files to the hard one when n files and a few more need it: a job
 * of 2,048 ranks writes 2,048 files, and the usual soft limit is 1,024. */
static void room_for_files(int n) {
  struct rlimit rl;
  if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
      rl.rlim_cur < (rlim_t)n + 16 && rl.rlim_cur < rl.rlim_max) {
    rl.rlim_cur = rl.rlim_max;
    (void)setrlimit(RLIMIT_NOFILE, &rl); /* else opening says which file did not open */
  }
}

static int merge(const char *prog, char **paths, int n, const char *out_path, int as_written) {
  struct source *src = calloc((size_t)n, sizeof *src);
  struct source **heap = calloc((size_t)n, sizeof *heap);
  FILE *out = stdout;
  int rc = C4_EXIT_OK, opened = 0, live = 0;
  unsigned long said = 0, bad = 0, merged = 0;
  if (!src || !heap) {
    rc = c4_cli_fail(prog, "out of memory for %d files", n);
    goto done;
  }
  for (int i = 0; i < n; i++) {
    src[i].path = paths[i];
    if (!strcmp(paths[i], "-")) {
      rc = c4_cli_usage(prog, "merge reads files, not standard input (-)");
      goto done;
    }
  }
  if ((rc = choose_offsets(prog, src, n, as_written)) != 0) goto done;
  room_for_files(n);
  for (; opened < n; opened++)
    if (c4_trace_open(&src[opened].rd, paths[opened]) != 0) {
      struct rlimit rl;
      if (errno == EMFILE && getrlimit(RLIMIT_NOFILE, &rl) == 0)
        rc = c4_cli_fail(prog,
                         "%s: too many files open: merge keeps all %d open, and this process may "
                         "open %llu (raise `ulimit -n`, or merge them in groups and then the "
                         "groups' outputs)",
                         paths[opened], n, (unsigned long long)rl.rlim_cur);
      else
        rc = c4_cli_fail(prog, "%s: %s", paths[opened], strerror(errno));
      goto done;
    }
  if (out_path && !(out = fopen(out_path, "w"))) {
    out = NULL;
    rc = c4_cli_fail(prog, "%s: %s", out_path, strerror(errno));
    goto done;
  }
  for (int i = 0; i < n; i++) {
    advance(prog, &src[i], &said, &bad);
    if (src[i].live) heap[live++] = &src[i];
  }
  for (int i = live / 2 - 1; i >= 0; i--)
    sift_down(heap, live, i);
  while (live > 0 && !c4_mon_stop) {
    struct source *s = heap[0];
    if (write_line(out, &s->next, s->job) != 0) {
      rc = c4_cli_fail(prog, "%s: %s", out_path ? out_path : "standard output", strerror(errno));
      goto done;
    }
    merged++;
    advance(prog, s, &said, &bad);
    if (!s->live) heap[0] = heap[--live];
    sift_down(heap, live, 0);
  }
  if (said > BAD_SAID)
    fprintf(stderr, "%s: %lu more bad lines or records, not said one by one\n", prog,
            said - BAD_SAID);
  if (c4_mon_stop) {
    rc = c4_cli_fail(prog, "interrupted after %lu records: the rest was not merged", merged);
  } else if (!merged) {
    rc = c4_cli_fail(prog, "no valid record in %d file%s (%lu bad lines)", n, n == 1 ? "" : "s",
                     bad);
  } else {
    fprintf(stderr, "%s: %lu records from %d files, %lu bad lines, times %s\n", prog, merged, n,
            bad, src[0].offset ? "on the wall clock (each file's header)" : "as written");
  }
done:
  for (int i = 0; i < opened; i++)
    c4_trace_close(&src[i].rd);
  if (out && out != stdout && fclose(out) != 0 && rc == C4_EXIT_OK)
    rc = c4_cli_fail(prog, "%s: %s", out_path, strerror(errno));
  free(src);
  free(heap);
  return rc;
}

static int run(const struct mon_cmd *cmd, int argc, char **argv) {
  static const struct option opts[] = {{"out", required_argument, 0, 'o'},
                                       {"as-written", no_argument, 0, 'A'},
                                       MON_CLI_HELP_OPTIONS,
                                       {0, 0, 0, 0}};
  const char *prog = c4_mon_cli_prog(cmd), *out = NULL;
  int as_written = 0, c, rc;
  while ((c = getopt_long(argc, argv, ":hV", opts, NULL)) != -1) {
    switch (c) {
    case 'o': out = optarg; break;
    case 'A': as_written = 1; break;
    default:
      if (c4_mon_cli_common(cmd, c, argv, NULL, &rc) != 0) return rc;
    }
  }
  if (optind == argc) return c4_cli_usage(prog, "the trace FILEs to merge are missing");
  for (int i = optind; out && i < argc; i++)
    if (c4_mon_same_file(out, argv[i]))
      return c4_cli_usage(prog, "--out %s is one of the files being merged", out);
  c4_mon_cli_signals();
  return merge(prog, argv + optind, argc - optind, out, as_written);
}

const struct mon_cmd c4_mon_cmd_merge = {
    .name = "merge",
    .args = "FILE... [--out FILE] [--as-written]",
    .summary = "merge per-process trace files into one, in time order, for replay",
    .help = "Each file's times are first put on the wall clock by its header line (C4_TRACE\n"
            "writes one a process, pairing CLOCK_MONOTONIC with CLOCK_REALTIME): each host's\n"
            "monotonic clock counts from its own boot. A file without such a header among files\n"
            "with one is refused; files without any are merged as written. Bad lines are\n"
            "said by file and number and skipped.\n"
            "  --out FILE            write the merged trace to FILE (default: standard output)\n"
            "  --as-written          merge by the times as written (files of one machine)\n",
    .run = run};
