/* mon_server.h -- c4mon's receiving end: one epoll loop that accepts ranks, checks their token,
 * decodes their frames (docs/stream.md) and writes what arrives as trace lines. */
#ifndef C4_MON_SERVER_H
#define C4_MON_SERVER_H

#include <jansson.h>
#include <stdint.h>
#include <stdio.h>

#include "c4_frame.h"

struct mon_opts {
  const char *listen;      /* ADDR:PORT */
  const char *token;       /* the job token; "" accepts only jobs without one (and warns) */
  const char *job;         /* accept only this job, or NULL for any */
  FILE *record;            /* trace lines go here, or NULL */
  void (*tick)(void *arg); /* called about every 100 ms from the loop (exporters), or NULL */
  void *tick_arg;
  const char *plan; /* traffic plan to push each rank its host's flows of, or NULL */
};

/* Runs until *stop becomes nonzero (checked every 100 ms). Returns 0, or a negative C4_E* code
 * when it cannot listen (logged). */
int c4_mon_serve(const struct mon_opts *o, volatile int *stop);

/* The loop's parts, for c4_mon_serve and for the fuzz target that drives one connection's state
 * machine (tests/fuzz/fuzz_mon_conn.c). init sets up the state for fds below nconn_max without
 * listening (0 or C4_ENOMEM); adopt takes a connected non-blocking socket as a new connection and
 * sends its CHALLENGE, writing its nonce to nonce when not NULL (0, or a negative C4_E* code: fd
 * is closed then); pump handles what fd has to read or to send, and returns 0 once the
 * connection is closed, 1 while it waits for a HELLO or sends a STATUS, 2 when it is up; fini
 * closes every connection and frees everything. */
int c4_mon_server_init(const struct mon_opts *o, int nconn_max);
int c4_mon_server_adopt(int fd, uint8_t nonce[C4_FRAME_NONCE]);
int c4_mon_server_pump(int fd);
void c4_mon_server_fini(void);

/* The status document (as `c4mon status --json` prints it) with detection's state under
 * "detect"; for the loop's own exporters. The caller owns it. */
json_t *c4_mon_server_status(void);

/* Asks the c4mon at ADDR:PORT for its status, proving token (NULL or "": none) over its
 * challenge; the JSON document is written to out (a malloc'd string the caller frees). Returns 0,
 * C4_ENOTFOUND when nothing accepted the connection, C4_ESYS when nothing came for 5 s,
 * C4_EPROTO when what came was not c4mon's, C4_EREMOTE when c4mon closed without answering
 * (wrong token, or its STATUS rate was used up), C4_EUSAGE when it did so to a request that had
 * no token to prove, C4_EINVAL when addr does not resolve, or another negative C4_E* code. */
int c4_mon_query_status(const char *addr, const char *token, char **out);

/* What a client says when c4_mon_query_status failed with rc: nothing listening, something
 * there that is not c4mon's rank port, or c4mon closing on the token (it says nothing more, so a
 * STATUS rate used up reads the same). */
const char *c4_mon_query_why(int rc);

#endif
