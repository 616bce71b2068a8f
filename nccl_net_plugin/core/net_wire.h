/* net_wire.h -- encoding and checking of every byte the socket transport puts on the wire
 * (docs/wire.md). Pure functions: no I/O, no allocation, safe on any input. */
#ifndef C4_NET_WIRE_H
#define C4_NET_WIRE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "c4_record.h"

#define C4_WIRE_VERSION 1
#define C4_HANDLE_SIZE 128
#define C4_HELLO_SIZE 112
#define C4_ACK_SIZE 16
#define C4_CTRL_SIZE 24
#define C4_CHUNK_HDR_SIZE 32
#define C4_MAX_NSOCKS 64

enum { C4_HELLO_CTRL = 0, C4_HELLO_DATA = 1 };
enum { C4_ACK_OK = 0, C4_ACK_BAD_VERSION = 1, C4_ACK_BAD_HELLO = 2 };
enum { C4_CTRL_CTS = 1, C4_CTRL_DATA = 2, C4_CTRL_ERR = 3, C4_CTRL_RTS = 4 };

struct c4_wire_handle {
  struct sockaddr_storage addr; /* family, address and port of the listener */
  uint64_t nonce;
  struct c4_identity id;
};

struct c4_wire_hello {
  uint16_t version;
  uint16_t kind; /* C4_HELLO_* */
  uint64_t nonce;
  uint64_t conn_id;
  uint16_t nsocks;
  uint16_t index;
  struct c4_identity id;
};

struct c4_wire_ctrl {
  uint8_t type; /* C4_CTRL_* */
  int32_t arg;  /* tag for CTS and DATA, C4_E* code for ERR */
  uint64_t seq;
  uint64_t size;
};

struct c4_wire_chunk {
  uint64_t seq;
  uint64_t offset;
  uint32_t len;
  uint64_t total;
};

void c4_wire_put_handle(uint8_t out[C4_HANDLE_SIZE], const struct c4_wire_handle *h);
/* Fills h from a received handle. Returns C4_EPROTO with a message in err on a wrong magic,
 * version or family, or an unterminated host name. */
int c4_wire_get_handle(const uint8_t in[C4_HANDLE_SIZE], struct c4_wire_handle *h, char *err,
                       size_t errlen);

void c4_wire_put_hello(uint8_t out[C4_HELLO_SIZE], const struct c4_wire_hello *h);
/* Returns 0, or C4_EPROTO (message in err) for a wrong magic, kind, nsocks or index, or
 * C4_EINVAL when only the version differs (the listener then acks C4_ACK_BAD_VERSION). */
int c4_wire_get_hello(const uint8_t in[C4_HELLO_SIZE], struct c4_wire_hello *h, char *err,
                      size_t errlen);

void c4_wire_put_ack(uint8_t out[C4_ACK_SIZE], uint16_t status);
/* Returns the ack's status (>= 0), or C4_EPROTO for a wrong magic or version. */
int c4_wire_get_ack(const uint8_t in[C4_ACK_SIZE]);

void c4_wire_put_ctrl(uint8_t out[C4_CTRL_SIZE], const struct c4_wire_ctrl *c);
/* Returns 0, or C4_EPROTO for an unknown type or nonzero padding. */
int c4_wire_get_ctrl(const uint8_t in[C4_CTRL_SIZE], struct c4_wire_ctrl *c);

void c4_wire_put_chunk(uint8_t out[C4_CHUNK_HDR_SIZE], const struct c4_wire_chunk *c);
/* Returns 0, or C4_EPROTO when offset + len exceeds total or the flags are not 0. */
int c4_wire_get_chunk(const uint8_t in[C4_CHUNK_HDR_SIZE], struct c4_wire_chunk *c);

/* Fills id with this process's identity (hostname, pid, launcher rank) for device dev. */
void c4_wire_self_identity(struct c4_identity *id, int dev);

#endif
