/* c4_frame.h -- the stream protocol's frames and records (docs/stream.md): encoders that cannot
 * fail on valid input, decoders that check every length and field, and the HELLO's HMAC. */
#ifndef C4_FRAME_H
#define C4_FRAME_H

#include <stddef.h>
#include <stdint.h>

#include "c4_record.h"

#define C4_FRAME_HDR 8
#define C4_FRAME_MAX_PAYLOAD 65536
#define C4_FRAME_NONCE 16
#define C4_FRAME_MAC 32
/* The longest heartbeat interval a rank may use (C4_HEARTBEAT_MS): c4mon's default --lost-ms,
 * 10 s, over 2.5, so that a healthy rank is never silent that long. */
#define C4_HEARTBEAT_MAX_MS 4000
#define C4_FRAME_NAME 64

enum {
  C4_FRAME_CHALLENGE = 1,
  C4_FRAME_HELLO = 2,
  C4_FRAME_WELCOME = 3,
  C4_FRAME_RECORDS = 4,
  C4_FRAME_HEARTBEAT = 5,
  C4_FRAME_TIME = 6,
  C4_FRAME_BYE = 7,
  C4_FRAME_STATUS = 8,
  C4_FRAME_STATUS_REPLY = 9,
  C4_FRAME_PLAN = 10 /* c4mon -> rank: part of the traffic plan for the rank's host */
};

#define C4_FRAME_PLAN_HDR 8          /* a PLAN frame: total bytes, offset, then the part */
#define C4_FRAME_PLAN_MAX (1u << 20) /* the largest plan c4mon pushes to one rank */
#define C4_FRAME_HEARTBEAT_SIZE 48
#define C4_FRAME_TIME_SIZE 24
#define C4_FRAME_CHALLENGE_SIZE (C4_FRAME_NONCE + 8)
/* The largest time, round trip or clock offset (in either direction) a rank may send: 2^62 ns,
 * 146 years. A time plus an offset then never overflows an int64_t. */
#define C4_FRAME_TIME_MAX (1ull << 62)

struct c4_heartbeat {
  uint64_t t, entered, done, dropped;
  int64_t offset;
  uint64_t rtt;
};

/* Fixed-size payloads: HEARTBEAT, TIME (t[3]) and CHALLENGE. get_* return 0 or C4_EPROTO for a
 * wrong length; a HEARTBEAT also for a time, round trip or offset beyond C4_FRAME_TIME_MAX or a
 * count above INT64_MAX. */
void c4_frame_put_heartbeat(uint8_t out[C4_FRAME_HEARTBEAT_SIZE], const struct c4_heartbeat *h);
int c4_frame_get_heartbeat(const uint8_t *in, size_t len, struct c4_heartbeat *h);
void c4_frame_put_time(uint8_t out[C4_FRAME_TIME_SIZE], const uint64_t t[3]);
int c4_frame_get_time(const uint8_t *in, size_t len, uint64_t t[3]);
void c4_frame_put_challenge(uint8_t out[C4_FRAME_CHALLENGE_SIZE],
                            const uint8_t nonce[C4_FRAME_NONCE], uint64_t t_server);
int c4_frame_get_challenge(const uint8_t *in, size_t len, uint8_t nonce[C4_FRAME_NONCE],
                           uint64_t *t_server);

struct c4_hello {
  char job[C4_FRAME_NAME];
  char host[C4_FRAME_NAME];
  uint32_t pid;
  int32_t rank;
  uint8_t mac[C4_FRAME_MAC];
};

/* Writes a frame header. */
void c4_frame_put_header(uint8_t out[C4_FRAME_HDR], int type, uint32_t length);

/* Reads a header: 0 with *type and *length set, or C4_EPROTO (bad magic, version, type, or a
 * length above C4_FRAME_MAX_PAYLOAD). */
int c4_frame_get_header(const uint8_t in[C4_FRAME_HDR], int *type, uint32_t *length);

/* The largest encoded size of a record of this kind, its strings at their longest (0 for an
 * unknown kind): room enough for any one. */
size_t c4_frame_record_size(uint32_t kind);

/* The encoded length of the record at in (len bytes there): 0 for an unknown kind; more than len
 * when in holds only its start (or nothing). Its strings' lengths are read, not checked. */
size_t c4_frame_record_length(const uint8_t *in, size_t len);

/* Appends r to out (capacity cap). Returns the bytes written (at most
 * c4_frame_record_size(r->kind)), or 0 when it does not fit or its kind is unknown. */
size_t c4_frame_put_record(uint8_t *out, size_t cap, const struct c4_record *r);

/* Decodes one record from in (len bytes). Returns the bytes used, or C4_EPROTO (unknown kind,
 * truncated, a string without NUL, a field out of range). */
int c4_frame_get_record(const uint8_t *in, size_t len, struct c4_record *r);

/* Initializes libcrypto (its configuration included) on the calling thread. Call it on the main
 * thread before another thread first computes a MAC: libcrypto would otherwise load its
 * configuration on that thread and keep an error state there that it never frees (found by
 * ASan's leak check at exit, which then fails the process). Idempotent. */
void c4_frame_crypto_init(void);

/* Encodes a HELLO payload (sizeof: c4_frame_hello_size()) with its MAC over nonce and fields. */
size_t c4_frame_hello_size(void);
void c4_frame_put_hello(uint8_t *out, const struct c4_hello *h, const uint8_t nonce[C4_FRAME_NONCE],
                        const char *token);

/* Decodes a HELLO payload. Returns 0, or C4_EPROTO when it is malformed. */
int c4_frame_get_hello(const uint8_t *in, size_t len, struct c4_hello *h);

/* 1 when h's MAC is right for nonce and token (constant-time comparison), else 0. */
int c4_frame_hello_verify(const struct c4_hello *h, const uint8_t nonce[C4_FRAME_NONCE],
                          const char *token);

/* STATUS: its payload is an HMAC-SHA256 with the job token over the CHALLENGE's nonce and a
 * label of its own (C4_FRAME_MAC bytes). verify returns 1 when in (len bytes) is that MAC for
 * nonce and token (constant-time comparison), else 0. */
void c4_frame_put_status(uint8_t out[C4_FRAME_MAC], const uint8_t nonce[C4_FRAME_NONCE],
                         const char *token);
int c4_frame_status_verify(const uint8_t *in, size_t len, const uint8_t nonce[C4_FRAME_NONCE],
                           const char *token);

/* PLAN frames: a host's traffic plan (JSON, docs/plan-format.md) in parts of at most
 * C4_FRAME_MAX_PAYLOAD - C4_FRAME_PLAN_HDR bytes. put writes the payload header (total, offset);
 * get checks total <= C4_FRAME_PLAN_MAX and that the part lies inside it, and points part into p.
 */
void c4_frame_put_plan_hdr(uint8_t out[C4_FRAME_PLAN_HDR], uint32_t total, uint32_t offset);
int c4_frame_get_plan_part(const uint8_t *p, uint32_t len, uint32_t *total, uint32_t *offset,
                           const uint8_t **part, uint32_t *n);

#endif
