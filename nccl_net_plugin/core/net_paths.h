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
#define C4_PATHS_STEP_MAX 0.5     /* one sample moves the estimate at most this part of the way */
#define C4_PATHS_PROBE_NS 100000000 /* a path held back this long takes a chunk anyway */
#define C4_PATHS_EVEN 0.6    /* a path at this part of the fastest's rate or more weighs as much */
#define C4_PATHS_NOISE_K 4.0 /* ... and one within this many estimate noises of the fastest too */
#define C4_PATHS_WARM 4      /* rate samples a path needs before it may weigh less than 1 */
#define C4_PATHS_NOISE_TAU_NS 1000000000 /* the noise estimate's memory: a second of sending */

struct c4_paths {
  int n;
  double rate[C4_PATHS_MAX];      /* bytes per ns, smoothed; 0: not measured yet */
  double last[C4_PATHS_MAX];      /* the last sample's rate (bytes per ns), 0: none yet */
  double jump[C4_PATHS_MAX];      /* smoothed |ln(sample / previous sample)|, at most ln 2 */
  double step[C4_PATHS_MAX];      /* smoothed part of the way one sample moves the estimate */
  uint64_t samples[C4_PATHS_MAX]; /* samples that carried a rate */
  uint64_t uneven[C4_PATHS_MAX];  /* chunks counted while the path weighed less than 1 */
  uint64_t bytes[C4_PATHS_MAX];
  uint64_t chunks[C4_PATHS_MAX];
  int slow[C4_PATHS_MAX]; /* reported below half of the fastest (for the log, with hysteresis) */
  uint64_t held_since[C4_PATHS_MAX]; /* when c4_paths_excess began holding the path back, 0: not */
  int probe[C4_PATHS_MAX];           /* c4_paths_excess let the path through to be measured again */
};

void c4_paths_init(struct c4_paths *p, int n);

/* Folds in one chunk that path i carried: len bytes in ns nanoseconds from taking the chunk to
 * its completion (an RDMA write's, or the last byte handed to a TCP socket). The weight of a
 * sample grows with its duration, so the estimate follows a path within about C4_PATHS_TAU_NS of
 * sending whatever the chunk sizes, but no one sample moves it more than C4_PATHS_STEP_MAX of the
 * way (one measure is not yet a slow path). */
void c4_paths_sample(struct c4_paths *p, int i, uint64_t len, uint64_t ns);

/* The same with the rate the path gave the chunk measured apart (bytes per ns; TCP: the kernel's
 * count of bytes acknowledged over busy time, which a send buffer that swallows a chunk cannot
 * inflate). The sample weighs span_ns, the time the measure covers (0: len / rate, the time the
 * path spends on the chunk). A rate of 0 counts the bytes and leaves the estimate as it is. */
void c4_paths_sample_rate(struct c4_paths *p, int i, uint64_t len, double rate, double span_ns);

/* The noise of path i's estimate, as a standard deviation of ln(rate): the samples' noise (from
 * the smoothed jump between consecutive samples; for Gaussian noise the mean |difference| is
 * 2 sigma / sqrt(pi)) times sqrt(a / (2 - a)), what an exponentially weighted mean that moves a
 * of the way per sample keeps of it. Jumps count at most ln 2 each, so a path that changes speed
 * moves it by one clipped jump, not by the size of the change. 0 until two samples. */
double c4_paths_noise(const struct c4_paths *p, int i);

/* Socket i's weight in [C4_PATHS_FLOOR, 1]: its rate over the fastest socket's, 1 until both have
 * C4_PATHS_WARM samples and inside the dead band: from C4_PATHS_EVEN up, or wider where the paths
 * are noisy, while ln(fastest / rate) is within C4_PATHS_NOISE_K times the noise of the difference
 * of the two estimates (Gaussian: a false departure in 3e-5 of looks). So paths whose spread is
 * their noise share evenly, whatever the noise is; a path given smaller
 * chunks measures slower for them (each burst pays a round trip), and without the band that made
 * equal paths drift apart. */
double c4_paths_weight(const struct c4_paths *p, int i);

/* Path i's share of a message: its weight over the sum of all weights (1/n while they are
 * even). */
double c4_paths_share(const struct c4_paths *p, int i);

/* The fastest measured path, or -1 while none is measured. */
int c4_paths_fastest(const struct c4_paths *p);

/* Earliest completion: a path may take its chunk of len bytes only if it would deliver it no later
 * than the fastest path would deliver its own chunk of the message (fastest_len), each behind what
 * its kernel queue holds (queued, fastest_queued: bytes sent or not, not yet acknowledged). With
 * both queues empty and chunks sized by share the two land together, and the chunk is taken. A
 * socket takes a chunk as soon as its send buffer has room, and the buffer takes megabytes, so
 * without this a slow path keeps taking chunks, small but many, and every message waits behind its
 * queue. Returns how many bytes path i's queue is over that (0: it may take the chunk). The fastest
 * path is never held back, and one held back for C4_PATHS_PROBE_NS (now: ns) takes the chunk
 * anyway: a path's estimate moves only while it carries chunks, so one judged slow on a bad sample
 * would otherwise never be measured again; then p->probe[i] is set (the caller sizes that chunk
 * evenly, so it measures the path, and clears it). */
uint64_t c4_paths_excess(struct c4_paths *p, int i, uint64_t queued, uint64_t fastest_queued,
                         uint64_t len, uint64_t fastest_len, uint64_t now);

/* For the log: 1 when socket i has just fallen below half of the fastest, -1 when it has just
 * come back above three quarters, else 0. */
int c4_paths_changed(struct c4_paths *p, int i);

#endif
