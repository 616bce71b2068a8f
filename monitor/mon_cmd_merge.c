/* mon_cmd_merge.c -- `c4mon merge`: per-process trace files (C4_TRACE writes one a process) into
 * one trace in time order, each file's times first moved onto the wall clock by its header lines,
 * which pair the process's CLOCK_MONOTONIC with CLOCK_REALTIME. Each host's monotonic clock
 * starts at its own boot: files of several hosts merged by their times as written put ranks
 * seconds apart (hand-written 8-rank traces 8-20 s apart hid a 2x straggler), and nothing in the
 * records can tell it. */
#include <errno.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>

#include "c4_cli.h"
#include "c4_err.h"
#include "c4_trace_json.h"
#include "c4_trace_read.h"
#include "mon_cli.h"
#include "mon_pipeline.h"

/* One input file: its reader, the record it offers next (its time), and the move onto the
 * merged clock (its header's, updated at each header: a file opened for appending can hold
 * several processes' runs, of other boots). */
struct source {
  const char *path;
  struct c4_trace_reader rd;
  struct c4_record next;
  char job[64];
  uint64_t t;
  int64_t offset;
  int live; /* next holds a record, moved */
  int cut;  /* its reading stopped early: a binary trace's bad record, or a read error */
};

struct merge {
  const char *prog;
  int aligned; /* every file has a header: times go on the wall clock */
  unsigned long said, bad;
};

/* Says and counts a bad line or record of s. */
static void said_bad(struct merge *m, const struct source *s, const char *err) {
  m->bad++;
  if (m->said++ < C4_MON_BAD_SAID) fprintf(stderr, "%s: %s: %s\n", m->prog, s->path, err);
}

/* The next record of s as written into s->next: 1, or 0 at its end (s->cut set when the reading
 * stopped before the file's end). */
static int read_raw(struct merge *m, struct source *s) {
  char err[300];
  int rc;
  while ((rc = c4_trace_next(&s->rd, &s->next, err, sizeof err)) < 0)
    said_bad(m, s, err);
  if (rc == 0 && (s->rd.binary == 2 || (s->rd.f && ferror(s->rd.f)))) s->cut = 1;
  return rc > 0;
}

/* Moves s->next onto the merged clock, by the offset of the file's last header when aligned.
 * Returns 1, or 0 for a record whose times do not fit there (said and counted). */
static int place(struct merge *m, struct source *s) {
  if (m->aligned && s->rd.clock_line) s->offset = s->rd.clock;
  const char *why = NULL;
  if (c4_mon_record_check(&s->next, s->offset, &why) != 0) {
    char err[300];
    snprintf(err, sizeof err, "%s %lu: %s", s->rd.binary ? "record" : "line", s->rd.lineno, why);
    said_bad(m, s, err);
    return 0;
  }
  c4_mon_record_shift(&s->next, s->offset);
  memcpy(s->job, s->rd.job, sizeof s->job);
  s->t = c4_mon_record_time(&s->next);
  return 1;
}

/* s's next good record, placed: s->live says whether there is one. */
static void advance(struct merge *m, struct source *s) {
  s->live = 0;
  while (!s->live && read_raw(m, s))
    s->live = place(m, s);
}

/* The heap of sources with a record, earliest first (a file's own order kept for equal times). */
static int earlier(const struct source *a, const struct source *b) {
  return a->t < b->t || (a->t == b->t && a < b);
}

