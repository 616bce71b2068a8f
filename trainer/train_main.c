/* train_main.c -- c4train: command line, then one rank (launched by torchrun, srun or mpirun),
 * or --local-ranks N ranks supervised on this machine. */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign_policy.h"
#include "c4_cli.h"
#include "c4_env.h"
#include "c4_err.h"
#include "c4_ranks.h"
#include "ckpt.h"
#include "docs.h"
#include "launch.h"
#include "layout.h"
#include "mon_sub.h"
#include "resplit.h"
#include "text_data.h"
#include "train_ckpt.h"
#include "train_docs.h"
#include "train_loop.h"

static void usage(FILE *f) {
  fprintf(
      f,
      "usage: c4train [options]\n"
      "Trains a GPT-2-style byte-level model, data-parallel, and re-splits the global batch\n"
      "around slow ranks (the straggler planner).\n"
      "  --data FILE          training text (default " C4_DEFAULT_DATA ", on every Debian\n"
      "                       system); bytes are the tokens; the last 10%% is held out\n"
      "  --layers L --width C --heads H --context T   model (default 2, 64, 4, 64)\n"
      "  --micro-batch B      sequences per micro-batch (default 4)\n"
      "  --microbatches M     micro-batches per global step, split among ranks (default 16)\n"
      "  --steps N            train to step N (default 50)\n"
      "  --lr X --wd X        AdamW learning rate and weight decay (default 0.002, 0)\n"
      "  --warmup N           steps of linear learning-rate warm-up (default 10)\n"
      "  --seed S             parameters and data order (default 1)\n"
      "  --device cpu|cuda    cpu: OpenBLAS, gradients over the c4 net plugin's host ring;\n"
      "                       cuda: libc4k-cuda.so and NCCL (set NCCL_NET_PLUGIN=c4); with\n"
      "                       --pp, the plugin's host ring and links, staged through host memory\n"
      "  --threads N          OpenBLAS threads per rank (default 1)\n"
      "  --bucket-mb X        allreduce bucket size (default 1)\n"
      "  --plugin PATH        net plugin for the CPU ring (default: the one beside c4train)\n"
      "  --slow R:F[:A[:B]]   drill: launcher rank R computes F times slower (in steps A..B)\n"
      "  --no-resplit         keep the even split (to measure what re-splitting gives)\n"
      "  --straggler-wait S   seconds a rank must stay slow before work moves off it, unless\n"
      "                       c4mon names it (default 3: rides out brief bursts of other work)\n"
      "  --ckpt-dir DIR       checkpoints (resumed from when there is one)\n"
      "  --ckpt-every N       steps between checkpoints (default 10)\n"
      "  --ckpt-strict        a damaged newest checkpoint stops the run (default: say which\n"
      "                       file and why, and resume from the newest intact one)\n"
      "  --monitor ADDR:PORT  c4mon's subscription port: straggler factors for the planner;\n"
      "                       with --local-ranks, lost or hung ranks are stopped at once\n"
      "  --eval-windows N     held-out windows for the eval loss at start and end (default 32)\n"
      "  --pp P               pipeline parallelism: P stages of the layers (1F1B), the ranks\n"
      "                       P x replicas, rank r stage r %% P (default 1); unless --no-resplit,\n"
      "                       a slow stage's layers move to the others and back\n"
      "  --stage-mem MB       --pp: the memory a stage may use, which caps the layers the\n"
      "                       planner gives it (default: no cap)\n"
      "  --max-context N      read --data as documents (paragraphs between blank lines, or\n"
      "                       JSON lines with a \"text\" each) of up to N positions, packed\n"
      "                       into micro-batches of B x N positions; N is the model's context\n"
      "  --assign POLICY      with --max-context: a step's sequences go to the ranks by the\n"
      "                       cost model's predicted time (cost, the default), or by token\n"
      "                       count in the order they come (tokens) or longest first\n"
      "                       (tokens-sorted), the ranks' measured speeds weighed in all;\n"
      "                       rotate: each draw run three times, by each policy in turn\n"
      "  --data-stats         with --max-context: print the length distribution and exit\n"
      "  --synth-corpus FILE  write a long-tailed corpus of --synth-docs N documents (default\n"
      "                       4000) cut from --data, lengths up to --max-context, and exit\n"
      "  --layout auto        with --local-ranks N: probe every --pp dividing N and every\n"
      "                       --micro-batch (the global batch kept) for --probe-steps steps\n"
      "                       (default: a fortieth of --steps over the candidates, at least\n"
      "                       6), drop the clearly slower, probe the rest again with twice\n"
      "                       the steps while probing stays within a tenth of the run, print\n"
      "                       the table and train with the fastest; with --monitor and\n"
      "                       --ckpt-dir, again (from a checkpoint) when c4mon first names\n"
      "                       a rank a straggler\n"
      "  --probe-steps N      with --layout auto: steps of each layout's first probe (4 or\n"
      "                       more; the default is above)\n"
      "  --local-ranks N      run N ranks here; a lost rank is dropped and the rest go on\n"
      "                       from the last checkpoint (with --ckpt-dir; with --pp, in whole\n"
      "                       pipelines, the survivors past them sitting out)\n"
      "  --json               one JSON object per line (start, step, end) from rank 0\n"
      "  --json-out FILE      the same lines appended to FILE, the text staying on stdout\n"
      "Ranks: RANK/WORLD_SIZE/LOCAL_RANK/MASTER_ADDR/MASTER_PORT (torchrun), SLURM_PROCID/\n"
      "SLURM_NTASKS (srun), OMPI_COMM_WORLD_RANK/SIZE (mpirun), or --local-ranks.\n"
      "  -h, --help   -V, --version\n"
      "exit: 0 ok, 1 failure, 2 bad usage; a rank (not --local-ranks): 75 a peer was lost\n"
      "(restart on the healthy ranks), 76 stopped for a new layout its launcher asked for\n");
}

