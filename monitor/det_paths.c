/* det_paths.c -- congested paths from the plugin's path records: each data socket's rate (bytes
 * acknowledged over its busy time), pooled over the last four seconds, against the best socket of
 * the same connection on another path. The plugin's weights move a connection's bytes off a
 * congested path, so the connection's transfers hardly slow and the delay matrix sees little; the
 * rate the slow path still gives its socket's (smaller) chunks does not recover.
 *
 * A socket's d is the log of its best other-path sibling's rate over its own: about 0 on a healthy
 * fabric, and the congestion's factor when its path is slow; but a connection's sockets can share a
 * healthy fabric unevenly and steadily (make drill: h3 -> h2's socket on s1 at 0.75 of its
 * sibling's rate, h0 -> h1's even). So each socket learns its own healthy d (det_noise), and a
 * path's statistic is the mean, over the data sockets the plan puts on it, of each one's d less
 * that baseline (less the pool's, below, until the socket has one): when some of its sockets are
 * not judged (a slow NIC's, below), the others' mean keeps the same healthy level, which a mean of
 * raw d's would not. A slow host link or NIC slows every socket of its connections; sockets of
 * connections the plan keeps on one path tell nothing of paths apart. Its noise: the path's own
 * healthy values (det_noise) once it has a dozen, until then the pool of every socket's raw d,
 * connections on one path included (their ratios are the measure's own noise), its spread scaled
 * down by the square root of the sockets averaged. While a path is on its way to a verdict or under
 * one, and for the span its samples stay pooled after, its sockets' siblings read the fault's
 * mirror: they teach nothing, nor do their paths. A path past z of its spreads and the minimum
 * effect for three evaluations in a row, with enough evidence summed, is one `path` verdict under
 * the key the matrix would use (held while the path stays past half its margin); the matrix takes
 * the cells of its host pairs as explained. A slow host link does not slow its sockets alike: two
 * flows that share it share it unevenly, and the weights feed that back (make drill: 3.9x); so the
 * sockets of connections that cross a host whose NIC the matrix finds slow (a verdict on its way),
 * or under a NIC verdict until NIC_HOLD_NS ago, are not judged (a path left with none of its
 * sockets has a calm look). A look at a socket's trickle (THICK_NS) may hold or clear its path's
 * verdict but counts in no streak, and teaches no baseline; a socket in its first NEW_SOCK_NS
 * is not judged and teaches nothing. A path left with only such sockets has a calm look. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "det_index.h"
#include "det_internal.h"

#define HALF_NS 500000000ull  /* evaluations every half second */
#define GRACE_NS 200000000ull /* records of a half-window may arrive this late */
#define SPAN 8                /* half-windows pooled: four seconds */
#define RING 32 /* and a sibling idle over SPAN stands by its rate over these (16 s) */
#define MIN_BUSY_NS 20000000ull /* a socket's pooled busy time worth a rate: one sample */
/* A look with less busy time than this and under half the socket's usual is a trickle's (weights
 * that moved its bytes off a path, a ring paced by a slow link elsewhere): a few samples of small
 * chunks, which swing with latency, not with the path, further than the baseline learned from its
 * usual looks allows (docs/events.md: on six make drill recordings, looks under 40 ms strayed
 * past 1.0 from their baselines in 12% of healthy looks; over 120 ms none past 1.0 in 1,415,
 * healthy or paced). A small job's sockets, a sample a second each, are thin as usual: judged.
 * The usual follows a trickle's looks at a 64th each, so a load that fell for good is judged
 * again within about two minutes (a 14 s trickle moves it a third of the way). */
#define THICK_NS 120000000ull
/* A socket's first records (a job's start, or its restart on fewer ranks) are TCP's slow start and
 * the weights' first guesses: its rate over the first two pooled spans says little of its path
 * (make drill: the restarted job's h0 -> h1 socket on s1 read 3.0x its sibling in its first look,
 * 1.6x 3 s later, and its path, whose noise the job before had taught, was named at 2.6x) */
#define NEW_SOCK_NS (2 * SPAN * HALF_NS)
#define MAX_SOCKS (1 << 14)
#define STREAK 3
#define EVIDENCE 2.0f
#define MAX_TRACKED 4096 /* paths followed */
/* A host whose NIC is slow, under its verdict and for this long after it clears: its sockets'
 * rates tell nothing of paths (docs/events.md, measured on make drill's recordings). */
