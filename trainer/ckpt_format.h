/* ckpt_format.h -- the byte layout the checkpoint writer and reader share (internal to
 * trainer/ckpt*; docs/checkpoint-format.md is the reference). */
#ifndef C4_CKPT_FORMAT_H
#define C4_CKPT_FORMAT_H

#include <stdint.h>

/* Tensor data is stored as the host's floats; every host c4 targets (x86-64, aarch64) is
 * little-endian, which the format fixes. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "checkpoints store little-endian f32");

/* The preamble: the magic line (prefix, version digit, newline), the header's length as a
 * little-endian u64, the header's SHA-256. The JSON header follows at byte CKPT_PREAMBLE. */
#define CKPT_MAGIC_PREFIX "C4CKPT"
#define CKPT_MAGIC_PREFIX_LEN 6
#define CKPT_VERSION '1'
#define CKPT_MAGIC_LEN 8
#define CKPT_HLEN_AT 8
#define CKPT_SHA_AT 16
#define CKPT_SHA_LEN 32
#define CKPT_PREAMBLE 48
#define CKPT_ALIGN 64

/* The next multiple of CKPT_ALIGN at or after x (x is at most a file's size). */
static inline uint64_t ckpt_align(uint64_t x) {
  return (x + CKPT_ALIGN - 1) & ~(uint64_t)(CKPT_ALIGN - 1);
}

#endif