static int parse_int(const char *flag, const char *v, int min, int max, int *out) {
  long x;
  if (c4_cli_long("c4train", flag, v, min, max, &x) != 0) return C4_EINVAL;
  *out = (int)x;
  return 0;
}

static int parse_double(const char *flag, const char *v, double min, double max, double *out) {
  return c4_cli_double("c4train", flag, v, min, max, out);
}

/* --data-stats (the documents' lengths) or --synth-corpus (a corpus cut from --data). */
static int docs_command(const struct train_opts *o, const char *synth, int ndocs) {
  char err[512];
  if (synth) {
    struct text_data src;
    if (text_data_load(&src, o->data, o->max_context, err, sizeof err) ||
        docs_write_synthetic(synth, src.bytes, src.len, ndocs, o->max_context, o->seed, err,
                             sizeof err)) {
      if (src.bytes) text_data_free(&src);
      return c4_cli_fail("c4train", "%s", err);
    }
    text_data_free(&src);
    return C4_EXIT_OK;
  }
  struct doc_set d;
  if (docs_load(&d, o->data, o->max_context, err, sizeof err))
    return c4_cli_fail("c4train", "%s", err);
  docs_print_stats(&d, o->data, stdout);
  docs_free(&d);
  return C4_EXIT_OK;
}

enum {
  O_DATA = 256,
  O_LAYERS,
  O_WIDTH,
  O_HEADS,
  O_CONTEXT,
  O_MB,
  O_MBS,
  O_STEPS,
  O_LR,
  O_WD,
  O_SEED,
  O_DEVICE,
  O_THREADS,
  O_BUCKET,
  O_PLUGIN,
  O_SLOW,
  O_NORESPLIT,
  O_CKPT,
  O_CKPT_EVERY,
  O_CKPT_STRICT,
  O_MONITOR,
  O_EVAL,
  O_LOCAL,
  O_JSON,
  O_JSON_OUT,
  O_WARMUP,
  O_PP,
  O_MAXCTX,
  O_ASSIGN,
  O_STATS,
  O_SYNTH,
  O_SYNTH_DOCS,
  O_LAYOUT,
  O_PROBE_STEPS,
  O_STAGE_MEM,
  O_STRAGGLER_WAIT
};

