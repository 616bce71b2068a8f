/* c4_record.h -- the telemetry records c4 takes on the data path (fixed size, no pointers). */
#ifndef C4_RECORD_H
#define C4_RECORD_H

#include <stdint.h>

#define C4_RECORD_VERSION 1
#define C4_HOST_MAX 64

/* Who is at one end of a connection. rank is -1 when the launcher gave none. */
struct c4_identity {
  char host[C4_HOST_MAX]; /* NUL-terminated hostname */
  uint32_t pid;
  int32_t rank;
  int32_t dev; /* the plugin device index at that end */
};

enum { C4_DIR_SEND = 0, C4_DIR_RECV = 1 };
/* PENDING: the request has been outstanding longer than C4_STUCK_MS; it is reported again when it
 * completes. */
enum { C4_XFER_OK = 0, C4_XFER_ERROR = 1, C4_XFER_PENDING = 2 };

/* One completed, failed or stuck send or receive request. Times are c4_now_ns() of the process
 * that wrote the record; 0 means "not (yet) happened": t_first_byte of a message that never moved
 * a byte, t_done of a pending one. */
struct c4_xfer_record {
  uint16_t version; /* C4_RECORD_VERSION */
  uint8_t dir;      /* C4_DIR_* */
  uint8_t status;   /* C4_XFER_* */
  int32_t tag;
  uint64_t conn_id;   /* the same on both ends of a connection (chosen by the connector) */
  uint64_t nccl_comm; /* NCCL's communicator hash (v11 init), 0 when NCCL gave none */
  uint64_t seq;       /* request number on this connection, from 0 */
  uint64_t bytes;     /* bytes moved (received size on receives) */
  uint64_t t_posted;
  uint64_t t_first_byte;
  uint64_t t_done;
  struct c4_identity self;
  struct c4_identity peer;
};

#endif
