/* net_rate_sample.c -- a sending data socket's rate samples (net_rate_sample.h). */
#include "net_rate_sample.h"

#include <stddef.h>

#include "net_paths.h"

double c4_rate_sample(struct c4_rate_sampler *r, const struct c4_tcp_counts *k,
                      const struct c4_chunk_done *d, double paced, double *span_ns, int *held) {
  *span_ns = 0;
  *held = 0;
  if (!d->len) return 0;
  double wrote = (double)d->len / (double)(d->ns ? d->ns : 1), rate = 0;
  if (k && k->busy_us >= r->last.busy_us + C4_RATE_SAMPLE_BUSY_US && k->acked > r->last.acked) {
    *held = c4_paths_held(k->busy_us - r->last.busy_us, k->held_us - r->last.held_us);
    if (!*held) {
      *span_ns = (double)(k->busy_us - r->last.busy_us) * 1e3;
      rate = (double)(k->acked - r->last.acked) / *span_ns;
    }
    r->last = *k;
  }
  if (*held) return 0;
  /* the chunk's own time is judged once it is a sample's worth of busy time: a chunk's few ms are
   * a draw of the kernel's 4 ms ticks, and one tick held would read as all of it */
  int chunk_held = k && r->claim_counted &&
                   k->busy_us >= r->claim.busy_us + C4_RATE_SAMPLE_BUSY_US &&
                   c4_paths_held(k->busy_us - r->claim.busy_us, k->held_us - r->claim.held_us);
  if (d->waited && !chunk_held && (rate == 0 || wrote < rate)) {
    rate = wrote;
    *span_ns = 0; /* the chunk's time on the path at that rate */
  }
  *held = chunk_held && rate == 0; /* its one measure was the reader's */
  if (paced > 0 && rate > paced) rate = paced;
  return rate;
}

void c4_rate_sample_claimed(struct c4_rate_sampler *r, const struct c4_tcp_counts *k) {
  r->claim_counted = k != NULL;
  if (k) r->claim = *k;
}