static const struct option long_opts[] = {{"data", 1, 0, O_DATA},
                                          {"layers", 1, 0, O_LAYERS},
                                          {"width", 1, 0, O_WIDTH},
                                          {"heads", 1, 0, O_HEADS},
                                          {"context", 1, 0, O_CONTEXT},
                                          {"micro-batch", 1, 0, O_MB},
                                          {"microbatches", 1, 0, O_MBS},
                                          {"steps", 1, 0, O_STEPS},
                                          {"lr", 1, 0, O_LR},
                                          {"wd", 1, 0, O_WD},
                                          {"seed", 1, 0, O_SEED},
                                          {"device", 1, 0, O_DEVICE},
                                          {"threads", 1, 0, O_THREADS},
                                          {"bucket-mb", 1, 0, O_BUCKET},
                                          {"plugin", 1, 0, O_PLUGIN},
                                          {"slow", 1, 0, O_SLOW},
                                          {"no-resplit", 0, 0, O_NORESPLIT},
                                          {"straggler-wait", 1, 0, O_STRAGGLER_WAIT},
                                          {"ckpt-dir", 1, 0, O_CKPT},
                                          {"ckpt-every", 1, 0, O_CKPT_EVERY},
                                          {"ckpt-strict", 0, 0, O_CKPT_STRICT},
                                          {"monitor", 1, 0, O_MONITOR},
                                          {"eval-windows", 1, 0, O_EVAL},
                                          {"local-ranks", 1, 0, O_LOCAL},
                                          {"json", 0, 0, O_JSON},
                                          {"json-out", 1, 0, O_JSON_OUT},
                                          {"warmup", 1, 0, O_WARMUP},
                                          {"pp", 1, 0, O_PP},
                                          {"max-context", 1, 0, O_MAXCTX},
                                          {"assign", 1, 0, O_ASSIGN},
                                          {"data-stats", 0, 0, O_STATS},
                                          {"synth-corpus", 1, 0, O_SYNTH},
                                          {"synth-docs", 1, 0, O_SYNTH_DOCS},
                                          {"layout", 1, 0, O_LAYOUT},
                                          {"probe-steps", 1, 0, O_PROBE_STEPS},
                                          {"stage-mem", 1, 0, O_STAGE_MEM},
                                          {"help", 0, 0, 'h'},
                                          {"version", 0, 0, 'V'},
                                          {0, 0, 0, 0}};

/* The command line: the run's options, the launcher's, and the commands that replace a run. */
struct cli {
  struct train_opts o;
  struct launch_opts lo;
  int stats, synth_docs, layout_auto_on, probe_steps;
  int assign_given, ckpt_every_given; /* options of one mode only: refused outside it */
  const char *synth;
  /* the command line the layout probes get: argv[0], then the words of each option they get
   * (probe_gets), as getopt_long took them */
  int probe_argc;
  char **probe_argv;
};

/* --slow RANK:FACTOR[:FROM_STEP[:TO_STEP]]; nonzero when bad (said). Cut in a copy: the
 * command line itself is what the --layout auto probes run with. */
