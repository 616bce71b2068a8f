/* mon_metrics.c -- the Prometheus endpoint: renders detection's state and the server's status as
 * exposition text, and serves the last text rendered through libmicrohttpd. */
#include "mon_metrics.h"

#include <math.h>
#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include "c4_clock.h"
#include "c4_err.h"
#include "c4_log.h"
#include "mon_addr.h"

#define MAX_SERIES 100000
#define MAX_KINDS 1024 /* (job, kind) pairs counted */
#define KIND_LEN 32
#define JOB_LEN 64
/* Scrapers are few, and an idle connection holds its place for the 10 s timeout: 64 in all let one
 * stranger's 64 idle connections keep every scraper out (a 4 s curl timed out). No address may
 * hold more than 16 of 1,024 (scrapers behind one proxy share an address). */
#define METRICS_CONNECTIONS 1024u
#define METRICS_CONNECTIONS_PER_ADDR 16u

struct kind_count {
  char job[JOB_LEN];
  char name[KIND_LEN];
  unsigned long long n;
};

/* Shown from the start, at 0, so that rate() and absent() work before the first verdict. The
 * first five are verdicts (c4_verdicts_active); recovered and job_end are not. */
static const char *const known_kinds[] = {"straggler", "comm_slow", "comm_hang", "noncomm_hang",
                                          "rank_lost", "recovered", "job_end"};
#define N_KNOWN 7
#define N_VERDICT_KINDS 5

static struct {
  pthread_mutex_t lock; /* guards text, len and kinds: the server thread reads them */
  struct MHD_Daemon *d;
  int port;       /* bound; -1 while starting; 0 when not started */
  char addr[280]; /* as given, for MHD's messages */
  char *text;
  size_t len;
  struct kind_count kinds[MAX_KINDS];
  int nkinds;
} mx = {.lock = PTHREAD_MUTEX_INITIALIZER};

/* One text being rendered: the series written so far and those past the bound. */
struct render {
  FILE *f;
  long series, left_out;
};

/* Finds (job, kind) in t[0..*n), adding it while there is room; past MAX_KINDS - 1 pairs (or for
 * a missing or overlong name) it is job "other", kind "other", which keeps the last slot. */
static struct kind_count *kind_slot(struct kind_count *t, int *n, const char *job,
                                    const char *kind) {
  if (!kind || strlen(kind) >= KIND_LEN || !job || strlen(job) >= JOB_LEN) job = kind = "other";
  for (int i = 0; i < *n; i++)
    if (!strcmp(t[i].name, kind) && !strcmp(t[i].job, job)) return &t[i];
  int overflow = !strcmp(job, "other") && !strcmp(kind, "other");
  if (*n >= MAX_KINDS - 1 && !overflow) return kind_slot(t, n, "other", "other");
  if (*n >= MAX_KINDS) return &t[MAX_KINDS - 1];
  snprintf(t[*n].job, JOB_LEN, "%s", job);
  snprintf(t[*n].name, KIND_LEN, "%s", kind);
  t[*n].n = 0;
  return &t[(*n)++];
}

/* The first upto known kinds at 0 for every job that has a rank in ranks (detection's state). */
static void seed_kinds(struct kind_count *t, int *n, int upto, const json_t *ranks) {
  size_t i;
  const json_t *e;
  const char *last = NULL;
  json_array_foreach(ranks, i, e) {
    const char *job = json_string_value(json_object_get(e, "job"));
    if (!job || (last && !strcmp(job, last))) continue; /* a job's ranks come together */
    last = job;
    for (int k = 0; k < upto; k++)
      kind_slot(t, n, job, known_kinds[k]);
  }
}

/* A label value as the exposition format wants it: backslash, double quote and newline escaped. */
static void put_label(FILE *f, const char *s) {
  for (; s && *s; s++) {
    if (*s == '\\' || *s == '"')
      fprintf(f, "\\%c", *s);
    else if (*s == '\n')
      fputs("\\n", f);
    else
      fputc(*s, f);
  }
}

/* Floats in the exposition's spelling (NaN, +Inf, -Inf); 15 digits so 2.6 stays "2.6". */
static void put_double(FILE *f, double v) {
  if (isnan(v))
    fputs("NaN", f);
  else if (isinf(v))
    fputs(v > 0 ? "+Inf" : "-Inf", f);
  else
    fprintf(f, "%.15g", v);
}

/* A JSON number or boolean as a sample value, integers exactly (counts pass 2^24 and %g would
 * round them). Returns 0 when v is none of those, so the series is left out. */
