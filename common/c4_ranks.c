/* c4_ranks.c -- launcher variables into a rank, a world and a rendezvous address. */
#include "c4_ranks.h"
#include "c4_err.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Reads variable name as an integer in [min, max]; 1 if set and valid, 0 if unset, -1 (err
 * filled) if set but malformed. */
static int env_int(const char *name, int min, int max, int *out, char *err, size_t errlen) {
  const char *s = getenv(name);
  if (!s || !*s) return 0;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || *end || v < min || v > max) {
    snprintf(err, errlen, "%s=\"%s\": expected an integer in [%d, %d]", name, s, min, max);
    return C4_EINVAL;
  }
  *out = (int)v;
  return 1;
}

static int pair(const char *rank_var, const char *world_var, struct c4_ranks *r, char *err,
                size_t errlen) {
  int has_rank = env_int(rank_var, 0, 1 << 24, &r->rank, err, errlen);
  if (has_rank < 0) return C4_EINVAL;
  int has_world = env_int(world_var, 1, 1 << 24, &r->world, err, errlen);
  if (has_world < 0) return C4_EINVAL;
  if (has_rank != has_world) {
    snprintf(err, errlen, "%s is set but %s is not: both are needed",
             has_rank ? rank_var : world_var, has_rank ? world_var : rank_var);
    return C4_EINVAL;
  }
  if (has_rank && r->rank >= r->world) {
    snprintf(err, errlen, "%s=%d is not below %s=%d", rank_var, r->rank, world_var, r->world);
    return C4_EINVAL;
  }
  return has_rank;
}

int c4_ranks_from_env(struct c4_ranks *r, char *err, size_t errlen) {
  memset(r, 0, sizeof *r);
  r->world = 1;
  r->port = 29500;
  const char *addr = getenv("MASTER_ADDR");
  int found;
  if ((found = pair("RANK", "WORLD_SIZE", r, err, errlen)) != 0) {
    if (found < 0) return C4_EINVAL;
    r->source = "torchrun";
    if (env_int("LOCAL_RANK", 0, 1 << 24, &r->local_rank, err, errlen) < 0) return C4_EINVAL;
  } else if ((found = pair("SLURM_PROCID", "SLURM_NTASKS", r, err, errlen)) != 0) {
    if (found < 0) return C4_EINVAL;
    r->source = "slurm";
    if (env_int("SLURM_LOCALID", 0, 1 << 24, &r->local_rank, err, errlen) < 0) return C4_EINVAL;
    if (!addr) addr = getenv("SLURM_LAUNCH_NODE_IPADDR");
  } else if ((found = pair("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", r, err, errlen)) != 0) {
    if (found < 0) return C4_EINVAL;
    r->source = "openmpi";
    if (env_int("OMPI_COMM_WORLD_LOCAL_RANK", 0, 1 << 24, &r->local_rank, err, errlen) < 0)
      return C4_EINVAL;
    int local_size = 0;
    if (env_int("OMPI_COMM_WORLD_LOCAL_SIZE", 1, 1 << 24, &local_size, err, errlen) < 0)
      return C4_EINVAL;
    if (!addr && local_size == r->world) addr = "127.0.0.1";
  } else if ((found = pair("PMI_RANK", "PMI_SIZE", r, err, errlen)) != 0) {
    if (found < 0) return C4_EINVAL;
    r->source = "pmi";
    if (env_int("MPI_LOCALRANKID", 0, 1 << 24, &r->local_rank, err, errlen) < 0) return C4_EINVAL;
    int local_size = 0;
    if (env_int("MPI_LOCALNRANKS", 1, 1 << 24, &local_size, err, errlen) < 0) return C4_EINVAL;
    if (!addr && local_size == r->world) addr = "127.0.0.1";
  } else {
    r->source = "single";
    addr = "127.0.0.1";
  }
  if (!addr) {
    if (r->world > 1) {
      snprintf(err, errlen,
               "%s ranks across nodes need MASTER_ADDR (rank 0's address) for the rendezvous",
               r->source);
      return C4_EINVAL;
    }
    addr = "127.0.0.1";
  }
  if (strlen(addr) >= sizeof r->master) {
    snprintf(err, errlen, "MASTER_ADDR is longer than %zu bytes", sizeof r->master - 1);
    return C4_EINVAL;
  }
  strcpy(r->master, addr);
  if (env_int("MASTER_PORT", 1, 65535, &r->port, err, errlen) < 0) return C4_EINVAL;
  return 0;
}
