/* fuzz_ib.c -- fuzz target for the verbs transport's decoders of bytes another process wrote:
 * QP info (the connect handshake) and clear-to-send entries (RDMA-written into the sender's
 * FIFO), plus the receive accounting fed with arbitrary immediates. Whatever decodes must
 * re-encode to the same bytes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "fuzz.h"
#include "ib_proto.h"

static void must(int cond) {
  if (!cond) abort();
}

static uint64_t get64(const uint8_t *p) {
  uint64_t v = 0;
  for (int i = 7; i >= 0; i--)
    v = (v << 8) | p[i];
  return v;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  uint8_t which = data[0] % 3;
  uint8_t in[C4_IB_QPINFO_SIZE] = {0}, out[C4_IB_QPINFO_SIZE];
  size_t n = size - 1 < sizeof in ? size - 1 : sizeof in;
  memcpy(in, data + 1, n);
  char err[160] = "";
  if (which == 0) {
    struct c4_ib_qpinfo q;
    if (c4_ib_qpinfo_get(in, &q, err, sizeof err) == 0) {
      must(q.nqps >= 1 && q.nqps <= C4_IB_MAX_QPS && q.mtu >= 1 && q.mtu <= 5 && q.lmc <= 7);
      for (int i = 0; i < q.nqps; i++)
        must(q.qp[i].qpn >= 2 && q.qp[i].qpn <= 0xffffff && q.qp[i].psn <= 0xffffff);
      c4_ib_qpinfo_put(out, &q);
      must(memcmp(in, out, C4_IB_QPINFO_SIZE) == 0);
    } else {
      must(strlen(err) > 0);
    }
  } else if (which == 1) {
    uint64_t seq = get64(in + C4_IB_CTS_SIZE); /* the message the sender waits for */
    struct c4_ib_cts cts;
    int rc = c4_ib_cts_get(in, seq, &cts);
    must(rc == 0 || rc == C4_EAGAIN || rc == C4_EPROTO);
    if (rc == 0) {
      must(cts.seq == seq);
      c4_ib_cts_put(out, &cts);
      must(memcmp(in, out, C4_IB_CTS_SIZE) == 0);
      rc = c4_ib_cts_match(&cts, (int)in[40], in[41]);
      must(rc == 0 || rc == C4_EPROTO || rc == C4_ETRUNC);
    }
  } else {
    /* a stream of (qp, immediate) pairs against 32 posted receives of 1 MiB */
    struct c4_ib_rx rx = {.nqps = 1 + in[0] % C4_IB_MAX_QPS};
    struct c4_ib_rx_msg msg[C4_IB_SLOTS] = {{0}};
    for (size_t k = 1; k + 5 <= n; k += 5) {
      uint32_t imm = (uint32_t)in[k + 1] | (uint32_t)in[k + 2] << 8 | (uint32_t)in[k + 3] << 16 |
                     (uint32_t)in[k + 4] << 24;
      uint64_t seq;
      int rc = c4_ib_rx_on_imm(&rx, in[k] % 20, imm, C4_IB_SLOTS, &seq);
      if (rc != 0) {
        must(rc == C4_EPROTO || rc == C4_EREMOTE);
        continue;
      }
      must(seq < C4_IB_SLOTS && imm <= C4_IB_MAX_MSG);
      rc = c4_ib_rx_msg_add(&msg[seq], imm, rx.nqps, 1 << 20);
      must(rc == 0 || rc == 1 || rc == C4_ETRUNC);
    }
  }
  return 0;
}

size_t c4_fuzz_seed(int i, uint8_t *buf, size_t cap) {
  if (i > 2 || cap < 1 + C4_IB_QPINFO_SIZE) return 0;
  memset(buf, 0, 1 + C4_IB_QPINFO_SIZE);
  buf[0] = (uint8_t)i;
  if (i == 0) {
    struct c4_ib_qpinfo q = {.nqps = 2,
                             .lid = 7,
                             .lmc = 1,
                             .link_layer = C4_IB_LINK_ETH,
                             .mtu = 5,
                             .fifo_addr = 0x7f0000001000ull,
                             .fifo_rkey = 42};
    q.gid[10] = q.gid[11] = 0xff;
    q.qp[0] = (struct c4_ib_qp_addr){.qpn = 0x1234, .psn = 0x55};
    q.qp[1] = (struct c4_ib_qp_addr){.qpn = 0x1235, .psn = 0x66};
    c4_ib_qpinfo_put(buf + 1, &q);
    return 1 + C4_IB_QPINFO_SIZE;
  }
  if (i == 1) {
    struct c4_ib_cts c = {.addr = 0x7f0000002000ull, .rkey = 9, .tag = 3, .size = 4096, .seq = 5};
    c4_ib_cts_put(buf + 1, &c);
    buf[1 + C4_IB_CTS_SIZE] = 5; /* the sender waits for message 5 */
    return 1 + C4_IB_CTS_SIZE + 8 + 2;
  }
  buf[1] = 1; /* two QPs, then (qp, imm) pairs */
  uint8_t pairs[] = {0, 16, 0, 0, 0, 1, 32, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
  memcpy(buf + 2, pairs, sizeof pairs);
  return 2 + sizeof pairs;
}