static int parse_slow(const char *whole, struct train_opts *o) {
  char v[128];
  if (snprintf(v, sizeof v, "%s", whole) >= (int)sizeof v)
    return c4_cli_usage("c4train", "--slow '%s' is too long", whole);
  char *f[4] = {v, NULL, NULL, NULL};
  for (int i = 1; i < 4 && f[i - 1]; i++) {
    f[i] = strchr(f[i - 1], ':');
    if (f[i]) *f[i]++ = 0;
  }
  if (!f[1])
    return c4_cli_usage("c4train", "--slow wants RANK:FACTOR[:FROM[:TO]] (e.g. 2:2.0), not '%s'",
                        whole);
  int bad = 0;
  bad |= parse_int("--slow (rank)", f[0], 0, 1 << 24, &o->slow_rank);
  bad |= parse_double("--slow (factor)", f[1], 1, 1000, &o->slow_factor);
  if (f[2]) bad |= parse_int("--slow (from step)", f[2], 1, 1 << 30, &o->slow_from);
  if (f[3]) bad |= parse_int("--slow (to step)", f[3], 1, 1 << 30, &o->slow_to);
  if (!bad && f[2] && f[3] && o->slow_to < o->slow_from)
    return c4_cli_usage("c4train", "--slow '%s': the slow steps end (%d) before they begin (%d)",
                        whole, o->slow_to, o->slow_from);
  return bad;
}

/* The model and its optimizer: *bad set when the value is bad; 0 when c is not one of them. */
static int parse_model_opt(int c, const char *v, struct train_opts *o, int *bad) {
  double x;
  int seed;
  switch (c) {
  case O_LAYERS: *bad |= parse_int("--layers", v, 1, 256, &o->cfg.layers); break;
  case O_WIDTH: *bad |= parse_int("--width", v, 1, 65536, &o->cfg.width); break;
  case O_HEADS: *bad |= parse_int("--heads", v, 1, 1024, &o->cfg.heads); break;
  case O_CONTEXT: *bad |= parse_int("--context", v, 1, 65536, &o->cfg.context); break;
  case O_MB: *bad |= parse_int("--micro-batch", v, 1, 65536, &o->micro_batch); break;
  case O_MBS: *bad |= parse_int("--microbatches", v, 1, 1 << 20, &o->microbatches); break;
  case O_STEPS: *bad |= parse_int("--steps", v, 0, 1 << 30, &o->steps); break;
  case O_WARMUP: *bad |= parse_int("--warmup", v, 0, 1 << 30, &o->warmup); break;
  case O_LR:
    *bad |= parse_double("--lr", v, 0, 10, &x);
    o->lr = (float)x;
    break;
  case O_WD:
    *bad |= parse_double("--wd", v, 0, 10, &x);
    o->weight_decay = (float)x;
    break;
  case O_SEED:
    seed = (int)o->seed;
    *bad |= parse_int("--seed", v, 0, 1 << 30, &seed);
    o->seed = (uint64_t)seed;
    break;
  default: return 0;
  }
  return 1;
}

/* Where and how the ranks run (device, ring, drills, checkpoints, reports, pipeline). */
static int parse_run_opt(int c, char *v, struct cli *a, int *bad) {
  struct train_opts *o = &a->o;
  double x;
  switch (c) {
  case O_DATA: o->data = v; break;
  case O_DEVICE:
    if (strcmp(v, "cpu") && strcmp(v, "cuda"))
      *bad = c4_cli_usage("c4train", "--device wants cpu or cuda, not '%s'", v);
    o->device = v;
    break;
  case O_THREADS: *bad |= parse_int("--threads", v, 1, 256, &o->threads); break;
  case O_BUCKET:
    *bad |= parse_double("--bucket-mb", v, 0.001, 4096, &x);
    o->bucket_bytes = (size_t)(x * 1048576);
    break;
  case O_PLUGIN: o->plugin = v; break;
  case O_SLOW: *bad = parse_slow(v, o); break;
  case O_NORESPLIT: o->resplit = 0; break;
  case O_STRAGGLER_WAIT:
    *bad |= parse_double("--straggler-wait", v, 0, 3600, &o->straggler_wait_s);
    break;
  case O_CKPT: o->ckpt_dir = v; break;
  case O_CKPT_EVERY:
    a->ckpt_every_given = 1;
    *bad |= parse_int("--ckpt-every", v, 1, 1 << 30, &o->ckpt_every);
    break;
  case O_CKPT_STRICT: o->ckpt_strict = 1; break;
  case O_MONITOR:
    o->monitor_sub = a->lo.monitor_sub = v;
    if (!mon_sub_addr_ok(v))
      *bad = c4_cli_usage("c4train",
                          "--monitor wants ADDR:PORT of c4mon's --subscribe port, not '%s'", v);
    break;
  case O_EVAL: *bad |= parse_int("--eval-windows", v, 0, 1 << 20, &o->eval_windows); break;
  case O_LOCAL: *bad |= parse_int("--local-ranks", v, 1, 1024, &a->lo.ranks); break;
  case O_JSON: o->json = 1; break;
  case O_JSON_OUT: o->json_out = v; break;
  case O_PP: *bad |= parse_int("--pp", v, 1, 1024, &o->pp); break;
  case O_STAGE_MEM: *bad |= parse_double("--stage-mem", v, 0, 1e9, &o->stage_mem_mb); break;
  default: return 0;
  }
  return 1;
}

