/* scen_fault.c -- --fault specs read and checked, their effect on a transfer, their truth
 * entries; and the blips. */
#include "scen_fault.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "scen_rng.h"

static const struct {
  const char *name, *truth_kind, *where;
  const char *keys; /* allowed keys, each followed by a space; required ones marked with '!' */
} kinds[] = {
    [C4_SCEN_STRAGGLER] = {"straggler", "straggler", "gpu", "!rank !factor !t end "},
    [C4_SCEN_NIC_TX] = {"nic_tx", "comm_slow", "nic_tx", "!host !dev !rate !t end "},
    [C4_SCEN_NIC_RX] = {"nic_rx", "comm_slow", "nic_rx", "!host !dev !rate !t end "},
    [C4_SCEN_LINK] = {"link", "comm_slow", "link", "!src !dst !dev !rate !t end "},
    [C4_SCEN_PATH] = {"path", "comm_slow", "path", "!id !rate !t end "},
    [C4_SCEN_COMM_HANG] = {"comm_hang", "comm_hang", "link", "!src !dst !dev !t "},
    [C4_SCEN_NONCOMM_HANG] = {"noncomm_hang", "noncomm_hang", "gpu", "!rank !t "},
    [C4_SCEN_RANK_LOST] = {"rank_lost", "rank_lost", "gpu", "!rank !t "},
};
#define NKINDS (int)(sizeof kinds / sizeof *kinds)

static int fail(char *err, size_t n, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(err, n, fmt, ap);
  va_end(ap);
  return C4_EINVAL;
}

static int parse_num(const char *s, double *out) {
  char *end;
  errno = 0;
  double v = strtod(s, &end);
  if (errno || end == s || *end || !isfinite(v)) return C4_EINVAL;
  *out = v;
  return 0;
}

static int parse_whole(const char *s, long min, long max, int *out) {
  char *end;
  errno = 0;
  long v = strtol(s, &end, 10);
  if (errno || end == s || *end || v < min || v > max) return C4_EINVAL;
  *out = (int)v;
  return 0;
}

/* The i-th key kinds[k] takes, into name (without its '!'); returns 1 when it is required,
 * 0 when optional, -1 past the last. */
static int nth_key(int k, int i, char *name, size_t n) {
  const char *p = kinds[k].keys;
  for (; i > 0 && *p; i--)
    p = strchr(p, ' ') + 1;
  if (!*p) return C4_NONE;
  int required = *p == '!';
  p += required;
  snprintf(name, n, "%.*s", (int)(strchr(p, ' ') - p), p);
  return required;
}

/* Index of key among what kinds[k] takes, or -1. */
static int key_index(int k, const char *key) {
  char name[16];
  for (int i = 0; nth_key(k, i, name, sizeof name) >= 0; i++)
    if (!strcmp(name, key)) return i;
  return C4_NONE;
}

/* Reads one key=value of a spec into f. */
static int take_key(const struct c4_scen_job *j, const char *key, const char *val,
                    struct c4_scen_fault *f, char *err, size_t n) {
  double v;
  if (!strcmp(key, "rank")) {
    if (parse_whole(val, 0, j->nranks - 1, &f->rank))
      return fail(err, n, "rank=%s is not a rank of 0..%d", val, j->nranks - 1);
  } else if (!strcmp(key, "host") || !strcmp(key, "src") || !strcmp(key, "dst")) {
    int h = c4_scen_host_parse(j, val);
    if (h < 0)
      return fail(err, n, "%s=%s is not a host of 0..%d (or h0000..)", key, val, j->hosts - 1);
    *(strcmp(key, "dst") ? &f->host : &f->dst_host) = h;
  } else if (!strcmp(key, "dev")) {
    if (parse_whole(val, 0, j->gpus - 1, &f->dev))
      return fail(err, n, "dev=%s is not a device of 0..%d", val, j->gpus - 1);
  } else if (!strcmp(key, "factor")) {
    if (parse_num(val, &v) || v <= 1 || v > 10)
      return fail(err, n, "factor=%s is not a slowdown over 1 and at most 10", val);
    f->factor = v;
  } else if (!strcmp(key, "rate")) {
    if (parse_num(val, &v) || v <= 0 || v >= 1)
      return fail(err, n, "rate=%s is not a fraction between 0 and 1", val);
    f->factor = v;
  } else if (!strcmp(key, "id")) {
    if (strncmp(val, "spine", 5) || parse_whole(val + 5, 0, j->spines - 1, &f->spine))
      return fail(err, n, "id=%s is not a path of spine0..spine%d", val, j->spines - 1);
  } else if (!strcmp(key, "t") || !strcmp(key, "end")) {
    if (parse_num(val, &v) || v < 0 || v >= j->seconds)
      return fail(err, n, "%s=%s is not a time in seconds within the run (0..%g)", key, val,
                  j->seconds);
    *(key[0] == 't' ? &f->onset : &f->end) = C4_SCEN_T0 + (uint64_t)llround(v * 1e9);
  }
  return 0;
}

