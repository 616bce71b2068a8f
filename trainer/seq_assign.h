/* seq_assign.h -- the two stages of assigning a step's sequences (Hydraulis's idea): first across
 * the data-parallel ranks so that every rank's predicted time (its fixed part plus its
 * sequences' costs, times its speed factor) is even, then, within each rank, into micro-batches
 * of at most a given number of positions (the memory limit). What a sequence costs is the
 * caller's: seq_cost_of for the cost model, its length for balancing by token count. */
#ifndef C4_SEQ_ASSIGN_H
#define C4_SEQ_ASSIGN_H

/* Up to this many sequences the first stage is exact (branch and bound); beyond, it places the
 * costliest first, each on the rank it finishes earliest on, then moves and swaps sequences off
 * the slowest rank while that lowers its time. */
#define SEQ_ASSIGN_EXACT 12

/* Stage 1: rank_of[i] (0..ranks-1) for n sequences of cost[i] on ranks of factor speed[r] (a
 * time multiplier: 2 for half speed) with `fixed` per rank. Minimises the largest
 * speed[r] x (fixed + sum of its costs) (exactly for n <= SEQ_ASSIGN_EXACT). Returns that time. */
double seq_assign_ranks(int n, const double *cost, int ranks, const double *speed, double fixed,
                        int *rank_of);

/* What a data loader does when it balances by count: each sequence in the order it comes goes
 * to the rank where it would finish earliest (by token count when cost is the length: packing by
 * token count, weighted by the ranks' speeds as the straggler planner weighs them). Returns the
 * objective of seq_assign_ranks for it. */
double seq_assign_in_order(int n, const double *cost, int ranks, const double *speed, double fixed,
                           int *rank_of);

/* The same objective for a given assignment. */
double seq_assign_time(int n, const double *cost, int ranks, const double *speed, double fixed,
                       const int *rank_of);

/* A bound no assignment beats: all of the work spread over the ranks in proportion to their
 * speeds, and the few costliest sequences, each alone or two sharing a rank. */
double seq_assign_lower_bound(int n, const double *cost, int ranks, const double *speed,
                              double fixed);

/* Stage 2: micro-batch mb_of[k] for each of the n sequences of lengths len[k] (each <= cap), none
 * holding more than cap positions: first fit by decreasing length. Returns the micro-batches. */
int seq_assign_pack(int n, const int *len, int cap, int *mb_of);

#endif