/* Documents (--max-context and its commands) and --layout auto. */
static int parse_docs_opt(int c, const char *v, struct cli *a, int *bad) {
  struct train_opts *o = &a->o;
  switch (c) {
  case O_MAXCTX: *bad |= parse_int("--max-context", v, 1, 65536, &o->max_context); break;
  case O_ASSIGN:
    a->assign_given = 1;
    o->assign = train_assign_policy(v);
    if (o->assign < 0)
      *bad = c4_cli_usage("c4train",
                          "--assign wants cost, tokens, tokens-sorted or rotate, not '%s'", v);
    break;
  case O_STATS: a->stats = 1; break;
  case O_SYNTH: a->synth = v; break;
  case O_SYNTH_DOCS: *bad |= parse_int("--synth-docs", v, 10, 1 << 24, &a->synth_docs); break;
  case O_LAYOUT:
    if (strcmp(v, "auto")) *bad = c4_cli_usage("c4train", "--layout wants auto, not '%s'", v);
    a->layout_auto_on = 1;
    break;
  case O_PROBE_STEPS: *bad |= parse_int("--probe-steps", v, 4, 1 << 20, &a->probe_steps); break;
  default: return 0;
  }
  return 1;
}

/* Whether --layout auto's probes get option c: not --layout auto's own options, nor the
 * checkpoints', --json-out or --monitor (a probe neither keeps checkpoints nor probes, and
 * c4train refuses the options of those modes outside them). */
static int probe_gets(int c) {
  switch (c) {
  case O_LAYOUT:
  case O_PROBE_STEPS:
  case O_CKPT:
  case O_CKPT_EVERY:
  case O_CKPT_STRICT:
  case O_JSON_OUT:
  case O_MONITOR: return 0;
  default: return 1;
  }
}

/* The options into *a, and the words of those the layout probes get into a->probe_argv (room for
 * argc): the words getopt_long took for each option, so that an option is known however it was
 * written (--ckpt-e 3, --probe=8: getopt_long takes a unique prefix), and --json stays --json.
 * Matching the words by name again let abbreviations through, or took --json for --json-out.
 * Returns -1 to go on, or the exit status (--help, --version, bad usage). */
static int parse_args(int argc, char **argv, struct cli *a) {
  int c, bad = 0;
  a->probe_argv[a->probe_argc++] = argv[0];
  for (int at = optind; !bad && (c = getopt_long(argc, argv, ":hV", long_opts, NULL)) != -1;
       at = optind) {
    for (int i = at; i < optind && probe_gets(c); i++)
      a->probe_argv[a->probe_argc++] = argv[i];
    if (parse_model_opt(c, optarg, &a->o, &bad) || parse_run_opt(c, optarg, a, &bad) ||
        parse_docs_opt(c, optarg, a, &bad))
      continue;
    if (c == 'h') {
      usage(stdout);
      return C4_EXIT_OK;
    }
    if (c == 'V') {
      c4_cli_version("c4train");
      return C4_EXIT_OK;
    }
    return c4_cli_bad_option("c4train", argv, c);
  }
  if (bad) return C4_EXIT_USAGE;
  if (optind < argc) return c4_cli_usage("c4train", "unexpected argument '%s'", argv[optind]);
  return C4_NONE;
}