int c4_scen_fault_parse(const struct c4_scen_job *j, const char *spec, struct c4_scen_fault *f,
                        char *err, size_t errlen) {
  memset(f, 0, sizeof *f);
  snprintf(f->spec, sizeof f->spec, "%s", spec);
  char buf[256];
  if (strlen(spec) >= sizeof buf) return fail(err, errlen, "fault spec too long: %s", spec);
  strcpy(buf, spec);
  char *save = NULL, *tok = strtok_r(buf, ":", &save);
  int k = -1;
  for (int i = 0; tok && i < NKINDS; i++)
    if (!strcmp(tok, kinds[i].name)) k = i;
  if (k < 0)
    return fail(err, errlen,
                "fault \"%s\": kind is not straggler, nic_tx, nic_rx, link, path, comm_hang, "
                "noncomm_hang or rank_lost",
                spec);
  f->kind = k;
  unsigned seen = 0;
  while ((tok = strtok_r(NULL, ":", &save))) {
    char *eq = strchr(tok, '=');
    if (!eq) return fail(err, errlen, "fault \"%s\": \"%s\" is not key=value", spec, tok);
    *eq = 0;
    int idx = key_index(k, tok);
    if (idx < 0) {
      char takes[96] = "", name[16];
      for (int i = 0, req; (req = nth_key(k, i, name, sizeof name)) >= 0; i++)
        snprintf(takes + strlen(takes), sizeof takes - strlen(takes), "%s%s%s%s", i ? " " : "",
                 req ? "" : "[", name, req ? "=" : "=]");
      return fail(err, errlen, "fault \"%s\": %s takes no \"%s\" (it takes %s)", spec,
                  kinds[k].name, tok, takes);
    }
    char msg[200];
    if (take_key(j, tok, eq + 1, f, msg, sizeof msg))
      return fail(err, errlen, "fault \"%s\": %s", spec, msg);
    seen |= 1u << idx;
  }
  char name[16];
  for (int i = 0, req; (req = nth_key(k, i, name, sizeof name)) >= 0; i++)
    if (req && !(seen & (1u << i)))
      return fail(err, errlen, "fault \"%s\": %s= is missing", spec, name);
  if (f->end && f->end <= f->onset)
    return fail(err, errlen, "fault \"%s\": end must come after t", spec);
  if (k != C4_SCEN_STRAGGLER && k != C4_SCEN_NONCOMM_HANG && k != C4_SCEN_RANK_LOST && j->hosts < 2)
    return fail(err, errlen, "fault \"%s\": a network fault needs 2 or more hosts", spec);
  if ((k == C4_SCEN_LINK || k == C4_SCEN_COMM_HANG) && !c4_scen_carries(j, f->host, f->dst_host))
    return fail(err, errlen,
                "fault \"%s\": no traffic goes from host %d to host %d in this job (ring "
                "neighbours dst = src + 1 mod %d, and tree edges, carry it)",
                spec, f->host, f->dst_host, j->hosts);
  return 0;
}

int c4_scen_fault_stops(const struct c4_scen_fault *f) {
  return f->kind == C4_SCEN_COMM_HANG || f->kind == C4_SCEN_NONCOMM_HANG ||
         f->kind == C4_SCEN_RANK_LOST;
}

int c4_scen_faults_check(const struct c4_scen_job *j, const struct c4_scen_fault *f, int n,
                         int have_plan, char *err, size_t errlen) {
  const struct c4_scen_fault *stop = NULL;
  for (int i = 0; i < n; i++) {
    if (!c4_scen_fault_stops(&f[i])) continue;
    if (stop)
      return fail(err, errlen,
                  "faults \"%s\" and \"%s\": only one hang or lost rank per run (the "
                  "first stops the job)",
                  stop->spec, f[i].spec);
    stop = &f[i];
  }
  for (int i = 0; i < n; i++) {
    if (stop && &f[i] != stop && f[i].onset >= stop->onset)
      return fail(err, errlen, "fault \"%s\" starts after \"%s\" has stopped the job", f[i].spec,
                  stop->spec);
    if (f[i].kind != C4_SCEN_PATH) continue;
    if (!have_plan) return fail(err, errlen, "fault \"%s\" needs --plan", f[i].spec);
    int used = 0;
    for (int a = 0; a < j->hosts && !used; a++)
      for (int b = 0; b < j->hosts && !used; b++)
        used = c4_scen_carries(j, a, b) && c4_scen_spine(j, a, b) == f[i].spine;
    if (!used)
      return fail(err, errlen, "fault \"%s\": no traffic of this job crosses spine%d", f[i].spec,
                  f[i].spine);
  }
  return 0;
}

double c4_scen_fault_rate(const struct c4_scen_job *j, const struct c4_scen_fault *f, int src,
                          int dst) {
  int sh = src / j->gpus, dh = dst / j->gpus, dev = src % j->gpus;
  switch (f->kind) {
  case C4_SCEN_NIC_TX: return sh == f->host && dev == f->dev ? f->factor : 1;
  case C4_SCEN_NIC_RX: return dh == f->host && dst % j->gpus == f->dev ? f->factor : 1;
  case C4_SCEN_LINK: return sh == f->host && dh == f->dst_host && dev == f->dev ? f->factor : 1;
  case C4_SCEN_PATH: return sh != dh && c4_scen_spine(j, sh, dh) == f->spine ? f->factor : 1;
  default: return 1;
  }
}

