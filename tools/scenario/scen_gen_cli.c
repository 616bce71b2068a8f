/* scen_gen_cli.c -- c4scen gen: options, then the plan, the trace and the truth. */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_cli.h"
#include "c4_err.h"
#include "scen_cli.h"
#include "scen_gen.h"
#include "scen_out.h"
#include "scen_truth.h"

#define MAX_BLIPS 10000

static void usage(FILE *f) {
  fprintf(f,
          "usage: c4scen gen --hosts H --gpus G --truth FILE [options]\n"
          "Writes the trace of a simulated data-parallel job (rank = h * G + g, host h%%04d,\n"
          "one NIC per GPU) running a ring/tree/ring/pipeline pattern of collectives, with the\n"
          "faults asked for; the truth file names them (docs/scenarios.md).\n\n"
          "  --hosts H         hosts (1..100000)\n"
          "  --gpus G          GPUs (and NICs) per host (1..64)\n"
          "  --seconds S       length of the run, default 60\n"
          "  --rate R          collectives per second, default 10\n"
          "  --seed N          random seed (0..2^63-1), default 1; same seed, same bytes\n"
          "  --fault SPEC      a fault, repeatable (t, end in seconds from the start):\n"
          "                      straggler:rank=R:factor=F:t=T[:end=T2]   (F in 1..10)\n"
          "                      nic_tx:host=H:dev=D:rate=X:t=T[:end=T2]  (X in 0..1)\n"
          "                      nic_rx:host=H:dev=D:rate=X:t=T[:end=T2]\n"
          "                      link:src=H1:dst=H2:dev=D:rate=X:t=T[:end=T2]\n"
          "                      path:id=spineK:rate=X:t=T[:end=T2]       (needs --plan)\n"
          "                      comm_hang:src=H1:dst=H2:dev=D:t=T\n"
          "                      noncomm_hang:rank=R:t=T\n"
          "                      rank_lost:rank=R:t=T\n"
          "                    hosts by index (3) or name (h0003); one hang or lost rank, last\n"
          "  --blips N         N one-off slowdowns spread over the run, that must not alarm\n"
          "  --out FILE        the trace, default - (standard output)\n"
          "  --bin             the binary form instead of JSON lines\n"
          "  --variant V       the tracer the trace looks like it came from: full (c4's own),\n"
          "                    minimal (required fields only), send or recv (one end of each\n"
          "                    transfer), wrap (C4_WRAP: no first-byte times, receives\n"
          "                    without their peer); default full\n"
          "  --truth FILE      where the truth goes (required)\n"
          "  --plan FILE       also write a traffic plan: host pair (a, b) crosses spine (a+b)%%S\n"
          "  --spines S        spines of the plan, default 4\n"
          "  -h, --help   -V, --version\n"
          "exit: 0 written, 1 a file could not be written, 2 bad usage\n");
}

static int bad(const char *fmt, const char *arg) {
  char msg[256];
  snprintf(msg, sizeof msg, fmt, arg);
  return c4_cli_usage("c4scen gen", "%s", msg);
}

static int whole(const char *s, long min, long max, long *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < min || v > max) return C4_EINVAL;
  *out = v;
  return 0;
}

static int real(const char *s, double min, double max, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v) || v <= min || v > max) return C4_EINVAL;
  *out = v;
  return 0;
}

struct opts {
  long hosts, gpus, spines, blips, seed;
  double seconds, rate;
  const char *out, *truth, *plan;
  const char *faults[C4_SCEN_MAX_FAULTS];
  int nfaults, bin, variant;
};

/* The long options' codes. */
enum {
  O_HOSTS = 256,
  O_GPUS,
  O_SECONDS,
  O_RATE,
  O_SEED,
  O_FAULT,
  O_BLIPS,
  O_OUT,
  O_BIN,
  O_TRUTH,
  O_PLAN,
  O_SPINES,
  O_VARIANT
};

/* One long option of parse's table (not --help or --version) into o; returns -1 to go on, else the
 * exit code. */
static int take(int c, const char *arg, struct opts *o) {
  switch (c) {
  case O_HOSTS:
    if (whole(arg, 1, 100000, &o->hosts)) return bad("--hosts %s is not 1..100000", arg);
    return C4_NONE;
  case O_GPUS:
    if (whole(arg, 1, 64, &o->gpus)) return bad("--gpus %s is not 1..64", arg);
    return C4_NONE;
  case O_SECONDS:
    if (real(arg, 0, 86400, &o->seconds))
      return bad("--seconds %s is not a time over 0 and at most 86400", arg);
    return C4_NONE;
  case O_RATE:
    if (real(arg, 0, 10000, &o->rate))
      return bad("--rate %s is not a rate over 0 and at most 10000 per second", arg);
    return C4_NONE;
  case O_SEED:
    if (whole(arg, 0, INT64_MAX, &o->seed)) return bad("--seed %s is not 0..2^63-1", arg);
    return C4_NONE;
  case O_FAULT:
    if (o->nfaults == C4_SCEN_MAX_FAULTS) return bad("more than %s faults", "64");
    o->faults[o->nfaults++] = arg;
    return C4_NONE;
  case O_BLIPS:
    if (whole(arg, 0, MAX_BLIPS, &o->blips)) return bad("--blips %s is not 0..10000", arg);
    return C4_NONE;
  case O_OUT: o->out = arg; return C4_NONE;
  case O_BIN: o->bin = 1; return C4_NONE;
  case O_TRUTH: o->truth = arg; return C4_NONE;
  case O_PLAN: o->plan = arg; return C4_NONE;
  case O_SPINES:
    if (whole(arg, 1, 4096, &o->spines)) return bad("--spines %s is not 1..4096", arg);
    return C4_NONE;
  case O_VARIANT:
    if ((o->variant = c4_scen_variant_of(arg)) < 0)
      return bad("--variant %s is not full, minimal, send, recv or wrap", arg);
    return C4_NONE;
  default: return C4_NONE; /* not reached: parse passes the table's codes only */
  }
}

