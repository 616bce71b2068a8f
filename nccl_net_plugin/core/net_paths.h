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
#define C4_PATHS_EVEN 0.6    /* a path at this part of the fastest's rate or more weighs as much */
#define C4_PATHS_NOISE_K 4.0 /* ... and, not yet departed, within this many estimate noises */
#define C4_PATHS_WARM 4      /* rate samples a path needs before it may weigh less than 1 */
#define C4_PATHS_NOISE_TAU_NS 1000000000 /* the noise estimate's memory: a second of sending */
/* The fair re-measure of a path sized off even (c4_paths_fair_tick): */
#define C4_PATHS_FAIR_FIRST_NS 250000000ull   /* first 0.25 s after it departs from even shares */
#define C4_PATHS_FAIR_MAX_NS 2000000000ull    /* then at twice the interval, up to every 2 s */
#define C4_PATHS_FAIR_BUSY_NS 40000000ull     /* each until the path has been busy 40 ms */
#define C4_PATHS_FAIR_GIVE_UP_NS 500000000ull /* or 0.5 s have passed: no traffic, no result */
#define C4_PATHS_FAIR_REF_MIN_NS 5000000ull   /* the reference's busy time counts this at least */
#define C4_PATHS_FAIR_CHUNK (128u << 10)      /* and chunks are at most 128 KiB meanwhile */

/* What a sending socket has delivered so far, as running counts: the kernel's bytes acknowledged
 * and busy time (ns), the bytes and time (from taking each to its last byte written) of the
 * chunks whose writes had to wait, for a full send buffer or a C4_FAULT pacer (a hold in the
 * sender that the kernel's counts do not see), and the part of the busy time the receiver's window
 * held the data back (ns). */
struct c4_paths_count {
  uint64_t acked, busy_ns, waited_bytes, waited_ns, held_ns;
};

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
  int slow[C4_PATHS_MAX];  /* reported below half of the fastest (for the log, with hysteresis) */
  int avoid[C4_PATHS_MAX]; /* c4mon asked to keep traffic off the path (c4_paths_avoid) */
  int off_even[C4_PATHS_MAX]; /* departed from even shares (c4_paths_weight's hysteresis) */
  /* the fair re-measure (c4_paths_fair_tick): */
  int fair;                          /* the path being re-measured with even shares now, -1: none */
  int fair_ref;                      /* the fastest path when it began, measured beside it */
  uint64_t fair_gen;                 /* re-measures begun (a socket's baseline belongs to one) */
  uint64_t fair_start;               /* when the open one began (ns) */
  uint64_t fair_next[C4_PATHS_MAX];  /* when path i is due for its next one (ns; 0: it weighs 1,
                                        1: due now, c4mon let it back) */
  uint64_t fair_every[C4_PATHS_MAX]; /* its interval now */
  uint64_t fair_base_gen[C4_PATHS_MAX];                   /* the re-measure of the baseline below */
  struct c4_paths_count fair_base[C4_PATHS_MAX];          /* each socket's counts at its start */
  struct c4_paths_count fair_seen[C4_PATHS_MAX];          /* ... and the latest */
  uint64_t fair_runs, fair_back, fair_slow, fair_dropped; /* begun; at speed, slow, no result */
  uint64_t held[C4_PATHS_MAX]; /* rate samples dropped: the receiver's window held them back */
};

/* What a re-measure found, for the path records (net_path_report.c): path i and the reference f,
 * bytes acknowledged over busy time (ns) each, with even shares. */
struct c4_paths_fair_done {
  int i, f;
  double bytes_i, busy_i, bytes_f, busy_f;
};

/* 1 when a rate sample of busy time busy, of which the receiver's window held back held (in one
 * unit), is the reader's and not the path's: a reader that stopped (a SIGSTOPped or descheduled
 * rank) leaves its peer's socket busy with nothing moving, and a sample spanning that reads the
 * path many times slow. Such a sample is dropped, not corrected: taking the held time off the busy
 * time keeps the bytes acknowledged while the window was shut, and makes a slow reader's path
 * read many times fast (5.5 MB/s read as 55). A quarter held or more: a kept sample reads its path
 * at most about 1.33x slow for its reader (more by a tick's rounding), inside the weights' dead
 * band (C4_PATHS_EVEN). */
static inline int c4_paths_held(uint64_t busy, uint64_t held) {
  return held * 4 >= busy && held > 0;
}

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

/* Socket i's weight in [C4_PATHS_FLOOR, 1]: C4_PATHS_FLOOR while avoided; else its rate over the
 * fastest socket's, 1 until it has C4_PATHS_WARM samples and inside the dead band: from
 * C4_PATHS_EVEN up, or wider where the paths are noisy, while ln(fastest / rate) is within
 * C4_PATHS_NOISE_K times the noise of the difference of the two estimates (Gaussian: a false
 * departure in 3e-5 of looks). So paths whose spread is their noise share evenly, whatever the
 * noise is; a path given smaller chunks measures slower for them (each burst pays a round trip),
 * and without the band that made equal paths drift apart. A path that departed comes back inside
 * the dead band only (hysteresis: a slow path at the edge of the noise band does not flip back
 * to an even share on its noise). */
