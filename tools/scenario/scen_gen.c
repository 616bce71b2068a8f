/* scen_gen.c -- the job simulation behind c4scen gen (the model is docs/scenarios.md): ranks
 * compute, arrive, wait for the last one, move their bytes over the network, complete; faults
 * slow or stop that; heartbeats report each rank's counts every second. */
#include "scen_gen.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "scen_net.h"
#include "scen_rng.h"

#define NEVER UINT64_MAX
#define INIT_NS 100000000ull /* from the comm records to the first compute */
#define HB_NS 1000000000ull
#define ENQUEUE_NS 20000ull

struct gen {
  const struct c4_scen_job *j;
  struct c4_scen_fault *f;
  int nf;
  struct c4_scen_blip *b;
  int nb;
  struct c4_scen_out *out;
  struct c4_scen_kind kinds[C4_SCEN_NKINDS];
  int npattern;
  double compute_ns[C4_SCEN_NKINDS];
  struct c4_scen_rng rng;
  uint64_t s;                 /* the current collective: how many came before it */
  uint64_t world_seq, steps;  /* collectives on the world communicator; pipeline steps */
  uint64_t *a, *d_prev, *d;   /* per rank: arrival at s, completion of s - 1, completion of s */
  double *cfac;               /* per rank: a compute blip's factor for this collective */
  uint64_t *next_hb;          /* per rank */
  uint64_t *seq;              /* per connection slot: its next request number */
  uint64_t *t_first, *t_done; /* per transfer of the current collective */
  uint8_t *dead;              /* per transfer: stopped by the comm_hang */
  struct c4_scen_fault *stop; /* the fault that stops the job, or NULL */
  const struct c4_scen_fault *active[C4_SCEN_MAX_FAULTS]; /* network faults now */
  int nactive;
};

/* ------------------------------------------------------------------------------------------ */
/* records */

static void set_name(char *dst, const char *src) {
  size_t n = strlen(src);
  memcpy(dst, src, n + 1);
}

static void identity(const struct gen *g, struct c4_identity *id, int rank) {
  memcpy(id->host, g->j->names[rank / g->j->gpus], C4_HOST_MAX);
  id->pid = c4_scen_pid(rank);
  id->rank = rank;
  id->dev = rank % g->j->gpus;
}

/* One end's record of transfer x: dir C4_DIR_SEND (self = sender) or C4_DIR_RECV. */
static void xfer_rec(struct gen *g, const struct c4_scen_xf *x, int dir, int status,
                     uint64_t t_post, uint64_t t_first, uint64_t t_done, uint64_t bytes,
                     uint64_t seq) {
  if (status == C4_XFER_PENDING && t_post + C4_SCEN_STUCK_NS > g->j->t_end) return;
  struct c4_record *r = c4_scen_out_add(g->out, C4_REC_XFER);
  if (!r) return;
  struct c4_xfer_record *w = &r->xfer;
  w->version = C4_RECORD_VERSION;
  w->dir = (uint8_t)dir;
  w->status = (uint8_t)status;
  w->tag = x->src;
  w->conn_id = x->conn;
  w->nccl_comm = x->algo == C4_SCEN_P2P ? C4_SCEN_PIPE : C4_SCEN_WORLD;
  w->seq = seq;
  w->bytes = bytes;
  w->t_posted = t_post;
  w->t_first_byte = t_first;
  w->t_done = t_done;
  identity(g, &w->self, dir == C4_DIR_SEND ? x->src : x->dst);
  identity(g, &w->peer, dir == C4_DIR_SEND ? x->dst : x->src);
}

