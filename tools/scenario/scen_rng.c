/* scen_rng.c -- xoshiro256** (Blackman and Vigna) and the draws c4scen's model needs. */
#include "scen_rng.h"

#include <math.h>

uint64_t c4_scen_mix64(uint64_t x) {
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

void c4_scen_rng_seed(struct c4_scen_rng *g, uint64_t seed) {
  for (int i = 0; i < 4; i++) {
    seed += 0x9e3779b97f4a7c15ull;
    g->s[i] = c4_scen_mix64(seed);
  }
  g->has_spare = 0;
  g->spare = 0;
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t c4_scen_rng_u64(struct c4_scen_rng *g) {
  uint64_t *s = g->s;
  uint64_t out = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl(s[3], 45);
  return out;
}

double c4_scen_rng_unit(struct c4_scen_rng *g) {
  return (double)(c4_scen_rng_u64(g) >> 11) * 0x1.0p-53;
}

uint64_t c4_scen_rng_below(struct c4_scen_rng *g, uint64_t n) {
  /* Lemire's multiply-shift; the bias for the n c4scen uses (< 2^32) is below 2^-32. */
  return (uint64_t)(((unsigned __int128)c4_scen_rng_u64(g) * n) >> 64);
}

/* A standard normal by Marsaglia's polar method, keeping the pair's second value. */
static double normal(struct c4_scen_rng *g) {
  if (g->has_spare) {
    g->has_spare = 0;
    return g->spare;
  }
  double u, v, q;
  do {
    u = 2 * c4_scen_rng_unit(g) - 1;
    v = 2 * c4_scen_rng_unit(g) - 1;
    q = u * u + v * v;
  } while (q >= 1 || q == 0);
  double m = sqrt(-2 * log(q) / q);
  g->spare = v * m;
  g->has_spare = 1;
  return u * m;
}

double c4_scen_rng_lognormal(struct c4_scen_rng *g, double sigma) { return exp(sigma * normal(g)); }
