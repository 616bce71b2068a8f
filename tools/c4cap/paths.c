/* paths.c -- c4cap's path balance: which path each flow took, and how evenly the bytes spread. */
#include "paths.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* One map line's "SOURCE_PORT PATH": 1 with them filled in, 0 for a blank line, -EINVAL for
 * anything else (a header line, a port out of range or glued to its path, a third word, a long
 * name: each was taken or skipped without a word before). */
static int map_line(char *line, unsigned *port, char *name, size_t len) {
  char *save = NULL, *words[3];
  int n = 0;
  for (char *w = strtok_r(line, " \t\r\n", &save); w && n < 3; w = strtok_r(NULL, " \t\r\n", &save))
    words[n++] = w;
  if (n == 0) return 0;
  if (n != 2 || strspn(words[0], "0123456789") != strlen(words[0]) || strlen(words[0]) > 5 ||
      strlen(words[1]) >= len)
    return -EINVAL;
  *port = (unsigned)strtoul(words[0], NULL, 10);
  if (*port == 0 || *port > 65535) return -EINVAL;
  memcpy(name, words[1], strlen(words[1]) + 1);
  return 1;
}

static int load_map(struct c4cap_paths *p, const char *file, char *err, size_t errlen) {
  FILE *f = fopen(file, "r");
  if (!f) {
    snprintf(err, errlen, "%s: %s", file, strerror(errno));
    return -ENOENT;
  }
  char line[512];
  int rc = 0, lineno = 0;
  while (rc == 0 && fgets(line, sizeof line, f)) {
    lineno++;
    char *hash = strchr(line, '#');
    if (hash) *hash = '\0';
    unsigned port = 0;
    char name[sizeof p->map->name];
    int got = map_line(line, &port, name, sizeof name);
    if (got == 0) continue; /* blank or comment */
    if (got < 0) {
      snprintf(err, errlen, "%s:%d: expected \"SOURCE_PORT PATH\" (a port 1-65535, a name)", file,
               lineno);
      rc = -EINVAL;
      break;
    }
    for (size_t i = 0; i < p->nmap; i++)
      if (p->map[i].port == port) { /* the second path would count as empty */
        snprintf(err, errlen, "%s:%d: source port %u is mapped already", file, lineno, port);
        rc = -EINVAL;
      }
    if (rc) break;
    struct c4cap_path_entry *m = realloc(p->map, (p->nmap + 1) * sizeof *m);
    if (!m) {
      snprintf(err, errlen, "out of memory reading %s", file);
      rc = -ENOMEM;
      break;
    }
    p->map = m;
    m[p->nmap].port = (uint16_t)port;
    snprintf(m[p->nmap++].name, sizeof m->name, "%s", name);
  }
  fclose(f);
  if (rc == 0 && p->nmap == 0) {
    snprintf(err, errlen, "path map %s names no source port", file);
    rc = -EINVAL;
  }
  return rc;
}

int c4cap_paths_parse(struct c4cap_paths *p, const char *spec, char *err, size_t errlen) {
  memset(p, 0, sizeof *p);
  snprintf(p->spec, sizeof p->spec, "%s", spec);
  if (strcmp(spec, "iface") == 0) {
    p->by = C4CAP_PATHS_IFACE;
    return 0;
  }
  if (strcmp(spec, "flow") == 0) {
    p->by = C4CAP_PATHS_FLOW;
    return 0;
  }
  p->by = C4CAP_PATHS_MAP;
  int rc = load_map(p, spec, err, errlen);
  if (rc) c4cap_paths_free(p);
  return rc;
}

/* The path named name in v[0..*n), added with no bytes when it is not there yet. */
static struct c4cap_path_load *find(struct c4cap_path_load **v, size_t *n, const char *name) {
  for (size_t i = 0; i < *n; i++)
    if (strcmp((*v)[i].name, name) == 0) return &(*v)[i];
  struct c4cap_path_load *t = realloc(*v, (*n + 1) * sizeof *t);
  if (!t) return NULL;
  *v = t;
  memset(&t[*n], 0, sizeof *t);
  snprintf(t[*n].name, sizeof t->name, "%s", name);
  return &t[(*n)++];
}

