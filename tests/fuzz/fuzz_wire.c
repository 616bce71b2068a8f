/* fuzz_wire.c -- fuzz target for every decoder in net_wire.c: handle, hello, ack, control frame
 * and chunk header. Also checks that whatever decodes re-encodes to the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "fuzz.h"
#include "net_wire.h"

static void must(int cond) {
  if (!cond) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t which = data[0] % 5;
  uint8_t in[C4_HANDLE_SIZE] = {0}, out[C4_HANDLE_SIZE] = {0};
  size_t n = size - 1 < sizeof in ? size - 1 : sizeof in;
  memcpy(in, data + 1, n);
  char err[160];
  switch (which) {
  case 0: {
    struct c4_wire_handle h;
    if (c4_wire_get_handle(in, &h, err, sizeof err) == 0) {
      struct c4_wire_handle again;
      c4_wire_put_handle(out, &h); /* what decodes must re-encode to the same meaning */
      int rc = c4_wire_get_handle(out, &again, err, sizeof err);
      if (rc != 0) fprintf(stderr, "fuzz_wire: re-encoded handle rejected: %s\n", err);
      must(rc == 0);
      must(memcmp(&h.addr, &again.addr, sizeof h.addr) == 0 && h.nonce == again.nonce);
      must(memcmp(&h.id, &again.id, sizeof h.id) == 0);
    } else {
      must(strlen(err) > 0);
    }
    break;
  }
  case 1: {
    struct c4_wire_hello h;
    if (c4_wire_get_hello(in, &h, err, sizeof err) == 0) {
      must(h.nsocks >= 1 && h.nsocks <= C4_MAX_NSOCKS && h.index < h.nsocks);
      must(memchr(h.id.host, 0, sizeof h.id.host) != NULL);
    }
    break;
  }
  case 2: {
    int st = c4_wire_get_ack(in);
    must(st == C4_EPROTO || (st >= 0 && st <= 0xffff));
    break;
  }
  case 3: {
    struct c4_wire_ctrl c;
    if (c4_wire_get_ctrl(in, &c) == 0) {
      c4_wire_put_ctrl(out, &c);
      must(memcmp(in, out, C4_CTRL_SIZE) == 0);
    }
    break;
  }
  default: {
    struct c4_wire_chunk c;
    if (c4_wire_get_chunk(in, &c) == 0) {
      must(c.offset <= c.total && c.len <= c.total - c.offset);
      c4_wire_put_chunk(out, &c);
      must(memcmp(in, out, C4_CHUNK_HDR_SIZE) == 0);
    }
  }
  }
  return 0;
}

size_t c4_fuzz_seed(int i, uint8_t *buf, size_t cap) {
  if (i > 4 || cap < 1 + C4_HANDLE_SIZE) return 0;
  memset(buf, 0, 1 + C4_HANDLE_SIZE);
  buf[0] = (uint8_t)i;
  struct c4_identity id;
  c4_wire_self_identity(&id, 0);
  switch (i) {
  case 0: {
    struct c4_wire_handle h = {.nonce = 42, .id = id};
    h.addr.ss_family = AF_INET;
    c4_wire_put_handle(buf + 1, &h);
    return 1 + C4_HANDLE_SIZE;
  }
  case 1: {
    struct c4_wire_hello h = {.version = C4_WIRE_VERSION,
                              .kind = C4_HELLO_DATA,
                              .nonce = 1,
                              .conn_id = 2,
                              .nsocks = 4,
                              .index = 3,
                              .id = id};
    c4_wire_put_hello(buf + 1, &h);
    return 1 + C4_HELLO_SIZE;
  }
  case 2: c4_wire_put_ack(buf + 1, C4_ACK_OK); return 1 + C4_ACK_SIZE;
  case 3: {
    struct c4_wire_ctrl c = {.type = C4_CTRL_CTS, .arg = 7, .seq = 9, .size = 1 << 20};
    c4_wire_put_ctrl(buf + 1, &c);
    return 1 + C4_CTRL_SIZE;
  }
  default: {
    struct c4_wire_chunk c = {.seq = 3, .offset = 4096, .len = 4096, .total = 1 << 20};
    c4_wire_put_chunk(buf + 1, &c);
    return 1 + C4_CHUNK_HDR_SIZE;
  }
  }
}
