/* net_paths.c -- per-path throughput estimates and the chunk weights they give. Pure: the caller
 * serializes (the sending comm's claim lock). */
#include "net_paths.h"

#include <math.h>
#include <string.h>

#include "c4_err.h"

void c4_paths_init(struct c4_paths *p, int n) {
  memset(p, 0, sizeof *p);
  p->n = n < 0 ? 0 : n > C4_PATHS_MAX ? C4_PATHS_MAX : n;
  p->fair = p->fair_ref = -1;
}

static void settle(struct c4_paths *p);

void c4_paths_sample_rate(struct c4_paths *p, int i, uint64_t len, double rate, double span_ns) {
  if (i < 0 || i >= p->n || len == 0) return;
  p->bytes[i] += len;
  p->chunks[i]++;
  if (c4_paths_weight(p, i) < 1) p->uneven[i]++;
  if (!(rate > 0)) return; /* the bytes count, the rate learns nothing */
  /* A sample weighs the time it covers, by default the time the path needs for the chunk at that
   * rate: a chunk the send buffer swallowed in microseconds still stands for the milliseconds the
   * path spends on it. */
  double carried_ns = span_ns > 0 ? span_ns : (double)len / rate;
  double alpha = p->rate[i] == 0 ? 1 : 1 - exp(-carried_ns / C4_PATHS_TAU_NS);
  if (alpha > C4_PATHS_STEP_MAX && p->rate[i] != 0) alpha = C4_PATHS_STEP_MAX;
  p->rate[i] += alpha * (rate - p->rate[i]);
  if (p->last[i] > 0) {
    double jump = fabs(log(rate / p->last[i]));
    if (jump > M_LN2) jump = M_LN2;
    double beta = p->samples[i] == 1 ? 1 : 1 - exp(-carried_ns / C4_PATHS_NOISE_TAU_NS);
    p->jump[i] += beta * (jump - p->jump[i]);
    p->step[i] += beta * (alpha - p->step[i]);
  }
  p->last[i] = rate;
  p->samples[i]++;
  settle(p);
}

double c4_paths_noise(const struct c4_paths *p, int i) {
  if (i < 0 || i >= p->n || p->samples[i] < 2) return 0;
  double a = p->step[i];
  return p->jump[i] * sqrt(M_PI) / 2 * sqrt(a / (2 - a));
}

void c4_paths_sample(struct c4_paths *p, int i, uint64_t len, uint64_t ns) {
  c4_paths_sample_rate(p, i, len, (double)len / (double)(ns ? ns : 1), 0);
}

/* 1 when path i is avoided and some other path is not. */
static int avoided(const struct c4_paths *p, int i) {
  if (!p->avoid[i]) return 0;
  for (int j = 0; j < p->n; j++)
    if (!p->avoid[j]) return 1;
  return 0;
}

/* A lift is c4mon's word that the path is back, but the path's own estimate is what it measured
 * at the floor weight (small chunks behind the others' in the host's queue: slow), and its
 * re-measures had backed off to every 2 s; so it is re-measured at the next claim. */
void c4_paths_avoid(struct c4_paths *p, int i, int on) {
  if (i < 0 || i >= p->n) return;
  if (p->avoid[i] && !on) {
    p->fair_every[i] = C4_PATHS_FAIR_FIRST_NS;
    p->fair_next[i] = 1; /* due: any time now is past it */
  }
  p->avoid[i] = on != 0;
  settle(p);
}

double c4_paths_weight(const struct c4_paths *p, int i) {
  if (i < 0 || i >= p->n) return 1;
  if (avoided(p, i)) return C4_PATHS_FLOOR;
  if (!p->off_even[i]) return 1;
  int b = c4_paths_fastest(p);
  double w = b >= 0 && p->rate[b] > 0 ? p->rate[i] / p->rate[b] : 1;
  return w >= 1 ? 1 : w < C4_PATHS_FLOOR ? C4_PATHS_FLOOR : w;
}

/* Whether each path weighs less than 1, decided again after an estimate moved. A path departs
 * from even shares only when its rate is out of the dead band (below C4_PATHS_EVEN of the
 * fastest's) and out of the noise band (C4_PATHS_NOISE_K noises); once departed, it comes back
 * inside the dead band only, however noisy its samples are (a path kept at the floor weight
 * measures tiny chunks, whose noise would open the band down to a third). Without that
 * hysteresis, on the degraded namespace fabric (a path at a quarter, sample noise 0.1-0.2) a slow
 * path's estimate wandered about the edge of the noise band, and the path flipped to an even
 * share and back every few samples: each flip put half of every message on it, and restarted its
 * re-measures at the shortest interval. */
