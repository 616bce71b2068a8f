/* fuzz.h -- the contract between a fuzz target and its two drivers (libFuzzer, smoke_driver.c). */
#ifndef C4_FUZZ_H
#define C4_FUZZ_H

#include <stddef.h>
#include <stdint.h>

/* The target: must accept any bytes without crashing, hanging or leaking. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Valid inputs to mutate from: writes seed i into buf (at most cap bytes) and returns its size,
 * or 0 when there is no seed i. */
size_t c4_fuzz_seed(int i, uint8_t *buf, size_t cap);

#endif
