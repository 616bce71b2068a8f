/* mon_evq_text.c -- events and scores in words: which rank, host, NIC, link or path, which job. */
#include <stdio.h>
#include <string.h>

#include "mon_evq.h"

static const char *str(const json_t *o, const char *key) {
  const char *s = json_string_value(json_object_get(o, key));
  return s ? s : "";
}

/* "a,b,c" of an array of integers or strings, into buf. */
static void join(const json_t *a, char *buf, size_t n) {
  size_t len = 0, i;
  json_t *x;
  buf[0] = 0;
  json_array_foreach(a, i, x) {
    if (len >= n) break;
    if (json_is_integer(x))
      len += (size_t)snprintf(buf + len, n - len, "%s%lld", i ? "," : "",
                              (long long)json_integer_value(x));
    else
      len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? "," : "",
                              json_string_value(x) ? json_string_value(x) : "?");
  }
}

void c4_mon_evq_place(const json_t *ev, char *buf, size_t n) {
  const json_t *o =
      json_is_object(json_object_get(ev, "cleared")) ? json_object_get(ev, "cleared") : ev;
  const char *where = str(o, "where");
  json_t *nic = json_object_get(o, "nic"), *link = json_object_get(o, "link");
  json_t *devs = json_object_get(ev, "link_devs");
  char ranks[128], hosts[256];
  join(json_object_get(o, "ranks"), ranks, sizeof ranks);
  join(json_object_get(o, "hosts"), hosts, sizeof hosts);
  if (json_is_object(nic)) {
    snprintf(buf, n, "NIC %s/%lld (%s side)", str(nic, "host"),
             (long long)json_integer_value(json_object_get(nic, "dev")),
             !strcmp(where, "nic_rx") ? "receiving" : "sending");
  } else if (json_is_array(link)) {
    char d[64] = "";
    if (json_is_array(devs) && o == ev)
      snprintf(d, sizeof d, " (dev %lld -> %lld)",
               (long long)json_integer_value(json_array_get(devs, 0)),
               (long long)json_integer_value(json_array_get(devs, 1)));
    snprintf(buf, n, "link %s -> %s%s", json_string_value(json_array_get(link, 0)),
             json_string_value(json_array_get(link, 1)), d);
  } else if (json_is_string(json_object_get(o, "path"))) {
    snprintf(buf, n, "path %s", str(o, "path"));
  } else if (!strcmp(where, "gpu") && ranks[0]) {
    snprintf(buf, n, "rank%s %s (%s)", strchr(ranks, ',') ? "s" : "", ranks,
             hosts[0] ? hosts : "host unknown");
  } else if (!strcmp(where, "job")) { /* a job's end: the hosts whose ranks said goodbye */
    snprintf(buf, n, "on host%s %s", strchr(hosts, ',') ? "s" : "", hosts[0] ? hosts : "unknown");
  } else {
    snprintf(buf, n, "%s %s", where[0] ? where : "place", hosts[0] ? hosts : "unknown");
  }
}

void c4_mon_evq_print(FILE *f, const json_t *ev, const char *at) {
  const char *kind = str(ev, "kind"), *job = str(ev, "job");
  char place[400];
  c4_mon_evq_place(ev, place, sizeof place);
  if (!strcmp(kind, "recovered")) {
    fprintf(f, "%-10s #%-3lld recovered    #%lld %s at %s has cleared%s%s\n", at,
            (long long)json_integer_value(json_object_get(ev, "id")),
            (long long)json_integer_value(json_object_get(ev, "clears")),
            str(json_object_get(ev, "cleared"), "kind"), place, job[0] ? ", job " : "", job);
    return;
  }
  if (!strcmp(kind, "plan")) {
    fprintf(f, "%-10s #%-3lld plan         %s%s%s\n", at,
            (long long)json_integer_value(json_object_get(ev, "id")), str(ev, "detail"),
            job[0] ? ", job " : "", job);
    return;
  }
  if (!strcmp(kind, "dropped")) {
    fprintf(f, "%-10s      dropped      %lld events were lost on the way (a slow reader)\n", at,
            (long long)json_integer_value(json_object_get(ev, "count")));
    return;
  }
  char ranks[128] = "";
  if (strcmp(str(ev, "where"), "gpu")) join(json_object_get(ev, "ranks"), ranks, sizeof ranks);
  fprintf(f, "%-10s #%-3lld %-12s %s%s%s", at,
          (long long)json_integer_value(json_object_get(ev, "id")), kind, place,
          ranks[0] ? ", ranks " : "", ranks);
  double factor = json_number_value(json_object_get(ev, "factor"));
  if (factor > 0)
    fprintf(f, ", %.2fx (confidence %.2f)", factor,
            json_number_value(json_object_get(ev, "confidence")));
  fprintf(f, "%s%s\n", job[0] ? ", job " : "", job);
}

void c4_mon_evq_print_score(FILE *f, const json_t *s) {
  size_t i;
  json_t *x;
  fprintf(f, "%-28s %-13s %-40s %-6s %8s  %s\n", "expected", "kind", "place", "found", "flag_s",
          "c4mon said");
  json_array_foreach(json_object_get(s, "faults"), i, x) {
    json_t *name = json_object_get(x, "name"), *flag = json_object_get(x, "flag_s");
    char label[32], said[300] = "-", fl[32] = "-";
    snprintf(label, sizeof label, "%zu", i + 1);
    if (json_is_true(json_object_get(x, "detected"))) {
      snprintf(said, sizeof said, "#%lld %s",
               (long long)json_integer_value(json_object_get(x, "event_id")),
               str(x, "event_place"));
      snprintf(fl, sizeof fl, "%.1f", json_number_value(flag));
    }
    fprintf(f, "%-28.28s %-13s %-40.40s %-6s %8s  %s\n",
            json_is_string(name) ? json_string_value(name) : label, str(x, "kind"), str(x, "place"),
            json_is_true(json_object_get(x, "detected")) ? "yes" : "MISSED", fl, said);
  }
  json_t *reps = json_object_get(s, "repeats"), *fps = json_object_get(s, "false_positives");
  if (json_array_size(reps)) fprintf(f, "raised again for a fault already found:\n");
  json_array_foreach(reps, i, x) c4_mon_evq_print(f, x, "  again");
  if (json_array_size(fps))
    fprintf(f, "false alarms (no expected verdict of this kind, place and time):\n");
  json_array_foreach(fps, i, x) c4_mon_evq_print(f, x, "  FALSE");
  fprintf(f, "score: %lld of %lld expected verdicts found, %zu false alarm%s, %zu repeat%s: %s\n",
          (long long)json_integer_value(json_object_get(s, "faults_detected")),
          (long long)json_integer_value(json_object_get(s, "faults_total")), json_array_size(fps),
          json_array_size(fps) == 1 ? "" : "s", json_array_size(reps),
          json_array_size(reps) == 1 ? "" : "s",
          json_is_true(json_object_get(s, "ok")) ? "ok" : "FAILED");
}
