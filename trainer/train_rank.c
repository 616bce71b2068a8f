/* train_rank.c -- what both training loops set up alike for a rank (train_rank.h). */
#include "train_rank.h"

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "c4_clock.h"
#include "c4_env.h"

int train_orig_rank(const struct c4_ranks *r) {
  return (int)c4_env_long("C4TRAIN_ORIG_RANK", r->rank, 0, INT_MAX);
}

double train_slow_factor(const struct train_opts *o, int orig_rank, int step) {
  int slow = orig_rank == o->slow_rank && o->slow_factor > 1 && step + 1 >= o->slow_from &&
             step + 1 <= o->slow_to;
  return slow ? o->slow_factor : 1;
}

void train_sleep_s(double s) {
  if (s <= 0) return;
  struct timespec ts = {(time_t)s, (long)((s - floor(s)) * 1e9)};
  while (nanosleep(&ts, &ts) != 0) {
  }
}

void train_stretch(uint64_t t0, double slow) {
  if (slow > 1) train_sleep_s((double)(c4_now_ns() - t0) * 1e-9 * (slow - 1));
}

int train_json_open(const struct train_opts *o, int rank, FILE **jf) {
  *jf = NULL;
  if (rank != 0) return 0;
  if (o->json) {
    *jf = stdout;
    return 0;
  }
  if (o->json_out && !(*jf = fopen(o->json_out, "a"))) {
    fprintf(stderr, "c4train: --json-out %s: %s\n", o->json_out, strerror(errno));
    return 1;
  }
  return 0;
}

int train_json_close(FILE *jf, const char *path) {
  if (!jf || jf == stdout) return 0;
  int bad = ferror(jf);
  errno = 0;
  if (fclose(jf) == 0 && !bad) return 0;
  if (errno) /* else a write failed earlier, its reason gone with it */
    fprintf(stderr, "c4train: --json-out %s: %s\n", path, strerror(errno));
  else
    fprintf(stderr, "c4train: --json-out %s: a write failed (a full disk?)\n", path);
  return 1;
}
