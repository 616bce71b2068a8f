/* mon_windows.c -- per-communicator windows of recent collectives, in bounded memory. A window
 * slot holds one sequence number; a record for a newer sequence reuses the slot, a record for one
 * that already left the window is counted as late. */
#include "mon_windows.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "det_index.h"

struct slot {
  uint64_t seq;
  int used;
  char func[C4_NAME_MAX];
  uint64_t bytes;
  int arrived, done;
  uint64_t *t_arrive, *t_done; /* [nranks], 0 = not yet */
};

struct comm {
  const struct c4_det_job *job;
  uint64_t id;
  int nranks;
  uint64_t newest, touched;
  struct slot slot[C4MON_WINDOW];
  uint64_t *mem;
  void *user; /* the detector's, freed through hooks.forget */
};

static struct {
  struct comm *comm[C4MON_MAX_COMMS];
  int n;
  long ranks;     /* sum of nranks over the tracked comms: the memory in use is ~1 KiB per rank */
  uint64_t clock; /* activity counter for eviction */
  uint64_t late, evicted, too_big;
} win;

static struct c4_win_hooks hooks;

void c4_mon_windows_set_hooks(const struct c4_win_hooks *h) {
  if (h)
    hooks = *h;
  else
    memset(&hooks, 0, sizeof hooks);
}

static void view(const struct slot *s, struct c4_win_slot *v) {
  *v = (struct c4_win_slot){.seq = s->seq,
                            .func = s->func,
                            .bytes = s->bytes,
                            .arrived = s->arrived,
                            .done = s->done,
                            .t_arrive = s->t_arrive,
                            .t_done = s->t_done};
}

/* The bytes of a communicator's windows: arrivals and completions, C4MON_WINDOW slots a rank. */
static size_t windows_bytes(int nranks) {
  return (size_t)C4MON_WINDOW * 2 * (size_t)nranks * sizeof(uint64_t);
}

static void comm_free(struct comm *c) {
  if (c->user && hooks.forget) hooks.forget(c->user);
  det_table_free(c->mem, windows_bytes(c->nranks));
  free(c);
}

static void evict_lru(void) {
  int lru = 0;
  for (int i = 1; i < win.n; i++)
    if (win.comm[i]->touched < win.comm[lru]->touched) lru = i;
  win.ranks -= win.comm[lru]->nranks;
  comm_free(win.comm[lru]);
  win.comm[lru] = win.comm[--win.n];
  win.evicted++;
}

void c4_mon_windows_reset(void) {
  for (int i = 0; i < win.n; i++)
    comm_free(win.comm[i]);
  memset(&win, 0, sizeof win);
}

static struct comm *comm_new(const struct c4_det_job *job, uint64_t id, int nranks) {
  if (nranks <= 0 || nranks > C4MON_MAX_RANKS) {
    win.too_big++;
    return NULL;
  }
  struct comm *c = calloc(1, sizeof *c);
  /* mapped zeroed, in huge pages: a 16,384-rank communicator's windows are 16 MB, 4,000 page
   * faults in 4 KiB pages */
  size_t bytes = windows_bytes(nranks);
  uint64_t *mem = det_table_alloc(bytes);
  if (!c || !mem) {
    free(c);
    det_table_free(mem, bytes);
    return NULL;
  }
  c->job = job;
  c->id = id;
  c->nranks = nranks;
  c->mem = mem;
  for (int s = 0; s < C4MON_WINDOW; s++) {
    c->slot[s].t_arrive = mem + (size_t)s * 2 * (size_t)nranks;
    c->slot[s].t_done = c->slot[s].t_arrive + nranks;
  }
  /* forget the least recently active until it fits both bounds */
  while (win.n && (win.n == C4MON_MAX_COMMS || win.ranks + nranks > C4MON_RANK_BUDGET))
    evict_lru();
  win.comm[win.n++] = c;
  win.ranks += nranks;
  return c;
}

static struct comm *comm_find(const struct c4_det_job *job, uint64_t id, int nranks_hint) {
  for (int i = 0; i < win.n; i++)
    if (win.comm[i]->id == id && win.comm[i]->job == job) return win.comm[i];
  return comm_new(job, id, nranks_hint);
}

