/* det_hang.c -- hangs: a job whose collectives stopped completing for the hang threshold. Which
 * kind, and where, comes from who is inside a collective: ranks that went quiet (stopped
 * processes) or never entered while others wait make a non-communication hang naming them; all
 * ranks inside make a communication hang, located at the connection whose send is stuck (the
 * plugin's pending transfer records). A stall that a lost rank explains is left to rank_lost. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "det_internal.h"
#include "det_ranks.h"
#include "mon_windows.h"

#define MAX_JOBS 64
#define MAX_PENDING 4096
#define MAX_NAMED 64 /* ranks listed in one event */
/* A rank waits in a collective for the others as long as their compute runs over its own: on a
 * loaded host that is seconds (4 ranks of a 4 x 128 model on 2 cores at load 15 to 22: waits up
 * to 3.1 s, healthy). A non-communication hang's wait must pass WAIT_FACTOR times the longest of
 * the job's last WAITS waits too: in those two runs (7,296 collective records, 20 minutes) no
 * wait came to more than 2.42 times the longest of the 256 before it. */
#define WAITS 256
#define WAIT_FACTOR 3

struct job_state {
  const struct c4_det_job *job;
  uint64_t last_progress;        /* newest completion of a collective */
  uint64_t last_moved;           /* newest completion of one of its transfers */
  uint64_t hung_at;              /* when the hang verdict up was raised */
  double inside_ewma;            /* typical time a rank spends inside a collective */
  int hung;                      /* a hang verdict is up */
  uint64_t stall_from, stall_to; /* the last hang's stall: from the last progress to its end */
  uint64_t next_look;    /* a stall that needed no verdict is looked at again from then on */
  uint64_t waits[WAITS]; /* the last time inside a collective of each of its last records */
  int nwaits, wpos;
};

static const struct det_ctx *ctx;
static struct job_state jobs[MAX_JOBS];
static int njobs;

struct pending {
  struct c4_xfer_record x;
  const struct c4_det_job *job;
};
static struct pending pend[MAX_PENDING];
static int npend;

static struct job_state *job_get(const struct c4_det_job *job) {
  for (int i = 0; i < njobs; i++)
    if (jobs[i].job == job) return &jobs[i];
  if (njobs == MAX_JOBS) return NULL;
  struct job_state *j = &jobs[njobs++];
  memset(j, 0, sizeof *j);
  j->job = job;
  return j;
}

static void hang_key(const struct c4_det_job *job, char *key, size_t n) {
  snprintf(key, n, "hang/%s", job->name);
}

void det_hang_take_progress(const struct c4_det_job *job, uint64_t t, uint64_t inside_ns) {
  struct job_state *j = job_get(job);
  if (!j) return;
  if (inside_ns) {
    j->inside_ewma =
        j->inside_ewma ? 0.95 * j->inside_ewma + 0.05 * (double)inside_ns : (double)inside_ns;
    j->waits[j->wpos] = inside_ns;
    j->wpos = (j->wpos + 1) % WAITS;
    if (j->nwaits < WAITS) j->nwaits++;
  }
  if (t <= j->last_progress) return;
  j->last_progress = t;
  j->next_look = 0;
  if (j->hung) {
    char key[320];
    hang_key(job, key, sizeof key);
    det_book_clear(key, "collectives are completing again", ctx->now);
    j->hung = 0;
    j->stall_to = t;
  }
}

void det_hang_take_xfer(const struct c4_det_job *job, const struct c4_xfer_record *x) {
  struct job_state *j = x->status == C4_XFER_OK ? job_get(job) : NULL;
  if (j && x->t_done > j->last_moved) j->last_moved = x->t_done;
  if (j && j->hung && !j->last_progress && x->t_done > j->hung_at) { /* transfers_only's */
    char key[320];
    hang_key(job, key, sizeof key);
    det_book_clear(key, "transfers are completing again", ctx->now);
    j->hung = 0;
    j->stall_to = x->t_done;
  }
  if (x->status == C4_XFER_PENDING) {
    for (int i = 0; i < npend; i++)
      if (pend[i].x.conn_id == x->conn_id && pend[i].x.dir == x->dir) {
        pend[i].x = *x;
        return;
      }
    if (npend == MAX_PENDING) return;
    pend[npend].x = *x;
    pend[npend].job = job;
    npend++;
    return;
  }
  for (int i = 0; i < npend; i++) /* it completed or failed: no longer stuck */
    if (pend[i].x.conn_id == x->conn_id && pend[i].x.dir == x->dir && pend[i].x.seq <= x->seq) {
      pend[i] = pend[--npend];
      return;
    }
}