#define NIC_HOLD_NS 8000000000ull
#define MAX_NIC_HELD 256

struct sock {
  uint64_t conn;
  int sock, path; /* path: the plan's path index, -1 not known */
  char src[C4_HOST_MAX], dst[C4_HOST_MAX];
  uint64_t hw[RING];
  double bytes[RING], busy[RING];
  /* the last evaluation: d, the log of the best sibling's rate (on another path when split) over
   * this one's; has: d was computed; split: its sibling is on another path */
  float d, d_recent;
  int has, split;
  int excused;   /* its connection crosses a host whose NIC is slow (or lately was) */
  int disturbed; /* a path of its connection was on its way to a verdict or under one last time */
  int thin;      /* this look's busy time is a trickle's: under THICK_NS and half its usual */
  uint64_t born_ns;        /* when c4mon first saw it */
  int young;               /* ... less than NEW_SOCK_NS ago */
  double usual_busy_ns;    /* its busy time per look, learned with its baseline (0: none yet) */
  struct det_noise own;    /* its healthy d: a connection's sockets may share paths unevenly */
  double lost_ns, busy_ns; /* the window's busy time beyond the sibling's pace, and all of it */
};

/* A host whose NIC the matrix finds slow (slow: this evaluation) or a verdict names (until: when
 * its sockets are judged again). */
struct nic_held {
  char host[C4_HOST_MAX];
  uint64_t until;
  int slow;
};

struct track { /* one path: its noise and its run of evaluations */
  struct det_noise noise;
  int streak, miss, raised, hot;
  float evidence;
  uint64_t first_seen;
  uint64_t unsettled_until; /* a streak or verdict's samples stay in its sockets' pool till then */
};

static struct {
  struct det_index socks;
  struct track *track; /* per plan path, MAX_TRACKED */
  uint64_t next_hw, newest_hw;
  const struct c4_det_job *job;
  int any_tracked;
  struct det_noise pool; /* every socket's d: the ratio's healthy spread */
  struct nic_held nic[MAX_NIC_HELD];
  int nnic;
} p;

static const struct det_ctx *ctx;

struct key {
  uint64_t conn;
  int sock;
};
static int match(const void *item, const void *key) {
  const struct sock *s = item;
  const struct key *k = key;
  return s->conn == k->conn && s->sock == k->sock;
}

void det_paths_init(const struct det_ctx *c) { ctx = c; }

void det_paths_take(const struct c4_det_job *job, const struct c4_path_record *a) {
  if (!det_plan_npaths() || !a->busy_ns || !a->t || a->sock >= a->nsocks) return;
  if (!p.socks.item_size)
    p.socks =
        (struct det_index){.item_size = sizeof(struct sock), .nslots = 2 * MAX_SOCKS, .probes = 64};
  uint64_t hw = a->t / HALF_NS;
  if (p.next_hw && hw < p.next_hw) return; /* its window was judged already */
  struct key k = {a->conn_id, a->sock};
  int added = 0;
  struct sock *s =
      det_index_get(&p.socks, a->conn_id * 0x9e3779b97f4a7c15ull ^ a->sock, match, &k, 1, &added);
  if (!s) return;
  if (added) {
    s->conn = a->conn_id;
    s->sock = a->sock;
    snprintf(s->src, sizeof s->src, "%s", a->self.host);
    snprintf(s->dst, sizeof s->dst, "%s", a->peer.host);
    s->path = det_plan_sock_path(s->src, s->dst, a->sock, a->src_port);
    s->born_ns = ctx->now;
    for (int i = 0; i < RING; i++)
      s->hw[i] = UINT64_MAX;
  }
  p.job = job;
  int b = (int)(hw % RING);
  if (s->hw[b] != hw) {
    s->hw[b] = hw;
    s->bytes[b] = s->busy[b] = 0;
  }
  s->bytes[b] += (double)a->bytes;
  s->busy[b] += (double)a->busy_ns;
  if (!p.next_hw) p.next_hw = hw;
  if (hw > p.newest_hw) p.newest_hw = hw;
}