/* Reads the options into o; returns -1 to go on, else the exit code. */
static int parse(int argc, char **argv, struct opts *o) {
  static const struct option longs[] = {{"hosts", 1, 0, O_HOSTS},     {"gpus", 1, 0, O_GPUS},
                                        {"seconds", 1, 0, O_SECONDS}, {"rate", 1, 0, O_RATE},
                                        {"seed", 1, 0, O_SEED},       {"fault", 1, 0, O_FAULT},
                                        {"blips", 1, 0, O_BLIPS},     {"out", 1, 0, O_OUT},
                                        {"bin", 0, 0, O_BIN},         {"truth", 1, 0, O_TRUTH},
                                        {"plan", 1, 0, O_PLAN},       {"spines", 1, 0, O_SPINES},
                                        {"variant", 1, 0, O_VARIANT}, {"help", 0, 0, 'h'},
                                        {"version", 0, 0, 'V'},       {0, 0, 0, 0}};
  int c;
  optind = 1;
  while ((c = getopt_long(argc, argv, ":hV", longs, NULL)) != -1) {
    if (c == 'h') {
      usage(stdout);
      return 0;
    }
    if (c == 'V') {
      c4_cli_version("c4scen");
      return 0;
    }
    if (c < O_HOSTS) return c4_cli_bad_option("c4scen gen", argv, c);
    int rc = take(c, optarg, o);
    if (rc >= 0) return rc;
  }
  if (optind < argc) return bad("unexpected argument \"%s\"", argv[optind]);
  if (!o->hosts || !o->gpus) return bad("%s", "--hosts and --gpus are required");
  if (!o->truth) return bad("%s", "--truth FILE is required");
  if (o->hosts * o->gpus > (1L << 20)) return bad("%s", "more than 1048576 ranks");
  return C4_NONE;
}

int c4_scen_gen_main(int argc, char **argv) {
  struct opts o = {.seconds = 60, .rate = 10, .seed = 1, .spines = 4, .out = "-"};
  int rc = parse(argc, argv, &o);
  if (rc >= 0) return rc;
  struct c4_scen_job job;
  if (c4_scen_job_init(&job, (int)o.hosts, (int)o.gpus, (int)o.spines, o.seconds, o.rate)) {
    fprintf(stderr, "c4scen gen: out of memory\n");
    return 1;
  }
  struct c4_scen_fault faults[C4_SCEN_MAX_FAULTS];
  struct c4_scen_blip *blips = calloc((size_t)o.blips + 1, sizeof *blips);
  char err[512];
  rc = blips ? 0 : 1;
  for (int i = 0; !rc && i < o.nfaults; i++)
    if (c4_scen_fault_parse(&job, o.faults[i], &faults[i], err, sizeof err)) rc = 2;
  if (!rc && c4_scen_faults_check(&job, faults, o.nfaults, o.plan != NULL, err, sizeof err)) rc = 2;
  if (rc == 2) fprintf(stderr, "c4scen gen: %s\n", err);
  if (rc) goto out;
  FILE *probe = fopen(o.truth, "w"); /* fail before the work, not after it */
  if (!probe || fclose(probe)) {
    fprintf(stderr, "c4scen gen: cannot write the truth %s: %s\n", o.truth, strerror(errno));
    rc = 1;
    goto out;
  }
  c4_scen_blips_plan(&job, (uint64_t)o.seed, blips, (int)o.blips);
  if (o.plan && c4_scen_write_plan(&job, o.plan)) {
    fprintf(stderr, "c4scen gen: cannot write the plan %s: %s\n", o.plan, strerror(errno));
    rc = 1;
    goto out;
  }
  struct c4_scen_out out;
  uint64_t colls = 0;
  int orc = c4_scen_out_open(&out, o.out, o.bin, o.variant);
  if (!orc)
    orc = c4_scen_generate(&job, faults, o.nfaults, blips, (int)o.blips, (uint64_t)o.seed, &out,
                           &colls);
  int crc = c4_scen_out_close(&out);
  uint64_t written = out.written;
  if (orc || crc) {
    fprintf(stderr, "c4scen gen: cannot write the trace %s: %s\n", o.out,
            (orc ? orc : crc) == C4_ENOMEM ? "out of memory" : strerror(errno));
    rc = 1;
    goto out;
  }
  if (c4_scen_write_truth(&job, faults, o.nfaults, blips, (int)o.blips, (uint64_t)o.seed, colls,
                          o.truth)) {
    fprintf(stderr, "c4scen gen: cannot write the truth %s: %s\n", o.truth, strerror(errno));
    rc = 1;
    goto out;
  }
  fprintf(stderr, "c4scen gen: %llu records, %llu collectives, %d faults, to %s\n",
          (unsigned long long)written, (unsigned long long)colls, o.nfaults,
          strcmp(o.out, "-") ? o.out : "standard output");
out:
  free(blips);
  c4_scen_job_free(&job);
  return rc;
}
