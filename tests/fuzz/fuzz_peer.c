/* fuzz_peer.c -- fuzz target that plays a hostile peer against a real listener and receive comm:
 * input byte 0 picks the attack, the rest is what the peer writes.
 *   even: raw bytes to the listener as a would-be hello (no comm may come of it);
 *   odd:  a correct handshake, then the bytes split between the control and data connections
 *         (input byte 1 says how many go to control) while four receives are posted (the comm may
 * fail, never crash or overrun a buffer). */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "c4_err.h"
#include "fuzz.h"
#include "net_sock.h"
#include "net_transport.h"
#include "net_wire.h"

#define RECV_SIZE (96 << 10)

static struct c4_transport_config cfg;
static struct c4_listen_comm *listener;
static struct c4_wire_handle target;
static char *bufs[4];

static void setup(void) {
  if (listener) return;
  c4_transport_config_load(&cfg);
  cfg.handshake_timeout_ms = 50;
  cfg.nsocks = 1;
  cfg.nthreads = 1;
  struct sockaddr_storage lo = {0};
  struct sockaddr_in *s = (struct sockaddr_in *)&lo;
  s->sin_family = AF_INET;
  s->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  uint8_t handle[C4_HANDLE_SIZE];
  char err[160];
  if (c4_transport_listen(&cfg, 0, 0, &lo, handle, &listener) != 0 ||
      c4_wire_get_handle(handle, &target, err, sizeof err) != 0)
    abort();
  for (int i = 0; i < 4; i++)
    bufs[i] = malloc(RECV_SIZE);
}

static int raw_connect(void) {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0 || connect(fd, (struct sockaddr *)&target.addr, sizeof(struct sockaddr_in)) != 0)
    abort();
  struct linger reset = {.l_onoff = 1, .l_linger = 0}; /* close with RST: no TIME_WAIT pile-up */
  setsockopt(fd, SOL_SOCKET, SO_LINGER, &reset, sizeof reset);
  return fd;
}

static void write_all(int fd, const uint8_t *p, size_t n) {
  while (n > 0) {
    ssize_t k = send(fd, p, n, MSG_NOSIGNAL);
    if (k <= 0) return;
    p += k;
    n -= (size_t)k;
  }
}

static void hello(int fd, int kind) {
  struct c4_wire_hello h = {.version = C4_WIRE_VERSION,
                            .kind = (uint16_t)kind,
                            .nonce = target.nonce,
                            .conn_id = 77,
                            .nsocks = 1};
  c4_wire_self_identity(&h.id, 0);
  uint8_t b[C4_HELLO_SIZE];
  c4_wire_put_hello(b, &h);
  write_all(fd, b, sizeof b);
}

static struct c4_comm *accept_for(int polls) {
  struct c4_comm *c = NULL;
  for (int i = 0; i < polls && !c; i++) {
    if (c4_transport_accept(listener, &c) != 0) abort();
    if (!c) usleep(100);
  }
  return c;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  setup();
  if (size < 1) return 0;
  if (data[0] % 2 == 0) {
    int fd = raw_connect();
    write_all(fd, data + 1, size - 1);
    close(fd);
    if (accept_for(20) != NULL) abort(); /* one socket can never make a comm */
    return 0;
  }
  int ctl = raw_connect(), dat = raw_connect();
  hello(ctl, C4_HELLO_CTRL);
  hello(dat, C4_HELLO_DATA);
  struct c4_comm *c = accept_for(2000);
  if (!c) abort();
  struct c4_request *req[4] = {0};
  for (int i = 0; i < 4; i++)
    if (c4_transport_irecv(c, bufs[i], RECV_SIZE, 0, &req[i]) != 0 || !req[i]) abort();
  if (size < 2) {
    c4_transport_close(c);
    close(ctl);
    close(dat);
    return 0;
  }
  size_t half = data[1] < size - 2 ? data[1] : size - 2;
  uint8_t ack[C4_ACK_SIZE];
  if (recv(ctl, ack, sizeof ack, MSG_WAITALL) != sizeof ack) abort();
  write_all(ctl, data + 2, half);
  write_all(dat, data + 2 + half, size - 2 - half);
  close(ctl);
  close(dat);
  for (int i = 0; i < 4; i++) {
    int done = 0;
    size_t got = 0;
    for (int p = 0; p < 2000 && !done; p++) {
      int rc = c4_transport_test(req[i], &done, &got);
      if (rc != 0) break;
      if (done && got > RECV_SIZE) abort();
      if (!done) usleep(50);
    }
    if (!done) break; /* a failed or abandoned request: the comm is closed below */
  }
  c4_transport_close(c);
  return 0;
}

size_t c4_fuzz_seed(int i, uint8_t *buf, size_t cap) {
  if (cap < 512) return 0;
  setup();
  memset(buf, 0, 512);
  switch (i) {
  case 0: { /* a hello with the right nonce */
    struct c4_wire_hello h = {.version = C4_WIRE_VERSION,
                              .kind = C4_HELLO_CTRL,
                              .nonce = target.nonce,
                              .conn_id = 5,
                              .nsocks = 1};
    buf[0] = 0;
    c4_wire_put_hello(buf + 1, &h);
    return 1 + C4_HELLO_SIZE;
  }
  case 1: { /* an inline DATA frame of 100 bytes for receive 0 */
    struct c4_wire_ctrl f = {.type = C4_CTRL_DATA, .seq = 0, .size = 100};
    buf[0] = 1;
    buf[1] = C4_CTRL_SIZE + 100;
    c4_wire_put_ctrl(buf + 2, &f);
    return 2 + C4_CTRL_SIZE + 100;
  }
  case 2: { /* ERR for receive 0, then a chunk header for receive 1 on the data side */
    struct c4_wire_ctrl f = {.type = C4_CTRL_ERR, .arg = C4_ETRUNC, .seq = 0, .size = 1 << 20};
    buf[0] = 1;
    buf[1] = C4_CTRL_SIZE;
    c4_wire_put_ctrl(buf + 2, &f);
    struct c4_wire_chunk ch = {.seq = 1, .offset = 0, .len = 64, .total = 64};
    c4_wire_put_chunk(buf + 2 + C4_CTRL_SIZE, &ch);
    return 2 + C4_CTRL_SIZE + C4_CHUNK_HDR_SIZE + 64;
  }
  default: return 0;
  }
}
