/* fuzz_mon_conn.c -- fuzz target for c4mon's connection state machine, not only its decoders: one
 * connection over a socketpair, adopted and pumped as c4mon's loop does (mon_server.h), from the
 * CHALLENGE through the HELLO to streaming. Byte 0 picks the opening: bit 0 set, a HELLO with the
 * right MAC (token "fuzz", over the nonce c4mon sent) goes first, so that the rest reaches the
 * authenticated state (RECORDS, HEARTBEAT, TIME, PLAN, BYE, anything); bit 1 set, a STATUS with
 * the right MAC goes first (the reply is read as it is sent). Byte 1 says where the rest is cut
 * into two writes, each followed by a pump. c4mon's answers are drained as they come. Whatever
 * the bytes, it must neither crash, hang nor leak, and a closed connection stays closed. */
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "c4_frame.h"
#include "det.h"
#include "fuzz.h"
#include "mon_server.h"

#define TOKEN "fuzz"

static void must(int cond) {
  if (!cond) abort();
}

static void drain(int fd) {
  uint8_t b[65536];
  while (recv(fd, b, sizeof b, MSG_DONTWAIT) > 0) {
  }
}

/* Writes n bytes to fd (the peer's end) and lets c4mon handle them on its end; returns what pump
 * said: 0 closed, 1 before the HELLO or sending a status, 2 up. */
static int feed(int peer, int mine, const uint8_t *p, size_t n, int state) {
  if (state == 0) return 0;
  while (n) {
    ssize_t k = send(peer, p, n, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (k <= 0) break; /* closed, or its buffer is full: c4mon reads and we go on */
    p += k;
    n -= (size_t)k;
    state = c4_mon_server_pump(mine);
    drain(peer);
    if (state == 0) return 0;
  }
  for (int i = 0; i < 4 && state; i++) { /* a status reply goes out over several pumps */
    state = c4_mon_server_pump(mine);
    drain(peer);
  }
  return state;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  static int once;
  if (!once) {
    c4_frame_crypto_init();
    once = 1;
  }
  if (size < 2) return 0;
  struct mon_opts o = {.listen = "fuzz", .token = TOKEN};
  struct c4_det_config dc = {0};
  must(c4_det_init(&dc) == 0);
  must(c4_mon_server_init(&o, 4096) == 0);
  int sv[2];
  must(socketpair(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv) == 0);
  uint8_t nonce[C4_FRAME_NONCE];
  int state = c4_mon_server_adopt(sv[0], nonce) == 0 ? 1 : 0;
  drain(sv[1]);
  uint8_t open[C4_FRAME_HDR + 256];
  size_t n = 0;
  if (data[0] & 1) {
    struct c4_hello h = {.pid = 7, .rank = 1};
    strcpy(h.job, "job");
    strcpy(h.host, "host");
    c4_frame_put_header(open, C4_FRAME_HELLO, (uint32_t)c4_frame_hello_size());
    c4_frame_put_hello(open + C4_FRAME_HDR, &h, nonce, TOKEN);
    n = C4_FRAME_HDR + c4_frame_hello_size();
  } else if (data[0] & 2) {
    c4_frame_put_header(open, C4_FRAME_STATUS, C4_FRAME_MAC);
    c4_frame_put_status(open + C4_FRAME_HDR, nonce, TOKEN);
    n = C4_FRAME_HDR + C4_FRAME_MAC;
  }
  state = feed(sv[1], sv[0], open, n, state);
  if (data[0] & 1) must(state == 2); /* a right HELLO is welcomed */
  size_t rest = size - 2, cut = rest ? data[1] % (rest + 1) : 0;
  state = feed(sv[1], sv[0], data + 2, cut, state);
  state = feed(sv[1], sv[0], data + 2 + cut, rest - cut, state);
  if (state == 0) must(c4_mon_server_pump(sv[0]) == 0); /* closed stays closed */
  c4_mon_server_fini();
  close(sv[1]);
  c4_det_reset();
  return 0;
}

/* Seeds: an authenticated rank's stream (heartbeat, records, a clock probe, bye); a status
 * request; a stranger's oversized HELLO header. */
size_t c4_fuzz_seed(int i, uint8_t *buf, size_t cap) {
  if (cap < 1024) return 0;
  if (i == 0) {
    size_t n = 2;
    buf[0] = 1;
    buf[1] = 0;
    struct c4_heartbeat hb = {.t = 1000, .entered = 3, .done = 2, .offset = -10, .rtt = 5};
    c4_frame_put_header(buf + n, C4_FRAME_HEARTBEAT, C4_FRAME_HEARTBEAT_SIZE);
    c4_frame_put_heartbeat(buf + n + C4_FRAME_HDR, &hb);
    n += C4_FRAME_HDR + C4_FRAME_HEARTBEAT_SIZE;
    uint8_t *f = buf + n + C4_FRAME_HDR;
    size_t used = 2;
    struct c4_record r = {.kind = C4_REC_COLL};
    strcpy(r.coll.func, "AllReduce");
    r.coll.nranks = 2;
    r.coll.t_arrive = 2000;
    used += c4_frame_put_record(f + used, 512, &r);
    r = (struct c4_record){.kind = C4_REC_LINK};
    r.link.t = 3000;
    used += c4_frame_put_record(f + used, 256, &r);
    f[0] = 2;
    f[1] = 0;
    c4_frame_put_header(buf + n, C4_FRAME_RECORDS, (uint32_t)used);
    n += C4_FRAME_HDR + used;
    uint64_t t[3] = {4000, 0, 0};
    c4_frame_put_header(buf + n, C4_FRAME_TIME, C4_FRAME_TIME_SIZE);
    c4_frame_put_time(buf + n + C4_FRAME_HDR, t);
    n += C4_FRAME_HDR + C4_FRAME_TIME_SIZE;
    c4_frame_put_header(buf + n, C4_FRAME_BYE, 0);
    return n + C4_FRAME_HDR;
  }
  if (i == 1) {
    buf[0] = 2;
    buf[1] = 0;
    return 2;
  }
  if (i == 2) {
    buf[0] = 0;
    buf[1] = 0;
    c4_frame_put_header(buf + 2, C4_FRAME_HELLO, 65536);
    memset(buf + 2 + C4_FRAME_HDR, 'x', 200);
    return 2 + C4_FRAME_HDR + 200;
  }
  return 0;
}