/* Socket s's bytes and busy time over the half-windows w - span + 1 .. w. */
static void pooled(const struct sock *s, uint64_t w, int span, double *bytes, double *busy) {
  *bytes = *busy = 0;
  for (uint64_t h = w + 1 - (uint64_t)span; h <= w; h++) {
    int b = (int)(h % RING);
    if (s->hw[b] != h) continue;
    *bytes += s->bytes[b];
    *busy += s->busy[b];
  }
}

/* Socket i's best sibling rate among rate[] (0: none): on another known path when there is one
 * there (*split set), else any. A sibling with no rate of its own in the window was idle (it moved
 * its chunks without a busy period long enough for a sample: it kept up), and its rate over the
 * last RING half-windows stands for it (idle[]). */
static double sibling(struct sock **v, int n, int i, const double *rate, const double *idle,
                      int *split) {
  double other = 0, elsewhere = 0;
  for (int j = 0; j < n; j++) {
    double r = rate[j] ? rate[j] : idle[j];
    if (j == i || !r) continue;
    if (r > other) other = r;
    if (v[i]->path >= 0 && v[j]->path >= 0 && v[j]->path != v[i]->path && r > elsewhere)
      elsewhere = r;
  }
  *split = elsewhere > 0;
  return elsewhere ? elsewhere : other;
}

/* The n sockets of one connection: every one's d against its best sibling over the last SPAN
 * half-windows, and d_recent over the last recent ones (the rate since a path's streak began:
 * what the verdict's factor says; d where a socket has no rate of its own that recent). */
static void judge_conn(struct sock **v, int n, uint64_t w, int recent) {
  double rate[64], bytes[64], busy[64], fresh[64], idle[64];
  for (int i = 0; i < n; i++)
    v[i]->has = v[i]->split = 0;
  if (n > 64) n = 64; /* C4_MAX_NSOCKS */
  for (int i = 0; i < n; i++) {
    double b, t;
    pooled(v[i], w, recent, &b, &t);
    fresh[i] = t >= MIN_BUSY_NS && b > 0 ? b / t : 0;
    pooled(v[i], w, SPAN, &bytes[i], &busy[i]);
    rate[i] = busy[i] >= MIN_BUSY_NS && bytes[i] > 0 ? bytes[i] / busy[i] : 0;
    pooled(v[i], w, RING, &b, &t);
    idle[i] = t >= MIN_BUSY_NS && b > 0 ? b / t : 0;
  }
  for (int i = 0; i < n; i++) {
    struct sock *s = v[i];
    int split, fresh_split;
    double ref = rate[i] ? sibling(v, n, i, rate, idle, &split) : 0;
    if (!ref) continue;
    s->has = 1;
    s->split = split;
    s->d = (float)log(ref / rate[i]);
    double fresh_ref = fresh[i] ? sibling(v, n, i, fresh, idle, &fresh_split) : 0;
    s->d_recent = fresh_ref && fresh_split == split ? (float)log(fresh_ref / fresh[i]) : s->d;
    s->busy_ns = busy[i];
    s->lost_ns = busy[i] > bytes[i] / ref ? busy[i] - bytes[i] / ref : 0;
  }
}

/* The n sockets of one connection are disturbed while one of them is on a path on its way to a
 * verdict or under one, or was within the pooled span (its samples are still in the pool): each
 * one's d is against its siblings, so theirs mirror the fault. */
static void mark_disturbed(struct sock **v, int n, int np) {
  int any = 0;
  for (int i = 0; i < n; i++)
    any |= v[i]->split && v[i]->path < np && p.track[v[i]->path].unsettled_until > ctx->now;
  for (int i = 0; i < n; i++)
    v[i]->disturbed = any;
}

static int by_conn(const void *a, const void *b) {
  const struct sock *x = *(struct sock *const *)a, *y = *(struct sock *const *)b;
  return x->conn < y->conn ? -1 : x->conn > y->conn;
}

/* Path k this evaluation: its split sockets' d less their baselines, summed; how many, and how
 * many of them had a baseline of their own, and how many a fault on a sibling's path disturbed;
 * the time they lost; and how many a slow NIC excused. */
struct path_sum {
  int n, own, excused, disturbed;
  int quiet; /* its sockets that said nothing: young, or a trickle's look while it is not raised */
  double sum, sum_recent, lost;
};

