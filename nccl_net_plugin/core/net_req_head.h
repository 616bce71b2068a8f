/* net_req_head.h -- the fields every transport's request starts with (sock/net_comm.h,
 * ib/ib_comm.h), so that one stuck-request check (net_watchlist.c) serves both transports. */
#ifndef C4_NET_REQ_HEAD_H
#define C4_NET_REQ_HEAD_H

#include <stdatomic.h>
#include <stdint.h>

/* The head's fields, listed once: struct c4_req_head is made of them, and a request embeds them
 * as its first member through C4_REQ_HEAD, a union of that struct and the same fields unnamed,
 * so the transport's code keeps writing r->seq while the watch reads &r->head. */
#define C4_REQ_HEAD_FIELDS                                                                         \
  _Atomic uint64_t seq;            /* which request the slot holds; changes when it is reused */   \
  atomic_int state;                /* the transport's FREE, POSTED, DONE or ERROR */               \
  _Atomic uint64_t t_posted;       /* when it was posted (ns) */                                   \
  _Atomic uint64_t done_bytes;     /* bytes moved so far */                                        \
  _Atomic uint64_t stuck_reported; /* seq + 1 of the request last reported stuck */

struct c4_req_head {
  C4_REQ_HEAD_FIELDS
};

#define C4_REQ_HEAD                                                                                \
  union {                                                                                          \
    struct c4_req_head head;                                                                       \
    struct {                                                                                       \
      C4_REQ_HEAD_FIELDS                                                                           \
    };                                                                                             \
  }

#endif