struct gather {
  const struct c4_det_job *job;
  json_t *ranks, *hosts;
  int n;
  int quiet, inside, outside, lost_recent, ended;
  int heartbeats; /* ranks that have sent any (a live job, a recording): they say who is inside */
  uint64_t since;
  uint64_t first_inside, last_inside; /* the earliest and latest a rank inside went in (0: none) */
  int want; /* 0: collect quiet ranks; 1: ranks not inside; 2: ranks inside */
};

static void add_rank(struct gather *g, int rank, const char *host) {
  g->n++;
  if (json_array_size(g->ranks) < MAX_NAMED) json_array_append_new(g->ranks, json_integer(rank));
  if (!host || !host[0]) return;
  size_t i;
  json_t *h;
  json_array_foreach(g->hosts, i, h) if (!strcmp(json_string_value(h), host)) return;
  if (json_array_size(g->hosts) < MAX_NAMED) json_array_append_new(g->hosts, json_string(host));
}

static void survey(struct det_rank *r, void *arg) {
  struct gather *g = arg;
  g->heartbeats += r->last_hb != 0;
  if (r->lost) {
    if (r->lost_at + ctx->cfg.hang_ns >= g->since) g->lost_recent++;
    return;
  }
  if (r->ended) {
    g->ended++;
    return;
  }
  int quiet = det_rank_quiet(r);
  g->quiet += quiet;
  if (r->entered > r->done) {
    g->inside++;
    if (r->inside_since && (!g->first_inside || r->inside_since < g->first_inside))
      g->first_inside = r->inside_since;
    if (r->inside_since > g->last_inside) g->last_inside = r->inside_since;
  } else
    g->outside++;
  if ((g->want == 0 && quiet) || (g->want == 1 && !quiet && r->entered <= r->done) ||
      (g->want == 2 && r->entered > r->done))
    add_rank(g, r->rank, r->host);
}

struct open_arg {
  const struct c4_det_job *job;
  struct gather *g;
  uint64_t comm;
  int nranks;
  int missing, all_in;
  uint64_t first_in, last_in; /* the earliest and latest arrivals at it */
};

/* Whether a rank's completing collective s means every rank entered it: each rank's result
 * of these needs every rank's input. */
static int completion_needs_all(const struct c4_win_slot *s) {
  return s->done > 0 && (!strcmp(s->func, "AllReduce") || !strcmp(s->func, "AllGather") ||
                         !strcmp(s->func, "ReduceScatter"));
}

/* The newest incomplete collective of a communicator: who has not entered it. One that a rank
 * completed, where that needs every rank in, names nobody: its missing records are a trace cut
 * short (a healthy trace cut inside its last allreduce, a copy of a live file, named the ranks
 * whose lines were cut off as never entering it), and whoever is still inside is the
 * heartbeats' and transfers' to say. */
static void open_coll(uint64_t comm, int nranks, const struct c4_win_slot *s, void *arg) {
  struct open_arg *o = arg;
  if (o->comm || completion_needs_all(s)) return; /* the first that shows it is enough */
  o->comm = comm;
  o->nranks = nranks;
  for (int r = 0; r < nranks; r++) {
    if (s->t_arrive[r] && (!o->first_in || s->t_arrive[r] < o->first_in))
      o->first_in = s->t_arrive[r];
    if (s->t_arrive[r] > o->last_in) o->last_in = s->t_arrive[r];
  }
  if (s->arrived == nranks) {
    o->all_in = 1;
    return;
  }
  for (int r = 0; r < nranks; r++) {
    if (s->t_arrive[r]) continue;
    const char *host;
    int rank = det_coll_identity(o->job, comm, r, &host);
    struct det_rank *e = det_rank_get(o->job, rank, host, 0, 0);
    if (e && e->lost) continue;
    o->missing++;
    add_rank(o->g, rank, det_coll_host(o->job, comm, r));
  }
}