static json_t *time_or_null(uint64_t t) { return t ? json_integer((json_int_t)t) : json_null(); }

/* The hosts whose traffic crosses spine (either end), as a JSON array of names. */
static json_t *spine_hosts(const struct c4_scen_job *j, int spine) {
  json_t *a = json_array();
  char *mark = calloc((size_t)j->hosts, 1);
  uint64_t *pairs = NULL;
  long n = c4_scen_pairs(j, &pairs);
  for (long i = 0; mark && i < n; i++) {
    int s = (int)(pairs[i] / (uint64_t)j->hosts), d = (int)(pairs[i] % (uint64_t)j->hosts);
    if (c4_scen_spine(j, s, d) == spine) mark[s] = mark[d] = 1;
  }
  for (int h = 0; mark && h < j->hosts; h++)
    if (mark[h]) json_array_append_new(a, json_string(j->names[h]));
  free(pairs);
  free(mark);
  return a;
}

json_t *c4_scen_fault_truth(const struct c4_scen_job *j, const struct c4_scen_fault *f) {
  json_t *ranks = json_array(), *hosts = json_array(), *nic = json_null(), *link = json_null(),
         *devs = json_null(), *path = json_null();
  double factor = f->factor;
  switch (f->kind) {
  case C4_SCEN_STRAGGLER:
  case C4_SCEN_NONCOMM_HANG:
  case C4_SCEN_RANK_LOST:
    json_array_append_new(ranks, json_integer(f->rank));
    json_array_append_new(hosts, json_string(j->names[f->rank / j->gpus]));
    if (f->kind != C4_SCEN_STRAGGLER) factor = 0;
    break;
  case C4_SCEN_NIC_TX:
  case C4_SCEN_NIC_RX:
    json_array_append_new(ranks, json_integer(c4_scen_rank(j, f->host, f->dev)));
    json_array_append_new(hosts, json_string(j->names[f->host]));
    json_decref(nic);
    nic = json_pack("{s:s, s:i}", "host", j->names[f->host], "dev", f->dev);
    factor = 1 / f->factor;
    break;
  case C4_SCEN_LINK:
  case C4_SCEN_COMM_HANG:
    json_array_append_new(ranks, json_integer(c4_scen_rank(j, f->host, f->dev)));
    json_array_append_new(ranks, json_integer(c4_scen_rank(j, f->dst_host, f->dev)));
    json_array_append_new(hosts, json_string(j->names[f->host]));
    json_array_append_new(hosts, json_string(j->names[f->dst_host]));
    json_decref(link);
    json_decref(devs);
    link = json_pack("[s, s]", j->names[f->host], j->names[f->dst_host]);
    devs = json_pack("[i, i]", f->dev, f->dev);
    factor = f->kind == C4_SCEN_LINK ? 1 / f->factor : 0;
    break;
  case C4_SCEN_PATH: {
    char id[32];
    snprintf(id, sizeof id, "spine%d", f->spine);
    json_decref(path);
    json_decref(hosts);
    path = json_string(id);
    hosts = spine_hosts(j, f->spine);
    factor = 1 / f->factor;
    break;
  }
  default: break;
  }
  json_t *t = json_pack("{s:s, s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:I, s:o, s:f, s:s}", "kind",
                        kinds[f->kind].truth_kind, "where", kinds[f->kind].where, "ranks", ranks,
                        "hosts", hosts, "nic", nic, "link", link, "link_devs", devs, "path", path,
                        "onset_ns", (json_int_t)f->onset, "end_ns", time_or_null(f->end), "factor",
                        factor, "spec", f->spec);
  if (t && c4_scen_fault_stops(f)) json_object_set_new(t, "stall_ns", time_or_null(f->stall));
  return t;
}

void c4_scen_blips_plan(const struct c4_scen_job *j, uint64_t seed, struct c4_scen_blip *b, int n) {
  struct c4_scen_rng g;
  c4_scen_rng_seed(&g, seed ^ 0xb11b5b11b5ull);
  for (int i = 0; i < n; i++) {
    b[i] =
        (struct c4_scen_blip){.what = i % 3,
                              .rank = (int)c4_scen_rng_below(&g, (uint64_t)j->nranks),
                              .due = C4_SCEN_T0 + (uint64_t)(j->seconds * 1e9 * (i + 1) / (n + 1))};
  }
}

json_t *c4_scen_blip_truth(const struct c4_scen_job *j, const struct c4_scen_blip *b) {
  static const char *const what[] = {"xfer_slow", "compute_slow", "nic_slow"};
  static const double factor[] = {5, 3, 2};
  return json_pack("{s:s, s:I, s:i, s:s, s:i, s:f}", "what", what[b->what], "t_ns",
                   (json_int_t)b->at, "rank", b->rank, "host", j->names[b->rank / j->gpus], "dev",
                   b->rank % j->gpus, "factor", factor[b->what]);
}
