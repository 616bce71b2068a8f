/* net_rate_sample.h -- a sending data socket's rate samples, for the multipath weights and for
 * c4mon's path records: from the kernel's counts (net_tcp_rate.h) and from the chunk's own write
 * time, with the samples a stopped or slow reader held back left out. */
#ifndef C4_NET_RATE_SAMPLE_H
#define C4_NET_RATE_SAMPLE_H

#include <stdint.h>

#include "net_tcp_rate.h"

#define C4_RATE_SAMPLE_BUSY_US 20000 /* a sample spans at least 20 ms of busy time */

struct c4_rate_sampler {
  struct c4_tcp_counts last;  /* the kernel's counts at the last kernel sample */
  struct c4_tcp_counts claim; /* ... and when the chunk in progress was taken */
  int claim_counted;          /* the latter were read */
};

/* A finished chunk: its bytes, its time from being taken to its last byte written, and whether
 * its writes had to wait (a full send buffer or a C4_FAULT pacer). */
struct c4_chunk_done {
  uint32_t len;
  uint64_t ns;
  int waited;
};

/* The rate (bytes per ns; 0: nothing new known) the socket's path gave the finished chunk d, read
 * when the socket takes its next chunk; k: the kernel's counts now (NULL: not read).
 * The kernel's: bytes acknowledged over the time the socket had data unacknowledged, since the
 * last kernel sample and once that time reaches C4_RATE_SAMPLE_BUSY_US (the kernel counts it in
 * ticks of a few ms); *span_ns is that time. Idle time between messages is left out, so a ring
 * allreduce's short steps measure the path as well as a stream does; the chunk's own write time
 * could not (the send buffer swallows a chunk in microseconds).
 * When the writes had to wait, the write time is a measure too (a pacer's hold is in the sender,
 * where the kernel does not see it), and the smaller is the rate (*span_ns 0); a sample is never
 * faster than the pacer's rate now (paced, 0: none).
 * A kernel sample the receiver's window held back is the reader's pace, not the path's
 * (c4_paths_held): 0, *held set. So is the write time of a chunk whose own time (its claim to now,
 * once that is C4_RATE_SAMPLE_BUSY_US of busy time) the window held back: it is not used, and
 * *held is set when nothing else measured the path. A rank SIGSTOPped mid-message otherwise made
 * its peer's socket read 12x slow and c4mon named the socket's path (make drill). */
double c4_rate_sample(struct c4_rate_sampler *r, const struct c4_tcp_counts *k,
                      const struct c4_chunk_done *d, double paced, double *span_ns, int *held);

/* The socket took a chunk; k: the kernel's counts now (NULL: not read). */
void c4_rate_sample_claimed(struct c4_rate_sampler *r, const struct c4_tcp_counts *k);

#endif
