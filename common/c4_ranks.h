/* c4_ranks.h -- who this process is in the job: from torchrun's variables, Slurm's, Open MPI's
 * or a PMI launcher's (MPICH, Intel MPI), the way each sets them; c4train and c4perf read it. */
#ifndef C4_RANKS_H
#define C4_RANKS_H

#include <stddef.h>

struct c4_ranks {
  int rank, world, local_rank;
  char master[256]; /* rank 0's address for the rendezvous */
  int port;
  const char *source; /* "torchrun", "slurm", "openmpi", "pmi" or "single" */
};

/* Reads, in order: RANK + WORLD_SIZE (+ LOCAL_RANK, MASTER_ADDR, MASTER_PORT) as torchrun sets
 * them; SLURM_PROCID + SLURM_NTASKS (+ SLURM_LOCALID; rank 0's address from MASTER_ADDR, else
 * SLURM_LAUNCH_NODE_IPADDR); OMPI_COMM_WORLD_RANK + OMPI_COMM_WORLD_SIZE (+
 * OMPI_COMM_WORLD_LOCAL_RANK; MASTER_ADDR, else 127.0.0.1 when every rank is on this node);
 * PMI_RANK + PMI_SIZE (+ MPI_LOCALRANKID; MASTER_ADDR, else 127.0.0.1 when MPI_LOCALNRANKS says
 * every rank is on this node). Nothing set: one rank. MASTER_PORT defaults to 29500. Returns 0,
 * or -1 with err naming the variable that is malformed or missing. */
int c4_ranks_from_env(struct c4_ranks *r, char *err, size_t errlen);

#endif
