/* net_wrap_comm.h -- the inside of wrap mode, shared by net_wrap.c (setup, connections) and
 * net_wrap_req.c (requests, records, the stuck watch). Not exported. */
#ifndef C4_NET_WRAP_COMM_H
#define C4_NET_WRAP_COMM_H

#include <stdatomic.h>
#include <stdint.h>

#include "c4_record.h"
#include "net_wrap.h"

#define C4_WRAP_SLOTS 64       /* timing slots per comm: NCCL's 32 in flight, plus receives */
                               /* waiting for irecvConsumed */
#define C4_WRAP_MAX_COMMS 2048 /* comms timed at once; more are forwarded untimed */
#define C4_WRAP_COMM_MAGIC 0x4d4d4f4350525734ull

enum { C4_WSLOT_FREE = 0, C4_WSLOT_POSTED, C4_WSLOT_CONSUME };

/* One timed request: posted by isend/irecv, reported and freed by test (or, for receives of a
 * plugin with irecvConsumed, freed by irecvConsumed). Written by the caller's thread, read by the
 * watch through its atomics. */
struct c4_wrap_req {
  struct c4_wrap_comm *comm;
  void *inner; /* the wrapped plugin's request */
  atomic_int state;
  int n; /* receives in this request (1 for a send) */
  int tags[C4_WRAP_MAX_RECVS];
  uint64_t size;        /* send: the size posted */
  _Atomic uint64_t seq; /* seq of the first (sub-)request */
  _Atomic uint64_t t_posted;
  _Atomic uint64_t stuck_reported; /* seq + 1 once reported stuck */
};

struct c4_wrap_comm {
  uint64_t magic; /* C4_WRAP_COMM_MAGIC while alive */
  void *inner;
  int is_send;
  int timing;  /* C4_TIMING and a slot block: requests are timed */
  int consume; /* receive comm of a plugin with irecvConsumed: slots wait for it */
  int stuck_ms;
  int block; /* index of the slot block, -1 for an untimed comm */
  uint64_t conn_id;
  uint64_t nccl_comm;
  struct c4_identity self, peer;
  uint64_t next_seq; /* caller thread only */
  unsigned hint;     /* where the next slot search starts (caller thread) */
  struct c4_wrap_req *slots;
  struct c4_link_info link;
  int link_given;
};

/* The wrapped plugin (loaded by c4_wrap_setup) and the tunables wrap mode honours. */
extern struct c4_wrap_inner c4_wrap_lib;

/* Reads the tunables wrap mode honours (C4_TIMING, C4_STUCK_MS) once, at setup; returns them. */
const struct c4_transport_config *c4_wrap_config_load(void);

/* 1 when wrapped requests are timed (C4_TIMING), with *stuck_ms set from C4_STUCK_MS. */
int c4_wrap_timing(int *stuck_ms);

/* Allocates the slot pool once (C4_WRAP_MAX_COMMS blocks, touched lazily). C4_ENOMEM on failure. */
int c4_wrap_pool_init(void);

/* Makes the wrapper NCCL will hold for an inner comm: takes a slot block (none left: an untimed
 * comm, counted) and joins the watch. Returns NULL when out of memory. */
struct c4_wrap_comm *c4_wrap_comm_new(void *inner, int is_send, int dev, uint64_t nccl_comm,
                                      uint64_t conn_id, const struct c4_identity *peer);

/* Leaves the watch, gives the slot block back and frees c. */
void c4_wrap_comm_free(struct c4_wrap_comm *c);

#endif
