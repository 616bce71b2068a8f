/* gpt_rng.h -- a small deterministic random source (splitmix64) and normal draws (Box-Muller),
 * so a seed gives the same parameters and the same data order on every machine. */
#ifndef C4_GPT_RNG_H
#define C4_GPT_RNG_H

#include <stdint.h>

struct gpt_rng {
  uint64_t state;
  int has_spare;
  float spare;
};

void gpt_rng_seed(struct gpt_rng *r, uint64_t seed);
uint64_t gpt_rng_next(struct gpt_rng *r);
/* standard normal */
float gpt_rng_normal(struct gpt_rng *r);
/* A stateless mix of three words: the data sampler's index of sample i of step s. */
uint64_t gpt_hash3(uint64_t a, uint64_t b, uint64_t c);

#endif
