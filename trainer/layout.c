/* layout.c -- probing layouts: each candidate a child c4train with --json, its step lines'
 * tokens/s (past the first two, which warm up) and, from wait4, the peak resident memory of its
 * largest process; rounds that drop the clearly slower candidates and probe the rest again. */
#include "layout.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "c4_clock.h"
#include "c4_env.h"
#include "c4_err.h"
#include "c4_frame.h"

int layout_candidates(const struct train_opts *o, int ranks, struct layout_probe *out, int max) {
  long seqs = (long)o->micro_batch * o->microbatches; /* the global batch, kept */
  int n = 0;
  for (int pp = 1; pp <= ranks && pp <= o->cfg.layers; pp++) {
    if (ranks % pp) continue;
    for (long b = 1; b <= seqs && n < max; b *= 2) {
      if (seqs % b || seqs / b < ranks / pp) continue; /* a micro-batch for every replica */
      out[n++] =
          (struct layout_probe){.pp = pp, .micro_batch = (int)b, .microbatches = (int)(seqs / b)};
    }
  }
  return n;
}

/* Whether step line j ran with another plan than the step before (its data split or its
 * layers), keeping j's in *plan (a new reference). */
static int plan_moved(json_t *j, json_t **plan) {
  json_t *now = json_pack("{s:O?, s:O?}", "split", json_object_get(j, "split"), "layers",
                          json_object_get(j, "layers"));
  int moved = *plan && now && !json_equal(*plan, now);
  json_decref(*plan);
  *plan = now;
  return moved;
}

/* A probe's JSON lines from in (closed after; NULL reads nothing): each step's time adds to
 * p->last_step_s and, past the first two steps, its tokens/s joins p's rates; a step whose
 * planners moved work (split or layers) drops this probe's rates before it, so that a probe
 * measures its layout as the planners leave it, not the steps before they acted. Returns 1 when
 * the run's end line came. */
static int read_probe(FILE *in, struct layout_probe *p) {
  char line[8192];
  int ended = 0, first = p->nrate;
  json_t *plan = NULL;
  while (in && fgets(line, sizeof line, in)) {
    json_t *j = json_loads(line, 0, NULL);
    const char *ev = json_string_value(json_object_get(j, "event"));
    if (ev && strcmp(ev, "step") == 0) {
      p->last_step_s += json_number_value(json_object_get(j, "step_ms")) * 1e-3;
      double tps = json_number_value(json_object_get(j, "tokens_per_s"));
      if (plan_moved(j, &plan)) p->nrate = first;
      if (json_integer_value(json_object_get(j, "step")) > 2 && tps > 0 && p->nrate < LAYOUT_RATES)
        p->rate[p->nrate++] = tps;
    }
    ended |= ev && strcmp(ev, "end") == 0;
    json_decref(j);
  }
  json_decref(plan);
  if (in) fclose(in);
  return ended;
}

/* Waits for the probe's process pid (none when not > 0), its peak memory joining p's. Returns 1
 * when it exited 0. */