/* Rank r's coll record(s) for the current collective of kind k; done 0: it never completed. */
static void coll_recs(struct gen *g, int kind, int r, uint64_t done) {
  const struct c4_scen_kind *k = &g->kinds[kind];
  const struct c4_scen_job *j = g->j;
  for (int i = 0; i < (k->p2p ? 2 : 1); i++) {
    struct c4_record *rec = c4_scen_out_add(g->out, C4_REC_COLL);
    if (!rec) return;
    struct c4_coll_record *c = &rec->coll;
    int h = r / j->gpus, gpu = r % j->gpus;
    c->comm = k->p2p ? C4_SCEN_PIPE : C4_SCEN_WORLD;
    c->seq = k->p2p ? 2 * g->steps + (uint64_t)i : g->world_seq;
    c->rank = r;
    c->nranks = j->nranks;
    c->is_p2p = (uint8_t)k->p2p;
    c->nchannels = (uint8_t)(k->p2p ? 1 : (j->gpus < 255 ? j->gpus : 255));
    c->nops = k->p2p ? 1 : k->nops[r];
    c->root = !k->p2p  ? -1
              : i == 0 ? c4_scen_rank(j, (h + 1) % j->hosts, gpu)
                       : c4_scen_rank(j, (h + j->hosts - 1) % j->hosts, gpu);
    c->bytes = k->bytes;
    c->count = k->bytes / 4;
    set_name(c->func, k->p2p ? (i == 0 ? "Send" : "Recv") : k->func);
    set_name(c->dtype, "ncclFloat32");
    set_name(c->algo, k->algo);
    set_name(c->proto, "Simple");
    c->t_arrive = g->a[r];
    c->t_enqueued = g->a[r] + ENQUEUE_NS;
    c->t_done = done;
  }
}

/* Heartbeats of every rank due before `before` (and within the run), with the counts of the
 * current state: collectives before s all entered, s entered once a rank arrived; s - 1 done
 * once its completion passed. */
static void heartbeats(struct gen *g, uint64_t before) {
  for (int r = 0; r < g->j->nranks; r++)
    for (uint64_t t; (t = g->next_hb[r]) < before && t <= g->j->t_end; g->next_hb[r] += HB_NS) {
      struct c4_record *rec = c4_scen_out_add(g->out, C4_REC_RANK);
      if (!rec) return;
      struct c4_rank_record *k = &rec->rank;
      k->rank = r;
      k->pid = c4_scen_pid(r);
      k->event = C4_RANK_HB;
      memcpy(k->host, g->j->names[r / g->j->gpus], C4_HOST_MAX);
      k->t = t;
      k->entered = g->s + (g->a[r] <= t);
      k->done = g->s ? g->s - 1 + (g->d_prev[r] <= t) : 0;
    }
}

/* ------------------------------------------------------------------------------------------ */
/* the model */

/* Each rank's arrival at the current collective; NEVER for a rank that is hung or lost by then.
 * Returns the last arrival of the others, and *missing = 1 when someone never comes. */
static uint64_t arrivals(struct gen *g, int kind, int *missing) {
  const struct c4_scen_job *j = g->j;
  for (int i = 0; i < g->nb; i++) {
    struct c4_scen_blip *b = &g->b[i];
    if (b->what == C4_SCEN_BLIP_COMPUTE && !b->at && g->d_prev[b->rank] >= b->due) {
      g->cfac[b->rank] *= 3;
      b->at = g->d_prev[b->rank];
    }
  }
  uint64_t start = 0;
  *missing = 0;
  for (int r = 0; r < j->nranks; r++) {
    double fac = g->cfac[r];
    g->cfac[r] = 1;
    for (int i = 0; i < g->nf; i++)
      if (g->f[i].kind == C4_SCEN_STRAGGLER && g->f[i].rank == r &&
          c4_scen_fault_active(&g->f[i], g->d_prev[r]))
        fac *= g->f[i].factor;
    double c = g->compute_ns[kind] * fac * c4_scen_rng_lognormal(&g->rng, 0.03);
    g->a[r] = g->d_prev[r] + (uint64_t)c;
    const struct c4_scen_fault *st = g->stop;
    if (st && st->kind != C4_SCEN_COMM_HANG && st->rank == r && g->a[r] >= st->onset) {
      g->a[r] = NEVER;
      *missing = 1;
    } else if (g->a[r] > start) {
      start = g->a[r];
    }
  }
  return start;
}

/* The first pending blip of kind what due by t: marks it as happening at t; its rank or -1. */
static int blip_now(struct gen *g, int what, uint64_t t) {
  for (int i = 0; i < g->nb; i++)
    if (g->b[i].what == what && !g->b[i].at && g->b[i].due <= t) {
      g->b[i].at = t;
      return g->b[i].rank;
    }
  return C4_NONE;
}

