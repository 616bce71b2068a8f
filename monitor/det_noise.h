/* det_noise.h -- a signal's healthy spread, learned robustly: the last DET_NOISE_LEN healthy
 * samples (log factors) of one signal (a rank's compute share, a link's time per byte, a NIC's
 * row or column effect), their median (the baseline) and their spread: the larger of 1.4826 x
 * their median absolute deviation and their 97th percentile's distance from the median over
 * 1.88 (both a standard deviation's estimate for normal noise; the second also sees noise that
 * comes in bursts; under 32 samples the percentile is their largest, unless they feed a median:
 * det_noise_for_median). A sample joins the window DET_NOISE_DELAY samples late, and not at all
 * when a verdict was raised on the signal meanwhile (det_noise_drop): the samples that start a
 * fault never become its baseline, while bursts too short for a verdict are learned as noise. A
 * detector adds nothing while a verdict stands on the signal. */
#ifndef C4_DET_NOISE_H
#define C4_DET_NOISE_H

#include <stddef.h>
#include <stdint.h>

#define DET_NOISE_LEN 64  /* samples kept */
#define DET_NOISE_MIN 12  /* samples before the signal is judged against its own baseline */
#define DET_NOISE_DELAY 3 /* samples held back before they join the window */

/* Zero-initialized. 284 bytes; what a look reads (n, base, spread) in its first 28, so that a
 * detector judging thousands of signals reads one line of each. */
struct det_noise {
  uint16_t n, pos, since; /* kept, next slot, added since the last fit */
  uint8_t nheld;          /* samples held back, oldest first */
  uint8_t for_median;     /* set by its detector: see det_noise_for_median */
  float held[DET_NOISE_DELAY];
  float base, spread;            /* median and spread as of the last fit */
  int16_t v[DET_NOISE_LEN];      /* samples, log units x 4096, in the order they came */
  int16_t sorted[DET_NOISE_LEN]; /* the same n samples in ascending order */
};

/* Says that x's samples feed a median (a rank's compute ratios, behind its median of 12): one
 * sample far out cannot move that median, so x's tail is never its largest sample. Other
 * windows read a young window's (under 32 samples) tail from its largest: a young window's few
 * samples understate a signal that varies in bursts (read from the second largest, a healthy
 * 4-rank job's loopback link was named at 1.26x, when the median cell still read 0 against
 * itself). */
static inline void det_noise_for_median(struct det_noise *x) { x->for_median = 1; }

/* A hint before det_noise_add(x) in a loop over many signals: starts loading all of x (their
 * windows are tens of MB at 16,384 ranks, and an add reads four of x's five lines). */
static inline void det_noise_prefetch(const struct det_noise *x) {
  for (size_t b = 0; b < sizeof *x; b += 64)
    __builtin_prefetch((const char *)x + b, 1);
  __builtin_prefetch((const char *)(x + 1) - 1, 1);
}

/* What detection was told to tolerate (docs/events.md): z, how many spreads past its baseline a
 * signal must be (from the target false-alarm rate), and min_log, the log of the smallest factor
 * worth a verdict. */
struct det_noise_knobs {
  double z, min_log;
};

/* The knobs of a false-alarm rate p (per look, 0 < p < 0.5) and a minimum effect (a factor > 1). */
struct det_noise_knobs det_noise_knobs(double p, double min_effect);

/* Adds a sample (held back DET_NOISE_DELAY samples); refits every few samples (and at once while
 * it has few). */
void det_noise_add(struct det_noise *x, float v);

/* A verdict was raised on the signal: the samples held back were the fault's, not noise. */
static inline void det_noise_drop(struct det_noise *x) { x->nheld = 0; }

/* A hot run's samples (a signal past its threshold, no verdict yet), held back from its window
 * until the run ends: learned then if it ended short of a verdict (a burst, so noise), dropped if
 * it made one (the fault's own). Learned as they came (three samples late), a slow fault's samples
 * joined its baseline while its evidence was still summing and lifted the threshold past it. A
 * run longer than DET_NOISE_HOLD samples has its oldest learned: a small lasting shift is the
 * signal's new normal. Zero-initialized. */
#define DET_NOISE_HOLD 8
struct det_noise_hold {
  uint8_t n; /* held, oldest first */
  float v[DET_NOISE_HOLD];
};

/* Holds v for x; when the hold is full, its oldest joins x. */
void det_noise_hold(struct det_noise_hold *h, struct det_noise *x, float v);

/* The run ended short of a verdict: what h held joins x. */
void det_noise_release(struct det_noise_hold *h, struct det_noise *x);

/* The run made a verdict (or was the fault's anyway): what h held and what x still held back
 * (det_noise_drop) are dropped, the fault's own. */
static inline void det_noise_hold_drop(struct det_noise_hold *h, struct det_noise *x) {
  h->n = 0;
  det_noise_drop(x);
}

/* The normal distance, in standard deviations, of the sample a window of n (DET_NOISE_MIN..
 * DET_NOISE_LEN) feeding a median reads its tail from (its 97th percentile, or its second largest
 * while n < 64) from their median: 1.86 at 64, 1.38 at 12. NAN for another n. */
float det_noise_tail_z(int n);

/* 1 when the signal has DET_NOISE_MIN samples: base and spread mean something. */
static inline int det_noise_ready(const struct det_noise *x) { return x->n >= DET_NOISE_MIN; }

/* How far past its baseline (log units) a sample must be to be well outside the noise: the
 * larger of z spreads (more while the window is short: a spread from few samples reads low) and
 * the minimum effect. Meaningful once det_noise_ready. */
float det_noise_margin(const struct det_noise *x, const struct det_noise_knobs *k);

/* The same for a statistic whose spread is scale times x's: a median of k samples of x, say
 * (scale 1.25 / sqrt(k) for normal noise). */
float det_noise_margin_scaled(const struct det_noise *x, const struct det_noise_knobs *k,
                              float scale);

#endif
