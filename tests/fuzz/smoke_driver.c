/* smoke_driver.c -- runs a fuzz target on random and mutated inputs with a fixed seed, so every
 * `make test` exercises the decoders even where libFuzzer is not installed.
 * Usage: <target>_smoke [iterations] [seed]. Exits 0 after the run; a crash, sanitizer report or
 * hang (the test runner's timeout) is the failure. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

#define MAX_INPUT 4096

static uint64_t rng_state;

static uint64_t rng(void) {
  rng_state ^= rng_state << 13;
  rng_state ^= rng_state >> 7;
  rng_state ^= rng_state << 17;
  return rng_state;
}

static size_t mutate(uint8_t *buf, size_t len) {
  int edits = 1 + (int)(rng() % 8);
  for (int e = 0; e < edits; e++) {
    switch (rng() % 4) {
    case 0:
      if (len) buf[rng() % len] ^= (uint8_t)(1u << (rng() % 8));
      break;
    case 1:
      if (len) buf[rng() % len] = (uint8_t)rng();
      break;
    case 2: len = len ? (size_t)(rng() % len) : 0; break;
    default:
      while (len < MAX_INPUT && rng() % 4)
        buf[len++] = (uint8_t)rng();
    }
  }
  return len;
}

int main(int argc, char **argv) {
  long iters = argc > 1 ? atol(argv[1]) : 20000;
  rng_state = argc > 2 ? strtoull(argv[2], NULL, 0) : 0x9E3779B97F4A7C15ull;
  int nseeds = 0;
  uint8_t buf[MAX_INPUT];
  while (nseeds < 1000 && c4_fuzz_seed(nseeds, buf, sizeof buf) > 0)
    nseeds++;
  for (int i = 0; i < nseeds; i++) {
    size_t n = c4_fuzz_seed(i, buf, sizeof buf);
    LLVMFuzzerTestOneInput(buf, n);
  }
  for (long it = 0; it < iters; it++) {
    size_t len;
    if (nseeds && rng() % 4) {
      len = c4_fuzz_seed((int)(rng() % (uint64_t)nseeds), buf, sizeof buf);
      len = mutate(buf, len);
    } else {
      len = (size_t)(rng() % 300);
      for (size_t i = 0; i < len; i++)
        buf[i] = (uint8_t)rng();
    }
    LLVMFuzzerTestOneInput(buf, len);
  }
  printf("%s: %ld inputs (%d seeds), no crash\n", argv[0], iters + nseeds, nseeds);
  return 0;
}