static int reap_probe(pid_t pid, struct layout_probe *p) {
  int status = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  if (pid <= 0 || wait4(pid, &status, 0, &ru) != pid) return 0;
  p->peak_mb = fmax(p->peak_mb, (double)ru.ru_maxrss / 1024.0); /* kB */
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* Runs one probe of `steps` steps; adds its timed steps' tokens/s to p's, and its memory and
 * time. A probe that fails sets p's tokens/s to 0. */
static void probe(int argc, char **argv, struct layout_probe *p, int steps) {
  char pp[16], b[16], m[16], st[16];
  snprintf(pp, sizeof pp, "%d", p->pp);
  snprintf(b, sizeof b, "%d", p->micro_batch);
  snprintf(m, sizeof m, "%d", p->microbatches);
  snprintf(st, sizeof st, "%d", steps);
  char **args = calloc((size_t)argc + 16, sizeof *args);
  int fds[2];
  uint64_t t0 = c4_now_ns();
  p->rounds++;
  p->last_step_s = 0;
  if (!args || pipe(fds)) {
    free(args);
    p->tokens_per_s = 0;
    return;
  }
  int n = 0;
  args[n++] = "c4train";
  for (int i = 1; i < argc; i++)
    args[n++] = argv[i];
  const char *extra[] = {"--pp",    pp, "--micro-batch",  b,   "--microbatches", m,
                         "--steps", st, "--eval-windows", "0", "--json"};
  for (size_t k = 0; k < sizeof extra / sizeof extra[0]; k++)
    args[n++] = (char *)extra[k];
  pid_t pid = fork();
  if (pid == 0) {
    /* a job of its own to c4mon too: its start, end and stragglers are not the job's (the
     * suffix kept within the name the plugin sends, which it cuts) */
    static const char suffix[] = "-layout-probe";
    char probe_job[C4_FRAME_NAME];
    snprintf(probe_job, sizeof probe_job, "%.*s%s", (int)(sizeof probe_job - sizeof suffix),
             c4_env_job(), suffix);
    setenv("C4_JOB", probe_job, 1);
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execv("/proc/self/exe", args);
    _exit(127);
  }
  close(fds[1]);
  int ended = read_probe(fdopen(fds[0], "r"), p);
  int ok = reap_probe(pid, p) && ended;
  p->last_s = (double)(c4_now_ns() - t0) * 1e-9;
  p->seconds += p->last_s;
  if (!ok || p->nrate == 0) p->nrate = 0;
  free(args);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* p's tokens/s (the median of its timed steps) and that median's relative standard error:
 * 1.25 x sigma / sqrt(n), sigma from the median absolute deviation (1.48 MAD), both what they
 * are for normal noise and robust to a step that another job's burst slowed. */
static void score(struct layout_probe *p) {
  double v[LAYOUT_RATES];
  if (p->nrate == 0) {
    p->tokens_per_s = p->rel_err = 0;
    return;
  }
  memcpy(v, p->rate, (size_t)p->nrate * sizeof *v);
  double med = median(v, p->nrate);
  for (int i = 0; i < p->nrate; i++)
    v[i] = fabs(p->rate[i] - med);
  double sigma = 1.4826 * median(v, p->nrate);
  p->tokens_per_s = med;
  p->rel_err = med > 0 ? 1.2533 * sigma / sqrt((double)p->nrate) / med : 0;
}

/* Drops (alive[i] = 0) the candidates more than LAYOUT_DROP_SE combined standard errors below
 * the best; returns the best's index (or -1 when none ran) and the survivors in *left. */
static int eliminate(struct layout_probe *c, int n, int *alive, int *left) {
  int best = -1;
  for (int i = 0; i < n; i++) {
    if (!alive[i]) continue;
    score(&c[i]);
    if (c[i].tokens_per_s <= 0)
      alive[i] = 0;
    else if (best < 0 || c[i].tokens_per_s > c[best].tokens_per_s)
      best = i;
  }
  *left = 0;
  for (int i = 0; i < n; i++) {
    if (!alive[i] || i == best) continue;
    double se = hypot(c[i].rel_err, c[best].rel_err);
    if (c[i].tokens_per_s < c[best].tokens_per_s * (1 - LAYOUT_DROP_SE * se)) alive[i] = 0;
    *left += alive[i];
  }
  *left += best >= 0;
  return best;
}

/* Seconds the run of o's steps takes at candidate p's pace. */
static double run_seconds(const struct train_opts *o, const struct layout_probe *p) {
  return (double)o->steps * p->micro_batch * p->microbatches *
         (o->max_context > 0 ? o->max_context : o->cfg.context) / p->tokens_per_s;
}

static void print_table(FILE *f, const struct layout_probe *c, int n, int ranks) {
  fprintf(f, "%4s %4s %6s %6s %12s %10s %8s %7s %6s %6s\n", "pp", "dp", "mb", "mbs", "tokens/s",
          "peak MB", "probe s", "+-%", "steps", "rounds");
  for (int i = 0; i < n; i++)
    fprintf(f, "%4d %4d %6d %6d %12.0f %10.0f %8.1f %7.1f %6d %6d\n", c[i].pp, ranks / c[i].pp,
            c[i].micro_batch, c[i].microbatches, c[i].tokens_per_s, c[i].peak_mb, c[i].seconds,
            100 * c[i].rel_err, c[i].nrate, c[i].rounds);
}

double layout_auto(int argc, char **argv, struct train_opts *o, int ranks, int steps, FILE *f,
                   char *err, size_t errlen) {
  struct layout_probe *c = calloc(64, sizeof *c);
  int alive[64], n = c ? layout_candidates(o, ranks, c, 64) : 0, best = -1, left = n;
  double total = 0;
  for (int i = 0; i < n; i++)
    alive[i] = 1;
  fprintf(f, "layout auto: %d candidates on %d ranks, %d steps each in round 1\n", n, ranks, steps);
  for (int round = 1; left > 0; round++) {
    for (int k = 0; k < n; k++) {
      int i = round % 2 ? k : n - 1 - k; /* every other round backwards: drift hits all alike */
      if (!alive[i]) continue;
      probe(argc, argv, &c[i], steps);
      total += c[i].last_s;
    }
    best = eliminate(c, n, alive, &left);
    fprintf(f,
            "layout auto: round %d, %d steps each: %d left within %.0f standard errors of the "
            "best",
            round, steps, left, LAYOUT_DROP_SE);
    if (best >= 0)
      fprintf(f, " (--pp %d --micro-batch %d, %.0f tokens/s +- %.1f%%)", c[best].pp,
              c[best].micro_batch, c[best].tokens_per_s, 100 * c[best].rel_err);
    fprintf(f, "; probing %.1f s so far\n", total);
    fflush(f);
    if (best < 0 || left < 2) break;
    /* the next round: twice the steps, the start-up the same */
    double next = 0, budget = LAYOUT_BUDGET / (1 - LAYOUT_BUDGET) * run_seconds(o, &c[best]);
    for (int i = 0; i < n; i++)
      if (alive[i]) next += c[i].last_s + c[i].last_step_s;
    if (total + next > budget) {
      fprintf(f,
              "layout auto: no round %d: it would take the probing past %.0f%% of the run "
              "(%.1f s more, %.1f s so far)\n",
              round + 1, 100 * LAYOUT_BUDGET, next, total);
      break;
    }
    steps *= 2;
  }
  if (best < 0) {
    snprintf(err, errlen, "--layout auto: none of the %d candidate layouts ran", n);
    free(c);
    return C4_EREMOTE;
  }
  print_table(f, c, n, ranks);
  o->pp = c[best].pp;
  o->micro_batch = c[best].micro_batch;
  o->microbatches = c[best].microbatches;
  /* what probing cost against the run it chose for: its steps at the best probe's pace */
  double run_s = run_seconds(o, &c[best]);
  fprintf(f,
          "layout auto: --pp %d --micro-batch %d --microbatches %d (%.0f tokens/s); probing took "
          "%.1f s, %.1f%% of itself and the %d-step run (%.1f s at that pace)\n",
          o->pp, o->micro_batch, o->microbatches, c[best].tokens_per_s, total,
          100 * total / (total + run_s), o->steps, run_s);
  fflush(f); /* before the ranks are forked with a copy of the buffer */
  free(c);
  return total;
}