/* One more evaluation of path k (S: its statistic less its baseline, F: the same over the streak's
 * half-windows only, the factor a new verdict says; margin: how far past that is well outside the
 * noise); raises its verdict after STREAK hot ones in a row with EVIDENCE
 * margins of excess summed, clears it after STREAK calm ones. */
static void follow(int k, int hot, float S, float F, float margin, double cost, int n,
                   uint64_t wstart) {
  struct track *t = &p.track[k];
  char key[320];
  snprintf(key, sizeof key, "comm_slow/%s/path/%s", p.job->name, det_plan_path_name(k));
  t->hot = hot;
  if (!hot) {
    t->streak = 0;
    if (t->raised && ++t->miss >= STREAK) {
      det_book_clear(key, "the path's sockets are back to their usual rate", ctx->now);
      t->raised = 0;
    }
    return;
  }
  t->miss = 0;
  if (!t->streak++) t->first_seen = wstart, t->evidence = 0;
  t->evidence += S / margin - 1;
  double confidence = fmin(1.0, 0.5 * S / margin);
  if (t->raised) {
    det_book_update(key, exp(S), confidence, cost);
    return;
  }
  /* the streak's own half-windows must show the path slower: a span that still holds an earlier
   * fault's samples (a host link just restored) can pass the threshold while they do not, and a
   * verdict saying "0.79x" contradicts itself (a quick drill in CI) */
  if (t->streak < STREAK || t->evidence < EVIDENCE || F <= 0) return;
  struct det_finding f = {.kind = "comm_slow",
                          .where = "path",
                          .job = p.job->name,
                          .ranks = json_array(),
                          .hosts = json_array(),
                          .path = det_plan_path_name(k),
                          .factor = exp(F),
                          .confidence = confidence,
                          .cost = cost,
                          .first_seen = t->first_seen};
  snprintf(f.detail, sizeof f.detail,
           "its %d data socket(s) at 1/%.2f of their siblings' rate on other paths", n, exp(F));
  det_book_raise(key, &f, ctx->now);
  t->raised = 1;
}

/* Judges half-window w (the SPAN half-windows ending with it) and teaches the baselines. */
/* How many half-windows the connections' rates are judged over this time: SPAN, or fewer (2 at
 * least: a rate needs samples) so that none reaches back before a running streak began. */
static int recent_windows(int np, uint64_t w) {
  int recent = SPAN;
  for (int k = 0; k < np; k++)
    if (p.track[k].streak && !p.track[k].raised) {
      uint64_t since = p.track[k].first_seen / HALF_NS + SPAN - 1;
      int r = since < w ? (int)(w - since + 1) : 1;
      recent = r < 2 ? 2 : r < recent ? r : recent;
    }
  return recent;
}

/* host's entry in the held NICs (a lapsed one's slot, or a new one, when it has none); NULL when
 * MAX_NIC_HELD hosts are held at once (the others' sockets are judged). */
static struct nic_held *nic_entry(const char *host) {
  int at = -1;
  for (int i = 0; i < p.nnic && at < 0; i++)
    if (!strcmp(p.nic[i].host, host)) at = i;
  for (int i = 0; i < p.nnic && at < 0; i++)
    if (p.nic[i].until <= ctx->now && !p.nic[i].slow) at = i;
  if (at < 0 && p.nnic < MAX_NIC_HELD) at = p.nnic++;
  if (at < 0) return NULL;
  if (strcmp(p.nic[at].host, host)) {
    snprintf(p.nic[at].host, sizeof p.nic[at].host, "%s", host);
    p.nic[at].until = 0;
    p.nic[at].slow = 0;
  }
  return &p.nic[at];
}

/* A NIC the matrix found slow in its last evaluation: a verdict may be on its way, and the path's
 * sockets must not win the race to name the fault. */
void det_paths_take_slow_nic(const char *host, void *arg) {
  (void)arg;
  struct nic_held *h = det_plan_npaths() ? nic_entry(host) : NULL;
  if (h) h->slow = 1;
}

/* A standing NIC verdict (nic_tx or nic_rx, slow both ways included) of this job: its host's
 * sockets are excused until NIC_HOLD_NS after the last evaluation that saw it stand. */
