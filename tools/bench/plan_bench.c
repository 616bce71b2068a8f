/* plan_bench.c -- times c4plan's flow assignment on 1,024 hosts x 8 ports (32 leaves, 16 spines)
 * for ring and random traffic, median of 5 runs, and prints each plan's and random hashing's max
 * link load over the lower bound. Targets: <= 100 ms, plan ratio <= 1.05. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "assign.h"
#include "flows.h"
#include "topo.h"

#define RUNS 5

static double now_ms(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static int by_value(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* Plans the flows RUNS times; prints the median time and the ratios. Returns 0 or -1. */
static int bench(const char *name, const struct c4_plan_topo *t, struct c4_plan_flow *f, int n) {
  struct c4_plan_path *p = malloc(sizeof *p * (size_t)n);
  double ms[RUNS];
  if (n < 0 || !p) return free(p), free(f), -1;
  for (int r = 0; r < RUNS; r++) {
    double t0 = now_ms();
    if (c4_plan_assign(t, f, n, p) < 0) return free(p), free(f), -1;
    ms[r] = now_ms() - t0;
  }
  qsort(ms, RUNS, sizeof *ms, by_value);
  double bound = c4_plan_lower_bound(t, f, n), plan = c4_plan_max_load(t, f, n, p);
  if (c4_plan_hash(t, f, n, 1, p) < 0) return free(p), free(f), -1;
  double hash = c4_plan_max_load(t, f, n, p);
  printf("%-14s %6d flows  plan %.3f x bound  random hashing %.3f x bound  %.1f ms (median of "
         "%d)\n",
         name, n, plan / bound, hash / bound, ms[RUNS / 2], RUNS);
  free(p);
  free(f);
  return 0;
}

int main(void) {
  struct c4_plan_topo *t = c4_plan_topo_synth(1024, 8, 32, 16, 100, 0);
  struct c4_plan_flow *f;
  if (!t) return fprintf(stderr, "c4-plan-bench: out of memory\n"), 1;
  printf("1024 hosts x 8 ports, 32 leaves, 16 spines (non-blocking)\n");
  int n = c4_plan_flows_ring(t, 8, 1 << 26, &f), rc = bench("ring x8", t, f, n);
  n = c4_plan_flows_ring(t, 64, 1 << 26, &f);
  rc |= bench("ring x64", t, f, n);
  n = c4_plan_flows_random(t, 8, 1 << 26, 1, &f);
  rc |= bench("random x8", t, f, n);
  n = c4_plan_flows_random(t, 64, 1 << 26, 1, &f);
  rc |= bench("random x64", t, f, n);
  c4_plan_topo_free(t);
  if (rc) fprintf(stderr, "c4-plan-bench: planning failed\n");
  return rc ? 1 : 0;
}