/* When the job last moved as its verdicts count it: its last completed collective, or for a job
 * whose collectives c4mon never sees (transfers_only), its last completed transfer. */
static uint64_t since_of(const struct job_state *j) {
  return j->last_progress ? j->last_progress : j->last_moved;
}

static void hung(struct job_state *j) {
  j->hung = 1;
  j->hung_at = ctx->now;
  j->stall_from = since_of(j);
  j->stall_to = UINT64_MAX;
}

int det_hang_spans_stall(const struct c4_det_job *job, uint64_t from, uint64_t to) {
  for (int i = 0; i < njobs; i++)
    if (jobs[i].job == job)
      return jobs[i].stall_to && from < jobs[i].stall_to && to > jobs[i].stall_from;
  return 0;
}

static void raise_hang(struct job_state *j, const char *kind, const char *where, json_t *ranks,
                       json_t *hosts, uint64_t comm, const char *detail) {
  char key[320];
  hang_key(j->job, key, sizeof key);
  struct det_finding f = {.kind = kind,
                          .where = where,
                          .job = j->job->name,
                          .ranks = ranks,
                          .hosts = hosts,
                          .confidence = 1,
                          .comm = comm,
                          .first_seen = since_of(j)};
  snprintf(f.detail, sizeof f.detail, "%s", detail);
  det_book_raise(key, &f, ctx->now);
  hung(j);
}

/* The stuck connection: a pending send whose receiver's side is pending too, else the oldest
 * pending send, else the pending receive that moved the fewest bytes (the oldest of those).
 * *alike gets how many pending transfers could be named as well: 1 when a send decides, else
 * the job's pending receives that moved no more bytes than the one named. Receives alone name
 * the stuck link by what moved: in a ring every link downstream of it still forwards what its
 * sender held before the stall reached it, one more step's chunk a hop, so the stuck link's
 * receiver moved least (by the oldest post instead, a receive-only trace of a 4,096-rank ring
 * named another of the 512 stuck receives, posted a few microseconds earlier). */
static const struct c4_xfer_record *stuck_connection(const struct c4_det_job *job, int *alike) {
  const struct c4_xfer_record *best = NULL;
  int best_score = -1;
  for (int i = 0; i < npend; i++) {
    const struct c4_xfer_record *x = &pend[i].x;
    if (pend[i].job != job) continue;
    int score = x->dir == C4_DIR_SEND;
    if (score)
      for (int k = 0; k < npend; k++)
        if (pend[k].x.conn_id == x->conn_id && pend[k].x.dir == C4_DIR_RECV) score = 2;
    int less = score == best_score &&
               (score == 0 && x->bytes != best->bytes ? x->bytes < best->bytes
                                                      : x->t_posted < best->t_posted);
    if (score > best_score || less) {
      best = x;
      best_score = score;
    }
  }
  *alike = best != NULL;
  if (!best || best_score > 0) return best;
  *alike = 0;
  for (int i = 0; i < npend; i++)
    *alike += pend[i].job == job && pend[i].x.dir == C4_DIR_RECV && pend[i].x.bytes <= best->bytes;
  return best;
}

/* The latest post of the job's transfers reported pending that were posted after t, 0: none. */
static uint64_t pending_since(const struct c4_det_job *job, uint64_t t) {
  uint64_t newest = 0;
  for (int i = 0; i < npend; i++)
    if (pend[i].job == job && pend[i].x.t_posted > t && pend[i].x.t_posted > newest)
      newest = pend[i].x.t_posted;
  return newest;
}

/* A communication hang at the connection a pending transfer names; when none does, at the ranks
 * of the communicator whose collective none of them completed (nranks of comm), or with no
 * collective record open (nranks 0), at the ranks whose heartbeats say they are inside one. */
