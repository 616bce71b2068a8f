/* pipe.h -- the point-to-point links of a pipeline stage: to and from the previous and the next
 * stage, over the same net plugin (and so the same timing and reporting to c4mon) as the
 * data-parallel ring. Sends are non-blocking and every wait drives all of them, as NCCL's proxy
 * drives a plugin: a stage waiting for a gradient still pushes out its activations. */
#ifndef C4_PIPE_H
#define C4_PIPE_H

#include <stddef.h>

#include "dp.h"

#define PIPE_PENDING 64 /* sends in flight at most */

struct pipe {
  struct c4_netapi *api;
  int prev, next;                                    /* peer ranks, -1 at the ends */
  void *send[2], *recv[2], *send_mh[2], *recv_mh[2]; /* [0]: previous stage, [1]: next */
  void *pending[PIPE_PENDING];                       /* send requests, NULL when free */
  int timeout_ms;
};

/* Connects this rank to its neighbours prev and next (ranks of the group; -1: none). Collective
 * over d's bootstrap: every rank of the group calls it. Returns 0, or -1 with err filled. */
int pipe_init(struct pipe *p, struct dp *d, int prev, int next, char *err, size_t errlen);

/* Posts a send of `bytes` from buf (which must stay untouched until pipe_wait says it is done) to
 * the next stage (to_next 1) or the previous. Returns a handle >= 0, or a C4_E* code when the
 * plugin failed or PIPE_PENDING sends are in flight. */
int pipe_isend(struct pipe *p, int to_next, const void *buf, size_t bytes);

/* Waits for the send with that handle (a negative handle: nothing). 0, or a C4_E* code when the
 * peer is gone or silent for C4_COLL_TIMEOUT_MS. */
int pipe_wait(struct pipe *p, int handle);

/* Receives exactly `bytes` into buf from the next stage (from_next 1) or the previous one,
 * driving the pending sends meanwhile. 0 or a C4_E* code as pipe_wait. */
int pipe_recv(struct pipe *p, int from_next, void *buf, size_t bytes);

/* Waits for every pending send, then closes the links. */
void pipe_close(struct pipe *p);

#endif