static void sift_down(struct source **h, int n, int i) {
  for (;;) {
    int l = 2 * i + 1, r = l + 1, k = i;
    if (l < n && earlier(h[l], h[k])) k = l;
    if (r < n && earlier(h[r], h[k])) k = r;
    if (k == i) return;
    struct source *x = h[i];
    h[i] = h[k];
    h[k] = x;
    i = k;
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

/* Orders files by device and inode, to find one given twice. */
struct file_id {
  dev_t dev;
  ino_t ino;
  int i;
};

static int cmp_id(const void *a, const void *b) {
  const struct file_id *x = a, *y = b;
  if (x->dev != y->dev) return x->dev < y->dev ? -1 : 1;
  return x->ino < y->ino ? -1 : x->ino > y->ino;
}

/* Every input a file of its own that is not a directory, none given twice: 0, or the exit
 * status after saying which. */
static int check_inputs(const char *prog, char **paths, int n, const char *out_path) {
  struct file_id *id = calloc((size_t)n, sizeof *id);
  if (!id) return c4_cli_fail(prog, "out of memory for %d files", n);
  int rc = 0;
  for (int i = 0; i < n && !rc; i++) {
    struct stat st;
    if (!strcmp(paths[i], "-"))
      rc = c4_cli_usage(prog, "merge reads files, not standard input (-)");
    else if (out_path && c4_mon_same_file(out_path, paths[i]))
      rc = c4_cli_usage(prog, "--out %s is one of the files being merged", out_path);
    else if (stat(paths[i], &st) != 0)
      rc = c4_cli_fail(prog, "%s: %s", paths[i], strerror(errno));
    else if (S_ISDIR(st.st_mode))
      rc = c4_cli_fail(prog, "%s: is a directory, not a trace", paths[i]);
    else
      id[i] = (struct file_id){st.st_dev, st.st_ino, i};
  }
  if (!rc) qsort(id, (size_t)n, sizeof *id, cmp_id);
  for (int i = 1; i < n && !rc; i++)
    if (!cmp_id(&id[i - 1], &id[i]))
      rc = c4_cli_usage(prog, "%s and %s are one file: each is merged once", paths[id[i - 1].i],
                        paths[id[i].i]);
  free(id);
  return rc;
}

/* Reads each source's first record and decides the clock: the wall clock when every file's
 * header gives it (a header comes before a file's first record), as written when none does (or
 * as_written). Returns 0, or the exit status after saying which file cannot be aligned. */
static int choose_clock(struct merge *m, struct source *s, int n, int as_written) {
  int with = 0, first_without = -1;
  for (int i = 0; i < n; i++) {
    s[i].live = read_raw(m, &s[i]);
    if (s[i].rd.clock_line)
      with++;
    else if (first_without < 0)
      first_without = i;
  }
  m->aligned = !as_written && with == n;
  if (as_written || with == n) return 0;
  if (with == 0) {
    if (n > 1)
      fprintf(stderr,
              "%s: no file has a header line with wall_ns and mono_ns: merged by their times as "
              "written, right only if they share one clock (one machine)\n",
              m->prog);
    return 0;
  }
  return c4_cli_fail(m->prog,
                     "%s has no header line with wall_ns and mono_ns before its first record, "
                     "and %d other file%s %s: its times cannot be put on their clock "
                     "(--as-written merges every file by its times as written, for files of one "
                     "machine)",
                     s[first_without].path, with, with == 1 ? "" : "s", with == 1 ? "does" : "do");
}

/* Says the first file whose reading stopped early; returns the exit status, 0 when none did. */
static int said_cut(const char *prog, const struct source *s, int n) {
  for (int i = 0; i < n; i++)
    if (s[i].cut)
      return c4_cli_fail(prog,
                         "%s: reading stopped at the place said above (or at a read error): the "
                         "rest of it was not merged",
                         s[i].path);
  return 0;
}

static int merge(const char *prog, char **paths, int n, const char *out_path, int as_written) {
  int rc = check_inputs(prog, paths, n, out_path);
  if (rc) return rc;
  struct source *src = calloc((size_t)n, sizeof *src);
  struct source **heap = calloc((size_t)n, sizeof *heap);
  struct merge m = {.prog = prog};
  FILE *out = stdout;
  int opened = 0, live = 0;
  unsigned long merged = 0;
  if (!src || !heap) {
    rc = c4_cli_fail(prog, "out of memory for %d files", n);
    goto done;
  }
  room_for_files(n);
  for (; opened < n; opened++) {
    src[opened].path = paths[opened];
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
  }
  if ((rc = choose_clock(&m, src, n, as_written)) != 0) goto done;
  if (out_path && !(out = fopen(out_path, "w"))) {
    out = NULL;
    rc = c4_cli_fail(prog, "%s: %s", out_path, strerror(errno));
    goto done;
  }
  for (int i = 0; i < n; i++) {
    if (src[i].live && !(src[i].live = place(&m, &src[i]))) advance(&m, &src[i]);
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
    advance(&m, s);
    if (!s->live) heap[0] = heap[--live];
    sift_down(heap, live, 0);
  }
  if (m.said > C4_MON_BAD_SAID)
    fprintf(stderr, "%s: %lu more bad lines or records, not said one by one\n", prog,
            m.said - C4_MON_BAD_SAID);
  if (c4_mon_stop)
    rc = c4_cli_fail(prog, "interrupted after %lu records: the rest was not merged", merged);
  else if ((rc = said_cut(prog, src, n)) != 0)
    ;
  else if (!merged)
    rc = c4_cli_fail(prog, "no valid record in %d file%s (%lu bad lines)", n, n == 1 ? "" : "s",
                     m.bad);
  else
    fprintf(stderr, "%s: %lu records from %d file%s, %lu bad lines, times %s\n", prog, merged, n,
            n == 1 ? "" : "s", m.bad,
            m.aligned ? "on the wall clock (each process's header)" : "as written");
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
  c4_mon_cli_signals();
  return merge(prog, argv + optind, argc - optind, out, as_written);
}

const struct mon_cmd c4_mon_cmd_merge = {
    .name = "merge",
    .args = "FILE... [--out FILE] [--as-written]",
    .summary = "merge per-process trace files into one, in time order, for replay",
    .help = "Each file's times are first put on the wall clock by its header lines (C4_TRACE\n"
            "writes one a process, pairing CLOCK_MONOTONIC with CLOCK_REALTIME): each host's\n"
            "monotonic clock counts from its own boot. A file without such a header among files\n"
            "with one is refused; files without any are merged as written. Bad lines are\n"
            "said by file and number and skipped; a binary trace cut short is exit 1.\n"
            "  --out FILE            write the merged trace to FILE (default: standard output)\n"
            "  --as-written          merge by the times as written (files of one machine)\n",
    .run = run};
