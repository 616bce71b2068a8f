/* mon_gate.h -- what c4mon lets a connection do before it has proven the job token, and how it
 * speaks of what strangers send: the one first frame it reads (a HELLO of its exact size, or an
 * authenticated STATUS), STATUS's rate limit, and log lines with peer-supplied text escaped and
 * rate-limited (docs/stream.md, "Before the HELLO"). */
#ifndef C4_MON_GATE_H
#define C4_MON_GATE_H

#include <stddef.h>
#include <stdint.h>

#include "c4_frame.h"

/* The most a connection can send before it is authenticated: one frame header and a HELLO. */
#define MON_GATE_PREAUTH_BYTES (C4_FRAME_HDR + 2 * C4_FRAME_NAME + 8 + C4_FRAME_MAC)
#define MON_GATE_STATUS_PER_S 10  /* STATUS replies a second, all clients together (burst 10) */
#define MON_GATE_STATUS_SENDING 4 /* STATUS replies on their way at once */
#define MON_GATE_LOG_PER_S 5      /* refusal lines a second; the rest are summed up */

/* 1 when a first frame of this type and payload length may be read at all: a HELLO of exactly
 * c4_frame_hello_size() bytes or a STATUS of exactly C4_FRAME_MAC bytes; else 0. */
int mon_gate_first_frame_ok(int type, uint32_t len);

/* 1 when one more STATUS reply may go out at now (ns): a token bucket of MON_GATE_STATUS_PER_S a
 * second; it takes the token. 0 when the rate is used up. */
int mon_gate_status_take(uint64_t now);

/* Copies s into out (size n >= 4, always terminated) with every byte that is not printable
 * ASCII, and '"' and '\', written as \xNN; cut with "..." when it does not fit. Returns out. */
const char *mon_gate_escape(const char *s, char *out, size_t n);

/* Logs "c4mon: refused <what>" (a WARN) at most MON_GATE_LOG_PER_S times a second; the lines
 * left out are counted and said in one line once their second is over (mon_gate_flush). job and
 * host come from the peer and are escaped here; either may be NULL. */
void mon_gate_refused(uint64_t now, const char *what, const char *job, const char *host,
                      const char *why);

/* Says how many refusals were left out of the log, once their second is over; call it now and
 * then (c4mon's loop does, every 100 ms). */
void mon_gate_flush(uint64_t now);

#endif