static void take_coll(const struct c4_det_job *job, const struct c4_coll_record *r) {
  if (r->is_p2p) return; /* p2p calls are not matched across ranks by sequence */
  struct comm *c = comm_find(job, r->comm, r->nranks);
  if (!c || r->rank < 0 || r->rank >= c->nranks) return;
  c->touched = ++win.clock;
  if (c->user && hooks.took) hooks.took(c->user, r);
  struct slot *s = &c->slot[r->seq % C4MON_WINDOW];
  if (!s->used || s->seq < r->seq) { /* this slot now holds r->seq */
    memset(s->t_arrive, 0, sizeof(uint64_t) * 2 * (size_t)c->nranks);
    s->seq = r->seq;
    s->used = 1;
    s->arrived = s->done = 0;
    memcpy(s->func, r->func, sizeof s->func);
    s->bytes = r->bytes;
  } else if (s->seq > r->seq) {
    win.late++;
    return;
  }
  int entered_now = !s->t_arrive[r->rank];
  if (entered_now) s->arrived++;
  s->t_arrive[r->rank] = r->t_arrive ? r->t_arrive : 1;
  if (r->t_done && !s->t_done[r->rank]) {
    s->done++;
    s->t_done[r->rank] = r->t_done;
  }
  if (r->seq > c->newest) c->newest = r->seq;
  if (entered_now && s->arrived == c->nranks && hooks.arrived) {
    struct c4_win_slot cur, prev;
    const struct slot *p = &c->slot[(r->seq - 1) % C4MON_WINDOW];
    int have_prev = r->seq > 0 && p->used && p->seq == r->seq - 1;
    view(s, &cur);
    if (have_prev) view(p, &prev);
    hooks.arrived(c->job, c->id, c->nranks, &c->user, &cur, have_prev ? &prev : NULL);
  }
}

void c4_mon_windows_each_open(const struct c4_det_job *job,
                              void (*fn)(uint64_t comm, int nranks, const struct c4_win_slot *s,
                                         void *arg),
                              void *arg) {
  for (int i = 0; i < win.n; i++) {
    const struct comm *c = win.comm[i];
    if (c->job != job) continue;
    const struct slot *s = &c->slot[c->newest % C4MON_WINDOW];
    if (s->used && s->seq == c->newest && (s->arrived < c->nranks || s->done < c->nranks)) {
      struct c4_win_slot v;
      view(s, &v);
      fn(c->id, c->nranks, &v, arg);
    }
  }
}

void c4_mon_windows_take(const struct c4_det_job *job, const struct c4_record *r) {
  if (r->kind == C4_REC_COLL) {
    take_coll(job, &r->coll);
  } else if (r->kind == C4_REC_COMM) {
    struct comm *c = comm_find(job, r->comm.comm, r->comm.nranks);
    if (c) c->touched = ++win.clock;
  }
}

static json_t *comm_json(const struct comm *c) {
  json_t *j = json_pack("{s:s, s:s, s:i, s:I}", "job", c->job->name, "comm", "", "nranks",
                        c->nranks, "newest_seq", (json_int_t)c->newest);
  char hex[17];
  snprintf(hex, sizeof hex, "%016" PRIx64, c->id);
  json_object_set_new(j, "comm", json_string(hex));
  const struct slot *oldest_incomplete = NULL, *newest_complete = NULL;
  for (int i = 0; i < C4MON_WINDOW; i++) {
    const struct slot *s = &c->slot[i];
    if (!s->used) continue;
    if (s->arrived < c->nranks) {
      if (!oldest_incomplete || s->seq < oldest_incomplete->seq) oldest_incomplete = s;
    } else if (!newest_complete || s->seq > newest_complete->seq) {
      newest_complete = s;
    }
  }
  if (oldest_incomplete) {
    json_t *missing = json_array();
    for (int r = 0; r < c->nranks && json_array_size(missing) < 16; r++)
      if (!oldest_incomplete->t_arrive[r]) json_array_append_new(missing, json_integer(r));
    json_object_set_new(j, "oldest_incomplete",
                        json_pack("{s:I, s:s, s:i, s:o}", "seq", (json_int_t)oldest_incomplete->seq,
                                  "func", oldest_incomplete->func, "arrived",
                                  oldest_incomplete->arrived, "missing_ranks", missing));
  }
  if (newest_complete) {
    int last = 0;
    for (int r = 1; r < c->nranks; r++)
      if (newest_complete->t_arrive[r] > newest_complete->t_arrive[last]) last = r;
    json_object_set_new(j, "newest_complete",
                        json_pack("{s:I, s:s, s:i, s:i}", "seq", (json_int_t)newest_complete->seq,
                                  "func", newest_complete->func, "last_to_arrive", last, "done",
                                  newest_complete->done));
  }
  return j;
}

json_t *c4_mon_windows_json(void) {
  json_t *comms = json_array();
  for (int i = 0; i < win.n && i < 64; i++)
    json_array_append_new(comms, comm_json(win.comm[i]));
  return json_pack("{s:i, s:I, s:I, s:I, s:o}", "comms_tracked", win.n, "late_records",
                   (json_int_t)win.late, "comms_evicted", (json_int_t)win.evicted, "comms_too_big",
                   (json_int_t)win.too_big, "comms", comms);
}