static void raise_comm_hang(struct job_state *j, uint64_t comm, int nranks, struct gather *g) {
  int alike;
  const struct c4_xfer_record *x = stuck_connection(j->job, &alike);
  char detail[160];
  if (!x) {
    snprintf(detail, sizeof detail,
             "every rank is inside a collective that has not completed for %.1f s; no pending "
             "transfer names the connection",
             (double)(ctx->now - since_of(j)) / 1e9);
    json_t *ranks = json_array(), *hosts = json_array();
    struct gather named = {.job = j->job, .ranks = ranks, .hosts = hosts, .want = 2};
    for (int r = 0; r < nranks && r < MAX_NAMED; r++) {
      const char *host;
      int rank = det_coll_identity(j->job, comm, r, &host);
      add_rank(&named, rank, det_coll_host(j->job, comm, r));
    }
    if (!nranks) det_ranks_each(j->job, survey, &named);
    raise_hang(j, "comm_hang", "link", ranks, hosts, comm, detail);
    json_decref(g->ranks);
    json_decref(g->hosts);
    return;
  }
  json_decref(g->ranks);
  json_decref(g->hosts);
  const struct c4_identity *src = x->dir == C4_DIR_SEND ? &x->self : &x->peer;
  const struct c4_identity *dst = x->dir == C4_DIR_SEND ? &x->peer : &x->self;
  char key[320];
  hang_key(j->job, key, sizeof key);
  struct det_finding f = {.kind = "comm_hang",
                          .where = "link",
                          .job = j->job->name,
                          .ranks = json_pack("[i, i]", src->rank, dst->rank),
                          .hosts = json_pack("[s, s]", src->host, dst->host),
                          .link_src = src->host,
                          .link_dst = dst->host,
                          .link_src_dev = src->dev,
                          .link_dst_dev = dst->dev,
                          .confidence = x->dir == C4_DIR_SEND ? 1.0 : 0.6 / alike,
                          .comm = comm,
                          .first_seen = since_of(j)};
  char lead[64];
  if (j->last_progress)
    snprintf(lead, sizeof lead, "every rank is inside a collective");
  else
    snprintf(lead, sizeof lead, "no transfer has completed for %.1f s",
             (double)(ctx->now - j->last_moved) / 1e9);
  int at =
      snprintf(f.detail, sizeof f.detail,
               "%s; connection %016" PRIx64 " %s/%d -> %s/%d moved %" PRIu64 " bytes and is stuck",
               lead, x->conn_id, src->host, src->dev, dst->host, dst->dev, x->bytes);
  if (alike > 1 && at > 0 && (size_t)at < sizeof f.detail)
    snprintf(f.detail + at, sizeof f.detail - (size_t)at,
             "; no send pending: the first posted of %d receives stuck alike, so the link may "
             "be another's",
             alike);
  det_book_raise(key, &f, ctx->now);
  hung(j);
}

/* A non-communication hang is ranks waiting in a collective for others that do not come, for the
 * hang threshold: the wait counts from the first of them going in, not from the last
 * completion; a communication hang's from the last of them going in (all are in: it should
 * move). The compute between collectives is no part of it: a larger model's forward pass on
 * a loaded host (5 s between completions, measured on a healthy 4-rank 4 x 128 job at load 15)
 * would otherwise read as a hang whenever one rank got into the next collective first. Returns
 * 1 when the wait is long enough; else when to look again. */
static int waited_enough(struct job_state *j, uint64_t first_in, uint64_t threshold) {
  if (!first_in || first_in > ctx->now || ctx->now - first_in >= threshold) return 1;
  j->next_look = first_in + threshold;
  return 0;
}

/* When a communication hang's wait starts: the later of t (the last rank going in) and the job's
 * newest completed transfer. While transfers complete the collective is moving, only slowly: a
 * fresh-clone CI's healthy c4perf job (a 256 MiB allreduce over TCP, 2 ranks on a loaded 2-core
 * machine) spent over 3 s inside one collective with no transfer stuck and was called hung. In
 * a stuck ring the links downstream drain soon after, so a real hang is found little later
 * (the scenario suite's, 0.105 s). */
static uint64_t moving_until(const struct job_state *j, uint64_t t) {
  return j->last_moved > t ? j->last_moved : t;
}

/* The longest of the job's last WAITS waits inside a collective. */
static uint64_t longest_wait(const struct job_state *j) {
  uint64_t m = 0;
  for (int i = 0; i < j->nwaits; i++)
    m = j->waits[i] > m ? j->waits[i] : m;
  return m;
}

