/* resplit.c -- one step of the data re-split's decisions. c4mon's straggler factor counts (when
 * larger than the model's) for the first STEP_MODEL_WINDOW steps after it names a rank: it gets
 * the split moving before the model's window has filled; after that the model, which sees the
 * rank's own steps, stands alone, so a straggler that healed is seen as healed even while a
 * verdict stands. c4mon's `recovered` drops the rank's samples, so that the model judges it on
 * steps after the recovery alone (STEP_MODEL_MIN_STEPS of them); its slowdown is held until
 * then. It is not taken as healed at once: c4mon judges lateness, and a straggler whose work
 * was re-split is no longer late, so c4mon calls it recovered while it is as slow as before
 * (seen in `make demo`: taken at its word, the split flapped between even and re-split at each
 * verdict).
 * Flapping: a straggler that is judged healed and then slow again within two windows (on CPUs
 * shared by more ranks than cores, a sleeping straggler given one micro-batch gets the
 * scheduler's favour and reads fast, then slow again once it has its share back) must stay
 * planned as a straggler for a hold before its next heal is believed: two windows, doubled at
 * each heal that does not hold, up to RESPLIT_HOLD_MAX steps. */
#include "resplit.h"

#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "planner.h"

/* Even when the ranks' slowdowns are all 1, else by speed. */
static void plan(struct resplit *p, const double *slowdown, int *out) {
  double ones[p->ranks];
  for (int i = 0; i < p->ranks; i++)
    ones[i] = 1.0;
  c4_split_microbatches(p->total, p->ranks, p->enabled ? slowdown : ones, out);
}

int resplit_init(struct resplit *p, int ranks, int microbatches, int enabled) {
  memset(p, 0, sizeof *p);
  p->ranks = ranks;
  p->total = microbatches;
  p->enabled = enabled;
  p->persist_s = RESPLIT_PERSIST_S;
  p->split = calloc((size_t)ranks, sizeof *p->split);
  p->slowdown = calloc((size_t)ranks, sizeof *p->slowdown);
  p->planned = calloc((size_t)ranks, sizeof *p->planned);
  p->monitor_factor = calloc((size_t)ranks, sizeof *p->monitor_factor);
  p->monitor_age = calloc((size_t)ranks, sizeof *p->monitor_age);
  p->recoveries = calloc((size_t)ranks, sizeof *p->recoveries);
  p->steps = calloc((size_t)ranks, sizeof *p->steps);
  p->straggler_since = calloc((size_t)ranks, sizeof *p->straggler_since);
  p->healed_at = calloc((size_t)ranks, sizeof *p->healed_at);
  p->hold = calloc((size_t)ranks, sizeof *p->hold);
  p->slow_for_s = calloc((size_t)ranks, sizeof *p->slow_for_s);
  if (!p->slow_for_s || !p->steps || !p->straggler_since || !p->healed_at || !p->hold ||
      !p->split || !p->slowdown || !p->planned || !p->monitor_factor || !p->monitor_age ||
      !p->recoveries || step_model_init(&p->model, ranks)) {
    resplit_free(p);
    return C4_ENOMEM;
  }
  for (int i = 0; i < ranks; i++) {
    p->slowdown[i] = p->planned[i] = 1.0;
    p->healed_at[i] = -4L * STEP_MODEL_WINDOW; /* never */
  }
  plan(p, p->planned, p->split);
  return 0;
}

void resplit_free(struct resplit *p) {
  free(p->split);
  free(p->slowdown);
  free(p->planned);
  free(p->monitor_factor);
  free(p->monitor_age);
  free(p->recoveries);
  free(p->steps);
  free(p->straggler_since);
  free(p->healed_at);
  free(p->hold);
  free(p->slow_for_s);
  step_model_free(&p->model);
  memset(p, 0, sizeof *p);
}

double resplit_bottleneck(int ranks, const int *split, const double *slowdown) {
  double worst = 0;
  for (int i = 0; i < ranks; i++)
    if (split[i] * slowdown[i] > worst) worst = split[i] * slowdown[i];
  return worst;
}

/* c4mon's side of a step: recoveries reset a rank, a new factor starts its age. */
static void take_verdicts(struct resplit *p, const struct resplit_report *rep) {
  for (int i = 0; i < p->ranks; i++) {
    if (rep[i].recoveries != p->recoveries[i]) {
      p->recoveries[i] = rep[i].recoveries;
      step_model_forget(&p->model, i);
    }
    if (rep[i].monitor_factor != p->monitor_factor[i]) p->monitor_age[i] = 0;
    p->monitor_factor[i] = rep[i].monitor_factor;
    p->monitor_age[i]++;
  }
}

