/* chained_ring.h -- for the start-estimate tests (test_det_xstart.c, test_detect.c): a ring
 * allreduce of CHAINED_N ranks in chained steps, as a tracer of another project would record it
 * without t_first. Each call has 2 (N - 1) steps; rank d posts its receive of a step when its step
 * before arrived, and the step's bytes move once its sender's step before has arrived too, for
 * 3 ms times slow(src, dst, start), give or take 10%. Calls come 50 ms of compute after the last
 * one ended, the ranks coming in over 2 ms. */
#ifndef C4_TEST_CHAINED_RING_H
#define C4_TEST_CHAINED_RING_H

#include <stdint.h>
#include <string.h>

#define CHAINED_N 8
#define CHAINED_STEPS (2 * (CHAINED_N - 1))

/* One transfer of the ring: src -> dst in call `call`, posted by dst, its bytes moving from start
 * to done. */
struct chained_xfer {
  int src, dst, call;
  uint64_t post, start, done;
};

struct chained_ring {
  double (*slow)(int src, int dst, uint64_t t);          /* the hop's factor at time t */
  void (*xfer)(const struct chained_xfer *x, void *arg); /* each transfer, as its step ends */
  void (*step_done)(uint64_t t, void *arg);              /* after each step's transfers, or NULL */
  void *arg;
  unsigned jitter; /* the generator's state: the same seed gives the same ring */
};

/* Runs calls from t0 while they start before t1 and fewer than max_calls have run. */
static inline void chained_ring_run(struct chained_ring *g, uint64_t t0, uint64_t t1,
                                    int max_calls) {
  uint64_t done[CHAINED_N] = {0};
  for (int call = 0; t0 < t1 && call < max_calls; call++) {
    for (int r = 0; r < CHAINED_N; r++)
      done[r] = t0 + (uint64_t)r * 250000;
    for (int k = 0; k < CHAINED_STEPS; k++) {
      uint64_t now[CHAINED_N];
      for (int d = 0; d < CHAINED_N; d++) {
        int r = (d + CHAINED_N - 1) % CHAINED_N;
        g->jitter = g->jitter * 1103515245u + 12345u;
        double ms = 3 * (0.9 + 0.2 * (double)((g->jitter >> 16) & 0x7fff) / 32768.0);
        uint64_t start = done[r] > done[d] ? done[r] : done[d];
        now[d] = start + (uint64_t)(ms * g->slow(r, d, start) * 1e6);
        struct chained_xfer x = {r, d, call, done[d], start, now[d]};
        g->xfer(&x, g->arg);
      }
      memcpy(done, now, sizeof done);
      if (g->step_done) g->step_done(done[0], g->arg);
    }
    for (int r = 0; r < CHAINED_N; r++)
      t0 = done[r] + 50000000 > t0 ? done[r] + 50000000 : t0;
  }
}

#endif
