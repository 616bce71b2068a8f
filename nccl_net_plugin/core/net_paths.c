/* net_paths.c -- per-path throughput estimates and the chunk weights they give. Pure: the caller
 * serializes (the sending comm's claim lock). */
#include "net_paths.h"

#include <math.h>
#include <string.h>

void c4_paths_init(struct c4_paths *p, int n) {
  memset(p, 0, sizeof *p);
  p->n = n < 0 ? 0 : n > C4_PATHS_MAX ? C4_PATHS_MAX : n;
}

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
}

double c4_paths_noise(const struct c4_paths *p, int i) {
  if (i < 0 || i >= p->n || p->samples[i] < 2) return 0;
  double a = p->step[i];
  return p->jump[i] * sqrt(M_PI) / 2 * sqrt(a / (2 - a));
}

void c4_paths_sample(struct c4_paths *p, int i, uint64_t len, uint64_t ns) {
  c4_paths_sample_rate(p, i, len, (double)len / (double)(ns ? ns : 1), 0);
}

double c4_paths_weight(const struct c4_paths *p, int i) {
  if (i < 0 || i >= p->n || p->rate[i] == 0) return 1;
  double best = 0;
  for (int j = 0; j < p->n; j++)
    if (p->rate[j] > best) best = p->rate[j];
  int b = c4_paths_fastest(p);
  if (p->samples[i] < C4_PATHS_WARM) return 1;
  double w = p->rate[i] / best, ni = c4_paths_noise(p, i), nb = c4_paths_noise(p, b);
  if (w >= C4_PATHS_EVEN || -log(w) <= C4_PATHS_NOISE_K * sqrt(ni * ni + nb * nb)) return 1;
  return w < C4_PATHS_FLOOR ? C4_PATHS_FLOOR : w;
}

int c4_paths_changed(struct c4_paths *p, int i) {
  if (i < 0 || i >= p->n) return 0;
  double w = c4_paths_weight(p, i);
  if (!p->slow[i] && w < 0.5) return p->slow[i] = 1;
  if (p->slow[i] && w > 0.75) {
    p->slow[i] = 0;
    return -1;
  }
  return 0;
}

double c4_paths_share(const struct c4_paths *p, int i) {
  double sum = 0;
  for (int j = 0; j < p->n; j++)
    sum += c4_paths_weight(p, j);
  return sum > 0 ? c4_paths_weight(p, i) / sum : 1;
}

int c4_paths_fastest(const struct c4_paths *p) {
  int best = -1;
  for (int j = 0; j < p->n; j++)
    if (p->rate[j] > 0 && (best < 0 || p->rate[j] > p->rate[best])) best = j;
  return best;
}

uint64_t c4_paths_excess(struct c4_paths *p, int i, uint64_t queued, uint64_t fastest_queued,
                         uint64_t len, uint64_t fastest_len, uint64_t now) {
  if (i < 0 || i >= p->n) return 0;
  int f = c4_paths_fastest(p);
  /* (queued + len) / rate[i] <= (fastest_queued + fastest_len) / rate[f], in bytes on path i */
  double allow = c4_paths_weight(p, i) * (double)(fastest_queued + fastest_len);
  double need = (double)(queued + len);
  if (f < 0 || f == i || p->rate[i] == 0 || need <= allow) {
    p->held_since[i] = 0;
    return 0;
  }
  if (p->held_since[i] && now - p->held_since[i] >= C4_PATHS_PROBE_NS) {
    p->held_since[i] = 0;
    p->probe[i] = 1;
    return 0;
  }
  if (!p->held_since[i]) p->held_since[i] = now ? now : 1;
  return (uint64_t)(need - allow);
}
