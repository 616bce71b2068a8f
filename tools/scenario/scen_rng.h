/* scen_rng.h -- c4scen's random numbers: xoshiro256** seeded through splitmix64, fast and the
 * same sequence for a seed on every machine. */
#ifndef C4_SCEN_RNG_H
#define C4_SCEN_RNG_H

#include <stdint.h>

struct c4_scen_rng {
  uint64_t s[4];
  double spare; /* the second normal of the last polar draw */
  int has_spare;
};

/* Seeds g from seed (any value, 0 included). */
void c4_scen_rng_seed(struct c4_scen_rng *g, uint64_t seed);

/* The next 64 random bits. */
uint64_t c4_scen_rng_u64(struct c4_scen_rng *g);

/* Uniform in [0, 1). */
double c4_scen_rng_unit(struct c4_scen_rng *g);

/* Uniform integer in [0, n), n > 0. */
uint64_t c4_scen_rng_below(struct c4_scen_rng *g, uint64_t n);

/* exp(sigma x N(0, 1)): a lognormal factor around 1. */
double c4_scen_rng_lognormal(struct c4_scen_rng *g, double sigma);

/* splitmix64's finalizer: a well-mixed 64-bit hash of x. */
uint64_t c4_scen_mix64(uint64_t x);

#endif
