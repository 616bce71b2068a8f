/* mon_prom.c -- the Prometheus endpoint: a text rebuilt by the main loop, served as is. */
#include "mon_prom.h"

#include <microhttpd.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "c4_log.h"
#include "mon_addr.h"

#define MAX_SERIES 100000

static struct {
  struct MHD_Daemon *d;
  pthread_mutex_t lock;
  char *text;
  size_t len;
  int port;
  uint64_t events[7]; /* by kind, as kinds[] */
} prom = {.lock = PTHREAD_MUTEX_INITIALIZER};

static const char *const kinds[] = {"straggler", "comm_slow", "comm_hang", "noncomm_hang",
                                    "rank_lost", "recovered", "unknown"};

static int kind_index(const char *k) {
  for (int i = 0; i < 6; i++)
    if (k && !strcmp(kinds[i], k)) return i;
  return 6;
}

/* A label value, escaped as the exposition format wants (backslash, quote, newline). */
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

static void header(FILE *f, const char *name, const char *type, const char *help) {
  fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static double num(const json_t *o, const char *k) {
  return json_number_value(json_object_get(o, k));
}

static void status_metrics(FILE *f, const json_t *st) {
  static const struct {
    const char *name, *key, *type, *help;
  } m[] = {{"c4_records_total", "records", "counter", "records received from ranks"},
           {"c4_ranks_connected", "ranks_connected", "gauge", "ranks streaming now"},
           {"c4_rejected_total", "rejected", "counter", "connections refused (token, job)"},
           {"c4_bad_frames_total", "bad_frames", "counter", "connections closed for bad frames"},
           {"c4_ranks_lost_total", "lost", "counter", "streams that ended without a goodbye"}};
  for (size_t i = 0; i < sizeof m / sizeof *m; i++) {
    header(f, m[i].name, m[i].type, m[i].help);
    fprintf(f, "%s %.0f\n", m[i].name, num(st, m[i].key));
  }
}

static void rank_metrics(FILE *f, const json_t *ranks, double now_ns, long *series) {
  static const struct {
    const char *name, *help;
  } m[] = {{"c4_rank_slowdown", "compute time between collectives over its usual (1 = normal)"},
           {"c4_rank_heartbeat_age_seconds", "time since the rank's last heartbeat"},
           {"c4_rank_collectives_entered", "collectives the rank has entered"},
           {"c4_rank_collectives_done", "collectives the rank has completed"},
           {"c4_rank_lost", "1 while the rank is lost"}};
  for (size_t k = 0; k < sizeof m / sizeof *m; k++) {
    header(f, m[k].name, "gauge", m[k].help);
    size_t i;
    json_t *r;
    json_array_foreach(ranks, i, r) {
      if (++*series > MAX_SERIES) return;
      fprintf(f, "%s{job=\"", m[k].name);
      put_label(f, json_string_value(json_object_get(r, "job")));
      fprintf(f, "\",rank=\"%lld\",host=\"",
              (long long)json_integer_value(json_object_get(r, "rank")));
      put_label(f, json_string_value(json_object_get(r, "host")));
      double v = k == 0   ? num(r, "slowdown")
                 : k == 1 ? (now_ns - num(r, "last_hb_ns")) / 1e9
                 : k == 2 ? num(r, "entered")
                 : k == 3 ? num(r, "done")
                          : json_is_true(json_object_get(r, "lost"));
      fprintf(f, "\"} %g\n", v);
    }
  }
}

static void matrix_metrics(FILE *f, const json_t *m, long *series) {
  json_t *nodes = json_object_get(m, "nodes");
  size_t i;
  json_t *c;
  header(f, "c4_link_slowdown", "gauge", "a link's time per byte over its size class's median");
  json_array_foreach(json_object_get(m, "cells"), i, c) {
    if (++*series > MAX_SERIES) break;
    fputs("c4_link_slowdown{src=\"", f);
    put_label(f, json_string_value(
                     json_array_get(nodes, (size_t)json_integer_value(json_array_get(c, 0)))));
    fputs("\",dst=\"", f);
    put_label(f, json_string_value(
                     json_array_get(nodes, (size_t)json_integer_value(json_array_get(c, 1)))));
    fprintf(f, "\"} %g\n", json_number_value(json_array_get(c, 2)));
  }
  const char *names[2] = {"c4_nic_tx_slowdown", "c4_nic_rx_slowdown"};
  const char *keys[2] = {"rows", "cols"};
  for (int k = 0; k < 2; k++) {
    header(f, names[k], "gauge",
           k ? "a NIC's receiving side (column effect)" : "a NIC's sending side (row effect)");
    json_t *v;
    json_array_foreach(json_object_get(m, keys[k]), i, v) {
      if (++*series > MAX_SERIES) break;
      fprintf(f, "%s{nic=\"", names[k]);
      put_label(f, json_string_value(json_array_get(nodes, i)));
      fprintf(f, "\"} %g\n", json_number_value(v));
    }
  }
}

void c4_mon_prom_publish(const json_t *state, const json_t *status) {
  char *buf = NULL;
  size_t len = 0;
  FILE *f = open_memstream(&buf, &len);
  if (!f) return;
  long series = 0;
  if (status) status_metrics(f, status);
  size_t i;
  json_t *r;
  rank_metrics(f, json_object_get(state, "ranks"), num(state, "t"), &series);
  matrix_metrics(f, json_object_get(state, "matrix"), &series);
  header(f, "c4_events_total", "counter", "verdicts and recoveries emitted, by kind");
  pthread_mutex_lock(&prom.lock);
  for (int k = 0; k < 6; k++)
    fprintf(f, "c4_events_total{kind=\"%s\"} %llu\n", kinds[k], (unsigned long long)prom.events[k]);
  pthread_mutex_unlock(&prom.lock);
  header(f, "c4_verdicts_active", "gauge", "verdicts not yet recovered, by kind");
  for (int k = 0; k < 5; k++) {
    int n = 0;
    json_array_foreach(json_object_get(state, "verdicts"), i, r) n +=
        !strcmp(json_string_value(json_object_get(r, "kind")), kinds[k]);
    fprintf(f, "c4_verdicts_active{kind=\"%s\"} %d\n", kinds[k], n);
  }
  if (series > MAX_SERIES)
    fprintf(f, "# %ld series left out (at most %d)\n", series - MAX_SERIES, MAX_SERIES);
  fclose(f);
  pthread_mutex_lock(&prom.lock);
  free(prom.text);
  prom.text = buf;
  prom.len = len;
  pthread_mutex_unlock(&prom.lock);
}

void c4_mon_prom_event(const json_t *event, const char *line, void *arg) {
  (void)line;
  (void)arg;
  pthread_mutex_lock(&prom.lock);
  prom.events[kind_index(json_string_value(json_object_get(event, "kind")))]++;
  pthread_mutex_unlock(&prom.lock);
}

char *c4_mon_prom_text(void) {
  pthread_mutex_lock(&prom.lock);
  char *t = prom.text ? strdup(prom.text) : strdup("");
  pthread_mutex_unlock(&prom.lock);
  return t;
}

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned code, const char *body,
                             size_t len, const char *type) {
  struct MHD_Response *r =
      MHD_create_response_from_buffer(len, (void *)body, MHD_RESPMEM_MUST_COPY);
  if (!r) return MHD_NO;
  MHD_add_response_header(r, "Content-Type", type);
  enum MHD_Result rc = MHD_queue_response(conn, code, r);
  MHD_destroy_response(r);
  return rc;
}