static void settle(struct c4_paths *p) {
  int b = c4_paths_fastest(p);
  double best = b >= 0 ? p->rate[b] : 0, nb = c4_paths_noise(p, b);
  for (int i = 0; i < p->n; i++) {
    if (p->rate[i] == 0 || !(best > 0) || p->rate[i] >= best || p->samples[i] < C4_PATHS_WARM) {
      p->off_even[i] = 0;
      continue;
    }
    double w = p->rate[i] / best, ni = c4_paths_noise(p, i);
    if (w >= C4_PATHS_EVEN)
      p->off_even[i] = 0;
    else if (-log(w) > C4_PATHS_NOISE_K * sqrt(ni * ni + nb * nb))
      p->off_even[i] = 1;
  }
}

int c4_paths_changed(struct c4_paths *p, int i) {
  if (i < 0 || i >= p->n) return 0;
  double w = c4_paths_weight(p, i);
  if (!p->slow[i] && w < 0.5) return p->slow[i] = 1;
  if (p->slow[i] && w > 0.75) {
    p->slow[i] = 0;
    return C4_PATHS_BACK;
  }
  return 0;
}

double c4_paths_share(const struct c4_paths *p, int i) {
  if (c4_paths_fair_open(p)) return p->n ? 1.0 / p->n : 1;
  double sum = 0;
  for (int j = 0; j < p->n; j++)
    sum += c4_paths_weight(p, j);
  return sum > 0 ? c4_paths_weight(p, i) / sum : 1;
}

int c4_paths_fastest(const struct c4_paths *p) {
  int best = -1;
  for (int j = 0; j < p->n; j++)
    if (p->rate[j] > 0 && !avoided(p, j) && (best < 0 || p->rate[j] > p->rate[best])) best = j;
  return best;
}

uint64_t c4_paths_excess(const struct c4_paths *p, int i, uint64_t queued, uint64_t fastest_queued,
                         uint64_t len, uint64_t fastest_len) {
  if (i < 0 || i >= p->n) return 0;
  int f = c4_paths_fastest(p);
  /* (queued + len) / rate[i] <= (fastest_queued + fastest_len) / rate[f], in bytes on path i; while
   * a re-measure is open, as if the rates were even: no path queues much more than the fastest */
  double w = c4_paths_fair_open(p) ? 1 : c4_paths_weight(p, i);
  double allow = w * (double)(fastest_queued + fastest_len);
  double need = (double)(queued + len);
  if (f < 0 || f == i || p->rate[i] == 0 || need <= allow) return 0;
  return (uint64_t)(need - allow);
}

int c4_paths_fair_tick(struct c4_paths *p, uint64_t now) {
  if (p->fair >= 0) {
    if (now - p->fair_start < C4_PATHS_FAIR_GIVE_UP_NS) return p->fair;
    p->fair_dropped++;
    p->fair_next[p->fair] = now + p->fair_every[p->fair];
    p->fair = p->fair_ref = -1;
  }
  int due = -1;
  for (int i = 0; i < p->n; i++) {
    if (c4_paths_weight(p, i) >= 1) { /* even: nothing to re-measure, and a fresh start later */
      p->fair_next[i] = p->fair_every[i] = 0;
      continue;
    }
    if (!p->fair_every[i]) p->fair_every[i] = C4_PATHS_FAIR_FIRST_NS;
    if (!p->fair_next[i]) p->fair_next[i] = now + p->fair_every[i];
    if (due < 0 && now >= p->fair_next[i]) due = i;
  }
  int f = c4_paths_fastest(p);
  if (due < 0 || f < 0 || f == due) return C4_NONE;
  p->fair = due;
  p->fair_ref = f;
  p->fair_start = now;
  p->fair_gen++;
  p->fair_runs++;
  return due;
}

