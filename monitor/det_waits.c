/* det_waits.c -- per process, its recent receive intervals (det_waits.h), in a fixed hash table. */
#include "det_waits.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_hash.h"

#define WAITS_PROCS 8192 /* processes; a power of two */
#define WAITS_KEPT 64    /* merged receive intervals kept per process */

struct waits {
  const struct c4_det_job *job;
  char host[C4_HOST_MAX];
  uint32_t pid;
  int used;
  unsigned next; /* intervals taken so far; the newest is at (next - 1) % WAITS_KEPT */
  uint64_t t0[WAITS_KEPT], t1[WAITS_KEPT];
};

static struct waits *table; /* WAITS_PROCS entries, on first use */

static struct waits *find(const struct c4_det_job *job, const char *host, uint32_t pid, int add) {
  if (!table && (!add || !(table = calloc(WAITS_PROCS, sizeof *table)))) return NULL;
  uint64_t h = c4_fnv1a(c4_fnv1a_str(C4_FNV_BASIS_OLD, host), &pid, sizeof pid);
  for (unsigned i = 0; i < WAITS_PROCS; i++) {
    struct waits *w = &table[(h + i) & (WAITS_PROCS - 1)];
    if (!w->used) {
      if (!add) return NULL;
      w->used = 1;
      w->job = job;
      w->pid = pid;
      snprintf(w->host, sizeof w->host, "%s", host);
      return w;
    }
    if (w->job == job && w->pid == pid && !strncmp(w->host, host, C4_HOST_MAX)) return w;
  }
  return NULL;
}

void det_waits_take(const struct c4_det_job *job, const struct c4_xfer_record *x) {
  if (x->dir != C4_DIR_RECV || x->status != C4_XFER_OK || x->t_done <= x->t_posted) return;
  char host[C4_HOST_MAX];
  snprintf(host, sizeof host, "%.*s", C4_HOST_MAX - 1, x->self.host);
  struct waits *w = find(job, host, x->self.pid, 1);
  if (!w) return;
  unsigned last = (w->next - 1) % WAITS_KEPT;
  if (w->next && x->t_posted <= w->t1[last] && x->t_done >= w->t0[last]) {
    if (x->t_posted < w->t0[last]) w->t0[last] = x->t_posted;
    if (x->t_done > w->t1[last]) w->t1[last] = x->t_done;
    return;
  }
  w->t0[w->next % WAITS_KEPT] = x->t_posted;
  w->t1[w->next % WAITS_KEPT] = x->t_done;
  w->next++;
}

uint64_t det_waits_blocked(const struct c4_det_job *job, const char *host, uint32_t pid,
                           uint64_t t0, uint64_t t1) {
  struct waits *w = host[0] ? find(job, host, pid, 0) : NULL;
  if (!w || t1 <= t0) return 0;
  uint64_t sum = 0, covered = t0; /* newest first is not start order: sum the clipped union */
  unsigned n = w->next < WAITS_KEPT ? w->next : WAITS_KEPT;
  for (;;) { /* intervals are few and nearly sorted: take the earliest start past covered */
    uint64_t best0 = UINT64_MAX, best1 = 0;
    for (unsigned i = 0; i < n; i++) {
      uint64_t a = w->t0[i] > covered ? w->t0[i] : covered, b = w->t1[i] < t1 ? w->t1[i] : t1;
      if (b > a && a < best0) best0 = a, best1 = b;
    }
    if (best0 == UINT64_MAX) return sum;
    sum += best1 - best0;
    covered = best1;
  }
}

void det_waits_reset(void) {
  free(table);
  table = NULL;
}