static void judge_stall(struct job_state *j, uint64_t threshold) {
  struct gather g = {
      .job = j->job, .ranks = json_array(), .hosts = json_array(), .since = j->last_progress};
  det_ranks_each(j->job, survey, &g);
  char detail[160];
  double stalled = (double)(ctx->now - j->last_progress) / 1e9;
  if (g.lost_recent) { /* a lost rank explains it: rank_lost says so */
    j->next_look = ctx->now + 1000000000ull;
    goto done;
  }
  if (g.quiet) {
    snprintf(detail, sizeof detail,
             "%d rank(s) stopped sending heartbeats while the job waits (%.1f s without progress)",
             g.n, stalled);
    raise_hang(j, "noncomm_hang", "gpu", g.ranks, g.hosts, 0, detail);
    return;
  }
  json_decref(g.ranks);
  json_decref(g.hosts);
  g = (struct gather){.job = j->job, .ranks = json_array(), .hosts = json_array(), .want = 1};
  struct open_arg o = {.job = j->job, .g = &g};
  c4_mon_windows_each_open(j->job, open_coll, &o);
  uint64_t noncomm = WAIT_FACTOR * longest_wait(j);
  noncomm = noncomm > threshold ? noncomm : threshold;
  if (o.missing && !waited_enough(j, o.first_in, noncomm)) goto done;
  if (o.missing) {
    snprintf(detail, sizeof detail,
             "%d rank(s) never entered the collective the others wait in "
             "for %.1f s",
             o.missing, stalled);
    raise_hang(j, "noncomm_hang", "gpu", g.ranks, g.hosts, o.comm, detail);
    return;
  }
  if (o.all_in && !waited_enough(j, moving_until(j, o.last_in), threshold)) goto done;
  if (o.all_in) {
    raise_comm_hang(j, o.comm, o.nranks, &g);
    return;
  }
  /* no collective record shows it (the profiler writes a collective once it completes): the
   * heartbeats' counts say who is inside one */
  det_ranks_each(j->job, survey, &g);
  if (g.inside && g.outside && !waited_enough(j, g.first_inside, noncomm)) goto done;
  if (g.inside && g.outside) {
    snprintf(
        detail, sizeof detail,
        "%d rank(s) are not inside a collective while %d wait in one (%.1f s without progress)",
        g.n, g.inside, stalled);
    raise_hang(j, "noncomm_hang", "gpu", g.ranks, g.hosts, 0, detail);
    return;
  }
  if (g.inside && !waited_enough(j, moving_until(j, g.last_inside), threshold)) goto done;
  if (g.inside) {
    raise_comm_hang(j, 0, 0, &g);
    return;
  }
  /* no heartbeats at all (a trace written on the node, C4_TRACE): transfers the plugin reported
   * stuck since the last progress say their ranks are inside a collective. Where heartbeats
   * come, they say it, and a transfer left pending as a job ends is no hang (a fresh-clone CI's
   * healthy c4perf job raised one after its goodbye when this did not ask) */
  uint64_t newest = g.heartbeats ? 0 : pending_since(j->job, j->last_progress);
  if (newest && !waited_enough(j, moving_until(j, newest), threshold)) goto done;
  if (newest) {
    raise_comm_hang(j, 0, 0, &g);
    return;
  }
  j->next_look = ctx->now + 1000000000ull; /* nobody is inside a collective: computing */
done:
  json_decref(g.ranks);
  json_decref(g.hosts);
}

/* The job's hang threshold: the configured one, or ten times its usual time inside a collective
 * when that is longer. */
static uint64_t threshold_of(const struct job_state *j) {
  uint64_t threshold = ctx->cfg.hang_ns;
  if (10 * j->inside_ewma > (double)threshold) threshold = (uint64_t)(10 * j->inside_ewma);
  return threshold;
}

/* The newest pending transfer of a job whose collectives c4mon never sees, posted within the
 * threshold before its last completed transfer (in a stuck ring the hops downstream of the dead
 * one complete for a moment after it stuck); 0 when there is none. */
static uint64_t transfers_stuck(const struct job_state *j) {
  uint64_t threshold = threshold_of(j);
  if (j->last_progress || !j->last_moved || j->hung) return 0;
  return pending_since(j->job, j->last_moved > threshold ? j->last_moved - threshold : 0);
}

