/* det_matrix.c -- the delay matrix: source NIC by destination NIC, each cell the log of its
 * transfers' time per byte over the median cell of the same size class, over the last second,
 * evaluated every half second. Each cell learns its own healthy level and spread (det_noise), so
 * a link that is always a little slower (a longer route, a busier host) is its own baseline; what
 * is judged is each cell's deviation from its baseline. Median polish splits the deviations into
 * row (sending NIC), column (receiving NIC) and cell (link) effects; cells that share one path of
 * the traffic plan and are hot together name the path. A cell is hot when its deviation is past
 * z of its spreads and the minimum effect (docs/events.md); a cell still learning (its first
 * DET_NOISE_MIN evaluations) is not judged, unless it carried traffic from the job's first phase
 * and reads YOUNG_FACTOR times the median cell (young_cells). A finding must hold for three
 * evaluations in a row, so one slow transfer (it sits in two windows) never alarms, and clears
 * after three without it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "c4_hash.h"
#include "det_internal.h"
#include "det_median.h"
#include "det_xstart.h"

#define HALF_NS 500000000ull  /* a half-window */
#define GRACE_NS 200000000ull /* records of a half-window may arrive this late (live) */
#define MIN_BYTES 65536       /* smaller transfers measure latency, not bandwidth */
#define NODE_CAP (1 << 17)
#define CELL_CAP (1 << 18)
#define CLASSES 4 /* size classes kept per cell and half-window */
#define STREAK 3
#define SPLIT_WAIT 4 /* evaluations a split pair's link finding waits for the path records */
/* hot_cell: 0 judged freely, 2 explained by a finding, 3 in a verdict; ON_SLOW_PATH: its host
 * pair's data sockets take a path under a verdict (det_paths.c), explained unless its NIC is slow
 * both ways on cells off that path too */
#define ON_SLOW_PATH 4
/* hot_cell: a verdict of its NIC slow both ways stands, and a link finding does not take the cell
 * over. In a ring, a NIC's link out and the link into it (slowed too when the NIC's ACKs queue)
 * read as the NIC one evaluation and as its link the next: one fault's verdict flipped between
 * them 4 times in 26 s. */
#define NIC_STANDS 1
#define EVIDENCE 2.0f
/* A cell of the job's first phase without a baseline yet (its first DET_NOISE_MIN evaluations)
 * this many times the median cell is judged against it: a fault that begins with a cell's
 * traffic is named, not learned as its usual. Over what such cells read with no fault of their
 * own: a 2x rule raised nothing in 30 healthy live recordings, and a NIC verdict early in 2 of
 * the drill's 11 (its rows read 2.9x and 4.9x over the few cells then past 2x); 3x raised none.
 * A later phase's new cells (a restarted job's new ring read 3-17x the median cell on the drill's
 * fabric) get no such rule. The price: a cell 3x slower than the rest by design from the start
 * (a link that slow is worth a look) is named, and stays named while it stays so. */
#define YOUNG_FACTOR 3.0
#define MAX_CANDS 4096
/* Cells a matrix needs for a median cell, the common level the others read against. With two (a
 * 2-rank job: one link each way) the median was the slow way itself, or the healthy way read
 * against it: a 4x slow link read 16x, and after a fault that lasted, the healthy way, whose
 * baseline had learned the fault upside down, was named 699x until the job ended. Below this,
 * each cell reads against its size class alone and its own baseline. */
#define MEDIAN_CELLS 3

struct acc {
  int8_t cls; /* log2 of bytes; -1 unused */
  uint16_t n;
  float sum, max; /* of log(ns per byte) */
};

/* One cache line: a transfer touches one bucket, an evaluation two per cell. */
struct bucket {
  _Alignas(64) uint64_t hw; /* which half-window it holds */
  struct acc a[CLASSES];
};

/* A cell's samples, apart from the rest of it: evaluations scan the cells several times, and
 * read these once. */
struct samples {
  struct bucket b[4]; /* half-windows hw & 3: the two judged and the ones arriving meanwhile */
};

struct cell {
  int src, dst; /* node indexes */
  /* the last evaluation */
  float v, resid;
  float v_all; /* v with nothing left out: what rows, columns and paths count hot cells by */
  int n;
  /* against its own baseline: deviations of v and v_all (less the median cell's deviation), and
   * how far past it is well outside its noise; judged: it has a baseline, or is young */
  float d, d_all, margin;
  int judged;
  uint8_t young; /* judged against the median cell (no baseline of its own yet), being far over */
  uint8_t from_start; /* it carried traffic before any cell had a baseline: the first phase */
  struct det_noise_hold hot; /* its run past its margin's samples, held back */
  float n_usual;             /* its typical transfers per window (0: none yet) */
};

struct node {
  char host[C4_HOST_MAX];
  int dev;
  int used;
  int nranks, ranks[4]; /* launcher ranks seen using this NIC */
  /* the last evaluation: row and column effects of the deviations, over nrow and ncol cells,
   * and how far past 0 each is well outside the noise (its cells' median margin) */
  float row, col;
  int nrow, ncol;
  float row_margin, col_margin;
  int row_slow; /* this evaluation found its row slow: a slow column too is the same NIC */
  /* the job whose transfers placed it last: one c4mon serves several jobs, and a verdict at this
   * NIC is that job's (named by the newest record of any job, one slow link's verdict went back
   * and forth between two jobs, raised and cleared 16 times in 90 s) */
  const struct c4_det_job *job;
};

/* One size class of a cell over the window's two half-windows. */
struct wsum {
  int cls, n;
  float sum, max; /* of log(ns per byte) */
};

/* What a candidate's statistic is read from when it is not sighted (clear_evidence): a cell
 * (link), a node's row (NIC TX) or column (NIC RX); the others clear by misses alone. */
enum cand_on { ON_NOTHING, ON_CELL, ON_ROW, ON_COL, ON_NIC /* both ways: clears by misses */ };

struct cand {
  char key[320];
  int streak, miss, seen, raised;
  int quiet;      /* evaluations in a row its statistic had no transfers to read */
  float evidence; /* excess over the margin, in margins, summed over the streak */
  uint64_t first_seen;
  enum cand_on on;
  int at;         /* the cell or node it is read from */
  float level;    /* its statistic in margins at its last sighting: the fault's level */
  int calm;       /* evaluations in a row it read back inside its noise */
  float calm_sum; /* how far inside, in margins, summed over those */
};

static struct {
  struct node *node;
  int nnodes;
  int *node_hash; /* open addressing over node indexes, -1 empty */
  struct cell *cell;
  struct samples *samples; /* cell i's are samples[i] */
  struct det_noise *noise; /* cell i's healthy level and spread */
  int ncells;
  int *cell_hash;
  uint64_t next_hw; /* the next half-window to evaluate, 0: no sample yet */
  uint64_t newest_hw;
  const struct c4_det_job *job; /* the newest record's */
  struct cand cand[MAX_CANDS];
  int ncand;
  uint64_t dropped;
  uint64_t eval_t;
  float overall;   /* the median cell's v, as it read before it was read against the rest */
  int median_cell; /* that cell, moved by median_moved to read against the rest (-1: none) */
  float median_moved;
  float dev_overall; /* the median judged cell's deviation from its baseline */
  int any_baseline;  /* some cell has had a baseline: the first phase is over (of the first job
                        c4mon watches: later jobs' cells get no young rule) */
  double weight;     /* the window's transfer time, summed over cells (n x time per byte) */
  struct { /* connection id -> its cell + 1 (0: empty): a connection always joins the same two
              NICs. Open addressing, at most half full. */
    uint64_t conn;
    int cell;
    int recv_seen; /* a receive of it was taken: its sends no longer are */
  } * by_conn;
  int nconns;
  size_t conn_cap; /* by_conn's slots: a power of two up to CONN_CACHE, at least twice nconns */
  /* evaluate's working arrays, sized for CELL_CAP and NODE_CAP once: fresh ones per evaluation
   * (megabytes at 16,384 NICs) cost more in page faults than the evaluation */
  struct {
    struct wsum *ws; /* every cell's sums: cell i's are ws[at[i]..at[i+1]) */
    int *at;
    float *scratch;
    float *pick; /* the medians' room for one bucket's values */
    /* the live cells: value, source, destination; then grouped by source and destination */
    float *lv, *rv, *cv;
    int *ls, *ld, *order, *rk, *ck;
    int *rs, *cs; /* group starts per node */
    float *row, *col;
    int *nrow, *ncol;
    char *hot_cell;
  } ev;
} m;