/* --pp against a world of n ranks (whose: where n came from, for the message): whole pipelines,
 * a layer a stage, and a micro-batch a pipeline. C4_NONE, or the usage exit status (said). */
static int check_pp(const struct train_opts *o, int n, const char *whose) {
  if (n % o->pp)
    return c4_cli_usage("c4train", "--pp %d needs a multiple of %d ranks, not %s %d", o->pp, o->pp,
                        whose, n);
  if (o->cfg.layers < o->pp)
    return c4_cli_usage("c4train", "--pp %d needs a layer a stage, not --layers %d", o->pp,
                        o->cfg.layers);
  if (o->max_context < 1 && o->microbatches < n / o->pp)
    return c4_cli_usage("c4train",
                        "--pp %d on %d ranks needs a micro-batch per pipeline at least "
                        "(--microbatches %d, %d pipelines)",
                        o->pp, n, o->microbatches, n / o->pp);
  return C4_NONE;
}

/* With --local-ranks N, what the ranks would each find wrong at their start and report as a lost
 * peer once they had all failed: said once, as a usage error, before any is forked. */
static int check_local_ranks(const struct cli *a) {
  const struct train_opts *o = &a->o;
  int n = a->lo.ranks;
  if (o->slow_rank >= n)
    return c4_cli_usage("c4train", "--slow names rank %d, but --local-ranks %d has ranks 0 to %d",
                        o->slow_rank, n, n - 1);
  if (!a->layout_auto_on && o->pp <= 1 && o->max_context < 1 && o->microbatches < n)
    return c4_cli_usage("c4train",
                        "--microbatches %d on %d ranks leaves a rank with no work: at least one "
                        "a rank",
                        o->microbatches, n);
  if (a->layout_auto_on || o->pp <= 1) return C4_NONE; /* layout auto picks a --pp that fits */
  return check_pp(o, n, "--local-ranks");
}

/* The options that do not go together. Returns -1 when they do, else the exit status. */
static int check_args(const struct cli *a) {
  const struct train_opts *o = &a->o;
  if (o->json && o->json_out)
    return c4_cli_usage("c4train", "--json and --json-out: the lines go to one place, not both");
  if (o->cfg.width % o->cfg.heads)
    return c4_cli_usage("c4train", "--width %d is not a multiple of --heads %d", o->cfg.width,
                        o->cfg.heads);
  if ((a->stats || a->synth || a->assign_given) && o->max_context < 1)
    return c4_cli_usage("c4train", "%s needs --max-context",
                        a->stats   ? "--data-stats"
                        : a->synth ? "--synth-corpus"
                                   : "--assign");
  /* an option of another mode would be ignored: the run the user meant is not the one made */
  if ((a->ckpt_every_given || o->ckpt_strict) && !o->ckpt_dir)
    return c4_cli_usage("c4train", "%s needs --ckpt-dir",
                        a->ckpt_every_given ? "--ckpt-every" : "--ckpt-strict");
  if (a->probe_steps && !a->layout_auto_on)
    return c4_cli_usage("c4train", "--probe-steps needs --layout auto");
  return a->lo.ranks > 0 ? check_local_ranks(a) : C4_NONE;
}

/* The steps of a candidate's first probe for o's run on `ranks`: a quarter of the budget spread
 * over the candidates, at least 6 (4 timed), unless --probe-steps says. */
static int first_probe_steps(const struct cli *a, const struct train_opts *o, int ranks) {
  static struct layout_probe cand[64];
  int n = layout_candidates(o, ranks, cand, 64);
  int steps = a->probe_steps;
  if (!steps) steps = n ? (int)(o->steps * LAYOUT_BUDGET / (4 * n)) : 6;
  return steps < 6 && !a->probe_steps ? 6 : steps;
}

