/* net_paths.h -- multipath weights: each data socket of a sending comm is one path through the
 * fabric (with C4_PLAN, pinned to a spine). Its throughput is measured chunk by chunk, and the
 * chunks a socket takes are sized by its throughput over the fastest socket's, so every socket
 * finishes its chunk at about the same time and a congested path holds no message back. */
#ifndef C4_NET_PATHS_H
#define C4_NET_PATHS_H

#include <stdint.h>

#define C4_PATHS_MAX 64           /* C4_MAX_NSOCKS */
#define C4_PATHS_TAU_NS 250000000 /* the estimate's memory: a quarter second of sending */
#define C4_PATHS_FLOOR 0.03125    /* the smallest weight (1/32): a slow path keeps being measured */

struct c4_paths {
  int n;
  double rate[C4_PATHS_MAX]; /* bytes per ns, smoothed; 0: not measured yet */
  uint64_t bytes[C4_PATHS_MAX];
  uint64_t chunks[C4_PATHS_MAX];
  int slow[C4_PATHS_MAX]; /* reported below half of the fastest (for the log, with hysteresis) */
};

void c4_paths_init(struct c4_paths *p, int n);

/* Folds in one chunk that path i carried: len bytes in ns nanoseconds from taking the chunk to
 * its completion (an RDMA write's, or the last byte handed to a TCP socket). The weight of a
 * sample grows with its duration, so the estimate follows a path within about C4_PATHS_TAU_NS of
 * sending whatever the chunk sizes. */
void c4_paths_sample(struct c4_paths *p, int i, uint64_t len, uint64_t ns);

/* The same with the rate the path gave the chunk measured apart (bytes per ns; TCP: the kernel's
 * delivery rate from its ACKs, which a send buffer that swallows a chunk cannot inflate). The
 * sample weighs len / rate, the time the path spends on the chunk. */
void c4_paths_sample_rate(struct c4_paths *p, int i, uint64_t len, double rate);

/* Socket i's weight in [C4_PATHS_FLOOR, 1]: its rate over the fastest socket's; 1 until both
 * are measured. */
double c4_paths_weight(const struct c4_paths *p, int i);

/* For the log: 1 when socket i has just fallen below half of the fastest, -1 when it has just
 * come back above three quarters, else 0. */
int c4_paths_changed(struct c4_paths *p, int i);

#endif