#define CONN_CACHE (1 << 20)
#define CONN_FIRST                                                                                 \
  (1 << 12) /* by_conn starts this small and doubles with the job: its slots are                   \
               hashed all over it, so each of its pages is touched (and zeroed) */

static const struct det_ctx *ctx;

static uint64_t mix(uint64_t h) {
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return h;
}

static int alloc(void) {
  if (m.node) return 0;
  m.node = det_table_alloc(NODE_CAP * sizeof *m.node);
  m.node_hash = det_table_alloc(2 * NODE_CAP * sizeof *m.node_hash);
  m.cell = det_table_alloc(CELL_CAP * sizeof *m.cell);
  m.samples = det_table_alloc(CELL_CAP * sizeof *m.samples); /* page-aligned */
  m.noise = det_table_alloc(CELL_CAP * sizeof *m.noise);
  m.cell_hash = det_table_alloc(2 * CELL_CAP * sizeof *m.cell_hash);
  m.conn_cap = CONN_FIRST;
  m.by_conn = det_table_alloc(m.conn_cap * sizeof *m.by_conn);
  m.ev.ws = malloc(CELL_CAP * 2 * CLASSES * sizeof *m.ev.ws);
  m.ev.at = malloc((CELL_CAP + 1) * sizeof *m.ev.at);
  m.ev.scratch = malloc(CELL_CAP * 2 * CLASSES * sizeof *m.ev.scratch);
  float **fl[] = {&m.ev.lv, &m.ev.rv, &m.ev.cv, &m.ev.pick};
  int **in[] = {&m.ev.ls, &m.ev.ld, &m.ev.order, &m.ev.rk, &m.ev.ck};
  int ok = 1;
  for (size_t i = 0; i < sizeof fl / sizeof *fl; i++)
    ok &= !!(*fl[i] = malloc(CELL_CAP * sizeof **fl));
  for (size_t i = 0; i < sizeof in / sizeof *in; i++)
    ok &= !!(*in[i] = malloc(CELL_CAP * sizeof **in));
  m.ev.rs = malloc((NODE_CAP + 2) * sizeof *m.ev.rs);
  m.ev.cs = malloc((NODE_CAP + 2) * sizeof *m.ev.cs);
  m.ev.row = malloc(NODE_CAP * sizeof *m.ev.row);
  m.ev.col = malloc(NODE_CAP * sizeof *m.ev.col);
  m.ev.nrow = malloc(NODE_CAP * sizeof *m.ev.nrow);
  m.ev.ncol = malloc(NODE_CAP * sizeof *m.ev.ncol);
  m.ev.hot_cell = malloc(CELL_CAP);
  if (!ok || !m.node || !m.node_hash || !m.cell || !m.samples || !m.noise || !m.cell_hash ||
      !m.by_conn || !m.ev.ws || !m.ev.at || !m.ev.scratch || !m.ev.rs || !m.ev.cs || !m.ev.row ||
      !m.ev.col || !m.ev.nrow || !m.ev.ncol || !m.ev.hot_cell) {
    det_matrix_reset();
    return C4_ENOMEM;
  }
  memset(m.node_hash, 0xff, 2 * NODE_CAP * sizeof *m.node_hash);
  memset(m.cell_hash, 0xff, 2 * CELL_CAP * sizeof *m.cell_hash);
  return 0;
}

static int node_of(const char *host, int dev) {
  uint64_t h = c4_fnv1a_str(C4_FNV_BASIS_OLD ^ (uint32_t)dev, host);
  for (uint64_t i = mix(h) & (2 * NODE_CAP - 1);; i = (i + 1) & (2 * NODE_CAP - 1)) {
    int k = m.node_hash[i];
    if (k < 0) {
      if (m.nnodes == NODE_CAP) return C4_NONE;
      k = m.node_hash[i] = m.nnodes++;
      snprintf(m.node[k].host, C4_HOST_MAX, "%s", host);
      m.node[k].dev = dev;
      m.node[k].used = 1;
      return k;
    }
    if (m.node[k].dev == dev && !strcmp(m.node[k].host, host)) return k;
  }
}

/* The cell from src to dst, added if new; its index, or -1 when the table is full. */
static int cell_of(int src, int dst) {
  for (uint64_t i = mix(((uint64_t)src << 32) | (uint32_t)dst) & (2 * CELL_CAP - 1);;
       i = (i + 1) & (2 * CELL_CAP - 1)) {
    int k = m.cell_hash[i];
    if (k < 0) {
      if (m.ncells == CELL_CAP) return C4_NONE;
      k = m.cell_hash[i] = m.ncells++;
      m.cell[k].src = src;
      m.cell[k].dst = dst;
      m.cell[k].from_start = !m.any_baseline;
      for (int b = 0; b < 4; b++) {
        m.samples[k].b[b].hw = UINT64_MAX;
        for (int a = 0; a < CLASSES; a++)
          m.samples[k].b[b].a[a] = (struct acc){.cls = -1};
      }
      return k;
    }
    if (m.cell[k].src == src && m.cell[k].dst == dst) return k;
  }
}

static void learn_rank(int k, int rank) {
  struct node *nd = &m.node[k];
  if (rank < 0) return;
  for (int i = 0; i < nd->nranks; i++)
    if (nd->ranks[i] == rank) return;
  if (nd->nranks < 4) nd->ranks[nd->nranks++] = rank;
}

/* The by_conn slot of conn: its own, or the empty one where it goes. */
static size_t conn_slot(uint64_t conn) {
  size_t k = mix(conn) & (m.conn_cap - 1);
  while (m.by_conn[k].cell && m.by_conn[k].conn != conn)
    k = (k + 1) & (m.conn_cap - 1);
  return k;
}

/* by_conn at twice its slots, every connection moved over. Returns 0, or C4_ENOMEM (it stays as
 * it was). */
static int grow_by_conn(void) {
  __typeof__(m.by_conn) old = m.by_conn;
  size_t old_cap = m.conn_cap;
  m.by_conn = det_table_alloc(2 * old_cap * sizeof *m.by_conn);
  if (!m.by_conn) {
    m.by_conn = old;
    return C4_ENOMEM;
  }
  m.conn_cap = 2 * old_cap;
  for (size_t i = 0; i < old_cap; i++)
    if (old[i].cell) m.by_conn[conn_slot(old[i].conn)] = old[i];
  det_table_free(old, old_cap * sizeof *old);
  return 0;
}

/* Only what det_matrix_take will read: not for a transfer it leaves out at once, nor the bucket
 * of a send whose connection's receives speak for it (half of a full trace's transfers). The
 * loads a batch asks for queue behind each other; a useless one delays the useful ones. */
void det_matrix_prefetch(const struct c4_xfer_record *x, int stage) {
  if (!m.by_conn || x->status != C4_XFER_OK || x->bytes < MIN_BYTES || !x->t_done) return;
  size_t k = mix(x->conn_id) & (m.conn_cap - 1);
  if (stage == 0) {
    __builtin_prefetch(&m.by_conn[k]);
  } else if (m.by_conn[k].conn == x->conn_id && m.by_conn[k].cell > 0 &&
             (x->dir == C4_DIR_RECV || !m.by_conn[k].recv_seen)) {
    __builtin_prefetch(&m.samples[m.by_conn[k].cell - 1].b[(x->t_done / HALF_NS) & 3]);
  }
}

/* The NIC one end of a transfer stands for: its host and device, or, in a trace that gives no
 * device, its host and rank (the rank stands for its NIC; kept as device -2 - rank) when the
 * record gives both ends' ranks (by_rank), else its host alone. A record that leaves out its
 * writer's rank still names its peer's: taken, the peer's rank would key that host's NIC one way
 * in these records and another in the peer's own, one NIC as two (named twice when slow). -1 when
 * the host is unknown or the table is full. */
static int nic_of(const struct c4_identity *e, int by_rank) {
  if (!e->host[0]) return C4_NONE;
  return node_of(e->host, e->dev >= 0 ? e->dev : by_rank ? -2 - e->rank : -1);
}

/* The device a verdict names: -1 when the trace gave none. */
static int dev_named(const struct node *nd) { return nd->dev >= 0 ? nd->dev : -1; }

/* The cell of a transfer record, from its connection when an earlier record of either end
 * placed it (a wrap-mode receive knows its peer only so: docs/wrap.md), else from its two ends.
 * Receives speak for their connection: a send completes when its bytes are in the kernel's
 * buffer, so a slow link hides behind buffering on the sending side, while the receiver sees
 * bytes arrive at the link's pace. Sends speak for a connection no receive has been seen on (a
 * sender-side tracer). Returns the cell, -1 when the record cannot be placed, -2 when its
 * connection's receives speak for it. */