/* Closes the open re-measure with the two rates it measured (bytes per ns). */
static int fair_judge(struct c4_paths *p, double rate_i, double rate_f, uint64_t now) {
  int i = p->fair, f = p->fair_ref;
  p->fair = p->fair_ref = -1;
  if (!(rate_i > 0) || !(rate_f > 0)) {
    p->fair_dropped++;
    p->fair_next[i] = now + p->fair_every[i];
    return C4_PATHS_FAIR_OPEN;
  }
  p->rate[i] = p->rate[f] * rate_i / rate_f;
  int avoid = p->avoid[i];
  p->avoid[i] = 0; /* judged by its rate: found at speed, c4mon's avoid is lifted */
  settle(p);
  if (c4_paths_weight(p, i) >= 1) {
    p->fair_back++;
    p->fair_next[i] = p->fair_every[i] = 0;
    return 1;
  }
  p->avoid[i] = avoid;
  settle(p);
  p->fair_slow++;
  p->fair_every[i] *= 2;
  if (p->fair_every[i] > C4_PATHS_FAIR_MAX_NS) p->fair_every[i] = C4_PATHS_FAIR_MAX_NS;
  p->fair_next[i] = now + p->fair_every[i];
  return 0;
}

/* Path i's rate over the open re-measure (bytes per ns; 0: none) and its time (ns), from its counts
 * since its baseline: the smaller of the kernel's and the waited chunks' rates. */
static double fair_rate(const struct c4_paths *p, int i, double *ns) {
  const struct c4_paths_count *a = &p->fair_base[i], *b = &p->fair_seen[i];
  double busy = (double)(b->busy_ns - a->busy_ns), waited = (double)(b->waited_ns - a->waited_ns);
  double acked = (double)(b->acked - a->acked),
         wbytes = (double)(b->waited_bytes - a->waited_bytes);
  *ns = busy > waited ? busy : waited;
  double t = busy > C4_PATHS_FAIR_REF_MIN_NS ? busy : C4_PATHS_FAIR_REF_MIN_NS;
  double rate = acked / t;
  if (waited > 0 && wbytes / waited < rate) rate = wbytes / waited;
  return rate;
}

/* 1 when path i's busy time over the open re-measure was held back by its receiver's window. */
static int held_back(const struct c4_paths *p, int i) {
  const struct c4_paths_count *a = &p->fair_base[i], *b = &p->fair_seen[i];
  return c4_paths_held(b->busy_ns - a->busy_ns, b->held_ns - a->held_ns);
}

int c4_paths_fair_progress(struct c4_paths *p, int i, const struct c4_paths_count *count,
                           uint64_t now, struct c4_paths_fair_done *done) {
  if (!c4_paths_fair_open(p) || i < 0 || i >= p->n) return C4_PATHS_FAIR_OPEN;
  p->fair_seen[i] = *count;
  if (p->fair_base_gen[i] != p->fair_gen) {
    p->fair_base_gen[i] = p->fair_gen;
    p->fair_base[i] = *count;
    return C4_PATHS_FAIR_OPEN;
  }
  int r = p->fair, f = p->fair_ref;
  double ti, tf;
  if (i != r || p->fair_base_gen[f] != p->fair_gen) return C4_PATHS_FAIR_OPEN;
  double rate_i = fair_rate(p, r, &ti);
  if (ti < C4_PATHS_FAIR_BUSY_NS) return C4_PATHS_FAIR_OPEN;
  double rate_f = fair_rate(p, f, &tf);
  /* the reference has had nothing to send since its baseline (its chunks of the message were all
   * out), or has only begun its next message (little acknowledged in less than the busy time it
   * is counted at least: its rate would read low, and the path fast): no ratio yet, the
   * re-measure stays open for more (until C4_PATHS_FAIR_GIVE_UP_NS) */
  uint64_t acked_f = p->fair_seen[f].acked - p->fair_base[f].acked;
  if (rate_i > 0 &&
      (!(rate_f > 0) || (tf < C4_PATHS_FAIR_REF_MIN_NS && acked_f < C4_PATHS_FAIR_CHUNK)))
    return C4_PATHS_FAIR_OPEN;
  /* a reader that held one of the two back and not the other skews their ratio (a rank stopped
   * while one had a chunk in flight): no result; one that held both alike (a slow reader, a
   * loopback test's own thread) slows both alike, and the ratio stands */
  if (held_back(p, r) != held_back(p, f)) return fair_judge(p, 0, rate_f, now);
  *done = (struct c4_paths_fair_done){r, f, rate_i * ti, ti, rate_f * tf, tf};
  return fair_judge(p, rate_i, rate_f, now);
}