static void hold_nic(const json_t *ev, void *arg) {
  (void)arg;
  const char *where = json_string_value(json_object_get(ev, "where"));
  const char *job = json_string_value(json_object_get(ev, "job"));
  const char *host = json_string_value(json_object_get(json_object_get(ev, "nic"), "host"));
  if (!where || !host || !job || !p.job || strcmp(job, p.job->name) ||
      (strcmp(where, "nic_tx") && strcmp(where, "nic_rx")))
    return;
  struct nic_held *h = nic_entry(host);
  if (h) h->until = ctx->now + NIC_HOLD_NS;
}

/* 1 when host's NIC is slow, under a verdict or was within NIC_HOLD_NS. */
static int nic_held(const char *host) {
  for (int i = 0; i < p.nnic; i++)
    if ((p.nic[i].slow || p.nic[i].until > ctx->now) && !strcmp(p.nic[i].host, host)) return 1;
  return 0;
}

/* Sums the judged sockets' d, each less its baseline, by the path each is on (ps[0 .. np-1]), but
 * those of connections a slow NIC excuses (counted apart); returns every socket's busy time, what
 * a path's lost time is a part of. */
static double sum_by_path(struct sock *const *v, long n, int np, struct path_sum *ps) {
  double all_busy = 0;
  for (long i = 0; i < n; i++) {
    struct sock *s = v[i];
    if (!s->has) continue;
    all_busy += s->busy_ns;
    s->excused = p.nnic && (nic_held(s->src) || nic_held(s->dst));
    s->thin = s->busy_ns < THICK_NS && s->busy_ns < s->usual_busy_ns / 2;
    s->young = ctx->now - s->born_ns < NEW_SOCK_NS;
    if (!s->split || s->path >= np) continue;
    if (s->excused) {
      ps[s->path].excused++;
      continue;
    }
    if (s->young || (s->thin && !p.track[s->path].raised)) {
      ps[s->path].quiet++; /* a trickle may hold or clear a verdict, not make one */
      continue;
    }
    int own = det_noise_ready(&s->own);
    float base = own ? s->own.base : p.pool.base;
    ps[s->path].n++;
    ps[s->path].own += own;
    ps[s->path].disturbed += s->disturbed;
    ps[s->path].sum += s->d - base;
    ps[s->path].sum_recent += s->d_recent - base;
    ps[s->path].lost += s->lost_ns;
  }
  return all_busy;
}

/* Path k's look: past its threshold or not, against its own noise once learned, else the pool's
 * scaled to the sockets it has; then the path's noise learns the look unless a fault is under way
 * or a socket in it still lacks a baseline of its own (its d less the pool's is a different
 * level: the path's would be off by it once the socket has its own) or has a sibling on a faulty
 * path (its d is that fault's mirror: a congested s1 reads s0 2.5 in log units fast). */
static void judge_path(int k, const struct path_sum *ps, double all_busy, uint64_t wstart) {
  struct track *t = &p.track[k];
  if (!ps->n && (ps->excused || ps->quiet)) {
    /* its sockets' rates are a slow NIC's, or say nothing of it: a calm look (a streak left
     * standing would keep the siblings disturbed and the matrix's cells explained) */
    if (t->raised || t->streak) follow(k, 0, 0, 0, 1, 0, 0, wstart);
    return;
  }
  if (!ps->n) return; /* no rate this time says nothing either way: the verdict stands */
  float S = (float)(ps->sum / ps->n), base, margin;
  if (det_noise_ready(&t->noise)) { /* learned over all its sockets: fewer spread more */
    base = t->noise.base;
    margin = det_noise_margin_scaled(&t->noise, &ctx->noise,
                                     sqrtf((float)(ps->n + ps->excused) / (float)ps->n));
  } else if (det_noise_ready(&p.pool)) {
    base = 0; /* the sockets' d are less their baselines already */
    margin = det_noise_margin_scaled(&p.pool, &ctx->noise, 1 / sqrtf((float)ps->n));
  } else {
    return; /* nothing learned yet */
  }
  double cost = all_busy > 0 ? fmin(1.0, ps->lost / all_busy) : 0;
  /* a raised verdict holds down to half its margin: a fault near the threshold does not come
   * and go with the noise (each clear and raise would be a new verdict) */
  float need = t->raised ? fmaxf(margin / 2, (float)ctx->noise.min_log) : margin;
  float F = (float)(ps->sum_recent / ps->n) - base;
  follow(k, S - base >= need, S - base, F, margin, cost, ps->n, wstart);
  if (t->raised || t->streak)
    det_noise_drop(&t->noise); /* the fault's start is not the path's noise */
  else if (ps->own == ps->n && !ps->disturbed)
    det_noise_add(&t->noise, S);
}