static int cell_of_xfer(const struct c4_det_job *job, const struct c4_xfer_record *x) {
  int recv = x->dir == C4_DIR_RECV;
  size_t k = conn_slot(x->conn_id);
  if (m.by_conn[k].cell) {
    if (recv) m.by_conn[k].recv_seen = 1;
    return recv || !m.by_conn[k].recv_seen ? m.by_conn[k].cell - 1 : -2;
  }
  const struct c4_identity *from = recv ? &x->peer : &x->self, *to = recv ? &x->self : &x->peer;
  int by_rank = from->rank >= 0 && to->rank >= 0;
  int src = nic_of(from, by_rank), dst = nic_of(to, by_rank);
  int c = src >= 0 && dst >= 0 ? cell_of(src, dst) : -1;
  if (c < 0) return C4_NONE;
  learn_rank(src, from->rank);
  learn_rank(dst, to->rank);
  m.node[src].job = m.node[dst].job = job;
  if (m.nconns < CONN_CACHE / 2) { /* past that, the NICs are looked up every time */
    if ((size_t)(m.nconns + 1) * 2 > m.conn_cap) {
      if (grow_by_conn() != 0) return c;
      k = conn_slot(x->conn_id); /* its place in the grown table */
    }
    m.nconns++;
    m.by_conn[k].conn = x->conn_id;
    m.by_conn[k].cell = c + 1;
    m.by_conn[k].recv_seen = recv;
  }
  return c;
}

/* One transfer's sample (v: the log of its time per byte, or of that over its cell's usual) into
 * its cell's bucket for the half-window it completed in. */
static void add_sample(int c, int cls, float v, uint64_t t_done) {
  uint64_t hw = t_done / HALF_NS;
  if (m.next_hw && hw < m.next_hw) { /* its window was judged already */
    m.dropped++;
    return;
  }
  if (hw > m.newest_hw) m.newest_hw = hw;
  if (!m.next_hw) m.next_hw = hw;
  struct bucket *b = &m.samples[c].b[hw & 3];
  if (b->hw != hw) {
    b->hw = hw;
    for (int a = 0; a < CLASSES; a++)
      b->a[a] = (struct acc){.cls = -1};
  }
  for (int a = 0; a < CLASSES; a++) {
    struct acc *ac = &b->a[a];
    if (ac->cls != cls && ac->cls != -1) continue;
    if (ac->cls == -1) *ac = (struct acc){.cls = (int8_t)cls, .max = v};
    if (ac->n < UINT16_MAX) ac->n++;
    ac->sum += v;
    if (v > ac->max) ac->max = v;
    return;
  }
  m.dropped++; /* a fifth size class in one half-window: rare, and not needed */
}

static int size_class(uint64_t bytes) { return 63 - __builtin_clzll(bytes); }

/* Transfers without a first-byte time whose start is settled by now (det_xstart.c). Their start
 * is an estimate that is late by whatever the transfer waited for besides the posts, steadily for
 * each cell: each is taken against its own cell's usual, once that is known. A cell that waits
 * behind another phase of the call (a tree's broadcast behind its reduce) is left out: every slow
 * edge of the first phase delays all of its transfers alike, so they would say nothing of their
 * own link. */
static void settle_held(uint64_t now) {
  struct det_xs_sample s;
  while (det_xstart_release(now, &s)) {
    if (s.t_done <= s.t_start) continue;
    int cls = size_class(s.bytes), phase = 0;
    float v = det_xstart_usual(s.cell, s.order, cls,
                               (float)log((double)(s.t_done - s.t_start) / (double)s.bytes),
                               s.t_done, &phase);
    if (!isnan(v) && !phase) add_sample(s.cell, cls, v, s.t_done);
  }
}

void det_matrix_take(const struct c4_det_job *job, const struct c4_xfer_record *x) {
  if (!x->t_first_byte) det_xstart_post(x->nccl_comm, x->self.rank, x->t_posted);
  if (x->status != C4_XFER_OK || x->bytes < MIN_BYTES || !x->t_done ||
      (x->t_first_byte && x->t_done <= x->t_first_byte))
    return;
  if (m.next_hw && x->t_done / HALF_NS < m.next_hw) { /* its window was judged already */
    m.dropped++;
    return;
  }
  if (det_hang_spans_stall(job, x->t_posted, x->t_done)) return; /* it measured the hang */
  if (alloc() != 0) return;
  int c = cell_of_xfer(job, x);
  if (c == -2) return;
  if (c < 0) {
    m.dropped++;
    return;
  }
  m.job = job;
  if (x->t_first_byte)
    add_sample(c, size_class(x->bytes),
               (float)log((double)(x->t_done - x->t_first_byte) / (double)x->bytes), x->t_done);
  else if (det_xstart_hold(x->nccl_comm, c, x->self.rank, x->peer.rank, x->bytes, x->t_posted,
                           x->t_done) != 0)
    m.dropped++;
  settle_held(x->t_done);
}

/* A cell's class sums over the window's two half-windows, into s (room for 2 * CLASSES). Half-
 * window h can only be in bucket h & 3: the two are read, in bucket order, and the others not. */
static int window_sums(const struct samples *c, uint64_t w, struct wsum *s) {
  int k = 0;
  int pick[2] = {(int)((w - 1) & 3), (int)(w & 3)};
  if (!pick[1]) { /* bucket order: 0 (w) before 3 (w - 1) */
    pick[0] = 0;
    pick[1] = 3;
  }
  for (int i = 0; i < 2; i++) {
    int b = pick[i];
    if (c->b[b].hw != w && c->b[b].hw != w - 1) continue;
    for (int a = 0; a < CLASSES; a++) {
      const struct acc *ac = &c->b[b].a[a];
      if (ac->cls < 0) continue;
      int j = 0;
      while (j < k && s[j].cls != ac->cls)
        j++;
      if (j == k) {
        if (k == 2 * CLASSES) continue;
        s[k++] = (struct wsum){.cls = ac->cls, .max = -INFINITY};
      }
      s[j].sum += ac->sum;
      s[j].n += ac->n;
      if (ac->max > s[j].max) s[j].max = ac->max;
    }
  }
  return k;
}

/* The same, trimmed: the largest sample left out when there are three or more (one blip does
 * not move it). */
static struct wsum trimmed(struct wsum s) {
  if (s.n >= 3) {
    s.sum -= s.max;
    s.n--;
  }
  return s;
}

static float dev_of(const struct cell *c) { return c->d - m.dev_overall; }

static struct cand *cand_get(const char *key) {
  for (int i = 0; i < m.ncand; i++)
    if (!strcmp(m.cand[i].key, key)) return &m.cand[i];
  if (m.ncand == MAX_CANDS) return NULL;
  struct cand *c = &m.cand[m.ncand++];
  memset(c, 0, sizeof *c);
  snprintf(c->key, sizeof c->key, "%s", key);
  return c;
}

/* Counts one more evaluation in a row for key, excess (how far past its margin, in margins) its
 * evidence; returns 1 when it is due to be raised (streak evaluations in a row and EVIDENCE
 * summed: a burst of a loaded host's noise just past the margin does not make it), 2 when it is
 * raised already (its cells stop teaching their baselines), else 0. */
static int sighting(const char *key, uint64_t window_start, float excess, int streak) {
  struct cand *c = cand_get(key);
  if (!c) return 0;
  c->seen = 1;
  c->miss = 0;
  c->calm = 0;
  c->level = excess + 1;
  if (!c->streak++) c->first_seen = window_start, c->evidence = 0;
  c->evidence += excess;
  return c->raised ? 2 : c->streak >= streak && c->evidence >= EVIDENCE;
}

/* Where key's statistic is read from when it is not sighted. */
static void cand_on(const char *key, enum cand_on on, int at) {
  struct cand *c = cand_get(key);
  if (c) c->on = on, c->at = at;
}

/* A raised candidate not sighted this evaluation: its statistic now, in margins, when measured
 * (1 if so). */
static int cand_now(const struct cand *c, float *u) {
  if (c->on == ON_CELL) {
    const struct cell *x = &m.cell[c->at];
    if (!x->n || !x->judged || x->margin <= 0) return 0;
    *u = dev_of(x) / x->margin;
    return 1;
  }
  if (c->on == ON_ROW || c->on == ON_COL) {
    const struct node *nd = &m.node[c->at];
    int row = c->on == ON_ROW;
    float margin = row ? nd->row_margin : nd->col_margin;
    if ((row ? nd->nrow : nd->ncol) < 2 || margin <= 0) return 0;
    *u = (row ? nd->row : nd->col) / margin;
    return 1;
  }
  return 0;
}

