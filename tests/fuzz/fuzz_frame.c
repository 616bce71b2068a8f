/* fuzz_frame.c -- fuzz target for the stream protocol decoders (docs/stream.md): frame headers,
 * records (whatever decodes must survive a re-encode unchanged), HELLOs and PLAN parts. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "c4_frame.h"
#include "fuzz.h"

static void must(int cond) {
  if (!cond) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size >= C4_FRAME_HDR) {
    int type;
    uint32_t len;
    if (c4_frame_get_header(data, &type, &len) == 0) must(len <= C4_FRAME_MAX_PAYLOAD);
  }
  size_t off = 0;
  while (off < size) { /* a RECORDS payload: records back to back */
    struct c4_record r;
    int n = c4_frame_get_record(data + off, size - off, &r);
    if (n <= 0) break;
    must(c4_frame_record_length(data + off, size - off) == (size_t)n);
    uint8_t again[512]; /* what decodes re-encodes to bytes that decode to the same record */
    struct c4_record back;
    must(c4_frame_put_record(again, sizeof again, &r) == (size_t)n);
    must(c4_frame_get_record(again, (size_t)n, &back) == n);
    must(memcmp(&back, &r, sizeof r) == 0);
    off += (size_t)n;
  }
  uint32_t total, offset, n; /* a PLAN payload: the part lies inside the plan */
  const uint8_t *part;
  if (size <= UINT32_MAX &&
      c4_frame_get_plan_part(data, (uint32_t)size, &total, &offset, &part, &n) == 0)
    must(total <= C4_FRAME_PLAN_MAX && offset <= total && n <= total - offset &&
         part + n == data + size);
  struct c4_hello h;
  if (c4_frame_get_hello(data, size, &h) == 0) {
    must(memchr(h.job, 0, sizeof h.job) && memchr(h.host, 0, sizeof h.host));
    uint8_t nonce[C4_FRAME_NONCE] = {0};
    (void)c4_frame_hello_verify(&h, nonce, "token");
  }
  return 0;
}

size_t c4_fuzz_seed(int i, uint8_t *buf, size_t cap) {
  struct c4_record r = {.kind = (uint32_t)(i + 1)};
  if (i < 4) { /* seeds 0..3: one record of each kind; 4: a hello; 5: a header; 6: a rank record;
                  7: a path record */
    if (r.kind == C4_REC_COLL) strcpy(r.coll.func, "AllReduce");
    return c4_frame_put_record(buf, cap, &r);
  }
  if (i == 4 && cap >= c4_frame_hello_size()) {
    struct c4_hello h = {.pid = 1, .rank = 2};
    strcpy(h.job, "job");
    uint8_t nonce[C4_FRAME_NONCE] = {0};
    c4_frame_put_hello(buf, &h, nonce, "token");
    return c4_frame_hello_size();
  }
  if (i == 5 && cap >= C4_FRAME_HDR) {
    c4_frame_put_header(buf, C4_FRAME_RECORDS, 100);
    return C4_FRAME_HDR;
  }
  if (i == 6) { /* c4mon's own rank record, as binary traces carry it */
    r.kind = C4_REC_RANK;
    r.rank.event = C4_RANK_LOST;
    strcpy(r.rank.host, "h");
    return c4_frame_put_record(buf, cap, &r);
  }
  if (i == 7) { /* one data socket's rate (the plugin's multipath weights) */
    r.kind = C4_REC_PATH;
    r.path = (struct c4_path_record){.sock = 1, .nsocks = 2, .bytes = 100, .busy_ns = 20, .t = 5};
    strcpy(r.path.self.host, "h0");
    strcpy(r.path.peer.host, "h1");
    return c4_frame_put_record(buf, cap, &r);
  }
  return 0;
}
