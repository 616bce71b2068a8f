/* c4_trace_bin.c -- writes binary traces with the stream protocol's record codec. */
#include "c4_trace_bin.h"

#include "c4_err.h"
#include "c4_frame.h"

int c4_trace_bin_start(FILE *f) {
  return fwrite(C4_TRACE_BIN_MAGIC, 1, C4_TRACE_BIN_MAGIC_LEN, f) == C4_TRACE_BIN_MAGIC_LEN
             ? 0
             : C4_ESYS;
}

int c4_trace_bin_write(FILE *f, const struct c4_record *r) {
  uint8_t buf[512];
  size_t n = c4_frame_put_record(buf, sizeof buf, r);
  if (!n) return C4_EINVAL;
  return fwrite(buf, 1, n, f) == n ? 0 : C4_ESYS;
}