/* Times the transfers of the current collective, which starts at start. Returns its duration. */
static uint64_t timing(struct gen *g, const struct c4_scen_kind *k, uint64_t start) {
  const struct c4_scen_job *j = g->j;
  g->nactive = 0;
  for (int i = 0; i < g->nf; i++)
    if (g->f[i].kind >= C4_SCEN_NIC_TX && g->f[i].kind <= C4_SCEN_PATH &&
        c4_scen_fault_active(&g->f[i], start))
      g->active[g->nactive++] = &g->f[i];
  int nic = -1, slow = -1;
  if (k->nxf) {
    nic = blip_now(g, C4_SCEN_BLIP_NIC, start);
    slow = blip_now(g, C4_SCEN_BLIP_XFER, start);
  }
  uint64_t base = start + C4_SCEN_LAT_NS, end = start;
  for (size_t i = 0; i < k->nxf; i++) {
    if (i == k->nup) base = end + C4_SCEN_LAT_NS; /* the broadcast follows the reduce */
    const struct c4_scen_xf *x = &k->xf[i];
    double fac = 1;
    for (int a = 0; a < g->nactive; a++)
      fac = fmin(fac, c4_scen_fault_rate(j, g->active[a], x->src, x->dst));
    if (x->src == nic || x->dst == nic) fac = fmin(fac, 0.5);
    double ns = (double)x->bytes / (C4_SCEN_NIC_BPNS * fac) * c4_scen_rng_lognormal(&g->rng, 0.02);
    if (x->src == slow) {
      ns *= 5;
      slow = -1;
    }
    g->t_first[i] = base;
    g->t_done[i] = base + (uint64_t)ns;
    if (g->t_done[i] > end) end = g->t_done[i];
  }
  return k->nxf ? end - start : (uint64_t)k->local_ns;
}

/* Marks the transfers the comm_hang stops in this collective; returns how many. */
static int find_dead(struct gen *g, const struct c4_scen_kind *k) {
  const struct c4_scen_fault *f = g->stop;
  if (!f || f->kind != C4_SCEN_COMM_HANG || f->stall) return 0;
  int src = c4_scen_rank(g->j, f->host, f->dev), dst = c4_scen_rank(g->j, f->dst_host, f->dev);
  int n = 0;
  for (size_t i = 0; i < k->nxf; i++) {
    g->dead[i] = k->xf[i].src == src && k->xf[i].dst == dst && g->t_done[i] > f->onset;
    n += g->dead[i];
  }
  return n;
}

/* Bytes transfer i moved before the connection died at t. */
static uint64_t moved_before(const struct gen *g, const struct c4_scen_xf *x, size_t i,
                             uint64_t t) {
  if (t <= g->t_first[i]) return 0;
  double frac = (double)(t - g->t_first[i]) / (double)(g->t_done[i] - g->t_first[i] + 1);
  return frac >= 1 ? x->bytes : (uint64_t)(frac * (double)x->bytes);
}

/* The records of a collective that hangs on a dead connection: its send and receive pending,
 * the receives stalled behind it pending, the rest complete; no rank completes. */
static void hung_records(struct gen *g, int kind) {
  const struct c4_scen_kind *k = &g->kinds[kind];
  uint64_t t = g->stop->onset;
  size_t dead[8], ndead = 0;
  for (size_t i = 0; i < k->nxf && ndead < 8; i++)
    if (g->dead[i]) dead[ndead++] = i;
  for (size_t i = 0; i < k->nxf; i++) {
    const struct c4_scen_xf *x = &k->xf[i];
    uint64_t seq = g->seq[x->slot]++;
    size_t why = k->nxf; /* the dead transfer i waits for, if any */
    for (size_t d = 0; d < ndead && why == k->nxf; d++)
      if (dead[d] == i || c4_scen_net_stalls(g->j, &k->xf[dead[d]], x)) why = dead[d];
    if (why == k->nxf) {
      xfer_rec(g, x, C4_DIR_SEND, C4_XFER_OK, g->a[x->src], g->t_first[i], g->t_done[i], x->bytes,
               seq);
      xfer_rec(g, x, C4_DIR_RECV, C4_XFER_OK, g->a[x->dst], g->t_first[i], g->t_done[i], x->bytes,
               seq);
      continue;
    }
    uint64_t moved = moved_before(g, &k->xf[why], why, t);
    if (why != i) moved = c4_scen_net_moved_behind(g->j, &k->xf[why], x, moved);
    uint64_t first = moved ? g->t_first[i] : 0;
    if (why == i) xfer_rec(g, x, C4_DIR_SEND, C4_XFER_PENDING, g->a[x->src], first, 0, moved, seq);
    xfer_rec(g, x, C4_DIR_RECV, C4_XFER_PENDING, g->a[x->dst], first, 0, moved, seq);
  }
  for (int r = 0; r < g->j->nranks; r++)
    coll_recs(g, kind, r, 0);
}

