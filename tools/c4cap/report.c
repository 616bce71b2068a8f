/* report.c -- c4cap's output: the JSON tree (built whole, printed once) and the human tables. */
#include "report.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

static const char *link_name(int linktype) {
  switch (linktype) {
  case C4CAP_LINK_EN10MB: return "EN10MB";
  case C4CAP_LINK_RAW: return "RAW";
  case C4CAP_LINK_LINUX_SLL: return "LINUX_SLL";
  case C4CAP_LINK_LINUX_SLL2: return "LINUX_SLL2";
  default: return "other";
  }
}

static const char *proto_name(const struct c4cap_key *k) {
  if (k->qp != C4CAP_NO_QP) return "roce";
  return k->proto == 6 ? "tcp" : k->proto == 17 ? "udp" : NULL;
}

/* The slots of s up to its last non-zero one. */
static size_t series_len(const struct c4cap_series *s) {
  size_t n = s->n;
  while (n && !s->bytes[n - 1])
    n--;
  return n;
}

static uint64_t series_peak(const struct c4cap_series *s) {
  uint64_t m = 0;
  for (size_t i = 0; i < s->n; i++)
    if (s->bytes[i] > m) m = s->bytes[i];
  return m;
}

static json_t *series_json(const struct c4cap_series *s) {
  json_t *b = json_array();
  size_t n = series_len(s); /* once: it scans the trailing empty intervals */
  for (size_t i = 0; b && i < n; i++)
    json_array_append_new(b, json_integer((json_int_t)s->bytes[i]));
  return json_pack("{s:I, s:o*}", "first", (json_int_t)s->first, "ip_bytes", b);
}

static json_t *counts_json(const struct c4cap_counts *c) {
  return json_pack("{s:I, s:I, s:I, s:I}", "packets", (json_int_t)c->packets, "wire_bytes",
                   (json_int_t)c->wire_bytes, "ip_packets", (json_int_t)c->ip_packets, "ip_bytes",
                   (json_int_t)c->ip_bytes);
}

static json_t *flow_json(const struct c4cap_agg *a, const struct c4cap_flow *f) {
  char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
  int af = f->key.family == 6 ? AF_INET6 : AF_INET;
  inet_ntop(af, f->key.src, s, sizeof s);
  inet_ntop(af, f->key.dst, d, sizeof d);
  json_t *j = counts_json(&f->n);
  double span = f->last_ts - f->first_ts;
  json_object_update_new(
      j, json_pack(
             "{s:s, s:i, s:i, s:s?, s:s, s:i, s:s, s:i, s:o, s:f, s:f, s:f, s:f, s:o*}",
             "interface", a->ifaces[f->iface].name, "family", f->key.family, "proto", f->key.proto,
             "kind", proto_name(&f->key), "src", s, "sport", f->key.sport, "dst", d, "dport",
             f->key.dport, "qp", f->key.qp == C4CAP_NO_QP ? json_null() : json_integer(f->key.qp),
             "first_s", f->first_ts, "last_s", f->last_ts, "mean_bps",
             span > 0 ? (double)f->n.ip_bytes * 8 / span : 0.0, "peak_bps",
             (double)series_peak(&f->series) * 8 / a->interval, "series", series_json(&f->series)));
  return j;
}

static json_t *paths_json(const struct c4cap_agg *a, const struct c4cap_paths *p) {
  static const char *const by[] = {"none", "iface", "flow", "map"};
  size_t n;
  uint64_t unmapped, sum = 0;
  double imbalance;
  struct c4cap_path_load *v = c4cap_paths_sum(p, a, &n, &unmapped, &imbalance);
  for (size_t i = 0; i < n; i++)
    sum += v[i].bytes;
  json_t *arr = json_array();
  for (size_t i = 0; arr && i < n; i++)
    json_array_append_new(arr, json_pack("{s:s, s:I, s:I, s:f}", "name", v[i].name, "ip_bytes",
                                         (json_int_t)v[i].bytes, "flows", (json_int_t)v[i].flows,
                                         "share", sum ? (double)v[i].bytes / (double)sum : 0.0));
  free(v);
  return json_pack("{s:s, s:s?, s:o*, s:I, s:o}", "by", by[p->by], "map",
                   p->by == C4CAP_PATHS_MAP ? p->spec : NULL, "paths", arr, "unmapped_ip_bytes",
                   (json_int_t)unmapped, "imbalance", sum ? json_real(imbalance) : json_null());
}

