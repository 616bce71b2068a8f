/* sched_1f1b.c -- 1F1B as a warm-up of forwards, a steady phase of pairs, a cool-down of
 * backwards; forwards and backwards each in micro-batch order. */
#include "sched_1f1b.h"

int sched_1f1b(int stage, int stages, int m, struct sched_op *out) {
  int warm = stages - 1 - stage < m ? stages - 1 - stage : m, n = 0, f = 0, b = 0;
  while (f < warm)
    out[n++] = (struct sched_op){0, f++};
  while (f < m) {
    out[n++] = (struct sched_op){0, f++};
    out[n++] = (struct sched_op){1, b++};
  }
  while (b < m)
    out[n++] = (struct sched_op){1, b++};
  return n;
}

int sched_1f1b_in_flight(int stage, int stages, int m) {
  return stages - stage < m ? stages - stage : m;
}