/* The records of a collective that completes; fills each rank's completion. */
static void done_records(struct gen *g, int kind, uint64_t start, uint64_t dur) {
  const struct c4_scen_kind *k = &g->kinds[kind];
  for (size_t i = 0; i < k->nxf; i++) {
    const struct c4_scen_xf *x = &k->xf[i];
    uint64_t seq = g->seq[x->slot]++;
    xfer_rec(g, x, C4_DIR_SEND, C4_XFER_OK, g->a[x->src], g->t_first[i], g->t_done[i], x->bytes,
             seq);
    xfer_rec(g, x, C4_DIR_RECV, C4_XFER_OK, g->a[x->dst], g->t_first[i], g->t_done[i], x->bytes,
             seq);
  }
  for (int r = 0; r < g->j->nranks; r++) {
    g->d[r] = start + dur + (uint64_t)(c4_scen_rng_unit(&g->rng) * 0.01 * (double)dur);
    coll_recs(g, kind, r, g->d[r]);
  }
}

/* What the job starts with: comm records, and the lost rank's end of stream. */
static void job_start(struct gen *g) {
  const struct c4_scen_job *j = g->j;
  for (int c = 0; c < (j->hosts >= 2 ? 2 : 1); c++)
    for (int r = 0; r < j->nranks; r++) {
      struct c4_record *rec = c4_scen_out_add(g->out, C4_REC_COMM);
      if (!rec) return;
      struct c4_comm_record *m = &rec->comm;
      m->comm = c ? C4_SCEN_PIPE : C4_SCEN_WORLD;
      set_name(m->name, c ? "pipeline" : "world");
      m->rank = r;
      m->nranks = j->nranks;
      m->nnodes = j->hosts;
      m->pid = c4_scen_pid(r);
      memcpy(m->host, j->names[r / j->gpus], C4_HOST_MAX);
      m->t = C4_SCEN_T0;
    }
  if (g->stop && g->stop->kind == C4_SCEN_RANK_LOST) {
    struct c4_record *rec = c4_scen_out_add(g->out, C4_REC_RANK);
    if (!rec) return;
    rec->rank.rank = g->stop->rank;
    rec->rank.pid = c4_scen_pid(g->stop->rank);
    rec->rank.event = C4_RANK_LOST;
    memcpy(rec->rank.host, j->names[g->stop->rank / j->gpus], C4_HOST_MAX);
    rec->rank.t = g->stop->onset;
    g->out->drop_rank = g->stop->rank;
    g->out->drop_from = g->stop->onset;
  }
  for (int r = 0; r < j->nranks; r++) {
    g->d_prev[r] = C4_SCEN_T0 + INIT_NS;
    g->next_hb[r] = C4_SCEN_T0 + ((uint64_t)r * 104729u % 1000000u) * 1000u;
    g->cfac[r] = 1;
  }
}

