/* scen_gen.h -- c4scen's job simulation: runs a data-parallel job's collectives, with its faults
 * and blips, and hands every record it would have produced to the trace writer. */
#ifndef C4_SCEN_GEN_H
#define C4_SCEN_GEN_H

#include <stdint.h>

#include "scen_fault.h"
#include "scen_out.h"
#include "scen_topo.h"

/* Generates job j's trace into out (which the caller opened and closes). Sets each hang's stall
 * time and each blip's time (0: the job had stopped before it); *collectives gets the number of
 * collectives that completed. Returns 0, C4_ENOMEM, or the writer's error. Deterministic for a
 * seed. */
int c4_scen_generate(const struct c4_scen_job *j, struct c4_scen_fault *faults, int nfaults,
                     struct c4_scen_blip *blips, int nblips, uint64_t seed, struct c4_scen_out *out,
                     uint64_t *collectives);

#endif
