/* pipe.h -- the point-to-point links of a pipeline stage: to and from the previous and the next
 * stage, over the same net plugin (and so the same timing and reporting to c4mon) as the
 * data-parallel ring. Sends are non-blocking and every wait drives all of them, as NCCL's proxy
 * drives a plugin: a stage waiting for a gradient still pushes out its activations. */
#ifndef C4_PIPE_H
#define C4_PIPE_H

#include <stddef.h>

#include "dp.h"

#define PIPE_PENDING 64 /* plugin sends in flight at most */

/* A message larger than the plugin's eager size (64 KB, its C4_INLINE_BYTES default) waits for
 * its receiver to answer a clear-to-send, and a stage answers only when it reaches that receive,
 * not while it computes: on every message a round trip, and no byte moving until then (a 4-stage
 * pipeline of 128 KB activations idled 0.48 of its time against 0.33 sent eagerly). So a message
 * of a few pieces goes as that many eager messages of PIPE_PIECE bytes. How many pieces at most
 * is PIPE_EAGER_REQUESTS over the messages a side keeps in flight (pipe_init's in_flight): the
 * plugin takes 32 requests a connection, and a sender short of one would stop, unable to read
 * what its peer sends meanwhile. Larger messages (a layer move's megabytes) go whole. */
#define PIPE_PIECE (64 << 10)
#define PIPE_EAGER_REQUESTS 16

struct pipe {
  struct c4_netapi *api;
  int prev, next;                                    /* peer ranks, -1 at the ends */
  void *send[2], *recv[2], *send_mh[2], *recv_mh[2]; /* [0]: previous stage, [1]: next */
  void *pending[PIPE_PENDING];                       /* plugin send requests, NULL when free */
  int message[PIPE_PENDING];                         /* the handle of the message each is of */
  int next_message;                                  /* the next handle */
  int eager_pieces;                                  /* a message of at most this many pieces
                                                        goes in pieces */
  int timeout_ms;
};

/* Connects this rank to its neighbours prev and next (ranks of the group; -1: none), for at most
 * in_flight messages a direction at once. Collective over d's bootstrap: every rank of the group
 * calls it, with the same in_flight. Returns 0, or -1 with err filled. */
int pipe_init(struct pipe *p, struct dp *d, int prev, int next, int in_flight, char *err,
              size_t errlen);

/* Posts a send of `bytes` from buf (which must stay untouched until pipe_wait says it is done) to
 * the next stage (to_next 1) or the previous. Returns a handle >= 0, or a C4_E* code when the
 * plugin failed or stayed full for C4_COLL_TIMEOUT_MS. */
int pipe_isend(struct pipe *p, int to_next, const void *buf, size_t bytes);

/* Waits for the send with that handle (a negative handle: nothing). 0, or a C4_E* code when the
 * peer is gone or silent for C4_COLL_TIMEOUT_MS. */
int pipe_wait(struct pipe *p, int handle);

/* Receives exactly `bytes` into buf from the next stage (from_next 1) or the previous one (sent
 * with pipe_isend of the same size), driving the pending sends meanwhile. 0 or a C4_E* code as
 * pipe_wait. */
int pipe_recv(struct pipe *p, int from_next, void *buf, size_t bytes);

/* Waits for every pending send, then closes the links. */
void pipe_close(struct pipe *p);

#endif