static int put_json_value(FILE *f, const json_t *v) {
  if (json_is_integer(v))
    fprintf(f, "%lld", (long long)json_integer_value(v));
  else if (json_is_real(v))
    put_double(f, json_real_value(v));
  else if (json_is_boolean(v))
    fputc(json_is_true(v) ? '1' : '0', f);
  else
    return 0;
  return 1;
}

static void family(struct render *r, const char *name, const char *type, const char *help) {
  fprintf(r->f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* Admits one more series; past MAX_SERIES it is only counted. */
static int admit(struct render *r) {
  if (r->series >= MAX_SERIES) {
    r->left_out++;
    return 0;
  }
  r->series++;
  return 1;
}

static void status_series(struct render *r, const json_t *st) {
  static const struct {
    const char *name, *key, *type, *help;
  } m[] = {
      {"c4_records_total", "records", "counter", "Telemetry records received from ranks."},
      {"c4_ranks_connected", "ranks_connected", "gauge", "Ranks streaming to c4mon now."},
      {"c4_rejected_total", "rejected", "counter",
       "Connections refused (wrong token or job, no HELLO in time, too many)."},
      {"c4_bad_frames_total", "bad_frames", "counter", "Connections closed for malformed frames."},
      {"c4_ranks_lost_total", "lost", "counter", "Rank streams that ended without a goodbye."}};
  for (size_t i = 0; i < sizeof m / sizeof *m; i++) {
    const json_t *v = json_object_get(st, m[i].key);
    family(r, m[i].name, m[i].type, m[i].help);
    if (!json_is_number(v) || !admit(r)) continue;
    fprintf(r->f, "%s ", m[i].name);
    put_json_value(r->f, v);
    fputc('\n', r->f);
  }
}

/* A (job, kind) family's series. */
static void kind_series(struct render *r, const char *name, const struct kind_count *k, int n) {
  for (int i = 0; i < n; i++) {
    if (!admit(r)) continue;
    fprintf(r->f, "%s{job=\"", name);
    put_label(r->f, k[i].job);
    fputs("\",kind=\"", r->f);
    put_label(r->f, k[i].name);
    fprintf(r->f, "\"} %llu\n", k[i].n);
  }
}

/* 1 when some rank of ranks belongs to job. */
static int has_rank(const json_t *ranks, const char *job) {
  size_t i;
  const json_t *e;
  json_array_foreach(ranks, i, e) {
    const char *j = json_string_value(json_object_get(e, "job"));
    if (j && !strcmp(j, job)) return 1;
  }
  return 0;
}

/* Drops the counters of jobs that ended and were forgotten (gone), unless a lost rank of theirs
 * is still shown: their series leave /metrics as their ranks' do. Called with mx.lock held. */
static void forget_jobs(const json_t *gone, const json_t *ranks) {
  size_t i;
  const json_t *g;
  json_array_foreach(gone, i, g) {
    const char *job = json_string_value(g);
    if (!job || has_rank(ranks, job)) continue;
    int w = 0;
    for (int k = 0; k < mx.nkinds; k++)
      if (strcmp(mx.kinds[k].job, job)) mx.kinds[w++] = mx.kinds[k];
    mx.nkinds = w;
  }
}

static void event_series(struct render *r, const json_t *ranks, const json_t *gone) {
  static struct kind_count k[MAX_KINDS]; /* render runs on c4mon's main thread only */
  pthread_mutex_lock(&mx.lock);
  forget_jobs(gone, ranks);
  seed_kinds(mx.kinds, &mx.nkinds, N_KNOWN, ranks);
  int n = mx.nkinds;
  memcpy(k, mx.kinds, sizeof k);
  pthread_mutex_unlock(&mx.lock);
  family(r, "c4_events_total", "counter", "Events c4mon emitted, by job and kind.");
  kind_series(r, "c4_events_total", k, n);
}

static void verdict_series(struct render *r, const json_t *verdicts, const json_t *ranks) {
  static struct kind_count k[MAX_KINDS];
  int n = 0;
  seed_kinds(k, &n, N_VERDICT_KINDS, ranks);
  size_t i;
  const json_t *v;
  json_array_foreach(verdicts, i, v) {
    kind_slot(k, &n, json_string_value(json_object_get(v, "job")),
              json_string_value(json_object_get(v, "kind")))
        ->n++;
  }
  family(r, "c4_verdicts_active", "gauge", "Verdicts not yet recovered, by job and kind.");
  kind_series(r, "c4_verdicts_active", k, n);
}

static void build_info(struct render *r) {
  family(r, "c4_build_info", "gauge", "Always 1; the version of the c4mon serving it.");
  if (admit(r)) fprintf(r->f, "c4_build_info{version=\"%s\"} 1\n", C4_VERSION);
}

/* The per-rank families, each a pass over the ranks: the format wants a family's series together.
 * A rank without job or rank number is skipped; so is a heartbeat age before any heartbeat. */
static void rank_series(struct render *r, const json_t *ranks, const json_t *now) {
  static const struct {
    const char *name, *key, *type, *help;
  } m[] = {
      {"c4_rank_slowdown", "slowdown", "gauge",
       "A rank's compute time between collectives over its usual (1 = normal)."},
      {"c4_rank_heartbeat_age_seconds", "last_hb_ns", "gauge",
       "Seconds since the rank's last heartbeat, on detection's clock."},
      {"c4_rank_collectives_entered_total", "entered", "counter",
       "Collectives the rank has entered."},
      {"c4_rank_collectives_done_total", "done", "counter", "Collectives the rank has completed."},
      {"c4_rank_lost", "lost", "gauge", "1 while the rank is reported lost, else 0."}};
  for (size_t k = 0; k < sizeof m / sizeof *m; k++) {
    family(r, m[k].name, m[k].type, m[k].help);
    size_t i;
    const json_t *e;
    json_array_foreach(ranks, i, e) {
      const char *job = json_string_value(json_object_get(e, "job"));
      const json_t *rank = json_object_get(e, "rank"), *v = json_object_get(e, m[k].key);
      if (!job || !json_is_integer(rank) || !v) continue;
      json_int_t hb = json_integer_value(v);
      if (k == 1 && (!json_is_integer(v) || hb <= 0 || !json_is_integer(now))) continue;
      if (k != 1 && !json_is_number(v) && !json_is_boolean(v)) continue;
      if (!admit(r)) continue;
      fprintf(r->f, "%s{job=\"", m[k].name);
      put_label(r->f, job);
      fprintf(r->f, "\",rank=\"%lld\",host=\"", (long long)json_integer_value(rank));
      put_label(r->f, json_string_value(json_object_get(e, "host")));
      fputs("\"} ", r->f);
      if (k == 1) {
        json_int_t t = json_integer_value(now);
        put_double(r->f, t > hb ? (double)(t - hb) / 1e9 : 0.0);
      } else {
        put_json_value(r->f, v);
      }
      fputc('\n', r->f);
    }
  }
}

/* The node name ("HOST/DEV") at index ix of the matrix, or NULL when ix names none. */
static const char *node_name(const json_t *nodes, const json_t *ix) {
  if (!json_is_integer(ix) || json_integer_value(ix) < 0) return NULL;
  return json_string_value(json_array_get(nodes, (size_t)json_integer_value(ix)));
}

/* Starts a series "NAME{job="JOB"," of the matrix's job. */
static void put_job_series(struct render *r, const char *name, const char *job) {
  fprintf(r->f, "%s{job=\"", name);
  put_label(r->f, job);
  fputs("\",", r->f);
}

/* The job of the matrix's node i: its own (one c4mon, several jobs, one fabric), else the
 * matrix's; NULL when that job is forgotten (gone), whose series leave with its ranks'. */
static const char *node_job(const json_t *m, size_t i, const json_t *gone) {
  const char *job = json_string_value(json_array_get(json_object_get(m, "node_jobs"), i));
  if (!job) job = json_string_value(json_object_get(m, "job"));
  if (!job) job = "";
  size_t k;
  const json_t *g;
  json_array_foreach(gone, k,
                     g) if (json_is_string(g) && !strcmp(json_string_value(g), job)) return NULL;
  return job;
}

static void matrix_series(struct render *r, const json_t *m, const json_t *gone) {
  const json_t *nodes = json_object_get(m, "nodes"), *cells = json_object_get(m, "cells");
  static const struct {
    const char *name, *help;
  } link[] = {{"c4_link_slowdown",
               "A link's time per byte over the median of its size class (1 = normal)."},
              {"c4_link_samples", "Transfers behind the link's factor in the last evaluation."}};
  for (size_t k = 0; k < 2; k++) {
    family(r, link[k].name, "gauge", link[k].help);
    size_t i;
    const json_t *c;
    json_array_foreach(cells, i, c) {
      const char *src = node_name(nodes, json_array_get(c, 0)),
                 *dst = node_name(nodes, json_array_get(c, 1));
      const json_t *v = json_array_get(c, 2 + k);
      const char *job = node_job(m, (size_t)json_integer_value(json_array_get(c, 0)), gone);
      if (!src || !dst || !job || !json_is_number(v)) continue;
      if (!admit(r)) continue;
      put_job_series(r, link[k].name, job);
      fputs("src=\"", r->f);
      put_label(r->f, src);
      fputs("\",dst=\"", r->f);
      put_label(r->f, dst);
      fputs("\"} ", r->f);
      put_json_value(r->f, v);
      fputc('\n', r->f);
    }
  }
  static const struct {
    const char *name, *key, *help;
  } nic[] = {
      {"c4_nic_tx_slowdown", "rows", "A NIC's sending side: its row effect (1 = normal)."},
      {"c4_nic_rx_slowdown", "cols", "A NIC's receiving side: its column effect (1 = normal)."}};
  for (size_t k = 0; k < 2; k++) {
    family(r, nic[k].name, "gauge", nic[k].help);
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(m, nic[k].key), i, v) {
      const char *name = json_string_value(json_array_get(nodes, i));
      const char *job = node_job(m, i, gone);
      if (!name || !job || !json_is_number(v)) continue;
      if (!admit(r)) continue;
      put_job_series(r, nic[k].name, job);
      fputs("nic=\"", r->f);
      put_label(r->f, name);
      fputs("\"} ", r->f);
      put_json_value(r->f, v);
      fputc('\n', r->f);
    }
  }
}

/* Renders the whole text into a malloc'd buffer; NULL when out of memory. The small families come
 * first so that the series bound only ever cuts ranks and links. */
static char *render(const json_t *state, const json_t *status, size_t *len) {
  char *buf = NULL;
  struct render r = {.f = open_memstream(&buf, len)};
  if (!r.f) return NULL;
  const json_t *ranks = json_object_get(state, "ranks");
  build_info(&r);
  if (status) status_series(&r, status);
  event_series(&r, ranks, json_object_get(state, "gone"));
  verdict_series(&r, json_object_get(state, "verdicts"), ranks);
  rank_series(&r, json_object_get(state, "ranks"), json_object_get(state, "t"));
  matrix_series(&r, json_object_get(state, "matrix"), json_object_get(state, "gone"));
  if (r.left_out)
    fprintf(r.f, "# c4mon: %ld series left out (at most %d per scrape)\n", r.left_out, MAX_SERIES);
  int bad = ferror(r.f);
  if (fclose(r.f) != 0 || bad) {
    free(buf);
    return NULL;
  }
  return buf;
}

void c4_mon_metrics_publish(const json_t *state, const json_t *status) {
  if (!mx.port) return; /* not started */
  size_t len = 0;
  char *text = render(state, status, &len);
  if (!text) {
    C4_WARN("c4mon: metrics: out of memory rendering the text; scrapes get the previous one");
    return;
  }
  pthread_mutex_lock(&mx.lock);
  char *old = mx.text;
  mx.text = text;
  mx.len = len;
  pthread_mutex_unlock(&mx.lock);
  free(old);
}

void c4_mon_metrics_event(const json_t *event, const char *line, void *arg) {
  (void)line;
  (void)arg;
  if (!mx.port) return; /* not started */
  pthread_mutex_lock(&mx.lock);
  kind_slot(mx.kinds, &mx.nkinds, json_string_value(json_object_get(event, "job")),
            json_string_value(json_object_get(event, "kind")))
      ->n++;
  pthread_mutex_unlock(&mx.lock);
}

char *c4_mon_metrics_text(void) {
  pthread_mutex_lock(&mx.lock);
  char *t = mx.text ? strdup(mx.text) : NULL;
  pthread_mutex_unlock(&mx.lock);
  return t;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned code, const char *body,
                             size_t len, const char *type) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
  if (!r) return MHD_NO; /* out of memory: MHD closes the connection */
  MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, type);
  if (code == MHD_HTTP_METHOD_NOT_ALLOWED) MHD_add_response_header(r, MHD_HTTP_HEADER_ALLOW, "GET");
  enum MHD_Result rc = MHD_queue_response(conn, code, r);
  MHD_destroy_response(r);
  return rc;
}