/* Clearing by the evidence raising asks, in reverse: the statistic back under its margin and at
 * least one margin below the level the fault held it at (a reading that low is as unlikely from
 * the fault as the raise's was from noise), CLEAR_STREAK evaluations in a row with EVIDENCE
 * margins past that summed. Raising wants STREAK (3) in a row, against bursts of noise that make a
 * healthy cell read slow; a slow link reads fast less often (its receiver posting late, when the
 * bytes already wait in the socket: one calm evaluation in the middle of make demo's 80 Mbit/s
 * link at load 20 cleared it and it was raised again), and two in a row (1.5 s of transfers) are
 * asked. A link that was far out (a 200x cell) clears about 1.7 s after it is restored; one
 * barely past its margin has little evidence to give and clears by STREAK misses. Returns 1 when
 * c clears this way. */
#define CLEAR_STREAK 2
static int clear_evidence(struct cand *c) {
  float u;
  if (!c->raised || !cand_now(c, &u)) return 0;
  if (u >= 1 || c->level - u < 1) {
    c->calm = 0;
    return 0;
  }
  if (!c->calm++) c->calm_sum = 0;
  c->calm_sum += c->level - u - 1;
  return c->calm >= CLEAR_STREAK && c->calm_sum >= EVIDENCE;
}

/* Whether c's statistic was read this evaluation: its cell carried transfers, its row or column
 * two cells or more. At a few collectives a second a link carries transfers in one evaluation of
 * two or three, and one without says nothing either way: counted as a miss, it broke every
 * streak, and a link at 2.5x under 2 collectives a second was never named while its baseline
 * learned the fault. Up to QUIET_MAX such evaluations in a row (4 s) keep a candidate as it was;
 * a longer silence counts as misses again. One slow transfer still never alarms: it sits in two
 * evaluations at most, and a streak needs three read ones. */
#define QUIET_MAX 8
static int cand_read(const struct cand *c) {
  if (c->on == ON_CELL) return c->at < m.ncells && m.cell[c->at].n > 0;
  if (c->on == ON_ROW) return m.node[c->at].nrow >= 2;
  if (c->on == ON_COL) return m.node[c->at].ncol >= 2;
  return 1;
}

/* 1 when key's verdict stands; never adds a candidate. */
static int cand_raised(const char *key) {
  for (int i = 0; i < m.ncand; i++)
    if (!strcmp(m.cand[i].key, key)) return m.cand[i].raised;
  return 0;
}

static uint64_t cand_first_seen(const char *key) {
  struct cand *c = cand_get(key);
  return c ? c->first_seen : 0;
}

/* The name of the job whose transfers placed node k (else the newest transfer's job's). */
static const char *job_at(int k) {
  const struct c4_det_job *job = m.node[k].job ? m.node[k].job : m.job;
  return job ? job->name : ""; /* a node placed before any transfer named a job */
}

static void raise_cand(const char *job, const char *key, struct det_finding *f) {
  f->first_seen = cand_first_seen(key);
  f->job = job;
  det_book_raise(key, f, ctx->now);
  struct cand *c = cand_get(key);
  if (c) c->raised = 1;
}

static json_t *ranks_of_node(int k) {
  json_t *a = json_array();
  for (int i = 0; i < m.node[k].nranks; i++)
    json_array_append_new(a, json_integer(m.node[k].ranks[i]));
  return a;
}

/* 0.5 at the margin, 1 at twice the margin: how far outside the noise a deviation is. */
static double confidence(double dev, double margin) {
  double c = margin > 0 ? 0.5 * dev / margin : 1;
  return c < 0 ? 0 : c > 1 ? 1 : c;
}

/* The cell's deviation with the median cell's taken out: what it is judged by. */
static float dev_all_of(const struct cell *c) { return c->d_all - m.dev_overall; }

/* A cell that counts as hot when a row, column or path is judged. */
static int cell_hot(const struct cell *c) {
  return c->n && c->judged && dev_all_of(c) >= c->margin;
}

/* Cell i's v as it measured it: the median cell's before it was read against the rest. */
static float own_v(int i) { return m.cell[i].v - (i == m.median_cell ? m.median_moved : 0); }

/* The share of the window's transfer time that cells slower than their baseline lose: the job's
 * communication time this fault costs. Cells: which(i, arg) != 0. */
static double cost_of(int (*which)(int i, const void *arg), const void *arg) {
  double lost = 0;
  for (int i = 0; i < m.ncells; i++) {
    const struct cell *c = &m.cell[i];
    if (!c->n || !c->judged || !which(i, arg) || dev_of(c) <= 0) continue;
    lost += c->n * exp(own_v(i)) * (1 - exp(-dev_of(c)));
  }
  return m.weight > 0 ? fmin(1.0, lost / m.weight) : 0;
}

struct path_arg {
  const int *path; /* per cell */
  int p;
};
static int on_path(int i, const void *arg) {
  const struct path_arg *a = arg;
  return a->path[i] == a->p;
}
struct nic_arg {
  int node, by_src;
};
static int at_nic(int i, const void *arg) {
  const struct nic_arg *a = arg;
  return (a->by_src ? m.cell[i].src : m.cell[i].dst) == a->node;
}
static int is_cell(int i, const void *arg) { return i == *(const int *)arg; }

/* The source and destination nodes a path's hot cells share: -1 none seen yet, -2 not one. */
struct ends {
  int src, dst;
};
static void note_ends(struct ends *e, const struct cell *c) {
  e->src = e->src == -1 || e->src == c->src ? c->src : -2;
  e->dst = e->dst == -1 || e->dst == c->dst ? c->dst : -2;
}

/* 1 when the hot cells of path p all leave one node (or all enter one) and that node has a hot
 * cell on another path too: its NIC is slow, not the path (paths are judged before NICs, and a
 * path that carries only one NIC's slow cells would take its verdict). */
static int one_nics_elsewhere(const struct ends *e, const int *path, int p) {
  if (e->src < 0 && e->dst < 0) return 0;
  for (int i = 0; i < m.ncells; i++) {
    const struct cell *c = &m.cell[i];
    if (path[i] == p || !cell_hot(c)) continue;
    if (c->src == e->src || c->dst == e->dst) return 1;
  }
  return 0;
}

/* Paths of several cells (one_cell 0) are judged before NICs: a path's hot cells leave and enter
 * several NICs. Paths of one cell (one_cell 1) after them: a NIC slow both ways explains its
 * cells out and in, where the one-cell path would explain one of them and leave the other as a
 * second verdict. */
static void find_paths(uint64_t wstart, char *hot_cell, int one_cell) {
  int np = det_plan_npaths();
  if (!np) return;
  int *cells = calloc((size_t)np, sizeof *cells), *hot = calloc((size_t)np, sizeof *hot);
  int *as_link = calloc((size_t)np, sizeof *as_link); /* cells hot as a link verdict needs */
  int *live = calloc((size_t)np, sizeof *live);       /* cells that moved, judged or not */
  struct ends *ends = malloc((size_t)np * sizeof *ends);
  float *maxv = calloc((size_t)np, sizeof *maxv);
  int *path = malloc((size_t)m.ncells * sizeof *path);
  float *margin = calloc((size_t)np, sizeof *margin);
  if (!cells || !hot || !as_link || !live || !ends || !maxv || !path || !margin) goto out;
  for (int p = 0; p < np; p++)
    ends[p] = (struct ends){-1, -1};
  for (int i = 0; i < m.ncells; i++) {
    struct cell *c = &m.cell[i];
    const char *a = m.node[c->src].host, *b = m.node[c->dst].host;
    /* a pair the plan spreads over several paths cannot name one: its sockets' rates do */
    path[i] = c->n && hot_cell[i] < 2 && !det_plan_split(a, b) ? det_plan_path_of(a, b) : -1;
    if (path[i] < 0) continue;
    live[path[i]]++;
    if (!c->judged)
      continue; /* no usual yet (a phase that began with the fault), under the young factor:
                   not a calm cell */
    cells[path[i]]++;
    if (cell_hot(c)) {
      hot[path[i]]++;
      note_ends(&ends[path[i]], c);
      if (dev_of(c) > maxv[path[i]]) maxv[path[i]] = dev_of(c), margin[path[i]] = c->margin;
    }
    if (dev_of(c) >= c->margin && c->resid >= c->margin) {
      as_link[path[i]]++;
      if (dev_of(c) > maxv[path[i]]) maxv[path[i]] = dev_of(c), margin[path[i]] = c->margin;
    }
  }
  /* A path the plan gives one cell (one host pair crosses that spine) is named when that cell is
   * slow as a link would need: the plan says where the slowdown is, and the cell alone cannot.
   * Cells without a baseline yet are neither hot nor calm (unless young: far over the median
   * cell in the first phase, judged against it, and hot), but a path is named only when its hot
   * cells are half of all it carries: a link or a NIC that a new phase's cells happen to share a
   * path with stays a link or a NIC. */
  for (int p = 0; p < np; p++) {
    if ((live[p] == 1) != one_cell ||
        (live[p] == 1 ? !as_link[p]
                      : cells[p] < 2 || hot[p] < 2 || hot[p] * 4 < cells[p] * 3 ||
                            hot[p] * 2 < live[p] || one_nics_elsewhere(&ends[p], path, p)))
      continue;
    char key[320];
    const char *job = m.job->name; /* the job of the path's first cell */
    for (int i = 0; i < m.ncells; i++)
      if (path[i] == p) {
        job = job_at(m.cell[i].src);
        break;
      }
    snprintf(key, sizeof key, "comm_slow/%s/path/%s", job, det_plan_path_name(p));
    for (int i = 0; i < m.ncells; i++)
      if (path[i] == p) hot_cell[i] = 2; /* explained */
    int due = sighting(key, wstart, margin[p] > 0 ? maxv[p] / margin[p] - 1 : 1, STREAK);
    for (int i = 0; due && i < m.ncells; i++)
      if (path[i] == p) hot_cell[i] = 3; /* in a verdict */
    if (due != 1) continue;
    struct det_finding f = {.kind = "comm_slow",
                            .where = "path",
                            .ranks = json_array(),
                            .hosts = json_array(),
                            .path = det_plan_path_name(p),
                            .factor = exp(maxv[p]),
                            .confidence = confidence(maxv[p], margin[p])};
    f.cost = cost_of(on_path, &(struct path_arg){path, p});
    snprintf(f.detail, sizeof f.detail, "%d of %d cells on path %s hot (up to %.2fx)", hot[p],
             cells[p], det_plan_path_name(p), exp(maxv[p]));
    raise_cand(job, key, &f);
  }
out:
  free(cells);
  free(hot);
  free(as_link);
  free(live);
  free(ends);
  free(maxv);
  free(path);
  free(margin);
}

