/* net_comm.h -- the inside of a socket-transport comm, shared by the files that build, drive
 * and serve it (net_accept.c, net_connect.c, net_comm.c, net_helper.c). Not exported. */
#ifndef C4_NET_COMM_H
#define C4_NET_COMM_H

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "net_fault.h"
#include "net_paths.h"
#include "net_req_head.h"
#include "net_transport.h"

enum { C4_REQ_FREE = 0, C4_REQ_POSTED, C4_REQ_DONE, C4_REQ_ERROR };

/* One slot of a comm's 32; slot i carries requests seq with seq % 32 == i. Fields written by the
 * caller before publication are read by helpers after an acquire of `seq` or `state`. */
struct c4_request {
  C4_REQ_HEAD; /* seq, state, t_posted, done_bytes, stuck_reported (net_req_head.h) */
  struct c4_comm *comm;
  int is_inline; /* small send on the control socket; helpers skip it */
  int large;     /* moves on the data sockets (send: posted large; receive: RTS accepted) */
  int tag;
  int error; /* C4_E* when state is ERROR */
  char *buf;
  uint64_t size;          /* send: message size; receive: posted size */
  _Atomic uint64_t total; /* receive: message size once known */
  _Atomic uint64_t t_first_byte;
  _Atomic uint64_t t_done;
};

/* One item of the control socket's outgoing queue: a 24-byte frame, maybe with inline payload. */
struct c4_ctrl_out {
  uint8_t hdr[C4_CTRL_SIZE];
  const char *payload;
  size_t payload_len;
  size_t sent;            /* bytes of hdr + payload already written */
  struct c4_request *req; /* inline send completed by this item, or NULL */
  uint64_t not_before;    /* C4_FAULT delay: no byte goes before this time (ns); 0: none */
};

#define C4_CTRL_QUEUE 64 /* 32 requests + their error frames */
#define C4_CTRL_STAGE 4096

struct c4_helper;

struct c4_comm {
  int is_send;
  int dev;
  int ctrl_fd;
  int nsocks;
  int data_fd[C4_MAX_NSOCKS];
  uint16_t data_port[C4_MAX_NSOCKS]; /* each data socket's local port (path records), 0: unknown */
  uint64_t
      data_path[C4_MAX_NSOCKS]; /* each one's path in the plan (c4_netplan_path_hash), 0: none */
  uint64_t conn_id;
  uint64_t nccl_comm;
  struct c4_identity self, peer;
  struct c4_transport_config cfg;
  struct c4_fault_conn fault; /* C4_FAULT for this connection; fault.active 0 when none applies */

  struct c4_request reqs[C4_MAX_REQUESTS];
  uint64_t next_post; /* caller thread only */

  /* control socket, caller thread only */
  struct c4_ctrl_out out[C4_CTRL_QUEUE];
  unsigned out_head, out_tail;
  uint8_t stage[C4_CTRL_STAGE];
  size_t stage_len;
  struct c4_request *rx_inline; /* receive: inline payload being read */
  uint64_t rx_inline_left;
  uint64_t rx_expect;  /* receive: the message the next DATA or RTS frame must carry */
  int ctrl_eof;        /* receive: the sender closed its control connection */
  int large_pending;   /* requests moving on data sockets, not yet tested done (caller thread) */
  atomic_int data_eof; /* receive: data sockets the sender closed at a chunk boundary */

  /* helpers */
  _Atomic uint64_t posted;    /* send: requests below this are cleared to go (helpers take them) */
  pthread_mutex_t claim_lock; /* taken by helper threads only, never by the caller */
  uint64_t claim_seq, claim_off;
  struct c4_paths paths; /* send: each data socket's throughput (under claim_lock) */
  atomic_int fair_open;  /* send: a fair re-measure is open (paths.fair >= 0; read unlocked) */
  uint64_t avoid_gen;    /* send: the paths-to-avoid set last applied (under claim_lock) */
  int nhelpers;
  struct c4_helper *helpers;
  atomic_int stop;

  struct c4_link_info link; /* handed to the profiler once (c4_transport_link_once) */
  int link_given;
  atomic_int failed; /* C4_E* once the comm is broken */
  char failure[256];
};

/* Builds a comm around connected sockets (handshake done) and starts its helpers. Takes
 * ownership of the fds, also on failure. data_path: each data socket's path in the plan
 * (c4_netplan_path_hash; NULL or 0: not known), for the paths c4mon asks to avoid. */
int c4_comm_create(int is_send, const struct c4_transport_config *cfg, int dev, uint64_t nccl_comm,
                   uint64_t conn_id, const struct c4_identity *self, const struct c4_identity *peer,
                   int ctrl_fd, const int *data_fd, const uint64_t *data_path, int nsocks,
                   struct c4_comm **out);

/* Marks the comm broken with a message (first failure wins) and logs it once. */
void c4_comm_fail(struct c4_comm *c, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Helper threads (net_helper.c). */
int c4_helpers_start(struct c4_comm *c);
void c4_helpers_wake(struct c4_comm *c);
/* C4_NTHREADS=0: moves data on every data socket from the caller's thread; 1 if bytes moved. */
int c4_helpers_progress_inline(struct c4_comm *c);
void c4_helpers_stop(struct c4_comm *c);

/* The watch over live comms (net_watch.c): comms join when created, leave before they are
 * freed; c4_watch_scan reports requests outstanding longer than C4_STUCK_MS. */
void c4_watch_add(struct c4_comm *c);
void c4_watch_remove(struct c4_comm *c);
void c4_watch_scan(void);

/* Fills rec from comm c and request r (status, bytes and t_done given by the caller). */
void c4_request_record(const struct c4_comm *c, struct c4_request *r, int status, uint64_t bytes,
                       uint64_t t_done, struct c4_xfer_record *rec);

/* Completes a request that moved its last byte: stamps t_done and publishes DONE. */
void c4_request_complete(struct c4_request *r);

#endif
