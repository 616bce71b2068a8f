/* net_admit.h -- what a listener (socket or verbs transport) does with connections that have not
 * yet proven they come from a c4 connector holding its handle: the first 16 hello bytes carry
 * the listener's nonce, and until they arrive a connection is "unproven". Unproven connections
 * get a bounded number of slots per listener and in the whole process, the oldest is evicted
 * when a new one needs a slot, and a proven one is never evicted for them; their closing is
 * counted and logged once per interval, not once per connection (docs/wire.md, "Strangers"). */
#ifndef C4_NET_ADMIT_H
#define C4_NET_ADMIT_H

#include <stddef.h>
#include <stdint.h>

#define C4_ADMIT_PROOF_BYTES 16      /* magic, version, kind and the nonce */
#define C4_ADMIT_UNPROVEN_MAX 128    /* unproven connections one listener holds */
#define C4_ADMIT_UNPROVEN_TOTAL 1024 /* ... and all listeners of the process together */
#define C4_ADMIT_ACCEPTS_PER_CALL 64 /* connections one accept call takes from the kernel */
#define C4_ADMIT_LOG_INTERVAL_S 10

enum { C4_ADMIT_BAD = -1, C4_ADMIT_WAIT = 0, C4_ADMIT_PROVEN = 1 };

/* Judges the first got bytes of a hello sent to the listener with nonce: C4_ADMIT_PROVEN once
 * magic, our wire version, a known kind and the nonce are all in and right; C4_ADMIT_BAD as soon
 * as a byte contradicts a c4 hello (a hello of another wire version waits for its full length,
 * so that it can be answered with a version ack); C4_ADMIT_WAIT otherwise. */
int c4_admit_judge(const uint8_t *buf, size_t got, uint64_t nonce);

/* Takes one of the process's C4_ADMIT_UNPROVEN_TOTAL unproven slots: 1 when taken, 0 when all
 * are in use. Every taken slot is given back with c4_admit_release. Thread-safe. */
int c4_admit_take(void);
void c4_admit_release(void);

/* Counts one unproven connection closed by listener `what` dev (c4_transport_stats) and logs,
 * at most once per C4_ADMIT_LOG_INTERVAL_S, how many were closed since the last line, with this
 * one's address and reason as the example. Thread-safe. */
void c4_admit_closed(const char *what, int dev, const char *from, const char *why);

#endif
