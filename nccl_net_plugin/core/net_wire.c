/* net_wire.c -- little-endian encoders and strict decoders for the socket transport's wire format.
 */
#include "net_wire.h"

#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "c4_env.h"
#include "c4_err.h"
#include "net_le.h"

#define HANDLE_MAGIC 0x484E3443u
#define HELLO_MAGIC 0x53483443u
#define ACK_MAGIC 0x41483443u
#define IDENTITY_SIZE (C4_HOST_MAX + 12)

static void put_identity(uint8_t *p, const struct c4_identity *id) {
  memset(p, 0, C4_HOST_MAX);
  size_t n = strnlen(id->host, C4_HOST_MAX - 1);
  memcpy(p, id->host, n);
  c4_le_put32(p + C4_HOST_MAX, id->pid);
  c4_le_put32(p + C4_HOST_MAX + 4, (uint32_t)id->rank);
  c4_le_put32(p + C4_HOST_MAX + 8, (uint32_t)id->dev);
}

/* The host name must be NUL-terminated inside its field: a peer cannot make us read past it. */
static int get_identity(const uint8_t *p, struct c4_identity *id) {
  const uint8_t *nul = memchr(p, 0, C4_HOST_MAX);
  if (!nul) return C4_EPROTO;
  memset(id->host, 0, C4_HOST_MAX); /* bytes after the terminator are not carried over */
  memcpy(id->host, p, (size_t)(nul - p));
  id->pid = c4_le_get32(p + C4_HOST_MAX);
  id->rank = (int32_t)c4_le_get32(p + C4_HOST_MAX + 4);
  id->dev = (int32_t)c4_le_get32(p + C4_HOST_MAX + 8);
  return 0;
}

void c4_wire_put_handle(uint8_t out[C4_HANDLE_SIZE], const struct c4_wire_handle *h) {
  memset(out, 0, C4_HANDLE_SIZE);
  c4_le_put32(out, HANDLE_MAGIC);
  c4_le_put16(out + 4, C4_WIRE_VERSION);
  int fam = h->addr.ss_family;
  c4_le_put16(out + 6, (uint16_t)fam);
  if (fam == AF_INET) {
    const struct sockaddr_in *s = (const struct sockaddr_in *)&h->addr;
    c4_le_put16(out + 8, ntohs(s->sin_port));
    memcpy(out + 12, &s->sin_addr, 4);
  } else {
    const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)&h->addr;
    c4_le_put16(out + 8, ntohs(s->sin6_port));
    memcpy(out + 12, &s->sin6_addr, 16);
  }
  c4_le_put64(out + 28, h->nonce);
  put_identity(out + 36, &h->id);
}

int c4_wire_get_handle(const uint8_t in[C4_HANDLE_SIZE], struct c4_wire_handle *h, char *err,
                       size_t errlen) {
  memset(h, 0, sizeof *h);
  if (c4_le_get32(in) != HANDLE_MAGIC) {
    snprintf(err, errlen, "handle magic 0x%08x is not c4's (0x%08x): not a c4 listen handle",
             c4_le_get32(in), HANDLE_MAGIC);
    return C4_EPROTO;
  }
  if (c4_le_get16(in + 4) != C4_WIRE_VERSION) {
    snprintf(err, errlen, "handle version %u, this c4 speaks %u: use the same c4 on every rank",
             c4_le_get16(in + 4), C4_WIRE_VERSION);
    return C4_EPROTO;
  }
  uint16_t fam = c4_le_get16(in + 6);
  if (fam == AF_INET) {
    struct sockaddr_in *s = (struct sockaddr_in *)&h->addr;
    s->sin_family = AF_INET;
    s->sin_port = htons(c4_le_get16(in + 8));
    memcpy(&s->sin_addr, in + 12, 4);
  } else if (fam == AF_INET6) {
    struct sockaddr_in6 *s = (struct sockaddr_in6 *)&h->addr;
    s->sin6_family = AF_INET6;
    s->sin6_port = htons(c4_le_get16(in + 8));
    memcpy(&s->sin6_addr, in + 12, 16);
  } else {
    snprintf(err, errlen, "handle address family %u is neither IPv4 nor IPv6", fam);
    return C4_EPROTO;
  }
  h->nonce = c4_le_get64(in + 28);
  if (get_identity(in + 36, &h->id)) {
    snprintf(err, errlen, "handle host name is not terminated");
    return C4_EPROTO;
  }
  return 0;
}

void c4_wire_put_hello(uint8_t out[C4_HELLO_SIZE], const struct c4_wire_hello *h) {
  memset(out, 0, C4_HELLO_SIZE);
  c4_le_put32(out, HELLO_MAGIC);
  c4_le_put16(out + 4, h->version);
  c4_le_put16(out + 6, h->kind);
  c4_le_put64(out + 8, h->nonce);
  c4_le_put64(out + 16, h->conn_id);
  c4_le_put16(out + 24, h->nsocks);
  c4_le_put16(out + 26, h->index);
  put_identity(out + 28, &h->id);
}

