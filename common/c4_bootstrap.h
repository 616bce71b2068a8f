/* c4_bootstrap.h -- a small TCP rendezvous for N ranks (rank 0 at MASTER_ADDR:MASTER_PORT): an
 * allgather of fixed-size blobs and a barrier, for exchanging net plugin handles. Every frame is
 * checked; every read has a deadline. */
#ifndef C4_BOOTSTRAP_H
#define C4_BOOTSTRAP_H

#include <stddef.h>

struct c4_bootstrap {
  int rank;
  int world;
  int timeout_ms; /* C4_BOOTSTRAP_TIMEOUT_MS, default 60000 */
  int root_fd;    /* ranks > 0: connection to rank 0 */
  int *peer_fd;   /* rank 0: connection to each rank (index = rank) */
  unsigned round; /* collective counter, checked in every frame */
};

/* Joins the rendezvous; blocks until every rank has joined or C4_BOOTSTRAP_TIMEOUT_MS passes.
 * Rank 0 listens on addr:port and drops (with a warning naming the address) any connection that
 * does not open with a valid hello from a new rank of this world; the others connect, retrying
 * with backoff. bs owns its sockets until c4_bootstrap_close (also call it after a failure; it is
 * harmless). Returns 0, C4_EINVAL (bad rank/world/port/address), C4_ENOMEM, C4_ESYS (cannot
 * listen), C4_EPROTO (rank 0 answered with something that is not this protocol) or C4_EREMOTE
 * (timeout, or a peer gone). */
int c4_bootstrap_init(struct c4_bootstrap *bs, int rank, int world, const char *addr, int port);

/* Same, with the rank, world and rank 0's address from the launcher's variables (c4_ranks.h:
 * torchrun, Slurm, Open MPI, PMI); C4_EINVAL, logged, when they are malformed or incomplete. */
int c4_bootstrap_from_env(struct c4_bootstrap *bs);

/* Every rank passes len bytes in `mine` (len the same everywhere, at most 1 MiB); all, of
 * world*len bytes owned by the caller, receives rank i's blob at all[i*len]. Collective: every
 * rank must call it, in the same order as the other collectives. Each frame's magic, version,
 * rank, world, round and length are checked: C4_EPROTO on any mismatch (the peer is named in the
 * log), C4_EREMOTE when a peer is gone or silent for the timeout, C4_EINVAL for a bad len. */
int c4_bootstrap_allgather(struct c4_bootstrap *bs, const void *mine, void *all, size_t len);

/* The same, waiting for a peer at most timeout_ms rather than the rendezvous's timeout_ms. */
int c4_bootstrap_allgather_within(struct c4_bootstrap *bs, const void *mine, void *all, size_t len,
                                  int timeout_ms);

/* Returns once every rank has entered the barrier; fails as c4_bootstrap_allgather does. */
int c4_bootstrap_barrier(struct c4_bootstrap *bs);

/* A TCP port on 127.0.0.1 that nothing listens on now (the kernel's pick), for a launcher that
 * starts every rank on this machine; 29500 if the kernel would not say. */
int c4_bootstrap_free_port(void);

/* Closes the sockets and frees what init allocated. Safe to call twice. */
void c4_bootstrap_close(struct c4_bootstrap *bs);

#endif