/* Runs on MHD's thread: GET /metrics copies the current text under the mutex (MUST_COPY), so
 * publish may free it as soon as the mutex is released. */
static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *data_len, void **req) {
  (void)cls, (void)version, (void)data, (void)data_len, (void)req;
  static const char plain[] = "text/plain; charset=utf-8";
  if (strcmp(method, MHD_HTTP_METHOD_GET))
    return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "c4mon: only GET /metrics\n", 25, plain);
  if (strcmp(url, "/metrics"))
    return reply(conn, MHD_HTTP_NOT_FOUND, "c4mon: not found; try /metrics\n", 31, plain);
  pthread_mutex_lock(&mx.lock);
  enum MHD_Result rc = reply(conn, MHD_HTTP_OK, mx.text ? mx.text : "", mx.text ? mx.len : 0,
                             "text/plain; version=0.0.4; charset=utf-8");
  pthread_mutex_unlock(&mx.lock);
  return rc;
}

/* MHD's own errors (the bind that failed, accept failures, out of memory) go through c4's log,
 * naming the address: a line a second at most, with a count of those not shown, as a stranger's
 * connections past the limits are each a line (84 for 100 idle connections). Called by MHD's one
 * thread, or by MHD_start_daemon before that thread exists. */
static void mhd_log(void *cls, const char *fmt, va_list ap) {
  static uint64_t quiet_until;
  static unsigned not_shown;
  uint64_t now = c4_now_ns();
  if (now < quiet_until) {
    not_shown++;
    return;
  }
  char msg[512];
  vsnprintf(msg, sizeof msg, fmt, ap);
  size_t n = strlen(msg);
  while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
    msg[--n] = 0;
  if (not_shown)
    C4_WARN("c4mon: --metrics %s: %s (and %u more since the last line, not shown)",
            (const char *)cls, msg, not_shown);
  else
    C4_WARN("c4mon: --metrics %s: %s", (const char *)cls, msg);
  not_shown = 0;
  quiet_until = now + 1000000000ull;
}

