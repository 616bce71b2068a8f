/* det_xstart.h -- when a transfer's bytes could start to move, for records that do not say
 * (no t_first: minimal traces, wrap mode). */
#ifndef C4_DET_XSTART_H
#define C4_DET_XSTART_H

#include <stdint.h>

/* A transfer whose start has been settled: its matrix cell, bytes and network time. */
struct det_xs_sample {
  int cell;
  int order; /* its order among the cell's transfers of one call (same post), 0..3 */
  uint64_t bytes, t_start, t_done;
};

/* Every transfer record's post time on its communicator, by rank (t_post 0: none given; rank
 * -1: not known): what later estimates are made from. */
void det_xstart_post(uint64_t comm, int rank, uint64_t t_post);

/* Holds a transfer without a first-byte time, recorded by rank with peer at its other end (either
 * -1: not known; its post given to det_xstart_post first), until the posts that bound its start
 * are in. Returns 0, C4_EAGAIN when the hold is full, C4_ENOMEM, or C4_EINVAL for a bad cell (the
 * sample is lost; the caller counts it). */
int det_xstart_hold(uint64_t comm, int cell, int rank, int peer, uint64_t bytes, uint64_t t_post,
                    uint64_t t_done);

/* The next held transfer whose hold is over at time now, into *out: 1, or 0 when none is. */
int det_xstart_release(uint64_t now, struct det_xs_sample *out);

/* A transfer of cell (size class cls, 0..63; order as its sample says) whose start was estimated,
 * v the log of its time per byte, completed at t: returns v over the cell's usual for that class
 * and order, learned from its earlier ones, or NAN while the cell has too few to know it. *phase
 * gets 1 when the cell's usual is well above its size class's fastest cells' (it waits behind
 * another phase of the call), else 0: such cells are compared among themselves. */
float det_xstart_usual(int cell, int order, int cls, float v, uint64_t t, int *phase);

/* Whether a verdict stands on cell: while one does its usual stays as it was, so that a fault
 * that lasts is not learned as the cell's usual (a NIC sending 2.5x slower in a trace without
 * t_first read 1.7x after 25 s and was declared recovered, still slow). */
void det_xstart_freeze(int cell, int frozen);

/* Transfer records since the last reset whose post was not kept as their own: their
 * communicator is past the 1,024 tracked (those share one slot), or their (communicator, rank)
 * found no free slot of the 65,536 within 64 probes (its transfers' pairwise starts are then its
 * communicator's latest post). Each record counts once. In the detection state as
 * posts_untracked. */
uint64_t det_xstart_untracked(void);

/* Transfers without a first-byte time left out of the matrix since the last reset: their
 * communicator's way (pairwise, or by step) could not estimate their start, or it has no way
 * left (its chained steps' numbering lost). In the detection state as xfers_left_out. */
uint64_t det_xstart_left_out(void);

void det_xstart_reset(void);

#endif