/* Rows (by source) or columns (by destination): a NIC whose effect is hot on most of its cells. */
static void find_nics(uint64_t wstart, char *hot_cell, int by_src) {
  for (int k = 0; k < m.nnodes; k++) {
    struct node *nd = &m.node[k];
    float eff = by_src ? nd->row : nd->col, margin = by_src ? nd->row_margin : nd->col_margin;
    int cnt = by_src ? nd->nrow : nd->ncol;
    if (cnt < 2 || eff < margin) continue;
    int total = 0, hotn = 0;
    for (int i = 0; i < m.ncells; i++) {
      struct cell *c = &m.cell[i];
      if (!c->n || (by_src ? c->src : c->dst) != k || hot_cell[i] >= 2) continue;
      if (!c->judged) { /* a first-phase cell under the young factor is a calm one */
        total += c->from_start;
        continue;
      }
      total++;
      hotn += cell_hot(c);
    }
    if (total < 2 || hotn * 3 < total * 2) continue;
    for (int i = 0; i < m.ncells; i++)
      if (m.cell[i].n && (by_src ? m.cell[i].src : m.cell[i].dst) == k) hot_cell[i] = 2;
    if (by_src) nd->row_slow = 2;
    if (!by_src && nd->row_slow) { /* slow both ways: one NIC, one verdict (its row's) */
      for (int i = 0; i < m.ncells; i++)
        if (m.cell[i].n && m.cell[i].dst == k && hot_cell[i] == 2) hot_cell[i] = nd->row_slow;
      continue;
    }
    char key[320];
    snprintf(key, sizeof key, "comm_slow/%s/%s/%s/%d", job_at(k), by_src ? "nic_tx" : "nic_rx",
             nd->host, nd->dev);
    int due = sighting(key, wstart, eff / margin - 1, STREAK);
    cand_on(key, by_src ? ON_ROW : ON_COL, k);
    for (int i = 0; due && i < m.ncells; i++)
      if (m.cell[i].n && (by_src ? m.cell[i].src : m.cell[i].dst) == k) hot_cell[i] = 3;
    if (due && by_src) nd->row_slow = 3;
    if (due != 1) continue;
    struct det_finding f = {.kind = "comm_slow",
                            .where = by_src ? "nic_tx" : "nic_rx",
                            .ranks = ranks_of_node(k),
                            .hosts = json_pack("[s]", nd->host),
                            .nic_host = nd->host,
                            .nic_dev = dev_named(nd),
                            .factor = exp(eff),
                            .confidence = confidence(eff, margin)};
    f.cost = cost_of(at_nic, &(struct nic_arg){k, by_src});
    snprintf(f.detail, sizeof f.detail, "%s effect %.2fx over %d %s", by_src ? "row" : "column",
             exp(eff), total, by_src ? "destinations" : "sources");
    raise_cand(job_at(k), key, &f);
  }
}

struct way {
  int cells[2], hot[2]; /* out of the NIC, into it: judged, and hot */
  int off_path;         /* its cells off a slow path at least half a margin slow */
  float dev[2];         /* deviations summed over its cells */
  float u[2];           /* the same in margins (dev / margin) */
};

/* A NIC slow both ways, where its row and column alone do not make it (find_nics needs two
 * cells): two thirds of its cells hot, some each way. With two cells or fewer each way (a ring
 * gives a NIC one), its cells are pooled instead: the mean of k cells' deviations, each in its own
 * margins, has 1/sqrt(k) of one cell's spread, so a mean past 1/sqrt(k) margins is as unlikely
 * from noise alone as one cell past its margin; and each way's mean must be past half a margin
 * (slow both ways, not one cell slow enough for two). Cells on a path under a verdict count too,
 * when some cell off it is slow: a NIC explains cells on the path and off it, the path only those
 * on it. One verdict instead of two links, named by the slower direction. */
static void find_nics_both_ways(uint64_t wstart, char *hot_cell) {
  struct way *w = NULL;
  for (int i = 0; i < m.ncells; i++) {
    const struct cell *c = &m.cell[i];
    if (!c->n || (hot_cell[i] >= 2 && hot_cell[i] != ON_SLOW_PATH)) continue;
    if (!c->judged && c->from_start) { /* a first-phase cell under the young factor: calm */
      if (!w && !(w = calloc((size_t)m.nnodes, sizeof *w))) return;
      w[c->src].cells[0]++;
      w[c->dst].cells[1]++;
      continue;
    }
    if (!c->judged || c->margin <= 0) continue;
    if (!w && !(w = calloc((size_t)m.nnodes, sizeof *w))) return;
    for (int d = 0; d < 2; d++) {
      struct way *x = &w[d ? c->dst : c->src];
      x->cells[d]++;
      x->hot[d] += dev_of(c) >= c->margin;
      x->off_path += hot_cell[i] != ON_SLOW_PATH && dev_of(c) >= 0.5f * c->margin;
      x->dev[d] += dev_of(c);
      x->u[d] += dev_of(c) / c->margin;
    }
  }
  for (int k = 0; w && k < m.nnodes; k++) {
    const struct way *x = &w[k];
    int cells = x->cells[0] + x->cells[1];
    if (!x->cells[0] || !x->cells[1]) continue;
    float pooled = (x->u[0] + x->u[1]) / (float)cells * sqrtf((float)cells);
    int few = x->cells[0] <= 2 && x->cells[1] <= 2, hot = x->hot[0] + x->hot[1];
    int both = few ? x->u[0] >= 0.5f * (float)x->cells[0] && x->u[1] >= 0.5f * (float)x->cells[1] &&
                         pooled >= 1
                   : x->hot[0] && x->hot[1] && hot * 3 >= cells * 2;
    /* a standing verdict holds while one way is past its margins: the way that is slowed only by
     * the other's (ACKs queued behind a slow sender) hovers about half a margin */
    int one_way = pooled >= 1 && (x->u[0] >= (float)x->cells[0] || x->u[1] >= (float)x->cells[1]);
    if (!x->off_path || (!both && !one_way)) continue;
    struct node *nd = &m.node[k];
    char key[320];
    snprintf(key, sizeof key, "comm_slow/%s/nic/%s/%d", job_at(k), nd->host, nd->dev);
    if (!both && !cand_raised(key)) continue;
    float out = x->dev[0] / (float)x->cells[0], in = x->dev[1] / (float)x->cells[1];
    float eff = out > in ? out : in, margin = nd->row_margin > 0 ? nd->row_margin : nd->col_margin;
    int due = sighting(key, wstart, few || margin <= 0 ? pooled - 1 : eff / margin - 1, STREAK);
    cand_on(key, ON_NIC, k);
    for (int i = 0; i < m.ncells; i++)
      if (m.cell[i].n && (m.cell[i].src == k || m.cell[i].dst == k)) hot_cell[i] = due ? 3 : 2;
    if (due != 1) continue;
    struct det_finding f = {.kind = "comm_slow",
                            .where = out > in ? "nic_tx" : "nic_rx",
                            .ranks = ranks_of_node(k),
                            .hosts = json_pack("[s]", nd->host),
                            .nic_host = nd->host,
                            .nic_dev = dev_named(nd),
                            .factor = exp(eff),
                            .confidence = margin > 0 ? confidence(eff, margin) : 1,
                            .cost = cost_of(at_nic, &(struct nic_arg){k, 1}) +
                                    cost_of(at_nic, &(struct nic_arg){k, 0})};
    snprintf(f.detail, sizeof f.detail,
             "slow both ways: sends at %.2fx, receives at %.2fx its usual time per byte", exp(out),
             exp(in));
    raise_cand(job_at(k), key, &f);
  }
  free(w);
}