json_t *c4cap_report_json(const struct c4cap_agg *a, const struct c4cap_paths *p,
                          const struct c4cap_run *run) {
  json_t *totals = counts_json(&a->total);
  json_object_update_new(totals, json_pack("{s:I, s:I, s:I, s:I, s:I}", "not_ip_packets",
                                           (json_int_t)a->not_ip, "malformed_packets",
                                           (json_int_t)a->malformed, "fragments",
                                           (json_int_t)a->fragments, "flows", (json_int_t)a->nflows,
                                           "dropped", (json_int_t)run->dropped));
  json_t *ifaces = json_array();
  for (int i = 0; ifaces && i < a->nifaces; i++) {
    const struct c4cap_iface *f = &a->ifaces[i];
    json_t *j = counts_json(&f->n);
    json_object_update_new(j, json_pack("{s:s, s:s, s:o*}", "name", f->name, "linktype",
                                        link_name(f->linktype), "series", series_json(&f->series)));
    json_array_append_new(ifaces, j);
  }
  size_t n;
  const struct c4cap_flow **v = c4cap_agg_sorted(a, &n);
  json_t *flows = json_array();
  for (size_t i = 0; flows && i < n; i++)
    json_array_append_new(flows, flow_json(a, v[i]));
  free(v);
  return json_pack("{s:s, s:f, s:f, s:f, s:I, s:o*, s:o*, s:o*, s:o}", "source", run->source,
                   "interval_s", a->interval, "start_epoch_s", a->t0, "duration_s", a->t_end,
                   "intervals", (json_int_t)c4cap_agg_intervals(a), "totals", totals, "interfaces",
                   ifaces, "flows", flows, "paths",
                   p && p->by != C4CAP_PATHS_NONE ? paths_json(a, p) : json_null());
}

static double mbps(uint64_t bytes, double seconds) {
  return seconds > 0 ? (double)bytes * 8 / seconds / 1e6 : 0;
}

/* IP Mbit/s of every interface in every interval: a row per interval, a column per interface. */
static void over_time(FILE *out, const struct c4cap_agg *a) {
  fprintf(out, "\nIP Mbit/s per %g s interval\n%8s", a->interval, "t(s)");
  for (int i = 0; i < a->nifaces; i++)
    fprintf(out, " %14.14s", a->ifaces[i].name);
  fputc('\n', out);
  for (uint64_t k = 0; k < c4cap_agg_intervals(a); k++) {
    fprintf(out, "%8.1f", (double)k * a->interval);
    for (int i = 0; i < a->nifaces; i++) {
      const struct c4cap_series *s = &a->ifaces[i].series;
      uint64_t b = s->bytes && k >= s->first && k - s->first < s->n ? s->bytes[k - s->first] : 0;
      fprintf(out, " %14.1f", mbps(b, a->interval));
    }
    fputc('\n', out);
  }
}

static void paths_table(FILE *out, const struct c4cap_agg *a, const struct c4cap_paths *p) {
  size_t n;
  uint64_t unmapped, sum = 0;
  double imbalance;
  struct c4cap_path_load *v = c4cap_paths_sum(p, a, &n, &unmapped, &imbalance);
  for (size_t i = 0; i < n; i++)
    sum += v[i].bytes;
  fprintf(out, "\npaths by %s: %zu, imbalance (max/mean) %.3f\n%-40s %14s %7s %6s\n", p->spec, n,
          imbalance, "path", "IP bytes", "share", "flows");
  for (size_t i = 0; i < n; i++)
    fprintf(out, "%-40.40s %14llu %6.1f%% %6llu\n", v[i].name, (unsigned long long)v[i].bytes,
            sum ? 100.0 * (double)v[i].bytes / (double)sum : 0.0, (unsigned long long)v[i].flows);
  if (unmapped) fprintf(out, "(%llu IP bytes from unmapped ports)\n", (unsigned long long)unmapped);
  free(v);
}

