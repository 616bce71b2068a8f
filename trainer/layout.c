/* layout.c -- probing layouts: each candidate a child c4train with --json, its end line's
 * tokens/s and, from wait4, the peak resident memory of its largest process. */
#include "layout.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "c4_clock.h"

int layout_candidates(const struct train_opts *o, int ranks, struct layout_probe *out, int max) {
  long seqs = (long)o->micro_batch * o->microbatches; /* the global batch, kept */
  int n = 0;
  for (int pp = 1; pp <= ranks && pp <= o->cfg.layers; pp++) {
    if (ranks % pp || (pp > 1 && o->max_context > 0)) continue;
    for (long b = 1; b <= seqs && n < max; b *= 2) {
      if (seqs % b || seqs / b < ranks / pp) continue; /* a micro-batch for every replica */
      out[n++] =
          (struct layout_probe){.pp = pp, .micro_batch = (int)b, .microbatches = (int)(seqs / b)};
    }
  }
  return n;
}

/* argv without the flags a probe must not inherit (and their values). */
static int probe_argv(int argc, char **argv, char **out) {
  static const char *drop[] = {"--layout", "--ckpt-dir", "--json-out", "--monitor"};
  int n = 0;
  for (int i = 1; i < argc; i++) {
    int skip = 0;
    for (size_t k = 0; k < sizeof drop / sizeof drop[0]; k++) {
      size_t len = strlen(drop[k]);
      if (strncmp(argv[i], drop[k], len) == 0 && argv[i][len] == '=') skip = 1;
      if (strcmp(argv[i], drop[k]) == 0) skip = 2;
    }
    if (skip == 2) i++; /* its value follows */
    if (!skip) out[n++] = argv[i];
  }
  return n;
}

/* Runs one probe; fills its tokens/s, memory and time. */
static void probe(int argc, char **argv, struct layout_probe *p, int steps) {
  char pp[16], b[16], m[16], st[16];
  snprintf(pp, sizeof pp, "%d", p->pp);
  snprintf(b, sizeof b, "%d", p->micro_batch);
  snprintf(m, sizeof m, "%d", p->microbatches);
  snprintf(st, sizeof st, "%d", steps);
  char **args = calloc((size_t)argc + 16, sizeof *args);
  int fds[2];
  uint64_t t0 = c4_now_ns();
  if (!args || pipe(fds)) {
    free(args);
    return;
  }
  int n = 0;
  args[n++] = "c4train";
  n += probe_argv(argc, argv, args + n);
  const char *extra[] = {"--pp",    pp, "--micro-batch",  b,   "--microbatches", m,
                         "--steps", st, "--eval-windows", "0", "--json"};
  for (size_t k = 0; k < sizeof extra / sizeof extra[0]; k++)
    args[n++] = (char *)extra[k];
  pid_t pid = fork();
  if (pid == 0) {
    dup2(fds[1], 1);
    close(fds[0]);
    close(fds[1]);
    execv("/proc/self/exe", args);
    _exit(127);
  }
  close(fds[1]);
  FILE *in = fdopen(fds[0], "r");
  char line[8192];
  while (in && fgets(line, sizeof line, in)) {
    json_t *j = json_loads(line, 0, NULL);
    const char *ev = json_string_value(json_object_get(j, "event"));
    if (ev && strcmp(ev, "end") == 0)
      p->tokens_per_s = json_number_value(json_object_get(j, "tokens_per_s"));
    json_decref(j);
  }
  if (in) fclose(in);
  int status = 0;
  struct rusage ru;
  memset(&ru, 0, sizeof ru);
  if (pid > 0 && wait4(pid, &status, 0, &ru) == pid) {
    p->peak_mb = (double)ru.ru_maxrss / 1024.0; /* kB */
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) p->tokens_per_s = 0;
  }
  p->seconds = (double)(c4_now_ns() - t0) * 1e-9;
  free(args);
}

double layout_auto(int argc, char **argv, struct train_opts *o, int ranks, int steps, FILE *f,
                   char *err, size_t errlen) {
  struct layout_probe c[64];
  int n = layout_candidates(o, ranks, c, 64), best = -1;
  double total = 0;
  fprintf(f, "layout auto: %d candidates on %d ranks, %d steps each\n", n, ranks, steps);
  fprintf(f, "%4s %4s %6s %6s %12s %10s %8s\n", "pp", "dp", "mb", "mbs", "tokens/s", "peak MB",
          "probe s");
  for (int i = 0; i < n; i++) {
    probe(argc, argv, &c[i], steps);
    total += c[i].seconds;
    fprintf(f, "%4d %4d %6d %6d %12.0f %10.0f %8.1f\n", c[i].pp, ranks / c[i].pp, c[i].micro_batch,
            c[i].microbatches, c[i].tokens_per_s, c[i].peak_mb, c[i].seconds);
    fflush(f);
    if (c[i].tokens_per_s > 0 && (best < 0 || c[i].tokens_per_s > c[best].tokens_per_s)) best = i;
  }
  if (best < 0) {
    snprintf(err, errlen, "--layout auto: none of the %d candidate layouts ran", n);
    return -1;
  }
  o->pp = c[best].pp;
  o->micro_batch = c[best].micro_batch;
  o->microbatches = c[best].microbatches;
  /* what probing cost against the run it chose for: its steps at the best probe's pace */
  double run_s = (double)o->steps * o->micro_batch * o->microbatches *
                 (o->max_context > 0 ? o->max_context : o->cfg.context) / c[best].tokens_per_s;
  fprintf(f,
          "layout auto: --pp %d --micro-batch %d --microbatches %d (%.0f tokens/s); probing took "
          "%.1f s, %.1f%% of the %d-step run's %.1f s at that pace\n",
          o->pp, o->micro_batch, o->microbatches, c[best].tokens_per_s, total,
          100 * total / (total + run_s), o->steps, run_s);
  fflush(f); /* before the ranks are forked with a copy of the buffer */
  return total;
}
