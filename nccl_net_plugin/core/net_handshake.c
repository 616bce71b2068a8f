/* net_handshake.c -- the parts of c4's TCP handshake both transports share. */
#include "net_handshake.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "c4_err.h"
#include "c4_log.h"
#include "c4_random.h"
#include "net_sock.h"

#define SCRATCH_OFFSET 120 /* handle bytes 112..127 are 0 on the wire */

int c4_handshake_listen(const struct c4_transport_config *cfg, int dev,
                        const struct sockaddr_storage *addr, void *handle, uint64_t *nonce,
                        struct c4_identity *self) {
  struct c4_wire_handle h = {0};
  int fd = c4_sock_listen(addr, cfg->listen_port_lo, cfg->listen_port_hi, &h.addr);
  if (fd < 0) return fd;
  *nonce = c4_random_u64();
  c4_wire_self_identity(self, dev);
  h.nonce = *nonce;
  h.id = *self;
  c4_wire_put_handle(handle, &h);
  return fd;
}

int c4_handshake_accept(int fd, const char *what, int dev, char *from, size_t fromlen) {
  struct sockaddr_storage addr;
  socklen_t len = sizeof addr;
  int c = accept4(fd, (struct sockaddr *)&addr, &len, SOCK_NONBLOCK | SOCK_CLOEXEC);
  if (c < 0) {
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED)
      C4_WARN("accept on %s %d failed: %s", what, dev, strerror(errno));
    return C4_EAGAIN;
  }
  c4_sock_addr_str(&addr, from, fromlen);
  return c;
}

int c4_handshake_check_hello(int fd, const uint8_t in[C4_HELLO_SIZE], uint64_t nonce,
                             struct c4_wire_hello *h, char *err, size_t errlen) {
  int rc = c4_wire_get_hello(in, h, err, errlen);
  if (rc == C4_EINVAL) {
    uint8_t ack[C4_ACK_SIZE];
    c4_wire_put_ack(ack, C4_ACK_BAD_VERSION);
    (void)c4_sock_send_some(fd, ack, sizeof ack);
  }
  if (rc != 0) return rc;
  if (h->nonce != nonce) {
    snprintf(err, errlen, "hello for another listener (nonce %016llx)",
             (unsigned long long)h->nonce);
    return C4_EPROTO;
  }
  return 0;
}

void *c4_handshake_scratch_get(const void *handle) {
  void *s;
  memcpy(&s, (const uint8_t *)handle + SCRATCH_OFFSET, sizeof s);
  return s;
}

void c4_handshake_scratch_set(void *handle, void *s) {
  memcpy((uint8_t *)handle + SCRATCH_OFFSET, &s, sizeof s);
}

const char *c4_handshake_ack_why(int status) {
  return status == C4_EPROTO ? "the listener answered with something that is not a c4 ack"
         : status == C4_ACK_BAD_VERSION ? "the listener speaks another c4 wire version"
                                        : "the listener rejected our hello";
}
