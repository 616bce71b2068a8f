/* net_wrap_handle.h -- wrap mode's identity trailer: what c4 appends to a wrapped plugin's listen
 * handle, in bytes that plugin left alone, so the connecting c4 learns who listens
 * (docs/wrap.md). Pure functions: no I/O, no allocation, safe on any input. */
#ifndef C4_NET_WRAP_HANDLE_H
#define C4_NET_WRAP_HANDLE_H

#include <stddef.h>
#include <stdint.h>

#include "c4_record.h"
#include "nccl_net_abi.h"

#define C4_WRAP_TRAILER_VERSION 1
#define C4_WRAP_TRAILER_COMPACT 16 /* connection id and rank */
#define C4_WRAP_TRAILER_FULL 88    /* plus host, pid and device */

struct c4_wrap_trailer {
  uint64_t conn_id;      /* chosen by the listener; both ends' records carry it */
  struct c4_identity id; /* the listener; compact: host empty, pid 0, dev -1 */
  size_t size;           /* C4_WRAP_TRAILER_COMPACT or C4_WRAP_TRAILER_FULL */
};

/* Fills canary with bytes derived from seed, none of them 0, to write into a handle buffer
 * before the wrapped plugin's listen. */
void c4_wrap_canary(uint8_t canary[NCCL_NET_HANDLE_MAXSIZE], uint64_t seed);

/* After the wrapped listen: the number of trailing handle bytes it left for c4, i.e. the longest
 * suffix that still holds the canary or that is all zero (both restore exactly: the connecting
 * side puts zeros back before the wrapped connect reads them). */
size_t c4_wrap_handle_room(const uint8_t handle[NCCL_NET_HANDLE_MAXSIZE],
                           const uint8_t canary[NCCL_NET_HANDLE_MAXSIZE]);

/* Writes the largest trailer that fits in room bytes (full, else compact) at the end of handle
 * and returns its size, or 0 when not even the compact one fits (the handle is left as is). */
size_t c4_wrap_put_trailer(uint8_t handle[NCCL_NET_HANDLE_MAXSIZE], size_t room, uint64_t conn_id,
                           const struct c4_identity *id);

/* Reads a trailer: returns its size (16 or 88) with t filled, or 0 when the handle ends in none
 * this c4 understands (wrong kind, version or check, or an unterminated host name). */
size_t c4_wrap_get_trailer(const uint8_t handle[NCCL_NET_HANDLE_MAXSIZE],
                           struct c4_wrap_trailer *t);

#endif