double c4_paths_weight(const struct c4_paths *p, int i);

/* c4mon's verdict, pushed in a plan (net_plan.h): path i is to carry only the floor weight, until
 * lifted (on 0), or until a fair re-measure of its own finds it at the fastest's rate (the comm's
 * own measure is newer than c4mon's). While every path is avoided, none is. A lift makes the
 * path's next re-measure due at once. */
void c4_paths_avoid(struct c4_paths *p, int i, int on);

/* Path i's share of a message: its weight over the sum of all weights (1/n while they are
 * even, and while a fair re-measure is open). */
double c4_paths_share(const struct c4_paths *p, int i);

/* The fastest measured path not avoided, or -1 while none is measured. */
int c4_paths_fastest(const struct c4_paths *p);

/* Earliest completion: a path may take its chunk of len bytes only if it would deliver it no later
 * than the fastest path would deliver its own chunk of the message (fastest_len), each behind what
 * its kernel queue holds (queued, fastest_queued: bytes sent or not, not yet acknowledged). With
 * both queues empty and chunks sized by share the two land together, and the chunk is taken. A
 * socket takes a chunk as soon as its send buffer has room, and the buffer takes megabytes, so
 * without this a slow path keeps taking chunks, small but many, and every message waits behind its
 * queue. Returns how many bytes path i's queue is over that (0: it may take the chunk). The fastest
 * path is never held back; while a fair re-measure is open every path is held as if the rates
 * were even (no queue much longer than the fastest's: its chunks still land about with theirs). */
uint64_t c4_paths_excess(const struct c4_paths *p, int i, uint64_t queued, uint64_t fastest_queued,
                         uint64_t len, uint64_t fastest_len);

/* The fair re-measure. A path sized off even measures slow for its small share alone: its small
 * chunks wait in the sending host's FIFO queue behind the larger chunks of the other paths, so the
 * bytes it has acknowledged over its busy time stay low after its congestion has cleared, and its
 * weight would never come back. So each path that weighs less than 1 is measured again with an
 * even share, C4_PATHS_FAIR_FIRST_NS after it departed, then at twice the interval each time it is
 * found still slow, up to C4_PATHS_FAIR_MAX_NS: while a re-measure is open, every path of the comm
 * takes even chunks of at most C4_PATHS_FAIR_CHUNK bytes and queues no more than the fastest
 * (c4_paths_share, c4_paths_excess; the caller caps the chunks: c4_paths_fair_open), so the
 * re-measured path costs a message at most about one such chunk at its own rate, and the
 * re-measured path and the fastest path's rates over the same time, under the same shares, say
 * their ratio apart from the shares. Called on each claim (now in ns): opens a re-measure when one
 * is due, drops the open one without a result after C4_PATHS_FAIR_GIVE_UP_NS (no traffic).
 * Returns the path being re-measured, or -1. */
int c4_paths_fair_tick(struct c4_paths *p, uint64_t now);

/* 1 while a re-measure is open: shares are even, chunks small, queues held as if rates were. */
static inline int c4_paths_fair_open(const struct c4_paths *p) { return p->fair >= 0; }

/* Socket i's counts while a re-measure is open: the first in a re-measure is the socket's
 * baseline, later ones its progress. Once the re-measured path has been busy
 * C4_PATHS_FAIR_BUSY_NS since its baseline (by either count), the re-measure closes: each of the
 * two paths' rate over it is the smaller of its two counts' (the waited chunks' only if it had
 * some), the reference's time counted at least C4_PATHS_FAIR_REF_MIN_NS (one that hardly needed
 * any is at least that much faster), and the path's estimate becomes the fastest's times the ratio
 * of the two, which weighs 1 by the usual rule when the path is back at speed.
 * Returns 1 when the path weighs 1 again, 0 when it is still slow (its next re-measure at twice
 * the interval), either with *done filled in; C4_PATHS_FAIR_OPEN (-1) while it stays open, or when
 * it closed without a result (a path that delivered nothing, or one of the two that the
 * receiver's window held back while the other was not, c4_paths_held: counted in fair_dropped).
 * While the
 * fastest path has sent nothing since its baseline (its chunks of the message were all out), or
 * less than C4_PATHS_FAIR_CHUNK in less than C4_PATHS_FAIR_REF_MIN_NS of busy time (the start of
 * its next message), the re-measure waits for more rather than judging, until
 * C4_PATHS_FAIR_GIVE_UP_NS. */
#define C4_PATHS_FAIR_OPEN (-1)
int c4_paths_fair_progress(struct c4_paths *p, int i, const struct c4_paths_count *count,
                           uint64_t now, struct c4_paths_fair_done *done);

/* For the log: C4_PATHS_SLOWED (1) when socket i has just fallen below half of the fastest,
 * C4_PATHS_BACK (-1) when it has just come back above three quarters, else 0. */
enum { C4_PATHS_SLOWED = 1, C4_PATHS_BACK = -1 };
int c4_paths_changed(struct c4_paths *p, int i);

#endif
