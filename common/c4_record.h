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

#define C4_NAME_MAX 24

/* One collective or p2p call on one rank (the profiler plugin). t_arrive: the rank entered it
 * (NCCL's Coll/P2p start); t_enqueued: NCCL finished enqueuing it (Coll/P2p stop); t_done: its
 * last network operation finished (last ProxyOp stop), 0 when it had none or it is unknown. */
struct c4_coll_record {
  uint64_t comm; /* NCCL's communicator id */
  uint64_t seq;  /* NCCL's collective sequence number; p2p: c4's count on this communicator */
  int32_t rank;  /* rank in the communicator */
  int32_t nranks;
  uint8_t is_p2p;
  uint8_t nchannels;
  uint16_t nops;  /* network operations (ProxyOps) seen */
  int32_t root;   /* root (collectives) or peer (p2p), -1 if none */
  uint64_t count; /* elements */
  uint64_t bytes; /* count x element size */
  char func[C4_NAME_MAX];
  char dtype[C4_NAME_MAX];
  char algo[C4_NAME_MAX];
  char proto[C4_NAME_MAX];
  uint64_t t_arrive;
  uint64_t t_enqueued;
  uint64_t t_done;
};

/* One communicator as the profiler plugin's init sees it on one rank. */
struct c4_comm_record {
  uint64_t comm;
  char name[64];
  int32_t rank;
  int32_t nranks;
  int32_t nnodes;
  uint32_t pid;
  char host[C4_HOST_MAX];
  uint64_t t;
};

/* A connection the net plugin timed, tied to the communicator ranks of the NCCL proxy operation
 * that used it (profiler plugin): lets xfer records (which carry launcher ranks) be read in
 * communicator ranks. */
struct c4_link_record {
  uint64_t comm;    /* NCCL's communicator id */
  uint64_t conn_id; /* the xfer records' "conn" */
  int32_t rank;     /* this end, in the communicator */
  int32_t peer;     /* the other end, in the communicator */
  uint8_t dir;      /* C4_DIR_* */
  uint8_t reserved[7];
  uint64_t t;
};

/* What the net plugin hands the profiler through NCCL's profiler callback (extData), once per
 * connection: checked by magic and plugin id before it is read. */
#define C4_LINK_MAGIC 0x4b4e494c34430001ull
#define C4_PROFILER_PLUGIN_ID 0x4334
struct c4_link_info {
  uint64_t magic;
  uint64_t conn_id;
  uint8_t dir;
};

/* One data socket's share of a connection over a span of its busy time (the net plugin's
 * multipath weights, sending side): bytes the peer acknowledged while the socket had data in
 * flight, and that busy time. With C4_PLAN, socket `sock` of a host pair is bound to the plan's
 * flow `sock` of that pair (src_port), so c4mon can tell which path of the fabric each rate is. */
struct c4_path_record {
  uint64_t conn_id;   /* the connection's xfer records' conn_id */
  uint64_t nccl_comm; /* 0 when NCCL gave none */
  uint8_t sock;       /* data socket index, below nsocks */
  uint8_t nsocks;
  uint16_t src_port; /* its local port, 0 when unknown */
  uint32_t reserved;
  uint64_t bytes;   /* acknowledged over the span */
  uint64_t busy_ns; /* the span: time with data unacknowledged */
  uint64_t t;       /* the span's end */
  struct c4_identity self;
  struct c4_identity peer;
};

/* c4mon's own view of one rank's stream, never sent by a rank: a heartbeat it received, or the
 * stream's end (BYE: a clean goodbye; LOST: the connection ended without one). c4mon writes them
 * as "hb" and "end" trace lines so that detection can be replayed. HELLO is a trace's "header"
 * line read back: who a process is (host, pid, launcher rank), at its start (t: its mono_ns, 0
 * if none); nothing about its progress. */
enum { C4_RANK_HB = 0, C4_RANK_BYE = 1, C4_RANK_LOST = 2, C4_RANK_HELLO = 3 };
struct c4_rank_record {
  int32_t rank; /* launcher rank, -1 if none */
  uint32_t pid;
  uint8_t event; /* C4_RANK_* */
  uint8_t reserved[7];
  char host[C4_HOST_MAX];
  uint64_t t;                      /* c4mon's clock */
  uint64_t entered, done, dropped; /* the heartbeat's counts (0 for an end) */
};

enum {
  C4_REC_XFER = 1,
  C4_REC_COLL = 2,
  C4_REC_COMM = 3,
  C4_REC_LINK = 4,
  C4_REC_RANK = 5,
  C4_REC_PATH = 6
};

/* What the per-process ring carries. */
struct c4_record {
  uint32_t kind; /* C4_REC_* */
  uint32_t reserved;
  union {
    struct c4_xfer_record xfer;
    struct c4_coll_record coll;
    struct c4_comm_record comm;
    struct c4_link_record link;
    struct c4_rank_record rank;
    struct c4_path_record path;
  };
};

#endif
