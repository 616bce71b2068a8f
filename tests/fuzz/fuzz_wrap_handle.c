/* fuzz_wrap_handle.c -- fuzz target for wrap mode's trailer decoder (net_wrap_handle.c): any 128
 * handle bytes from another process must decode to a trailer or to none, and what decodes must
 * re-encode to the same meaning. Also: the room a handle leaves never exceeds the handle. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "net_wrap_handle.h"

#define H NCCL_NET_HANDLE_MAXSIZE

static void must(int cond) {
  if (!cond) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  uint8_t in[H] = {0}, out[H], canary[H];
  memcpy(in, data, size < H ? size : H);
  struct c4_wrap_trailer t, again;
  size_t n = c4_wrap_get_trailer(in, &t);
  must(n == 0 || n == C4_WRAP_TRAILER_COMPACT || n == C4_WRAP_TRAILER_FULL);
  if (n) {
    must(n == t.size && memchr(t.id.host, 0, sizeof t.id.host) != NULL);
    memset(out, 0, sizeof out);
    must(c4_wrap_put_trailer(out, n, t.conn_id, &t.id) == n);
    must(c4_wrap_get_trailer(out, &again) == n);
    must(again.conn_id == t.conn_id && again.id.rank == t.id.rank);
    if (n == C4_WRAP_TRAILER_FULL)
      must(!strcmp(again.id.host, t.id.host) && again.id.pid == t.id.pid &&
           again.id.dev == t.id.dev);
  }
  c4_wrap_canary(canary, size);
  must(c4_wrap_handle_room(in, canary) <= H);
  return 0;
}

size_t c4_fuzz_seed(int i, uint8_t *buf, size_t cap) {
  if (i > 1 || cap < H) return 0;
  memset(buf, 0, H);
  struct c4_identity id = {.host = "node-7", .pid = 4242, .rank = 7, .dev = 1};
  c4_wrap_put_trailer(buf, i == 0 ? C4_WRAP_TRAILER_COMPACT : C4_WRAP_TRAILER_FULL,
                      0x1122334455667788ull, &id);
  return H;
}
