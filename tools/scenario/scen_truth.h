/* scen_truth.h -- the files c4scen gen writes beside its trace: the truth (what was injected,
 * for c4scen score) and the traffic plan (which spine each host pair crosses, for c4mon --plan).
 * Both are described in docs/scenarios.md. */
#ifndef C4_SCEN_TRUTH_H
#define C4_SCEN_TRUTH_H

#include <stdint.h>

#include "scen_fault.h"
#include "scen_topo.h"

/* Writes the plan of job j to path: one path per spine, listing the directed host pairs that
 * carry traffic and cross it. Returns 0, C4_ENOMEM or C4_ESYS (errno kept). */
int c4_scen_write_plan(const struct c4_scen_job *j, const char *path);

/* Writes the truth to path: the job, the faults, and the blips that happened. Returns 0,
 * C4_ENOMEM or C4_ESYS. */
int c4_scen_write_truth(const struct c4_scen_job *j, const struct c4_scen_fault *f, int nf,
                        const struct c4_scen_blip *b, int nb, uint64_t seed, uint64_t collectives,
                        const char *path);

#endif