/* --layout auto: the probes, each a job of its own, and the fastest layout written into a->o. */
static int layout_command(struct cli *a) {
  if (a->lo.ranks < 1)
    return c4_cli_usage("c4train", "--layout auto probes layouts as jobs of their own: it needs "
                                   "--local-ranks N");
  if (a->o.pp > 1)
    fprintf(stderr,
            "c4train: note: --layout auto picks the pipeline depth: --pp %d is one "
            "candidate among the others\n",
            a->o.pp);
  if (a->o.monitor_sub && !a->o.ckpt_dir)
    fprintf(stderr, "c4train: note: without --ckpt-dir, --layout auto does not choose again when "
                    "c4mon names a straggler (the job resumes from the checkpoint it stops at)\n");
  char err[512];
  /* a checkpoint the run would refuse is refused now, not after minutes of probing */
  if (a->o.ckpt_dir && train_ckpt_check(&a->o, err, sizeof err) < 0)
    return c4_cli_fail("c4train", "%s", err);
  if (layout_auto(a->probe_argc, a->probe_argv, &a->o, a->lo.ranks,
                  first_probe_steps(a, &a->o, a->lo.ranks), a->o.json ? stderr : stdout, err,
                  sizeof err) < 0)
    return c4_cli_fail("c4train", "%s", err);
  return C4_NONE;
}

#define RELAYOUT_PROBE_STEPS 16 /* a probe's steps at least, when a straggler is in the job */

/* The launcher's re-choice when c4mon named a straggler (launch_opts.relayout): the layouts
 * probed again on the `ranks` going on (orig: their first ranks), the straggler in them as it
 * is now: the drill's slowdown (--slow) from their first step, on the rank it is now (none if
 * it was lost), and their straggler planners acting on their first reading (--straggler-wait
 * 0: c4mon has named it, nothing is left to wait for), their budget a share of the steps left.
 * Keeps the layout when no probe ran. Returns the pipeline depth the job goes on with. */
static int relayout_command(void *arg, int ranks, const int *orig) {
  struct cli *a = arg;
  char slow[64], nranks[16];
  char **argv = calloc((size_t)a->probe_argc + 7, sizeof *argv);
  FILE *out = a->o.json ? stderr : stdout;
  if (!argv) {
    fprintf(out, "c4train: out of memory choosing the layout again: keeping --pp %d\n", a->o.pp);
    return a->o.pp;
  }
  int n = 0;
  for (int i = 0; i < a->probe_argc; i++)
    argv[n++] = a->probe_argv[i];
  snprintf(nranks, sizeof nranks, "%d", ranks);
  argv[n++] = "--local-ranks";
  argv[n++] = nranks;
  argv[n++] = "--straggler-wait";
  argv[n++] = "0";
  if (a->o.slow_rank >= 0) {
    int now = -1;
    for (int i = 0; i < ranks; i++)
      if (orig[i] == a->o.slow_rank) now = i;
    if (now >= 0)
      snprintf(slow, sizeof slow, "%d:%g:1", now, a->o.slow_factor);
    else
      snprintf(slow, sizeof slow, "0:1"); /* lost: no rank slow */
    argv[n++] = "--slow";
    argv[n++] = slow;
  }
  char err[512];
  fprintf(out, "c4train: choosing the layout again, a straggler in the job\n");
  /* the probing's budget is a share of the steps left (their checkpoint's step done) */
  struct train_opts left = a->o;
  uint64_t done = 0;
  char path[4096];
  if (c4_ckpt_latest(a->o.ckpt_dir, path, sizeof path, &done, err, sizeof err) == 0 &&
      done < (uint64_t)a->o.steps)
    left.steps = a->o.steps - (int)done;
  /* long enough for the probes' planners to act (their first re-split came at step 9-10) and
   * to be timed after */
  int steps = first_probe_steps(a, &left, ranks);
  if (steps < RELAYOUT_PROBE_STEPS && !a->probe_steps) steps = RELAYOUT_PROBE_STEPS;
  if (layout_auto(n, argv, &left, ranks, steps, out, err, sizeof err) < 0)
    fprintf(out, "c4train: %s: keeping --pp %d --micro-batch %d\n", err, a->o.pp, a->o.micro_batch);
  a->o.pp = left.pp;
  a->o.micro_batch = left.micro_batch;
  a->o.microbatches = left.microbatches;
  fflush(out);
  free(argv);
  return a->o.pp;
}

