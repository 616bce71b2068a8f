/* flows.c -- reads the planner's flows from a flows file or a c4 trace, and makes synthetic ring
 * and random traffic for tests and benchmarks. */
#include "flows.h"
#include "c4_cli.h"

#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "c4_err.h"
#include "c4_trace_read.h"

/* Flows are at most this many: more would not fit an int index, and no job has them. */
#define MAX_FLOWS (1 << 26)

static int from_json(json_t *root, const char *what, const struct c4_plan_topo *t,
                     struct c4_plan_flow **out, char *err, size_t errlen) {
  json_t *v = json_object_get(root, "v"), *a = json_object_get(root, "flows"), *f;
  int n = -1;
  *out = NULL;
  if (!json_is_integer(v) || json_integer_value(v) != 1)
    snprintf(err, errlen, "%s: v: missing or not 1", what);
  else if (!json_is_array(a) || json_array_size(a) > MAX_FLOWS)
    snprintf(err, errlen, "%s: flows: missing or not an array", what);
  else if (!(*out = malloc(sizeof **out * (json_array_size(a) + 1))))
    snprintf(err, errlen, "%s: out of memory", what);
  else
    n = 0;
  size_t i;
  json_array_foreach(n < 0 ? NULL : a, i, f) {
    const char *src = json_string_value(json_object_get(f, "src"));
    const char *dst = json_string_value(json_object_get(f, "dst"));
    json_t *bytes = json_object_get(f, "bytes");
    const char *bad = !src   ? "src: missing or not a string"
                      : !dst ? "dst: missing or not a string"
                      : !json_is_integer(bytes) || json_integer_value(bytes) < 0
                          ? "bytes: missing or not an integer >= 0"
                          : NULL;
    struct c4_plan_flow fl = {bad ? -1 : c4_plan_topo_host(t, src),
                              bad ? -1 : c4_plan_topo_host(t, dst),
                              bad ? 0 : (uint64_t)json_integer_value(bytes)};
    if (bad)
      snprintf(err, errlen, "%s: flows[%zu].%s", what, i, bad);
    else if (fl.src < 0)
      snprintf(err, errlen, "%s: flows[%zu].src: no host \"%s\" in the topology", what, i, src);
    else if (fl.dst < 0)
      snprintf(err, errlen, "%s: flows[%zu].dst: no host \"%s\" in the topology", what, i, dst);
    else if (fl.src == fl.dst)
      snprintf(err, errlen, "%s: flows[%zu]: src and dst are one host", what, i);
    else {
      (*out)[n++] = fl;
      continue;
    }
    n = -1;
    break;
  }
  if (n < 0) free(*out), *out = NULL;
  json_decref(root);
  return n;
}

int c4_plan_flows_parse(const char *text, size_t len, const char *what,
                        const struct c4_plan_topo *t, struct c4_plan_flow **out, char *err,
                        size_t errlen) {
  json_error_t jerr;
  json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    *out = NULL;
    snprintf(err, errlen, "%s: line %d: %s", what, jerr.line, jerr.text);
    return C4_EINVAL;
  }
  return from_json(root, what, t, out, err, errlen);
}

int c4_plan_flows_load(const char *path, const struct c4_plan_topo *t, struct c4_plan_flow **out,
                       char *err, size_t errlen) {
  json_error_t jerr;
  json_t *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) {
    char why[300];
    *out = NULL;
    snprintf(err, errlen, "%s: %s", path, c4_cli_json_why(&jerr, why, sizeof why));
    return C4_EINVAL;
  }
  return from_json(root, path, t, out, err, errlen);
}

static int by_pair(const void *a, const void *b) {
  const struct c4_plan_flow *x = a, *y = b;
  if (x->src != y->src) return x->src - y->src;
  return x->dst - y->dst;
}

