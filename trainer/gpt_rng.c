/* gpt_rng.c -- splitmix64: one 64-bit add and a mix per draw, and every seed is a good one. */
#include "gpt_rng.h"

#include <math.h>

static uint64_t mix(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
  return z ^ (z >> 31);
}

void gpt_rng_seed(struct gpt_rng *r, uint64_t seed) {
  r->state = seed;
  r->has_spare = 0;
  r->spare = 0;
}

uint64_t gpt_rng_next(struct gpt_rng *r) {
  r->state += 0x9e3779b97f4a7c15ULL;
  return mix(r->state);
}

float gpt_rng_normal(struct gpt_rng *r) {
  if (r->has_spare) {
    r->has_spare = 0;
    return r->spare;
  }
  double u1 = ((double)(gpt_rng_next(r) >> 11) + 1.0) / 9007199254740993.0; /* (0, 1] */
  double u2 = (double)(gpt_rng_next(r) >> 11) / 9007199254740992.0;
  double rad = sqrt(-2.0 * log(u1)), ang = 2.0 * M_PI * u2;
  r->spare = (float)(rad * sin(ang));
  r->has_spare = 1;
  return (float)(rad * cos(ang));
}

uint64_t gpt_hash3(uint64_t a, uint64_t b, uint64_t c) {
  return mix(mix(mix(a + 0x9e3779b97f4a7c15ULL) ^ b) + c);
}