/* A straggler's transfers wait on its compute: a receive it posts late, a send it drains late.
 * The cells at the NICs of a host with a straggler verdict standing are explained by it. */
static void straggler_explains(const json_t *ev, void *arg) {
  char *hot_cell = arg;
  const char *job = json_string_value(json_object_get(ev, "job"));
  size_t h;
  json_t *host;
  json_array_foreach(json_object_get(ev, "hosts"), h, host) {
    const char *name = json_string_value(host);
    for (int i = 0; i < m.ncells; i++) {
      const struct cell *c = &m.cell[i];
      if (c->n && !strcmp(job_at(c->src), job) &&
          (!strcmp(m.node[c->src].host, name) || !strcmp(m.node[c->dst].host, name)))
        hot_cell[i] = 3;
    }
  }
}

static void find_links(uint64_t wstart, char *hot_cell) {
  for (int i = 0; i < m.ncells; i++) {
    struct cell *c = &m.cell[i];
    if (!c->n || !c->judged || hot_cell[i] >= 2 || hot_cell[i] == NIC_STANDS ||
        dev_of(c) < c->margin || c->resid < c->margin)
      continue;
    struct node *s = &m.node[c->src], *d = &m.node[c->dst];
    char key[320];
    snprintf(key, sizeof key, "comm_slow/%s/link/%s/%d/%s/%d", job_at(c->src), s->host, s->dev,
             d->host, d->dev);
    /* A host pair the plan spreads over several paths: its cell cannot tell a slow link from a
     * slow path, its data sockets' rates can (det_paths.c, a 4 s window): they get SPLIT_WAIT
     * more evaluations to speak first. */
    int split = det_plan_split(s->host, d->host);
    int due = sighting(key, wstart, fminf(dev_of(c), c->resid) / c->margin - 1,
                       split ? STREAK + SPLIT_WAIT : STREAK);
    cand_on(key, ON_CELL, i);
    if (due) hot_cell[i] = 3;
    if (due != 1) continue;
    struct det_finding f = {.kind = "comm_slow",
                            .where = "link",
                            .ranks = ranks_of_node(c->src),
                            .hosts = json_pack("[s, s]", s->host, d->host),
                            .link_src = s->host,
                            .link_dst = d->host,
                            .link_src_dev = dev_named(s),
                            .link_dst_dev = dev_named(d),
                            .factor = exp(dev_of(c)),
                            .confidence = confidence(c->resid, c->margin),
                            .cost = cost_of(is_cell, &i)};
    snprintf(f.detail, sizeof f.detail,
             "cell %.2fx its usual (%.2fx beyond its row and column), %d transfers", exp(dev_of(c)),
             exp(c->resid), c->n);
    raise_cand(job_at(c->src), key, &f);
  }
}

/* One median-polish sweep over rows or columns: each node's effect (eff, over cnt cells) is the
 * lower median of its cells' residual deviations, for nodes with two cells or more. Cells are
 * grouped by node (val[start[k]..start[k+1]) are node k's, other[j] the node at the cell's other
 * end, whose effect is other_eff); all of it in compact arrays, so a sweep reads memory in sequence
 * instead of jumping across every cell and node. */
static void polish(float *scratch, const int *start, const float *val, const int *other,
                   const float *other_eff, float *eff, int *cnt) {
  for (int k = 0; k < m.nnodes; k++) {
    int n = 0;
    for (int j = start[k]; j < start[k + 1]; j++)
      scratch[n++] = val[j] - m.dev_overall - other_eff[other[j]];
    eff[k] = n >= 2 ? det_lower_median(scratch, n, m.ev.pick) : 0;
    cnt[k] = n;
  }
}

/* The live cells grouped by node (key: their source or destination): order[start[k]..start[k+1])
 * are node k's, as positions in key, in the order they come there. */
static void group(const int *key, int live, int *start, int *order) {
  memset(start, 0, (size_t)(m.nnodes + 2) * sizeof *start);
  for (int j = 0; j < live; j++)
    start[key[j] + 2]++;
  for (int k = 0; k < m.nnodes; k++)
    start[k + 2] += start[k + 1];
  for (int j = 0; j < live; j++)
    order[start[key[j] + 1]++] = j;
}

/* The judged cells (those with a baseline) into the polish's arrays: their deviations (lv),
 * sources (ls) and destinations (ld); sets each live cell's d, d_all, margin and judged, and the
 * median deviation. Returns how many. */
/* The spread of one transfer's sample in a cell's window, from how far each class's largest sits
 * above its mean: about sqrt(2 ln n) - (ln ln n + ln 4 pi) / (2 sqrt(2 ln n)) standard deviations
 * for n normal samples (a little under the true expectation, and a heavy tail reads wide: both
 * make the estimate err large). The classes' estimates weighted by their transfers; 0 when no
 * class has three. */
static float one_transfer_sd(const struct wsum *ws, int k) {
  double acc = 0;
  int tot = 0;
  for (int j = 0; j < k; j++) {
    if (ws[j].n < 3) continue;
    double l = sqrt(2 * log((double)ws[j].n));
    double expected_max = l - (log(log((double)ws[j].n)) + log(4 * M_PI)) / (2 * l);
    acc += ws[j].n * (ws[j].max - ws[j].sum / ws[j].n) / expected_max;
    tot += ws[j].n;
  }
  return tot ? (float)(acc / tot) : 0;
}

/* A window with fewer transfers than the cell usually has is noisier: its mean has the sampling
 * variance of one transfer over n where the baseline's had it over n_usual, on top of what moves
 * whole windows (a busy host, a shared core). The margin grows by that difference, z spreads of
 * it; never past the square root of n_usual / n, which assumes all of the baseline's noise was
 * sampling. A link slowed 15x carries a fifteenth of its transfers, so scaling the whole margin
 * by the root (3.75x there) hid it: on a loopback ring under ASan a transfer's sample spread 0.67
 * (median window), a window's mean 0.17 with 300 transfers, mostly shared by the window's
 * transfers, not sampling. */
static float fewer_transfers_margin(int i, float margin) {
  const struct cell *c = &m.cell[i];
  if (!(c->n_usual > (float)c->n)) return margin;
  float most = margin * sqrtf(c->n_usual / (float)c->n);
  float one_sd = one_transfer_sd(m.ev.ws + m.ev.at[i], m.ev.at[i + 1] - m.ev.at[i]);
  if (one_sd <= 0) return most;
  float z = (float)ctx->noise.z * one_sd;
  float grown = sqrtf(margin * margin + z * z * (1.0f / (float)c->n - 1.0f / c->n_usual));
  return grown < most ? grown : most;
}

/* The cells without a baseline that read YOUNG_FACTOR times the median cell or more, into the
 * polish's arrays after the live judged cells (the median deviation is the judged cells' alone):
 * each judged against the median cell, as its baseline, at a margin of that factor. Returns how
 * many. */
static int young_cells(int live) {
  float margin = fmaxf((float)log(YOUNG_FACTOR), (float)ctx->noise.min_log);
  int added = 0;
  for (int i = 0; i < m.ncells; i++) {
    struct cell *c = &m.cell[i];
    c->young = 0;
    if (!c->n || c->judged || !c->from_start || c->v - m.overall - m.dev_overall < margin) continue;
    c->judged = c->young = 1;
    c->d = c->v - m.overall;
    c->d_all = c->v_all - m.overall;
    c->margin = margin;
    m.ev.lv[live + added] = c->d;
    m.ev.ls[live + added] = c->src;
    m.ev.ld[live + added++] = c->dst;
  }
  return added;
}