/* This process as one rank of the job, its place read from the launcher's environment. */
static int rank_command(const struct train_opts *o) {
  struct c4_ranks r;
  char err[512];
  if (c4_ranks_from_env(&r, err, sizeof err)) {
    fprintf(stderr, "c4train: %s\n", err);
    return 2;
  }
  /* a rank of another launcher's job (or alone): its world is known only now */
  if (o->pp > 1) {
    int rc = check_pp(o, r.world, "a world of");
    if (rc != C4_NONE) return rc;
  }
  /* a lost peer should end a collective in seconds, not the plugin's default minute; a value
   * refused here falls back to these, not to the plugin's, and is warned about once */
  char ms[24];
  snprintf(ms, sizeof ms, "%ld", c4_env_long("C4_COLL_TIMEOUT_MS", 15000, 100, 3600000));
  setenv("C4_COLL_TIMEOUT_MS", ms, 1);
  snprintf(ms, sizeof ms, "%ld", c4_env_long("C4_BOOTSTRAP_TIMEOUT_MS", 30000, 100, 3600000));
  setenv("C4_BOOTSTRAP_TIMEOUT_MS", ms, 1);
  return o->max_context > 0 ? train_docs_run(o, &r) : train_run(o, &r);
}

/* The command line parsed and run (a: its defaults, and room for the probes' words). */
static int run_cli(int argc, char **argv, struct cli *a) {
  int rc = parse_args(argc, argv, a);
  if (rc < 0) rc = check_args(a);
  if (rc >= 0) return rc;
  if (a->synth || a->stats) return docs_command(&a->o, a->synth, a->synth_docs);
  if (a->layout_auto_on && (rc = layout_command(a)) >= 0) return rc;
  if (a->o.max_context > 0) a->o.cfg.context = a->o.max_context;
  if (a->lo.ranks > 0) {
    a->lo.restart = a->o.ckpt_dir != NULL;
    a->lo.multiple = a->o.pp;
    if (a->layout_auto_on && a->o.ckpt_dir) {
      a->lo.relayout = relayout_command;
      a->lo.relayout_arg = a;
    }
    int status;
    if (launch_local(&a->lo, &status) < 0) return status;
  }
  return rank_command(&a->o); /* the step lines, the report or --json: c4_cli_exit checks */
}

static int tool_main(int argc, char **argv) {
  struct cli a = {
      .o = {.cfg = {.vocab = 256, .context = 64, .layers = 2, .heads = 4, .width = 64},
            .micro_batch = 4,
            .microbatches = 16,
            .steps = 50,
            .lr = 2e-3f,
            .warmup = 10,
            .seed = 1,
            .data = C4_DEFAULT_DATA,
            .device = "cpu",
            .bucket_bytes = 1 << 20,
            .threads = 1,
            .slow_rank = -1,
            .slow_factor = 1,
            .slow_from = 1,
            .slow_to = 1 << 30,
            .resplit = 1,
            .straggler_wait_s = RESPLIT_PERSIST_S,
            .ckpt_every = 10,
            .eval_windows = 32,
            .pp = 1},
      .lo = {.ranks = 0, .restart = 1},
      .synth_docs = 4000,
      .probe_argv = calloc((size_t)argc + 1, sizeof(char *)),
  };
  if (!a.probe_argv) return c4_cli_fail("c4train", "out of memory for the command line");
  int rc = run_cli(argc, argv, &a);
  free(a.probe_argv);
  return rc;
}

/* Every exit says when standard output was lost (c4_cli_exit). */
int main(int argc, char **argv) { return c4_cli_exit("c4train", tool_main(argc, argv)); }
