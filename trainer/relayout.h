/* relayout.h -- a running job asked to stop for a new layout (`--layout auto` when c4mon names a
 * straggler, launch.c). The launcher holds a pipe whose read end its ranks inherit; a byte in it
 * is the request, which every rank sees (a poll, nothing read) and says in the report the ranks
 * share each step, so that all of them stop after the same step, write a checkpoint and exit
 * C4TRAIN_EXIT_RELAYOUT; the launcher then probes the layouts again and resumes the job from that
 * checkpoint in the one it picks. No signal: a signal would interrupt the plugin's waits. */
#ifndef C4_RELAYOUT_H
#define C4_RELAYOUT_H

#include <stdio.h>

/* The launcher, before it forks the ranks: the pipe (close-on-exec: the layout probes, programs
 * of their own, do not get it). 0, or C4_ESYS (no pipe: no new layout can be asked for). */
int relayout_open(void);

/* In a rank the launcher forked: C4TRAIN_RELAYOUT_FD set to the pipe's read end. */
void relayout_pass_on(void);

/* The launcher: asks the running ranks (one byte), or takes the request back before the next
 * attempt (the pipe drained). */
void relayout_request(void);
void relayout_clear(void);

/* A rank: 1 when its launcher asks for a new layout. */
int relayout_asked(void);

struct dp;

/* A rank, after the checkpoint a new layout was asked for, with rc train_ckpt_step's (0, or -1
 * on rank 0, its writer, when it was not written): every rank learns whether it was, over d's
 * `world` ranks, so that all stop or all go on. A stop after `step` is said on stdout when say,
 * and as a {"event":"stop"} line on jf when not NULL (rank 0's JSON lines). Returns
 * C4TRAIN_EXIT_RELAYOUT (written: stop), 0 (not written: go on in this layout, and ask no more:
 * *off set) or C4TRAIN_EXIT_PEER_LOST. */
int relayout_stop(struct dp *d, int world, int rc, int step, int say, FILE *jf, int *off);

#endif