static enum MHD_Result handle(void *cls, struct MHD_Connection *conn, const char *url,
                              const char *method, const char *version, const char *data,
                              size_t *data_len, void **state) {
  (void)cls, (void)version, (void)data, (void)data_len, (void)state;
  if (strcmp(method, "GET") && strcmp(method, "HEAD"))
    return reply(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET\n", 9, "text/plain");
  if (strcmp(url, "/metrics"))
    return reply(conn, MHD_HTTP_NOT_FOUND, "try /metrics\n", 13, "text/plain");
  pthread_mutex_lock(&prom.lock);
  enum MHD_Result rc = reply(conn, MHD_HTTP_OK, prom.text ? prom.text : "",
                             prom.text ? prom.len : 0, "text/plain; version=0.0.4");
  pthread_mutex_unlock(&prom.lock);
  return rc;
}

int c4_mon_prom_start(const char *addr_port) {
  struct sockaddr_storage sa;
  socklen_t salen;
  if (c4_mon_parse_addr(addr_port, &sa, &salen) != 0) {
    C4_WARN("c4mon: --metrics %s is not ADDR:PORT", addr_port);
    return C4_EINVAL;
  }
  unsigned flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_ERROR_LOG;
  if (sa.ss_family == AF_INET6) flags |= MHD_USE_IPv6;
  prom.d = MHD_start_daemon(flags, 0, NULL, NULL, handle, NULL, MHD_OPTION_SOCK_ADDR, &sa,
                            MHD_OPTION_CONNECTION_LIMIT, 64U, MHD_OPTION_CONNECTION_TIMEOUT, 10U,
                            MHD_OPTION_END);
  if (!prom.d) {
    C4_WARN("c4mon: cannot serve metrics on %s (in use, or not an address of this host)",
            addr_port);
    return C4_ESYS;
  }
  const union MHD_DaemonInfo *info = MHD_get_daemon_info(prom.d, MHD_DAEMON_INFO_BIND_PORT);
  prom.port = info ? info->port : 0;
  return 0;
}

int c4_mon_prom_port(void) { return prom.port; }

void c4_mon_prom_stop(void) {
  if (prom.d) MHD_stop_daemon(prom.d);
  prom.d = NULL;
  pthread_mutex_lock(&prom.lock);
  free(prom.text);
  prom.text = NULL;
  memset(prom.events, 0, sizeof prom.events);
  pthread_mutex_unlock(&prom.lock);
}