/* A job whose collectives c4mon never sees (a trace or a stream of transfer records alone: the
 * net plugin without the profiler or the shim, another tool's transfers) has no collective to be
 * inside: it is hung when transfers are pending and none has completed for the hang threshold,
 * located at the stuck connection as a collective's hang is. A job whose ranks all said goodbye
 * or that a lost rank explains is not (NCCL leaves requests posted as it tears down). Before, such
 * a job's hangs were never judged. */
static void judge_transfers(struct job_state *j) {
  uint64_t threshold = threshold_of(j), newest = transfers_stuck(j);
  if (!newest) {
    j->next_look = ctx->now + 1000000000ull;
    return;
  }
  if (!waited_enough(j, moving_until(j, newest), threshold)) return;
  struct gather g = {.job = j->job,
                     .ranks = json_array(),
                     .hosts = json_array(),
                     .want = 2,
                     .since = j->last_moved};
  det_ranks_each(j->job, survey, &g);
  if (g.lost_recent || (g.ended && !g.inside && !g.outside)) { /* lost, or all said goodbye */
    j->next_look = ctx->now + 1000000000ull;
    json_decref(g.ranks);
    json_decref(g.hosts);
    return;
  }
  raise_comm_hang(j, 0, 0, &g);
}

void det_hang_advance(void) {
  for (int i = 0; i < njobs; i++) {
    struct job_state *j = &jobs[i];
    if (!j->last_progress && !j->hung && ctx->now >= j->next_look) judge_transfers(j);
    if (!j->last_progress || j->hung || ctx->now < j->next_look) continue;
    uint64_t threshold = threshold_of(j);
    if (ctx->now - j->last_progress >= threshold) judge_stall(j, threshold);
  }
}

void det_hang_stalled(uint64_t now, uint64_t grace_ns) {
  for (int i = 0; i < njobs; i++)
    if (jobs[i].next_look < now + grace_ns) jobs[i].next_look = now + grace_ns;
}

uint64_t c4_det_hang_due(void) {
  uint64_t due = 0;
  for (int i = 0; i < njobs; i++) {
    const struct job_state *j = &jobs[i];
    uint64_t newest =
        j->last_progress && !j->hung ? pending_since(j->job, j->last_progress) : transfers_stuck(j);
    if (!newest) continue;
    uint64_t at = moving_until(j, newest > j->last_progress ? newest : j->last_progress);
    if (at + threshold_of(j) > due) due = at + threshold_of(j);
  }
  return due;
}

static void count_heartbeats(struct det_rank *r, void *arg) { *(int *)arg += r->last_hb != 0; }

/* When judge_stall would decide on the collective left open by a job without heartbeats (their
 * counts say who is inside where they come): all in, the hang threshold after the latest of the
 * job's last progress, the last rank going in and its newest completed transfer; some never in,
 * the non-communication wait after the first went in. 0: none open. */
static uint64_t open_due(struct job_state *j) {
  int heartbeats = 0;
  det_ranks_each(j->job, count_heartbeats, &heartbeats);
  if (heartbeats) return 0;
  struct gather g = {.job = j->job, .ranks = json_array(), .hosts = json_array(), .want = 1};
  struct open_arg o = {.job = j->job, .g = &g};
  c4_mon_windows_each_open(j->job, open_coll, &o);
  json_decref(g.ranks);
  json_decref(g.hosts);
  uint64_t threshold = threshold_of(j), noncomm = WAIT_FACTOR * longest_wait(j);
  uint64_t stalled = j->last_progress + threshold; /* before that det_hang_advance looks not */
  uint64_t moved = moving_until(j, o.last_in) + threshold;
  if (o.all_in) return moved > stalled ? moved : stalled;
  if (!o.missing) return 0;
  uint64_t waited = o.first_in + (noncomm > threshold ? noncomm : threshold);
  return waited > stalled ? waited : stalled;
}

uint64_t c4_det_hang_due_at_end(void) {
  uint64_t due = c4_det_hang_due();
  for (int i = 0; i < njobs; i++) {
    struct job_state *j = &jobs[i];
    uint64_t at = j->last_progress && !j->hung ? open_due(j) : 0;
    if (at > due) due = at;
  }
  return due;
}

void det_hang_init(const struct det_ctx *c) { ctx = c; }

void det_hang_reset(void) {
  njobs = 0;
  npend = 0;
}