static void flow_name(const struct c4cap_flow *f, char *buf, size_t len) {
  char s[INET6_ADDRSTRLEN], d[INET6_ADDRSTRLEN];
  int af = f->key.family == 6 ? AF_INET6 : AF_INET;
  inet_ntop(af, f->key.src, s, sizeof s);
  inet_ntop(af, f->key.dst, d, sizeof d);
  int n = snprintf(buf, len, "%s:%u>%s:%u/%u", s, f->key.sport, d, f->key.dport, f->key.proto);
  if (f->key.qp != C4CAP_NO_QP && n > 0 && (size_t)n < len)
    snprintf(buf + n, len - (size_t)n, "/qp%u", f->key.qp);
}

/* The path flow f took, or NULL when a map does not name its source port. */
static const char *path_of(const struct c4cap_paths *p, const struct c4cap_agg *a,
                           const struct c4cap_flow *f, char *buf, size_t len) {
  switch (p->by) {
  case C4CAP_PATHS_IFACE: return a->ifaces[f->iface].name;
  case C4CAP_PATHS_FLOW: flow_name(f, buf, len); return buf;
  case C4CAP_PATHS_MAP:
    for (size_t i = 0; i < p->nmap; i++)
      if (p->map[i].port == f->key.sport) return p->map[i].name;
    return NULL;
  default: return NULL;
  }
}

static int by_name(const void *x, const void *y) {
  return strcmp(((const struct c4cap_path_load *)x)->name,
                ((const struct c4cap_path_load *)y)->name);
}

/* --paths flow: each flow its own path, named by its key, sorted by name with the flows of one
 * key (on two interfaces) summed. find()'s walk per flow took 15-19 s for 100,000 flows. */
static struct c4cap_path_load *flows_as_paths(const struct c4cap_agg *a, size_t *n) {
  size_t cap = 0, m = 0;
  struct c4cap_path_load *v = NULL;
  for (size_t i = 0; i < a->nslots; i++) {
    const struct c4cap_flow *f = &a->slots[i];
    if (!f->n.packets) continue;
    if (m == cap) {
      struct c4cap_path_load *t = realloc(v, (cap = cap ? 2 * cap : 64) * sizeof *t);
      if (!t) {
        free(v);
        return NULL;
      }
      v = t;
    }
    memset(&v[m], 0, sizeof *v);
    flow_name(f, v[m].name, sizeof v[m].name);
    v[m].bytes = f->n.ip_bytes;
    v[m++].flows = 1;
  }
  if (m) qsort(v, m, sizeof *v, by_name);
  size_t k = 0;
  for (size_t i = 0; i < m; i++)
    if (k && !strcmp(v[k - 1].name, v[i].name)) {
      v[k - 1].bytes += v[i].bytes;
      v[k - 1].flows += v[i].flows;
    } else {
      v[k++] = v[i];
    }
  *n = k;
  return v;
}

struct c4cap_path_load *c4cap_paths_sum(const struct c4cap_paths *p, const struct c4cap_agg *a,
                                        size_t *n, uint64_t *unmapped, double *imbalance) {
  struct c4cap_path_load *v = NULL;
  *n = 0;
  *unmapped = 0;
  *imbalance = 0;
  if (p->by == C4CAP_PATHS_FLOW && !(v = flows_as_paths(a, n))) goto fail;
  for (size_t i = 0; i < p->nmap; i++)
    if (!find(&v, n, p->map[i].name)) goto fail;
  for (size_t i = 0; p->by != C4CAP_PATHS_FLOW && i < a->nslots; i++) {
    const struct c4cap_flow *f = &a->slots[i];
    if (!f->n.packets) continue;
    char buf[128];
    const char *name = path_of(p, a, f, buf, sizeof buf);
    if (!name) {
      *unmapped += f->n.ip_bytes;
      continue;
    }
    struct c4cap_path_load *l = find(&v, n, name);
    if (!l) goto fail;
    l->bytes += f->n.ip_bytes;
    l->flows++;
  }
  uint64_t max = 0, sum = 0;
  for (size_t i = 0; i < *n; i++) {
    sum += v[i].bytes;
    if (v[i].bytes > max) max = v[i].bytes;
  }
  if (sum) *imbalance = (double)max * (double)*n / (double)sum;
  return v;
fail:
  free(v);
  *n = 0;
  return NULL;
}

void c4cap_paths_free(struct c4cap_paths *p) {
  free(p->map);
  p->map = NULL;
  p->nmap = 0;
}