static int judged_cells(void) {
  int live = 0;
  for (int i = 0; i < m.ncells; i++) {
    struct cell *c = &m.cell[i];
    const struct det_noise *nz = &m.noise[i];
    c->judged = c->n && det_noise_ready(nz);
    if (!c->judged) continue;
    c->d = c->v - m.overall - nz->base;
    c->d_all = c->v_all - m.overall - nz->base;
    c->margin = fewer_transfers_margin(i, det_noise_margin(nz, &ctx->noise));
    m.ev.scratch[live] = m.ev.lv[live] = c->d;
    m.ev.ls[live] = c->src;
    m.ev.ld[live++] = c->dst;
  }
  /* with fewer cells, the median deviation is one cell's: a 2-rank job's slow link moved it,
   * and its healthy way read the fault's slowdown with the sign turned */
  m.dev_overall = live >= MEDIAN_CELLS ? det_lower_median(m.ev.scratch, live, m.ev.pick) : 0;
  if (live) m.any_baseline = 1;
  return live + young_cells(live);
}

/* The cells under a verdict that this evaluation did not sight (a ring's NIC slow both ways
 * reads so now and then): not learned either, or the fault becomes their baseline; a NIC verdict
 * standing on a 15x slow link cleared itself 20 s in, the fault still on. */
static void hold_back_standing(char *hot_cell) {
  for (int i = 0; i < m.ncand; i++) {
    const struct cand *c = &m.cand[i];
    if (!c->raised || c->seen || c->on == ON_NOTHING) continue;
    if (c->on == ON_CELL) {
      if (c->at < m.ncells) hot_cell[c->at] = 3;
      continue;
    }
    for (int j = 0; j < m.ncells; j++) {
      const struct cell *x = &m.cell[j];
      int out = x->src == c->at, in = x->dst == c->at;
      if (x->n && (c->on == ON_NIC ? out || in : c->on == ON_ROW ? out : in)) hot_cell[j] = 3;
    }
  }
}

/* Cells teach their baselines every evaluation, bursts of noise included, except while a verdict
 * stands on them or a slow path explains them: then what they held back was the fault's start (a
 * fault never becomes a baseline), and the usual their estimated starts are read against
 * (det_xstart) is held too. A hot cell's samples (no verdict yet) wait until its run ends
 * (det_noise_hold), and its estimated starts' usual stays as it was meanwhile. Learned as they
 * came, a link at 30% in a minimal trace, whose hot evaluations went now to its link candidate, now
 * to its one-cell path's, so that neither's streak completed, had its slow samples learned after 5
 * hot evaluations: never named. */
static void learn(const char *hot_cell) {
  for (int i = 0; i < m.ncells; i++) {
    struct cell *c = &m.cell[i];
    if (i + 8 < m.ncells) det_noise_prefetch(&m.noise[i + 8]);
    if (!c->n) continue;
    int hot = c->judged && dev_all_of(c) >= c->margin;
    det_xstart_freeze(i, hot_cell[i] >= 3 || c->young || hot);
    if (hot_cell[i] >= 3 || c->young) { /* a young cell far over the rest: not its usual */
      det_noise_hold_drop(&c->hot, &m.noise[i]);
      continue;
    }
    float v = c->v - m.overall;
    if (hot) { /* no verdict yet: held */
      det_noise_hold(&c->hot, &m.noise[i], v);
    } else {
      det_noise_release(&c->hot, &m.noise[i]);
      det_noise_add(&m.noise[i], v);
    }
    c->n_usual = c->n_usual ? 0.9f * c->n_usual + 0.1f * (float)c->n : (float)c->n;
  }
}

/* Every cell's sums of the window ending with half-window w, read once into m.ev.ws (cell i's
 * at m.ev.at[i]..m.ev.at[i + 1]): the cells are tens of MB at 16,384 NICs. Returns how many. */
static int read_window_sums(uint64_t w) {
  struct wsum *ws = m.ev.ws;
  int *at = m.ev.at, nws = 0;
  for (int i = 0; i < m.ncells; i++) {
    if (i + 16 < m.ncells) { /* the stride defeats the hardware's prefetch: ask 16 cells ahead */
      __builtin_prefetch(&m.samples[i + 16].b[(w - 1) & 3]);
      __builtin_prefetch(&m.samples[i + 16].b[w & 3]);
    }
    at[i] = nws;
    nws += window_sums(&m.samples[i], w, ws + nws);
  }
  at[m.ncells] = nws;
  return nws;
}

/* Each class's median cell (ref): the trimmed means grouped by class (counting sort), then
 * selected. */
static void class_medians(int nws, float ref[64]) {
  struct wsum *ws = m.ev.ws;
  float *scratch = m.ev.scratch;
  int start[65] = {0};
  for (int i = 0; i < nws; i++)
    start[ws[i].cls + 1]++;
  for (int c = 0; c < 64; c++)
    start[c + 1] += start[c];
  int fill[64];
  memcpy(fill, start, sizeof fill);
  for (int i = 0; i < nws; i++) {
    struct wsum t = trimmed(ws[i]);
    scratch[fill[t.cls]++] = t.sum / (float)t.n;
  }
  for (int c = 0; c < 64; c++) {
    int k = start[c + 1] - start[c];
    if (k) ref[c] = det_kth(scratch + start[c], k, k / 2, m.ev.pick);
  }
}

/* The median cell reads exactly the median, 0 against it, whatever it does: in a small matrix
 * (a 4-host ring) one cell is the median cell most evaluations, and its window of zeros said it
 * never varied (a spread of 0.021 in log units), so its healthy bursts (1.4x for a second, every
 * few seconds) were named (a link at 1.46x in 1 of 18 healthy 600-step jobs, at 1.15x in CI). It
 * reads instead against the median of the other cells: for an even count the next value above
 * it; for an odd count the others have two middle values, and it takes the one above too. Read
 * against the one below, the median cell of a 3-cell matrix whose third cell is a fast one
 * (a host's own loopback) read 4x in the job's first phase, and was named by the first-phase
 * rule (young_cells). What it costs and what the matrix shows stay what it measured (own_v).
 * At 16,384 NICs this moves one cell of millions. */
static void median_cell_against_the_rest(int live) {
  m.median_cell = -1;
  m.median_moved = 0;
  if (live < MEDIAN_CELLS) return;
  float above = INFINITY;
  int equal = 0;
  for (int j = 0; j < live; j++) { /* the live values, in the order the median left them */
    float v = m.ev.scratch[j];
    equal += v == m.overall;
    if (v > m.overall && v < above) above = v;
  }
  /* two cells reading the same are both the median: neither is singled out */
  if (equal != 1 || !isfinite(above)) return;
  for (int i = 0; i < m.ncells; i++) {
    struct cell *c = &m.cell[i];
    if (!c->n || c->v != m.overall) continue;
    m.median_cell = i;
    m.median_moved = m.overall - above; /* its value against the rest, less what it read */
    c->v += m.median_moved;
    c->v_all += m.median_moved;
    return;
  }
}

/* Each cell's value this window (v, and v_all untrimmed), its transfers (n), the matrix's
 * weight and its median cell (overall). The first window of a slowdown holds one or two slow
 * samples per cell, the very ones that trimming leaves out; a row or path needs most of its
 * cells hot, which one blip cannot make, so v_all counts them untrimmed. */
static void cell_values(const float ref[64]) {
  struct wsum *ws = m.ev.ws;
  int *at = m.ev.at, live = 0;
  m.weight = 0;
  for (int i = 0; i < m.ncells; i++) {
    struct cell *c = &m.cell[i];
    double acc = 0, acc_all = 0;
    int tot = 0, tot_all = 0;
    for (int j = at[i]; j < at[i + 1]; j++) {
      struct wsum t = trimmed(ws[j]);
      acc += (double)(t.sum - (float)t.n * ref[t.cls]);
      tot += t.n;
      acc_all += (double)(ws[j].sum - (float)ws[j].n * ref[ws[j].cls]);
      tot_all += ws[j].n;
    }
    c->n = tot >= 2 ? tot : 0;
    c->v = tot >= 2 ? (float)(acc / tot) : 0;
    c->v_all = c->n ? (float)(acc_all / tot_all) : 0;
    if (!c->n) continue;
    m.ev.scratch[live++] = c->v;
    m.weight += c->n * exp(c->v);
  }
  m.overall = det_lower_median(m.ev.scratch, live, m.ev.pick);
  median_cell_against_the_rest(live);
  if (live < MEDIAN_CELLS) { /* no median cell: what the cells read apart from ref is kept */
    for (int i = 0; i < m.ncells; i++)
      if (m.cell[i].n) {
        m.cell[i].v -= m.overall;
        m.cell[i].v_all -= m.overall;
      }
    m.weight *= exp(-m.overall); /* each cell's exp(v), as shifted */
    m.overall = 0;
    m.median_cell = -1;
  }
}