static void evaluate(uint64_t w) {
  long n = p.socks.n;
  int np = det_plan_npaths() < MAX_TRACKED ? det_plan_npaths() : MAX_TRACKED;
  struct sock **v = malloc((size_t)(n ? n : 1) * sizeof *v);
  struct path_sum *ps = calloc((size_t)(np ? np : 1), sizeof *ps);
  if (!v || !ps) goto out;
  for (long i = 0; i < n; i++)
    v[i] = det_index_at(&p.socks, i);
  qsort(v, (size_t)n, sizeof *v, by_conn);
  int recent = recent_windows(np, w);
  for (long lo = 0, hi; lo < n; lo = hi) {
    for (hi = lo + 1; hi < n && v[hi]->conn == v[lo]->conn; hi++)
      ;
    judge_conn(v + lo, (int)(hi - lo), w, recent);
    mark_disturbed(v + lo, (int)(hi - lo), np);
  }
  det_book_each("comm_slow", hold_nic, NULL);
  double all_busy = sum_by_path(v, n, np, ps);
  uint64_t wstart = (w + 1 - SPAN) * HALF_NS;
  p.any_tracked = 0;
  for (int k = 0; k < np; k++)
    judge_path(k, &ps[k], all_busy, wstart);
  for (int k = 0; k < np; k++) {
    p.any_tracked |= p.track[k].raised || p.track[k].streak;
    if (p.track[k].raised || p.track[k].streak)
      p.track[k].unsettled_until = ctx->now + SPAN * HALF_NS;
  }
  /* the pool and each socket learn its d but those of a path under a verdict or on its way to
   * one, and their siblings'; a slow NIC's shares are not the ratio's noise either */
  for (long i = 0; i < n; i++) {
    struct sock *s = v[i];
    if (!s->has || s->young) continue;
    if (s->excused || s->disturbed ||
        (s->split && s->path < np && (p.track[s->path].raised || p.track[s->path].streak))) {
      det_noise_drop(&s->own);
      continue;
    }
    if (s->thin) { /* teaches nothing, but a load that fell for good is usual within minutes */
      s->usual_busy_ns += (s->busy_ns - s->usual_busy_ns) / 64;
      continue;
    }
    det_noise_add(&p.pool, s->d);
    if (s->split) det_noise_add(&s->own, s->d);
    s->usual_busy_ns += s->usual_busy_ns ? (s->busy_ns - s->usual_busy_ns) / 16 : s->busy_ns;
  }
out:
  free(v);
  free(ps);
}

void det_paths_advance(void) {
  if (p.next_hw && det_plan_npaths() &&
      (p.track || (p.track = calloc(MAX_TRACKED, sizeof *p.track)))) {
    if (p.newest_hw > p.next_hw + 2) p.next_hw = p.newest_hw - 2;
    while (p.next_hw <= p.newest_hw && (p.next_hw + 1) * HALF_NS + GRACE_NS <= ctx->now) {
      evaluate(p.next_hw);
      p.next_hw++;
    }
  }
  for (int i = 0; i < p.nnic; i++) /* det.c tells them again before the next advance */
    p.nic[i].slow = 0;
}

int det_paths_explains(const char *src_host, const char *dst_host) {
  if (!p.any_tracked || !p.track) return 0;
  int paths[64], n = det_plan_flow_paths(src_host, dst_host, paths, 64);
  for (int i = 0; i < n; i++)
    if (paths[i] < MAX_TRACKED && (p.track[paths[i]].raised || p.track[paths[i]].streak)) return 1;
  return 0;
}

void det_paths_reset(void) {
  det_index_reset(&p.socks);
  free(p.track);
  memset(&p, 0, sizeof p);
}
