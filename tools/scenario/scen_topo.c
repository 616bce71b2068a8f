/* scen_topo.c -- names, trees, host pairs and connection ids of c4scen's simulated job. */
#include "scen_topo.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "c4_err.h"
#include "scen_rng.h"

int c4_scen_job_init(struct c4_scen_job *j, int hosts, int gpus, int spines, double seconds,
                     double rate) {
  *j = (struct c4_scen_job){.hosts = hosts,
                            .gpus = gpus,
                            .nranks = hosts * gpus,
                            .spines = spines,
                            .seconds = seconds,
                            .rate = rate,
                            .t_end = C4_SCEN_T0 + (uint64_t)(seconds * 1e9)};
  j->names = calloc((size_t)hosts, sizeof *j->names);
  if (!j->names) return C4_ENOMEM;
  for (int h = 0; h < hosts; h++)
    snprintf(j->names[h], C4_HOST_MAX, "h%04d", h);
  return 0;
}

void c4_scen_job_free(struct c4_scen_job *j) {
  free(j->names);
  j->names = NULL;
}

int c4_scen_tree_host(const struct c4_scen_job *j, int tree, int pos) {
  return tree ? j->hosts - 1 - pos : pos;
}

int c4_scen_tree_pos(const struct c4_scen_job *j, int tree, int host) {
  return tree ? j->hosts - 1 - host : host;
}

/* 1 when a and b are parent and child in tree. */
static int tree_edge(const struct c4_scen_job *j, int tree, int a, int b) {
  int pa = c4_scen_tree_pos(j, tree, a), pb = c4_scen_tree_pos(j, tree, b);
  return (pa > 0 && (pa - 1) / 2 == pb) || (pb > 0 && (pb - 1) / 2 == pa);
}

int c4_scen_carries(const struct c4_scen_job *j, int src, int dst) {
  if (src == dst || j->hosts < 2) return 0;
  return dst == (src + 1) % j->hosts || tree_edge(j, 0, src, dst) || tree_edge(j, 1, src, dst);
}

static int cmp_u64(const void *a, const void *b) {
  uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
  return x < y ? -1 : x > y;
}

long c4_scen_pairs(const struct c4_scen_job *j, uint64_t **out) {
  long H = j->hosts, n = 0;
  uint64_t *p = malloc(sizeof *p * (size_t)(6 * H + 1));
  if (!p) return C4_ENOMEM;
  for (long h = 0; h < H && H >= 2; h++) {
    p[n++] = (uint64_t)(h * H + (h + 1) % H);
    for (int t = 0; t < 2; t++) {
      long pos = c4_scen_tree_pos(j, t, (int)h);
      if (pos == 0) continue;
      long parent = c4_scen_tree_host(j, t, (int)((pos - 1) / 2));
      p[n++] = (uint64_t)(h * H + parent);
      p[n++] = (uint64_t)(parent * H + h);
    }
  }
  qsort(p, (size_t)n, sizeof *p, cmp_u64);
  long k = 0;
  for (long i = 0; i < n; i++)
    if (k == 0 || p[k - 1] != p[i]) p[k++] = p[i];
  *out = p;
  return k;
}

uint64_t c4_scen_conn_id(int src, int dst, int algo) {
  uint64_t id = c4_scen_mix64(((uint64_t)(uint32_t)src << 34) ^ ((uint64_t)(uint32_t)dst << 2) ^
                              (uint64_t)algo ^ 0xc4c4000000000000ull);
  return id ? id : 1;
}

int c4_scen_host_parse(const struct c4_scen_job *j, const char *s) {
  if (s[0] == 'h') s++;
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < 0 || v >= j->hosts) return C4_EINVAL;
  return (int)v;
}