/* `believed`: the slowdowns the plan may act on; a rank newly reading slow counts as healthy
 * until its reading has held for RESPLIT_PERSIST_S or c4mon names it (whose factor then stands
 * as its slowdown too). */
static void believe(struct resplit *p, const struct resplit_report *rep, double *believed) {
  int n = p->ranks;
  double step_s = 0;
  for (int i = 0; i < n; i++)
    if (rep[i].step.total_s > step_s) step_s = rep[i].step.total_s;
  for (int i = 0; i < n; i++) {
    p->slow_for_s[i] = p->slowdown[i] >= C4_SPLIT_STRAGGLER ? p->slow_for_s[i] + step_s : 0;
    believed[i] = p->slowdown[i];
    int named = p->monitor_age[i] <= STEP_MODEL_WINDOW && p->monitor_factor[i] > p->slowdown[i];
    if (named)
      p->slowdown[i] = believed[i] = p->monitor_factor[i];
    else if (p->planned[i] < C4_SPLIT_STRAGGLER && p->slow_for_s[i] < p->persist_s &&
             believed[i] >= C4_SPLIT_STRAGGLER)
      believed[i] = 1.0;
  }
}

/* The slowdowns to plan for: a rank under the straggler threshold is healthy, since planning on
 * its noise would hand the "fastest" healthy rank extra work that it then finishes last. */
static void wanted(const struct resplit *p, const double *believed, double *want) {
  for (int i = 0; i < p->ranks; i++) {
    want[i] = believed[i] < C4_SPLIT_STRAGGLER ? 1.0 : believed[i];
    if (want[i] < C4_SPLIT_STRAGGLER && p->planned[i] >= C4_SPLIT_STRAGGLER &&
        p->step - p->straggler_since[i] < p->hold[i])
      want[i] = p->planned[i]; /* a heal that did not hold last time waits out its hold */
  }
}

/* A new split for want is taken: each rank it judges healed or newly slow is noted. */
static void note_turns(struct resplit *p, const double *want) {
  for (int i = 0; i < p->ranks; i++) {
    if (p->planned[i] >= C4_SPLIT_STRAGGLER && want[i] < C4_SPLIT_STRAGGLER) {
      /* judged healed: measured afresh, or the slow steps still in its window would read it
       * slow again at the next noisy step */
      step_model_forget(&p->model, i);
      p->healed_at[i] = p->step;
    } else if (p->planned[i] < C4_SPLIT_STRAGGLER && want[i] >= C4_SPLIT_STRAGGLER) {
      p->straggler_since[i] = p->step;
      if (p->step - p->healed_at[i] <= 2 * STEP_MODEL_WINDOW) /* the heal did not hold */
        p->hold[i] = p->hold[i]
                         ? (p->hold[i] < RESPLIT_HOLD_MAX / 2 ? 2 * p->hold[i] : RESPLIT_HOLD_MAX)
                         : 2 * STEP_MODEL_WINDOW;
    }
  }
}

int resplit_step(struct resplit *p, const struct resplit_report *rep) {
  int n = p->ranks;
  p->step++;
  for (int i = 0; i < n; i++)
    p->steps[i] = rep[i].step;
  take_verdicts(p, rep);
  step_model_add(&p->model, p->steps);
  double fixed = 0, per_mb = step_model_slowdowns(&p->model, p->slowdown, &fixed);
  if (per_mb > 0) {
    p->per_mb_s = per_mb;
    p->fixed_s = fixed;
  }
  double believed[n];
  believe(p, rep, believed);
  if (!p->enabled || !c4_split_needs_replan(n, p->planned, believed)) return 0;
  double want[n];
  wanted(p, believed, want);
  /* the split changes only when that pays 5%: between two splits about as good,
   * measurement noise would otherwise flip it back and forth. `planned` stays what the split
   * was made for, so a straggler on its way back is compared with where it was */
  int cand[n];
  plan(p, want, cand);
  if (resplit_bottleneck(n, cand, want) >= 0.95 * resplit_bottleneck(n, p->split, want)) return 0;
  note_turns(p, want);
  memcpy(p->split, cand, sizeof cand);
  memcpy(p->planned, want, sizeof want);
  return 1;
}