int c4_wire_get_hello(const uint8_t in[C4_HELLO_SIZE], struct c4_wire_hello *h, char *err,
                      size_t errlen) {
  memset(h, 0, sizeof *h);
  if (c4_le_get32(in) != HELLO_MAGIC) {
    snprintf(err, errlen, "hello magic 0x%08x is not c4's: the peer is not a c4 plugin",
             c4_le_get32(in));
    return C4_EPROTO;
  }
  h->version = c4_le_get16(in + 4);
  if (h->version != C4_WIRE_VERSION) {
    snprintf(err, errlen, "peer speaks wire version %u, this c4 speaks %u", h->version,
             C4_WIRE_VERSION);
    return C4_EINVAL;
  }
  h->kind = c4_le_get16(in + 6);
  h->nonce = c4_le_get64(in + 8);
  h->conn_id = c4_le_get64(in + 16);
  h->nsocks = c4_le_get16(in + 24);
  h->index = c4_le_get16(in + 26);
  if (h->kind != C4_HELLO_CTRL && h->kind != C4_HELLO_DATA) {
    snprintf(err, errlen, "hello kind %u is unknown", h->kind);
    return C4_EPROTO;
  }
  if (h->nsocks < 1 || h->nsocks > C4_MAX_NSOCKS) {
    snprintf(err, errlen, "hello nsocks %u outside 1..%d", h->nsocks, C4_MAX_NSOCKS);
    return C4_EPROTO;
  }
  if ((h->kind == C4_HELLO_CTRL && h->index != 0) || h->index >= h->nsocks) {
    snprintf(err, errlen, "hello socket index %u invalid for nsocks %u", h->index, h->nsocks);
    return C4_EPROTO;
  }
  if (get_identity(in + 28, &h->id) || !c4_le_all_zero(in + 104, 8)) {
    snprintf(err, errlen, "hello identity malformed");
    return C4_EPROTO;
  }
  return 0;
}

void c4_wire_put_ack(uint8_t out[C4_ACK_SIZE], uint16_t status) {
  memset(out, 0, C4_ACK_SIZE);
  c4_le_put32(out, ACK_MAGIC);
  c4_le_put16(out + 4, C4_WIRE_VERSION);
  c4_le_put16(out + 6, status);
}

int c4_wire_get_ack(const uint8_t in[C4_ACK_SIZE]) {
  if (c4_le_get32(in) != ACK_MAGIC || c4_le_get16(in + 4) != C4_WIRE_VERSION) return C4_EPROTO;
  return c4_le_get16(in + 6);
}

void c4_wire_put_ctrl(uint8_t out[C4_CTRL_SIZE], const struct c4_wire_ctrl *c) {
  memset(out, 0, C4_CTRL_SIZE);
  out[0] = c->type;
  c4_le_put32(out + 4, (uint32_t)c->arg);
  c4_le_put64(out + 8, c->seq);
  c4_le_put64(out + 16, c->size);
}

int c4_wire_get_ctrl(const uint8_t in[C4_CTRL_SIZE], struct c4_wire_ctrl *c) {
  c->type = in[0];
  c->arg = (int32_t)c4_le_get32(in + 4);
  c->seq = c4_le_get64(in + 8);
  c->size = c4_le_get64(in + 16);
  if (c->type < C4_CTRL_CTS || c->type > C4_CTRL_RTS || !c4_le_all_zero(in + 1, 3))
    return C4_EPROTO;
  return 0;
}

void c4_wire_put_chunk(uint8_t out[C4_CHUNK_HDR_SIZE], const struct c4_wire_chunk *c) {
  c4_le_put64(out, c->seq);
  c4_le_put64(out + 8, c->offset);
  c4_le_put32(out + 16, c->len);
  c4_le_put32(out + 20, 0);
  c4_le_put64(out + 24, c->total);
}

int c4_wire_get_chunk(const uint8_t in[C4_CHUNK_HDR_SIZE], struct c4_wire_chunk *c) {
  c->seq = c4_le_get64(in);
  c->offset = c4_le_get64(in + 8);
  c->len = c4_le_get32(in + 16);
  c->total = c4_le_get64(in + 24);
  if (c4_le_get32(in + 20) != 0) return C4_EPROTO;
  if (c->offset > c->total || c->len > c->total - c->offset) return C4_EPROTO;
  return 0;
}

void c4_wire_self_identity(struct c4_identity *id, int dev) {
  char host[C4_HOST_MAX] = {0};
  c4_host_name(host, sizeof host);
  memset(id, 0, sizeof *id);
  memcpy(id->host, host, sizeof host);
  id->pid = (uint32_t)getpid();
  id->rank = c4_env_rank();
  id->dev = dev;
}
