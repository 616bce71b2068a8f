/* layer_plan.h -- a pipeline's straggler planner, step by step (Malleus's two levels): each
 * rank's slowdown from its own timings, Malleus's hysteresis (planner.h) on when a new plan is
 * worth making, then the plan the model predicts fastest among three: layers moved off the slow
 * stage (the same split in every replica), micro-batches moved off the slow rank's replica, or
 * both (layers first, then the replicas' micro-batches by their new pace); and the even plan again
 * once every rank is healthy, or on trial for a slow rank whose excess slowdown has halved
 * (layer_plan.c). Every rank feeds the same gathered reports, so all agree.
 *
 * A stage's step is its layers plus its ends (the first stage's embedding, the last's head,
 * every stage's copies to and from its neighbours), so a slow rank is told from a rank that
 * merely holds more: each step, a rank's time is divided by
 * its work in healthy layer times (its layers, plus its ends in units of its own layer time, a
 * ratio that a slow machine or the drill does not move), and the result by the step's lower
 * median over the ranks (a burst of the machine's other work moves every rank alike, and with two
 * the lower median is the faster one). A rank's slowdown is the median of its last
 * LAYER_PLAN_WINDOW such ratios (at least LAYER_PLAN_MIN_STEPS). Noise, measured: 4 stages of 8
 * layers (width 64) for 300 steps on the 2 cores under load 17: each step's ratio had a log
 * standard deviation of 0.07-0.08, 99th percentile 1.24-1.38, worst 2.1, and the slowdowns
 * stayed under 1.15; synthetic steps at 1.5 times that noise (tests/unit/test_layer_plan.c)
 * never re-planned in 20,000 steps of 4 and of 8 stages (Malleus's 1.2 and 0.3), at 1.9 times
 * twice.
 *
 * The model of a replica's step under 1F1B: with stage s taking t_s = slowdown x (layers + ends)
 * per micro-batch, m micro-batches take sum(t_s) + (m - 1) x max(t_s): each micro-batch crosses
 * every stage once, and the slowest stage paces the rest. */
#ifndef C4_LAYER_PLAN_H
#define C4_LAYER_PLAN_H

#define LAYER_PLAN_WINDOW 16
#define LAYER_PLAN_MIN_STEPS 9

/* What one rank did in a step. */
struct layer_plan_report {
  int layers, microbatches;
  double busy_s;         /* its forward and backward passes' CPU time, no waiting (a drill's
                            sleep counted in as the CPU time a slower device would take) */
  double wall_s;         /* the same passes' wall time, the drill's sleep in: what the wait
                            counts (on a shared core, CPU time runs slower than the clock) */
  double work_s;         /* the same without the drill: what it computed */
  double layers_s;       /* of which in its layers, as gpt.h times them; the rest are its ends
                            (embedding, head, the copies to and from its neighbours) */
  double monitor_factor; /* c4mon's straggler factor for it, 0 when none */
};

struct layer_plan {
  int stages, replicas, layers, microbatches, enabled;
  int *split;         /* layers per stage for the next step */
  int *data;          /* micro-batches per replica for the next step */
  int *even;          /* the layer split of a healthy pipeline, which a healed one returns to */
  int *even_data;     /* and the even micro-batches */
  int *max_layers;    /* per stage, from its memory (NULL: no limit) */
  double *slowdown;   /* measured, per rank (replica r, stage s at r x stages + s) */
  double *planned;    /* the slowdowns the current plan was made for */
  double *ends;       /* per stage: its ends in healthy layer times (median over its ranks) */
  double *rel, *endw; /* per rank x LAYER_PLAN_WINDOW: each step's ratio and ends, a ring */
  int *count, *next;
  double *monitor; /* c4mon's last factor per rank, and the steps since it appeared */
  int *monitor_age;
  double *slow_for_s; /* per rank: seconds (wall) its slowdown has stood at the threshold */
  int *healing_for;   /* per rank: steps in a row it has read halfway back from its plan */
  double persist_s;   /* how long a rank not planned slow must read slow before the plan acts on
                         it, unless c4mon names it (resplit.h's wait; 0 after init: none) */
};

/* Starts at the even split of `layers` among `stages` and of `microbatches` among `replicas`
 * (max_layers may be NULL; it is copied). enabled 0 keeps the plan (measuring goes on). 0, or -1
 * when memory is short or the layers cannot fill the stages. */
int layer_plan_init(struct layer_plan *p, int stages, int replicas, int layers, int microbatches,
                    const int *max_layers, int enabled);

void layer_plan_free(struct layer_plan *p);

/* Feeds one step's reports (one per rank, rank order); p->split and p->data are then the next
 * step's. Returns 1 when either changed. */
int layer_plan_step(struct layer_plan *p, const struct layer_plan_report *rep);

/* The step time the model predicts for layer split `split` and micro-batches `data` under
 * per-rank slowdowns, in healthy layer times: its slowest replica's. */
double layer_plan_time(const struct layer_plan *p, const int *split, const int *data,
                       const double *slowdown);

#endif