/* The row and column effects of the live judged cells by median polish (three sweeps each way),
 * into every node. */
static void row_col_effects(int live) {
  int *ls = m.ev.ls, *ld = m.ev.ld, *order = m.ev.order, *rk = m.ev.rk, *ck = m.ev.ck,
      *rs = m.ev.rs, *cs = m.ev.cs, *nrow = m.ev.nrow, *ncol = m.ev.ncol;
  float *lv = m.ev.lv, *rv = m.ev.rv, *cv = m.ev.cv, *row = m.ev.row, *col = m.ev.col;
  memset(row, 0, (size_t)m.nnodes * sizeof *row);
  memset(col, 0, (size_t)m.nnodes * sizeof *col);
  group(ls, live, rs, order);
  for (int j = 0; j < live; j++) {
    rv[j] = lv[order[j]];
    rk[j] = ld[order[j]];
  }
  group(ld, live, cs, order);
  for (int j = 0; j < live; j++) {
    cv[j] = lv[order[j]];
    ck[j] = ls[order[j]];
  }
  for (int it = 0; it < 3; it++) {
    polish(m.ev.scratch, rs, rv, rk, col, row, nrow);
    polish(m.ev.scratch, cs, cv, ck, row, col, ncol);
  }
  for (int k = 0; k < m.nnodes; k++) {
    m.node[k].row = row[k];
    m.node[k].col = col[k];
    m.node[k].nrow = nrow[k];
    m.node[k].ncol = ncol[k];
    m.node[k].row_margin = m.node[k].col_margin = 0;
    m.node[k].row_slow = 0;
  }
}

/* Each judged cell's residual beyond its row and column, and each node's mean margin. */
static void residuals(void) {
  for (int i = 0; i < m.ncells; i++) {
    struct cell *c = &m.cell[i];
    if (!c->n || !c->judged) continue;
    c->resid = dev_of(c) - m.node[c->src].row - m.node[c->dst].col;
    m.node[c->src].row_margin += c->margin / (float)(m.node[c->src].nrow ? m.node[c->src].nrow : 1);
    m.node[c->dst].col_margin += c->margin / (float)(m.node[c->dst].ncol ? m.node[c->dst].ncol : 1);
  }
}

static void evaluate(uint64_t w) {
  char *hot_cell = m.ev.hot_cell;
  memset(hot_cell, 0, (size_t)m.ncells);
  float ref[64] = {0};
  class_medians(read_window_sums(w), ref);
  cell_values(ref);
  row_col_effects(judged_cells());
  residuals();
  for (int i = 0; i < m.ncand; i++)
    m.cand[i].seen = 0;
  uint64_t wstart = (w - 1) * HALF_NS;
  for (int i = 0; i < m.ncand; i++)
    if (m.cand[i].raised && m.cand[i].on == ON_NIC)
      for (int j = 0; j < m.ncells; j++)
        if (m.cell[j].n && (m.cell[j].src == m.cand[i].at || m.cell[j].dst == m.cand[i].at))
          hot_cell[j] = NIC_STANDS;
  det_book_each("straggler", straggler_explains, hot_cell);
  for (int i = 0; i < m.ncells; i++)
    if (m.cell[i].n && hot_cell[i] < 2 &&
        det_paths_explains(m.node[m.cell[i].src].host, m.node[m.cell[i].dst].host))
      hot_cell[i] = ON_SLOW_PATH;
  find_paths(wstart, hot_cell, 0);
  find_nics(wstart, hot_cell, 1);
  find_nics(wstart, hot_cell, 0);
  find_nics_both_ways(wstart, hot_cell);
  find_paths(wstart, hot_cell, 1);
  find_links(wstart, hot_cell);
  hold_back_standing(hot_cell);
  learn(hot_cell);
  for (int i = 0; i < m.ncand;) { /* what was not seen this time */
    struct cand *c = &m.cand[i];
    int read = c->seen || cand_read(c);
    if (read) c->quiet = 0; /* QUIET_MAX counts unread evaluations in a row */
    if (!read && c->quiet < QUIET_MAX) {
      c->quiet++;
      i++;
      continue;
    }
    if (!c->seen) {
      c->streak = 0;
      int calm = clear_evidence(c);
      if (++c->miss >= STREAK || !c->raised || calm) {
        if (c->raised)
          det_book_clear(c->key,
                         calm ? "back inside its noise, well below the fault's level"
                              : "the cell is back under its threshold",
                         ctx->now);
        m.cand[i] = m.cand[--m.ncand];
        continue;
      }
    }
    i++;
  }
  m.eval_t = (w + 1) * HALF_NS;
}

/* Judges every half-window whose records are in (it ended GRACE_NS ago), while samples come;
 * after a long silence only the last two are worth judging. */
void det_matrix_advance(void) {
  settle_held(ctx->now);
  if (!m.next_hw) return;
  if (m.newest_hw > m.next_hw + 2) m.next_hw = m.newest_hw - 2;
  while (m.next_hw <= m.newest_hw && (m.next_hw + 1) * HALF_NS + GRACE_NS <= ctx->now) {
    evaluate(m.next_hw);
    m.next_hw++;
  }
}

json_t *det_matrix_state(void) {
  json_t *nodes = json_array(), *cells = json_array(), *rows = json_array(), *cols = json_array();
  json_t *jobs = json_array(); /* each node's job: the series of a link or a NIC are its job's */
  for (int k = 0; k < m.nnodes; k++) {
    char name[C4_HOST_MAX + 16]; /* a rank standing for its NIC (no dev) is "HOST/rRANK": the
                                  * events name it by host, dev -1 and that rank */
    if (m.node[k].dev <= -2)
      snprintf(name, sizeof name, "%s/r%d", m.node[k].host, -2 - m.node[k].dev);
    else
      snprintf(name, sizeof name, "%s/%d", m.node[k].host, m.node[k].dev);
    json_array_append_new(nodes, json_string(name));
    json_array_append_new(jobs, json_string(job_at(k)));
    json_array_append_new(rows, json_real(exp(m.node[k].row)));
    json_array_append_new(cols, json_real(exp(m.node[k].col)));
  }
  for (int i = 0; i < m.ncells && json_array_size(cells) < 100000; i++) {
    const struct cell *c = &m.cell[i];
    if (c->n)
      json_array_append_new(
          cells, json_pack("[i, i, f, i]", c->src, c->dst, exp(own_v(i) - m.overall), c->n));
  }
  return json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:I, s:I}", "job", m.job ? m.job->name : "",
                   "nodes", nodes, "node_jobs", jobs, "cells", cells, "rows", rows, "cols", cols,
                   "t", (json_int_t)m.eval_t, "dropped", (json_int_t)m.dropped);
}

void det_matrix_each_slow_nic(void (*fn)(const char *host, void *arg), void *arg) {
  for (int i = 0; i < m.ncand; i++) {
    const struct cand *c = &m.cand[i];
    if ((c->on == ON_ROW || c->on == ON_COL || c->on == ON_NIC) && (c->streak || c->raised))
      fn(m.node[c->at].host, arg);
  }
}

void det_matrix_init(const struct det_ctx *c) { ctx = c; }

void det_matrix_reset(void) {
  det_table_free(m.node, NODE_CAP * sizeof *m.node);
  det_table_free(m.node_hash, 2 * NODE_CAP * sizeof *m.node_hash);
  det_table_free(m.cell, CELL_CAP * sizeof *m.cell);
  det_table_free(m.samples, CELL_CAP * sizeof *m.samples);
  det_table_free(m.noise, CELL_CAP * sizeof *m.noise);
  det_table_free(m.cell_hash, 2 * CELL_CAP * sizeof *m.cell_hash);
  det_table_free(m.by_conn, m.conn_cap * sizeof *m.by_conn);
  det_xstart_reset();
  void *ev[] = {m.ev.pick, m.ev.ws,  m.ev.at,    m.ev.scratch, m.ev.lv,      m.ev.rv, m.ev.cv,
                m.ev.ls,   m.ev.ld,  m.ev.order, m.ev.rk,      m.ev.ck,      m.ev.rs, m.ev.cs,
                m.ev.row,  m.ev.col, m.ev.nrow,  m.ev.ncol,    m.ev.hot_cell};
  for (size_t i = 0; i < sizeof ev / sizeof *ev; i++)
    free(ev[i]);
  memset(&m, 0, sizeof m);
}