int c4cap_report_table(FILE *out, const struct c4cap_agg *a, const struct c4cap_paths *p,
                       const struct c4cap_run *run) {
  const struct c4cap_counts *t = &a->total;
  fprintf(out,
          "%s: %llu packets, %llu wire bytes, %llu IP bytes over %.3f s; %llu flows, %llu not IP, "
          "%llu malformed, %llu fragments, %llu dropped\n",
          run->source, (unsigned long long)t->packets, (unsigned long long)t->wire_bytes,
          (unsigned long long)t->ip_bytes, a->t_end, (unsigned long long)a->nflows,
          (unsigned long long)a->not_ip, (unsigned long long)a->malformed,
          (unsigned long long)a->fragments, (unsigned long long)run->dropped);
  fprintf(out, "\n%-24s %10s %14s %14s %12s\n", "interface", "packets", "wire bytes", "IP bytes",
          "IP Mbit/s");
  for (int i = 0; i < a->nifaces; i++) {
    const struct c4cap_iface *f = &a->ifaces[i];
    fprintf(out, "%-24s %10llu %14llu %14llu %12.1f\n", f->name, (unsigned long long)f->n.packets,
            (unsigned long long)f->n.wire_bytes, (unsigned long long)f->n.ip_bytes,
            mbps(f->n.ip_bytes, a->t_end));
  }
  if (a->started) over_time(out, a);
  size_t n;
  const struct c4cap_flow **v = c4cap_agg_sorted(a, &n);
  if (n && !v) return -ENOMEM;
  int w = 10; /* the interface column as wide as its widest name shown: cut at 10, two flows of
               * one file's interfaces (FILE:if3, FILE:if4) printed as the same row */
  for (size_t i = 0; i < n && i < (size_t)run->top; i++) {
    int len = (int)strlen(a->ifaces[v[i]->iface].name);
    if (len > w) w = len < 64 ? len : 64;
  }
  fprintf(out, "\nflows: %zu (%s%d by IP bytes)\n%-*s %-5s %-46s %8s %10s %14s %10s %10s\n", n,
          (size_t)run->top < n ? "top " : "all, up to ", run->top, w, "interface", "kind",
          "source > destination", "qp", "packets", "IP bytes", "mean Mb/s", "peak Mb/s");
  for (size_t i = 0; i < n && i < (size_t)run->top; i++) {
    const struct c4cap_flow *f = v[i];
    char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN], ends[128], qp[16] = "-", proto[8];
    int af = f->key.family == 6 ? AF_INET6 : AF_INET;
    inet_ntop(af, f->key.src, s, sizeof s);
    inet_ntop(af, f->key.dst, d, sizeof d);
    snprintf(ends, sizeof ends, "%s.%u > %s.%u", s, f->key.sport, d, f->key.dport);
    if (f->key.qp != C4CAP_NO_QP) snprintf(qp, sizeof qp, "%u", f->key.qp);
    snprintf(proto, sizeof proto, "%u", f->key.proto);
    const char *kind = proto_name(&f->key);
    fprintf(out, "%-*.*s %-5s %-46s %8s %10llu %14llu %10.1f %10.1f\n", w, w,
            a->ifaces[f->iface].name, kind ? kind : proto, ends, qp,
            (unsigned long long)f->n.packets, (unsigned long long)f->n.ip_bytes,
            mbps(f->n.ip_bytes, f->last_ts - f->first_ts),
            mbps(series_peak(&f->series), a->interval));
  }
  free(v);
  if (p && p->by != C4CAP_PATHS_NONE) paths_table(out, a, p);
  return 0;
}
