/* net_fault.h -- C4_FAULT: faults the socket transport injects on purpose (a delayed or
 * rate-limited peer, a stalled rank), so a demo or test can make them without root or tc.
 * Syntax and semantics: docs/fault.md. */
#ifndef C4_NET_FAULT_H
#define C4_NET_FAULT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#define C4_FAULT_MAX 16      /* clauses kept; more are reported as errors */
#define C4_FAULT_ERR_MAX 160 /* one error message, NUL included */
#define C4_FAULT_SOCKS 64    /* data sockets a rate clause can name (C4_MAX_NSOCKS) */

enum { C4_FAULT_DELAY = 1, C4_FAULT_RATE, C4_FAULT_STALL };

/* One clause. Times are nanoseconds after the plugin's init; for_ns 0 means "until the end".
 * A clause keyed to steps (from_step > 0) is open while the step the program reports
 * (c4_fault_set_step) is in from_step..to_step (to_step 0: to the end), whatever the time. */
struct c4_fault_clause {
  int kind;    /* C4_FAULT_* */
  int rank;    /* applies only in the process with this launcher rank; -1: every process */
  int peer;    /* delay, rate: the peer's launcher rank; -1 for stall */
  int sock;    /* rate: only this data socket of the connection (one path); -1: all of it */
  uint64_t us; /* delay: microseconds each send is held */
  double mbps; /* rate: megabits per second */
  uint64_t after_ns, for_ns;
  uint64_t from_step, to_step;
};

/* A parsed C4_FAULT: the good clauses, and one message per malformed clause (those are left out).
 */
struct c4_fault_spec {
  int n;
  struct c4_fault_clause clause[C4_FAULT_MAX];
  int nerr;
  char err[C4_FAULT_MAX][C4_FAULT_ERR_MAX];
};

/* Parses spec (may be NULL or empty) into *out; never fails as a whole. Each malformed clause is
 * skipped and described in out->err as `C4_FAULT clause K "text": what is wrong`. Pure: no
 * environment, no logging, no allocation. */
void c4_fault_parse(const char *spec, struct c4_fault_spec *out);

/* Reads C4_FAULT once (call before any comm exists): keeps the clauses meant for this process's
 * launcher rank (c4_env_rank), logs each malformed clause once, and starts the clause clock. */
void c4_fault_load(void);

/* The training step the program is in (from 1), for clauses keyed to steps; reported by programs
 * that drive the plugin themselves (c4train, through c4ExtStep). Lock-free. */
void c4_fault_set_step(uint64_t step);

/* What one connection does about the faults, fixed when it is created. active is the only field
 * the data path reads when C4_FAULT is unset: zero means every hook is one untaken branch. */
struct c4_fault_conn {
  int active;           /* some clause (a stall, or a delay or rate on this peer) may apply */
  uint32_t delay_mask;  /* delay clauses for this connection's peer (bit i: clause i) */
  uint32_t rate_mask;   /* rate clauses for this connection's peer */
  _Atomic uint64_t tat; /* pacing: when the bytes already charged are paid for (ns) */
  _Atomic uint64_t tat_sock[C4_FAULT_SOCKS]; /* the same for clauses naming one data socket */
};

/* Fills *f for a connection to launcher rank peer_rank (is_send: delay and rate apply to sends
 * only; stalls apply to both directions). */
void c4_fault_conn_init(struct c4_fault_conn *f, int is_send, int peer_rank);

/* Nanoseconds a send posted at now is held before its first byte goes out; 0: none. */
uint64_t c4_fault_send_delay(const struct c4_fault_conn *f, uint64_t now);

/* 1 while a stall window is open: the comm must make no progress. */
int c4_fault_stalled(const struct c4_fault_conn *f, uint64_t now);

/* Pacing of socket sock (a data socket's index, or -1 for the control socket, which only clauses
 * without sock= pace): how many of want bytes may be written now (0: wait; see c4_fault_hold_ms).
 * After the write, c4_fault_pace_charge with the bytes written. Lock-free; helpers share it. */
size_t c4_fault_pace_allow(struct c4_fault_conn *f, uint64_t now, int sock, size_t want);
void c4_fault_pace_charge(struct c4_fault_conn *f, uint64_t now, int sock, size_t sent);

/* The rate (bytes per ns) the pacer holds socket sock to at now, the stricter of its two buckets;
 * 0: not paced. The path weights take a rate sample as no faster: the kernel's count of bytes
 * acknowledged cannot see a hold in the sender, and a chunk small enough to pass in one burst
 * never waits, so without this a paced path measured at loopback speed between its waits. */
double c4_fault_pace_rate(const struct c4_fault_conn *f, uint64_t now, int sock);

/* Milliseconds (>= 1) socket sock should wait because a stall or its pacer holds it, or -1 when
 * neither does. */
int c4_fault_hold_ms(const struct c4_fault_conn *f, uint64_t now, int sock);

/* Faults applied so far, for logs and tests. */
struct c4_fault_stats {
  atomic_ulong delayed_sends; /* sends held by a delay clause */
  atomic_ulong paced_waits;   /* writes the pacer deferred */
  atomic_ulong stalled_calls; /* isend/irecv/test calls and helper rounds held by a stall */
};
extern struct c4_fault_stats c4_fault_stats;

#endif