/* Runs collectives until the run ends or a fault stops the job. */
static void run(struct gen *g) {
  const struct c4_scen_job *j = g->j;
  job_start(g);
  for (g->s = 0; !g->out->err; g->s++) {
    int kind = (int)(g->s % (uint64_t)g->npattern), missing;
    const struct c4_scen_kind *k = &g->kinds[kind];
    uint64_t start = arrivals(g, kind, &missing);
    if (missing || start > j->t_end) { /* the arrived ranks wait; the job is over */
      if (missing && g->stop->kind == C4_SCEN_NONCOMM_HANG && start <= j->t_end)
        g->stop->stall = start;
      for (int r = 0; r < j->nranks; r++)
        if (g->a[r] <= j->t_end) coll_recs(g, kind, r, 0);
      break;
    }
    uint64_t dur = timing(g, k, start);
    if (find_dead(g, k)) {
      g->stop->stall = start > g->stop->onset ? start : g->stop->onset;
      hung_records(g, kind);
      break;
    }
    done_records(g, kind, start, dur);
    uint64_t w = NEVER;
    for (int r = 0; r < j->nranks; r++)
      if (g->d[r] < w) w = g->d[r];
    heartbeats(g, w);
    c4_scen_out_flush(g->out, w);
    uint64_t *t = g->d_prev;
    g->d_prev = g->d;
    g->d = t;
    if (k->p2p)
      g->steps++;
    else
      g->world_seq++;
  }
  heartbeats(g, NEVER);
  if (g->stop && g->stop->kind == C4_SCEN_RANK_LOST) g->stop->stall = g->stop->onset;
}

/* The compute time before a collective of kind k: what is left of the period after its healthy
 * network time and the usual wait for the slowest of N ranks (the expected maximum of N
 * lognormal jitters, about exp(0.03 sqrt(2 ln N))), so the job runs at the rate asked; never
 * under 60% of the period. */
static double compute_ns(const struct c4_scen_job *j, const struct c4_scen_kind *k) {
  double period = 1e9 / j->rate, net;
  if (!k->nxf)
    net = k->local_ns;
  else
    net = (k->nup < k->nxf ? 2 : 1) * ((double)k->xf[0].bytes / C4_SCEN_NIC_BPNS + C4_SCEN_LAT_NS);
  double wait = j->nranks > 1 ? exp(0.03 * sqrt(2 * log((double)j->nranks))) : 1;
  return fmax((period - net) / wait, 0.6 * period);
}

int c4_scen_generate(const struct c4_scen_job *j, struct c4_scen_fault *faults, int nfaults,
                     struct c4_scen_blip *blips, int nblips, uint64_t seed, struct c4_scen_out *out,
                     uint64_t *collectives) {
  struct gen g = {.j = j, .f = faults, .nf = nfaults, .b = blips, .nb = nblips, .out = out};
  size_t N = (size_t)j->nranks, X = 4 * (size_t)j->nranks;
  int rc = c4_scen_net_build(j, g.kinds);
  if (rc) return rc;
  g.npattern = j->hosts >= 2 ? C4_SCEN_NKINDS : C4_SCEN_NKINDS - 1;
  for (int i = 0; i < C4_SCEN_NKINDS; i++)
    g.compute_ns[i] = compute_ns(j, &g.kinds[i]);
  c4_scen_rng_seed(&g.rng, seed);
  for (int i = 0; i < nfaults; i++)
    if (c4_scen_fault_stops(&faults[i])) g.stop = &faults[i];
  g.a = malloc(N * sizeof *g.a);
  g.d_prev = malloc(N * sizeof *g.d_prev);
  g.d = malloc(N * sizeof *g.d);
  g.cfac = malloc(N * sizeof *g.cfac);
  g.next_hb = malloc(N * sizeof *g.next_hb);
  g.seq = calloc(c4_scen_net_slots(j), sizeof *g.seq);
  g.t_first = malloc(X * sizeof *g.t_first);
  g.t_done = malloc(X * sizeof *g.t_done);
  g.dead = malloc(X);
  if (g.a && g.d_prev && g.d && g.cfac && g.next_hb && g.seq && g.t_first && g.t_done && g.dead)
    run(&g);
  else
    rc = C4_ENOMEM;
  *collectives = g.s;
  free(g.a);
  free(g.d_prev);
  free(g.d);
  free(g.cfac);
  free(g.next_hb);
  free(g.seq);
  free(g.t_first);
  free(g.t_done);
  free(g.dead);
  c4_scen_net_free(g.kinds);
  return rc ? rc : out->err;
}
