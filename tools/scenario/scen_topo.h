/* scen_topo.h -- the shape of c4scen's simulated job: H hosts x G GPUs, one NIC per GPU,
 * rail-optimized (GPU g of every host talks over NIC g); its names, its double binary tree, the
 * spine each host pair's traffic crosses, and its connection ids. */
#ifndef C4_SCEN_TOPO_H
#define C4_SCEN_TOPO_H

#include <stddef.h>
#include <stdint.h>

#include "c4_record.h"

#define C4_SCEN_T0 1000000000ull /* the trace's clock starts at 1 s, so no time is 0 */
#define C4_SCEN_WORLD 0x0000c4c4c4c40001ull
#define C4_SCEN_PIPE 0x0000c4c4c4c40002ull

/* Which collective algorithm (and which of the two trees) a connection belongs to. */
enum { C4_SCEN_RING = 0, C4_SCEN_TREE0 = 1, C4_SCEN_TREE1 = 2, C4_SCEN_P2P = 3 };

struct c4_scen_job {
  int hosts, gpus, nranks, spines;
  double seconds, rate;       /* run length; collectives per second */
  uint64_t t_end;             /* C4_SCEN_T0 + seconds */
  char (*names)[C4_HOST_MAX]; /* "h%04d", [hosts] */
};

/* Fills j and its host names (the caller frees them with c4_scen_job_free). Returns 0 or
 * C4_ENOMEM. */
int c4_scen_job_init(struct c4_scen_job *j, int hosts, int gpus, int spines, double seconds,
                     double rate);
void c4_scen_job_free(struct c4_scen_job *j);

static inline int c4_scen_rank(const struct c4_scen_job *j, int host, int gpu) {
  return host * j->gpus + gpu;
}
static inline uint32_t c4_scen_pid(int rank) { return 1000u + (uint32_t)rank; }

/* The host at heap position pos of tree (0: host = pos; 1: the reversed order), and back. */
int c4_scen_tree_host(const struct c4_scen_job *j, int tree, int pos);
int c4_scen_tree_pos(const struct c4_scen_job *j, int tree, int host);

/* 1 when the directed host pair src -> dst carries traffic in the model: ring and pipeline
 * neighbours (dst = src + 1 mod H) and tree edges (either tree, either direction). */
int c4_scen_carries(const struct c4_scen_job *j, int src, int dst);

/* The directed host pairs that carry traffic, as src * H + dst, ascending; *out is malloc'd
 * (the caller frees it). Returns the count, or C4_ENOMEM. */
long c4_scen_pairs(const struct c4_scen_job *j, uint64_t **out);

/* The spine a host pair's traffic crosses: (src + dst) mod S. */
static inline int c4_scen_spine(const struct c4_scen_job *j, int src, int dst) {
  return (src + dst) % j->spines;
}

/* A stable connection id for (sending rank, receiving rank, C4_SCEN_* algorithm); never 0. */
uint64_t c4_scen_conn_id(int src, int dst, int algo);

/* A host given as its index ("3") or its name ("h0003"); -1 when it is neither or out of range. */
int c4_scen_host_parse(const struct c4_scen_job *j, const char *s);

#endif
