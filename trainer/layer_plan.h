/* layer_plan.h -- the layer re-split's decisions, step by step (Malleus's first level): each
 * stage's slowdown from its own timings, Malleus's hysteresis (planner.h) on when a new split is
 * worth making, the planner's split under each stage's memory, and the even split again once
 * the slow stage heals. Every rank feeds the same gathered reports, so all agree on the split.
 *
 * A stage's step is its layers plus its ends (the first stage's embedding, the last's head), so
 * a slow stage is told from a stage that merely holds more: each step, a stage's time is divided
 * by its work in healthy layer times (its layers, plus its ends in units of its own layer time,
 * a ratio that a slow machine or the drill does not move), and the result by the step's lower
 * median over the stages (a burst of the machine's other work moves every stage alike, and with
 * two stages the lower median is the faster one). A stage's slowdown is the median of its last
 * LAYER_PLAN_WINDOW such ratios (at least LAYER_PLAN_MIN_STEPS). */
#ifndef C4_LAYER_PLAN_H
#define C4_LAYER_PLAN_H

#define LAYER_PLAN_WINDOW 16
#define LAYER_PLAN_MIN_STEPS 9

/* What one stage did in a step (with replicas: its slowest replica's, which the others wait
 * for at the allreduce). */
struct layer_plan_report {
  int layers;
  double busy_s;         /* its forward and backward passes, no waiting (a drill's sleep in) */
  double layers_s;       /* of which in its layers, as gpt.h times them (no drill) */
  double ends_s;         /* and in its embedding and head */
  double monitor_factor; /* c4mon's straggler factor for one of its ranks, 0 when none */
};

struct layer_plan {
  int stages, layers, enabled;
  int *split;         /* layers per stage for the next step */
  int *even;          /* the split of a healthy pipeline, which a healed one returns to */
  int *max_layers;    /* per stage, from its memory (NULL: no limit) */
  double *slowdown;   /* measured, per stage */
  double *planned;    /* the slowdowns the current split was made for */
  double *ends;       /* per stage: its ends in healthy layer times (median over its window) */
  double *rel, *endw; /* stages x LAYER_PLAN_WINDOW: each step's ratio and ends, a ring */
  int *count, *next;
  double *monitor; /* c4mon's last factor per stage, and the steps since it appeared */
  int *monitor_age;
};

/* Starts at the even split of `layers` among `stages` (max_layers may be NULL; it is copied).
 * enabled 0 keeps the split (measuring goes on). 0, or -1 when memory is short or the layers
 * cannot fill the stages. */
int layer_plan_init(struct layer_plan *p, int stages, int layers, const int *max_layers,
                    int enabled);

void layer_plan_free(struct layer_plan *p);

/* Feeds one step's reports (one per stage); p->split is then the next step's split. Returns 1
 * when it changed. */
int layer_plan_step(struct layer_plan *p, const struct layer_plan_report *rep);

/* A split's step time in healthy layer times under slowdowns: its slowest stage's, its ends
 * included (the pipeline's pace once full). */
double layer_plan_time(const struct layer_plan *p, const int *split, const double *slowdown);

#endif
