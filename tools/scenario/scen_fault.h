/* scen_fault.h -- the faults and blips c4scen injects: parsed from --fault specs, checked against
 * the job, queried by the generator, and written to the truth file. */
#ifndef C4_SCEN_FAULT_H
#define C4_SCEN_FAULT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "scen_topo.h"

enum {
  C4_SCEN_STRAGGLER,
  C4_SCEN_NIC_TX,
  C4_SCEN_NIC_RX,
  C4_SCEN_LINK,
  C4_SCEN_PATH,
  C4_SCEN_COMM_HANG,
  C4_SCEN_NONCOMM_HANG,
  C4_SCEN_RANK_LOST
};

#define C4_SCEN_MAX_FAULTS 64
#define C4_SCEN_STUCK_NS 2000000000ull /* the plugin's C4_STUCK_MS: pending after 2 s */
#define C4_SCEN_HANG_NS 3000000000ull  /* c4mon's default hang threshold, in the truth */

struct c4_scen_fault {
  int kind;            /* C4_SCEN_* */
  int rank;            /* straggler, noncomm_hang, rank_lost */
  int host, dev;       /* nic_tx, nic_rx: the NIC; link, comm_hang: the source end */
  int dst_host;        /* link, comm_hang: the destination end (same dev) */
  int spine;           /* path */
  double factor;       /* straggler: compute x factor; nic, link, path: fraction of the rate */
  uint64_t onset, end; /* trace ns; end 0: never restored */
  uint64_t stall;      /* hangs: when the job actually stalled (set by the generator) */
  char spec[160];      /* as given */
};

/* Parses one --fault spec ("straggler:rank=5:factor=1.5:t=12[:end=20]", ...) for job j. Returns
 * 0, or C4_EINVAL with the reason in err. */
int c4_scen_fault_parse(const struct c4_scen_job *j, const char *spec, struct c4_scen_fault *f,
                        char *err, size_t errlen);

/* Checks the faults together: at most one hang or lost rank, and it comes last (nothing happens
 * after the job stops); a path fault needs a plan (have_plan). Returns 0 or C4_EINVAL (err). */
int c4_scen_faults_check(const struct c4_scen_job *j, const struct c4_scen_fault *f, int n,
                         int have_plan, char *err, size_t errlen);

/* 1 for comm_hang, noncomm_hang, rank_lost: the faults that stop the job. */
int c4_scen_fault_stops(const struct c4_scen_fault *f);

/* 1 when f is in effect at t. */
static inline int c4_scen_fault_active(const struct c4_scen_fault *f, uint64_t t) {
  return t >= f->onset && (!f->end || t < f->end);
}

/* The fraction of its rate a transfer from rank src to rank dst keeps under the network fault f
 * (nic_tx, nic_rx, link, path), 1 when f does not touch it. */
double c4_scen_fault_rate(const struct c4_scen_job *j, const struct c4_scen_fault *f, int src,
                          int dst);

/* The truth file's entry for f (docs/scenarios.md); the caller owns it. */
json_t *c4_scen_fault_truth(const struct c4_scen_job *j, const struct c4_scen_fault *f);

/* One-off events that must not alarm. */
enum { C4_SCEN_BLIP_XFER, C4_SCEN_BLIP_COMPUTE, C4_SCEN_BLIP_NIC };
struct c4_scen_blip {
  int what;     /* C4_SCEN_BLIP_* */
  int rank;     /* the sender of the slow transfer, the slow rank, or the rank whose NIC it is */
  uint64_t due; /* it happens at the first chance from then on */
  uint64_t at;  /* when it happened (set by the generator); 0: the job had stopped */
};

/* Spreads n blips evenly over the run (kinds in turn, ranks drawn from seed). */
void c4_scen_blips_plan(const struct c4_scen_job *j, uint64_t seed, struct c4_scen_blip *b, int n);

/* The truth file's entry for a blip that happened; the caller owns it. */
json_t *c4_scen_blip_truth(const struct c4_scen_job *j, const struct c4_scen_blip *b);

#endif
