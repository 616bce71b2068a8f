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

/* Joins the rendezvous. Rank 0 listens on addr:port; the others connect, retrying until the
 * timeout. Returns 0, C4_EINVAL, C4_ESYS, C4_EPROTO (a peer that is not this protocol, named in
 * the log) or C4_EREMOTE (timeout or a peer gone). */
int c4_bootstrap_init(struct c4_bootstrap *bs, int rank, int world, const char *addr, int port);

/* Same, with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT from the environment. */
int c4_bootstrap_from_env(struct c4_bootstrap *bs);

/* all[i*len .. (i+1)*len) receives rank i's `mine`. */
int c4_bootstrap_allgather(struct c4_bootstrap *bs, const void *mine, void *all, size_t len);

int c4_bootstrap_barrier(struct c4_bootstrap *bs);

void c4_bootstrap_close(struct c4_bootstrap *bs);

#endif