static void forget(void) {
  pthread_mutex_lock(&mx.lock);
  free(mx.text);
  mx.text = NULL;
  mx.len = 0;
  mx.nkinds = 0;
  pthread_mutex_unlock(&mx.lock);
  mx.port = 0;
}

int c4_mon_metrics_start(const char *addr_port) {
  if (mx.d) {
    C4_WARN("c4mon: --metrics %s: the metrics endpoint already serves port %d",
            addr_port ? addr_port : "(null)", mx.port);
    return C4_EINVAL;
  }
  struct sockaddr_storage sa;
  socklen_t salen;
  if (!addr_port || c4_mon_parse_addr(addr_port, &sa, &salen) != 0) {
    C4_WARN("c4mon: --metrics %s: not ADDR:PORT (a numeric port, 0 for any)",
            addr_port ? addr_port : "(null)");
    return C4_EINVAL;
  }
  snprintf(mx.addr, sizeof mx.addr, "%s", addr_port);
  /* epoll (MHD_USE_AUTO), not select: c4mon may hold more than FD_SETSIZE rank connections. MHD
   * opens the socket itself, so that it alone ever closes it. */
  unsigned flags = MHD_USE_AUTO_INTERNAL_THREAD | MHD_USE_ERROR_LOG;
  if (sa.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
  forget();
  mx.port = -1;                       /* publish works from here on */
  c4_mon_metrics_publish(NULL, NULL); /* the counters at 0 until the first publish */
  sigset_t all, old;                  /* signals are for c4mon's main thread, not for MHD's */
  sigfillset(&all);
  pthread_sigmask(SIG_SETMASK, &all, &old);
  uint16_t want = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port
                                                 : ((struct sockaddr_in *)&sa)->sin_port);
  mx.d = MHD_start_daemon(flags, want, NULL, NULL, handle, NULL, MHD_OPTION_EXTERNAL_LOGGER,
                          mhd_log, mx.addr, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&sa,
                          MHD_OPTION_CONNECTION_LIMIT, METRICS_CONNECTIONS,
                          MHD_OPTION_PER_IP_CONNECTION_LIMIT, METRICS_CONNECTIONS_PER_ADDR,
                          MHD_OPTION_CONNECTION_TIMEOUT, 10u, MHD_OPTION_END);
  pthread_sigmask(SIG_SETMASK, &old, NULL);
  const union MHD_DaemonInfo *info =
      mx.d ? MHD_get_daemon_info(mx.d, MHD_DAEMON_INFO_BIND_PORT) : NULL;
  if (!info || !info->port) {
    C4_WARN("c4mon: --metrics %s: the metrics endpoint is not started (in use, not an address of "
            "this host, or no thread)",
            addr_port);
    if (mx.d) MHD_stop_daemon(mx.d);
    mx.d = NULL;
    forget();
    return C4_ESYS;
  }
  mx.port = info->port;
  C4_NOTE("c4mon: metrics on http://%.*s:%d/metrics", (int)(strrchr(addr_port, ':') - addr_port),
          addr_port, mx.port);
  return 0;
}

int c4_mon_metrics_port(void) { return mx.d ? mx.port : 0; }

void c4_mon_metrics_stop(void) {
  if (mx.d) MHD_stop_daemon(mx.d); /* joins its thread and closes the listening socket */
  mx.d = NULL;
  forget();
}
