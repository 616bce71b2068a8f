/* planner.h -- the straggler planner (Malleus's two levels, FIELD.md): given each rank's measured
 * slowdown, how many micro-batches each data-parallel rank (or pipeline) takes, and how many
 * layers each pipeline stage holds, so that the slowest one finishes as early as possible. Pure
 * functions; integer and exact. Prefix c4_split_ (the traffic planner, traffic_planner/, is
 * c4_plan_). */
#ifndef C4_PLANNER_H
#define C4_PLANNER_H

/* Splits total units among n workers: worker i processes rate[i] units per unit of time and takes
 * at most cap[i] (cap NULL: no limit). Chooses out[i] (sum = total, 0 <= out[i] <= cap[i]) that
 * minimizes the bottleneck max_i out[i] / rate[i], exactly over integers; a worker too slow to
 * help gets 0. Returns the bottleneck time, or -1 when the caps cannot hold total (or no worker
 * has a positive rate, or n < 1). */
double c4_split_units(int total, int n, const double *rate, const int *cap, int *out);

/* Micro-batches per data-parallel rank from slowdowns (a rank's time per micro-batch over a
 * healthy one's: 1 healthy, 2 half speed). Every rank keeps at least one micro-batch when there
 * are as many as ranks: a rank with no work has no step time, so nothing could show that it
 * healed. Returns the step time in healthy micro-batch times. */
double c4_split_microbatches(int total, int n, const double *slowdown, int *out);

/* Layers per pipeline stage (stage i at slowdown[i], holding at most max_layers[i] layers, NULL
 * for no memory limit): minimizes the slowest stage. Returns that stage's time in healthy layer
 * times, or -1 when the limits cannot hold all layers. */
double c4_split_layers(int layers, int stages, const double *slowdown, const int *max_layers,
                       int *out);

/* The same for a pipeline whose stages also do fixed work besides their layers (the first stage
 * the embedding, the last the head): ends[i], in healthy layer times, counts in stage i's time
 * at its slowdown. Every stage keeps at least one layer (a stage with none has nothing to
 * measure it by). Returns the slowest stage's time in healthy layer times, or -1 when the limits
 * cannot hold all layers or there are fewer layers than stages. */
double c4_split_layers_ends(int layers, int stages, const double *slowdown, const double *ends,
                            const int *max_layers, int *out);

/* Malleus's hysteresis: a rank is a straggler at slowdown >= 1.2, and a plan made for `planned`
 * slowdowns is redone only when some rank's measured slowdown moved by 0.3 or more from it and
 * that rank is, or was, a straggler; or when a rank planned as a straggler now reads healthy
 * (under 1.1), however little it moved: a plan made at 1.25 is not kept for a rank back at 1.0.
 * Between 1.1 and 1.3 from healthy nothing changes. 1: re-plan. */
int c4_split_needs_replan(int n, const double *planned, const double *measured);

#define C4_SPLIT_STRAGGLER 1.2
#define C4_SPLIT_MOVE 0.3
#define C4_SPLIT_HEALED 1.1

#endif
