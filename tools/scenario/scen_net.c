/* scen_net.c -- the transfers of c4scen's ring, double binary tree and pipeline steps. */
#include "scen_net.h"

#include <stdlib.h>
#include <string.h>

#include "c4_err.h"

/* Counter slots: [0, N) ring by sender, [N, 2N) p2p by sender, then per tree and phase by the
 * child end's rank. */
size_t c4_scen_net_slots(const struct c4_scen_job *j) { return 6 * (size_t)j->nranks; }

static void add(struct c4_scen_kind *k, int src, int dst, int algo, int phase, int child,
                uint64_t bytes, uint32_t slot) {
  struct c4_scen_xf *x = &k->xf[k->nxf++];
  *x = (struct c4_scen_xf){.src = src,
                           .dst = dst,
                           .slot = slot,
                           .algo = (uint8_t)algo,
                           .phase = (uint8_t)phase,
                           .child = child,
                           .bytes = bytes,
                           .conn = c4_scen_conn_id(src, dst, algo)};
  k->nops[src]++;
  k->nops[dst]++;
}

/* Channel g's ring: (h, g) -> (h + 1, g), 2 (H - 1) / H of the size over G channels. */
static void ring(const struct c4_scen_job *j, struct c4_scen_kind *k) {
  uint64_t H = (uint64_t)j->hosts, bytes = 2 * (H - 1) * k->bytes / (H * (uint64_t)j->gpus);
  for (int g = 0; g < j->gpus; g++)
    for (int h = 0; h < j->hosts; h++) {
      int src = c4_scen_rank(j, h, g), dst = c4_scen_rank(j, (h + 1) % j->hosts, g);
      add(k, src, dst, C4_SCEN_RING, 0, -1, bytes, (uint32_t)src);
    }
}

/* Two heap-shaped trees over the hosts per channel, each carrying half: every child sends its
 * share up (phase 0), every parent sends it back down (phase 1). */
static void tree(const struct c4_scen_job *j, struct c4_scen_kind *k) {
  uint64_t bytes = k->bytes / (uint64_t)j->gpus / 2;
  size_t N = (size_t)j->nranks;
  for (int phase = 0; phase < 2; phase++) {
    for (int t = 0; t < 2; t++)
      for (int g = 0; g < j->gpus; g++)
        for (int pos = 1; pos < j->hosts; pos++) {
          int c = c4_scen_rank(j, c4_scen_tree_host(j, t, pos), g);
          int p = c4_scen_rank(j, c4_scen_tree_host(j, t, (pos - 1) / 2), g);
          uint32_t slot = (uint32_t)(2 * N + (size_t)(2 * t + phase) * N + (size_t)c);
          if (phase == 0)
            add(k, c, p, C4_SCEN_TREE0 + t, 0, pos, bytes, slot);
          else
            add(k, p, c, C4_SCEN_TREE0 + t, 1, pos, bytes, slot);
        }
    if (phase == 0) k->nup = k->nxf;
  }
}

/* Pipeline step: (h, g) sends to (h + 1 mod H, g). */
static void p2p(const struct c4_scen_job *j, struct c4_scen_kind *k) {
  for (int g = 0; g < j->gpus; g++)
    for (int h = 0; h < j->hosts; h++) {
      int src = c4_scen_rank(j, h, g), dst = c4_scen_rank(j, (h + 1) % j->hosts, g);
      add(k, src, dst, C4_SCEN_P2P, 0, -1, k->bytes, (uint32_t)(j->nranks + src));
    }
}

int c4_scen_net_build(const struct c4_scen_job *j, struct c4_scen_kind *k) {
  static const struct {
    const char *func, *algo;
    uint64_t mib;
    int p2p;
  } def[C4_SCEN_NKINDS] = {{"AllReduce", "Ring", 64, 0},
                           {"AllReduce", "Tree", 4, 0},
                           {"AllReduce", "Ring", 16, 0},
                           {"Send", "", 8, 1}};
  memset(k, 0, sizeof *k * C4_SCEN_NKINDS);
  size_t N = (size_t)j->nranks, H = (size_t)j->hosts, G = (size_t)j->gpus;
  for (int i = 0; i < C4_SCEN_NKINDS; i++) {
    k[i] = (struct c4_scen_kind){
        .func = def[i].func, .algo = def[i].algo, .bytes = def[i].mib << 20, .p2p = def[i].p2p};
    size_t cap = i == C4_SCEN_K_TREE4 ? 4 * G * H : G * H;
    k[i].xf = malloc(sizeof *k[i].xf * cap);
    k[i].nops = calloc(N, sizeof *k[i].nops);
    if (!k[i].xf || !k[i].nops) {
      c4_scen_net_free(k);
      return C4_ENOMEM;
    }
    /* one host: the allreduce stays on NVLink, 2 (G - 1) / G of the size through each GPU */
    k[i].local_ns =
        G > 1 ? 2.0 * (double)(G - 1) / (double)G * (double)k[i].bytes / C4_SCEN_LOCAL_BPNS : 1000;
    if (H < 2) continue;
    if (i == C4_SCEN_K_TREE4)
      tree(j, &k[i]);
    else if (i == C4_SCEN_K_P2P)
      p2p(j, &k[i]);
    else
      ring(j, &k[i]);
    if (i != C4_SCEN_K_TREE4) k[i].nup = k[i].nxf;
  }
  return 0;
}

void c4_scen_net_free(struct c4_scen_kind *k) {
  for (int i = 0; i < C4_SCEN_NKINDS; i++) {
    free(k[i].xf);
    free(k[i].nops);
    k[i].xf = NULL;
    k[i].nops = NULL;
  }
}

/* 1 when heap position a lies strictly below b (b is an ancestor of a). */
static int below(int a, int b) {
  if (a <= b) return 0;
  while (a > b)
    a = (a - 1) / 2;
  return a == b;
}

int c4_scen_net_stalls(const struct c4_scen_job *j, const struct c4_scen_xf *dead,
                       const struct c4_scen_xf *x) {
  if (x == dead || x->algo != dead->algo || x->src % j->gpus != dead->src % j->gpus) return 0;
  if (dead->algo == C4_SCEN_RING) return 1;
  if (dead->algo == C4_SCEN_P2P) return 0;
  if (dead->phase == 0) /* reduce stuck below x's child: x's reduce and every broadcast wait */
    return x->phase == 1 || below(dead->child, x->child);
  return x->phase == 1 && below(x->child, dead->child);
}

uint64_t c4_scen_net_moved_behind(const struct c4_scen_job *j, const struct c4_scen_xf *dead,
                                  const struct c4_scen_xf *x, uint64_t dead_moved) {
  if (dead->algo != C4_SCEN_RING || x->algo != C4_SCEN_RING) return dead_moved;
  int h = j->hosts, hops = ((x->src / j->gpus - dead->dst / j->gpus) % h + h) % h + 1;
  uint64_t step = x->bytes / (uint64_t)(2 * (h - 1)), moved = dead_moved + (uint64_t)hops * step;
  return moved < x->bytes ? moved : x->bytes;
}