/* Sorts the per-record flows by host pair and adds up each pair's bytes in place. */
static int merge_pairs(struct c4_plan_flow *f, int n) {
  qsort(f, (size_t)n, sizeof *f, by_pair);
  int m = 0;
  for (int i = 0; i < n; i++)
    if (m > 0 && !by_pair(&f[m - 1], &f[i]))
      f[m - 1].bytes += f[i].bytes;
    else
      f[m++] = f[i];
  return m;
}

int c4_plan_flows_from_trace(const char *path, const struct c4_plan_topo *t,
                             struct c4_plan_flow **out, char *err, size_t errlen) {
  struct c4_trace_reader rd;
  struct stat st;
  *out = NULL;
  if (strcmp(path, "-") && stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
    snprintf(err, errlen, "%s: %s", path, strerror(EISDIR)); /* read as an empty trace before */
    return C4_EINVAL;
  }
  errno = 0;
  if (c4_trace_open(&rd, path) < 0) {
    snprintf(err, errlen, "%s: %s", path, errno ? strerror(errno) : "cannot open");
    return C4_ENOTFOUND;
  }
  int n = 0, cap = 0, rc;
  struct c4_record r;
  char why[256];
  while ((rc = c4_trace_next(&rd, &r, why, sizeof why)) != 0) {
    if (rc < 0) {
      snprintf(err, errlen, "%s: %s", path, why);
      goto fail;
    }
    if (r.kind != C4_REC_XFER || r.xfer.dir != C4_DIR_SEND) continue;
    struct c4_plan_flow f = {c4_plan_topo_host(t, r.xfer.self.host),
                             c4_plan_topo_host(t, r.xfer.peer.host), r.xfer.bytes};
    if (f.src < 0 || f.dst < 0) {
      snprintf(err, errlen, "%s: record %lu: no host \"%s\" in the topology", path, rd.lineno,
               f.src < 0 ? r.xfer.self.host : r.xfer.peer.host);
      goto fail;
    }
    if (f.src == f.dst) continue; /* within a host: no link carries it */
    if (n == cap) {
      /* fold pairs before growing, so that a long trace needs room for its pairs only */
      n = n ? merge_pairs(*out, n) : 0;
      if (cap == 0 || n > cap / 2) {
        void *more = cap < MAX_FLOWS
                         ? realloc(*out, sizeof **out * (size_t)(cap = cap ? 2 * cap : 1024))
                         : NULL;
        if (!more) {
          snprintf(err, errlen, "%s: out of memory", path);
          goto fail;
        }
        *out = more;
      }
    }
    (*out)[n++] = f;
  }
  c4_trace_close(&rd);
  return n ? merge_pairs(*out, n) : 0;
fail:
  c4_trace_close(&rd);
  free(*out);
  *out = NULL;
  return C4_EINVAL;
}

int c4_plan_flows_ring(const struct c4_plan_topo *t, int per_host, uint64_t bytes,
                       struct c4_plan_flow **out) {
  int n = t->nhosts * per_host;
  if (!(*out = malloc(sizeof **out * (size_t)(n ? n : 1)))) return C4_ENOMEM;
  for (int i = 0; i < n; i++)
    (*out)[i] = (struct c4_plan_flow){i / per_host, (i / per_host + 1) % t->nhosts, bytes};
  return n;
}

/* splitmix64, as assign.c uses for hashing. */
static uint64_t next_random(uint64_t *s) {
  uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

int c4_plan_flows_random(const struct c4_plan_topo *t, int per_host, uint64_t bytes, uint64_t seed,
                         struct c4_plan_flow **out) {
  int n = t->nhosts > 1 ? t->nhosts * per_host : 0;
  if (!(*out = malloc(sizeof **out * (size_t)(n ? n : 1)))) return C4_ENOMEM;
  for (int i = 0; i < n; i++) {
    int src = i / per_host, dst = (int)(next_random(&seed) % (uint64_t)(t->nhosts - 1));
    uint64_t size = bytes / 2 + (bytes ? next_random(&seed) % (bytes + 1) : 0);
    (*out)[i] = (struct c4_plan_flow){src, dst >= src ? dst + 1 : dst, size};
  }
  return n;
}
