/* c4_planfile.c -- reads a traffic plan file (docs/plan-format.md) into its flows and paths. */
#include "c4_planfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "c4_err.h"

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (err && errlen) vsnprintf(err, errlen, fmt, ap);
  va_end(ap);
  return code;
}

void c4_planfile_free(struct c4_planfile *p) {
  if (!p) return;
  for (size_t i = 0; i < p->npaths; i++) {
    free(p->paths[i].id);
    free(p->paths[i].pairs);
  }
  free(p->paths);
  for (size_t i = 0; i < p->nflows; i++)
    free(p->flows[i].path);
  free(p->flows);
  for (size_t i = 0; i < p->navoid; i++)
    free(p->avoid[i]);
  free(p->avoid);
  free(p);
}

/* Copies a string of 1 to cap-1 bytes without a NUL inside into out; 0, or C4_EINVAL when v is
 * not. */
static int host_name(json_t *v, char *out, size_t cap) {
  if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) >= cap ||
      strlen(json_string_value(v)) != json_string_length(v))
    return C4_EINVAL;
  memcpy(out, json_string_value(v), json_string_length(v) + 1);
  return 0;
}

/* An optional integer field 0..max into *out (-1 when absent or null). Returns 0 or C4_EINVAL. */
static int opt_int(json_t *flow, const char *key, long long max, long long *out) {
  json_t *v = json_object_get(flow, key);
  *out = -1;
  if (!v || json_is_null(v)) return 0;
  if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) > max)
    return C4_EINVAL;
  *out = json_integer_value(v);
  return 0;
}

/* The verbs fields of flows[i]: flow_label, sl, path_bits. */
static int parse_qp_fields(json_t *flow, size_t i, struct c4_planfile_flow *f, char *err,
                           size_t errlen) {
  long long n;
  if (opt_int(flow, "flow_label", 0xfffff, &n) != 0)
    return fail(err, errlen, C4_EINVAL,
                "flows[%zu].flow_label is not an integer 0..1048575 or null", i);
  f->flow_label = (int32_t)n;
  if (opt_int(flow, "sl", 15, &n) != 0)
    return fail(err, errlen, C4_EINVAL, "flows[%zu].sl is not an integer 0..15 or null", i);
  f->sl = (int16_t)n;
  if (opt_int(flow, "path_bits", 127, &n) != 0)
    return fail(err, errlen, C4_EINVAL, "flows[%zu].path_bits is not an integer 0..127 or null", i);
  f->path_bits = (int16_t)n;
  return 0;
}

/* The socket fields of flows[i]: src_port and ifname, and the two checked but unused. */
static int parse_socket_fields(json_t *flow, size_t i, struct c4_planfile_flow *f, char *err,
                               size_t errlen) {
  json_t *v = json_object_get(flow, "src_port");
  if (v && !json_is_null(v)) {
    if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 65535)
      return fail(err, errlen, C4_EINVAL, "flows[%zu].src_port is not an integer 1..65535 or null",
                  i);
    f->src_port = (uint16_t)json_integer_value(v);
  }
  v = json_object_get(flow, "ifname");
  if (v && !json_is_null(v)) {
    if (!json_is_string(v) || json_string_length(v) >= IFNAMSIZ ||
        strlen(json_string_value(v)) != json_string_length(v))
      return fail(err, errlen, C4_EINVAL,
                  "flows[%zu].ifname is not an interface name (under %d bytes) or null", i,
                  IFNAMSIZ);
    memcpy(f->ifname, json_string_value(v), json_string_length(v) + 1);
  }
  v = json_object_get(flow, "src_port_idx");
  if (v && (!json_is_integer(v) || json_integer_value(v) < 0))
    return fail(err, errlen, C4_EINVAL, "flows[%zu].src_port_idx is not an integer >= 0", i);
  v = json_object_get(flow, "path");
  if (v && !json_is_string(v) && !json_is_null(v))
    return fail(err, errlen, C4_EINVAL, "flows[%zu].path is not a string", i);
  if (json_is_string(v) && !(f->path = strdup(json_string_value(v))))
    return fail(err, errlen, C4_ENOMEM, "out of memory");
  return 0;
}

/* One of flows[] into out, a struct c4_planfile_flow (parse_item_fn). */
static int parse_flow(json_t *flow, size_t i, void *out, char *err, size_t errlen) {
  struct c4_planfile_flow *f = out;
  if (!json_is_object(flow)) return fail(err, errlen, C4_EINVAL, "flows[%zu] is not an object", i);
  memset(f, 0, sizeof *f);
  if (host_name(json_object_get(flow, "src"), f->src, sizeof f->src) != 0)
    return fail(err, errlen, C4_EINVAL,
                "flows[%zu].src is not a host name (a string of 1 to %d bytes)", i,
                C4_HOST_MAX - 1);
  if (host_name(json_object_get(flow, "dst"), f->dst, sizeof f->dst) != 0)
    return fail(err, errlen, C4_EINVAL,
                "flows[%zu].dst is not a host name (a string of 1 to %d bytes)", i,
                C4_HOST_MAX - 1);
  int rc = parse_qp_fields(flow, i, f, err, errlen);
  return rc ? rc : parse_socket_fields(flow, i, f, err, errlen);
}

/* Reads item i of a list from v into out; 0, or a C4_E* code with err filled. */
typedef int (*parse_item_fn)(json_t *v, size_t i, void *out, char *err, size_t errlen);

/* Reads every item of the JSON array list into items (size bytes apart, zeroed, as many as the
 * list holds). Each is counted in *n before it is filled, so that c4_planfile_free sees what a
 * failed item already holds. */
static int parse_items(json_t *list, void *items, size_t size, size_t *n, parse_item_fn parse,
                       char *err, size_t errlen) {
  size_t i;
  json_t *v;
  json_array_foreach(list, i, v) {
    *n = i + 1;
    int rc = parse(v, i, (char *)items + i * size, err, errlen);
    if (rc) return rc;
  }
  return 0;
}

/* avoid: the paths to keep traffic off (optional). */
static int parse_avoid(json_t *avoid, struct c4_planfile *p, char *err, size_t errlen) {
  if (!avoid) return 0;
  if (!json_is_array(avoid)) return fail(err, errlen, C4_EINVAL, "\"avoid\" is not an array");
  size_t n = json_array_size(avoid), i;
  if (n && !(p->avoid = calloc(n, sizeof *p->avoid)))
    return fail(err, errlen, C4_ENOMEM, "out of memory");
  json_t *v;
  json_array_foreach(avoid, i, v) {
    size_t len = json_string_length(v);
    if (!json_is_string(v) || len == 0 || len > 255 || strlen(json_string_value(v)) != len)
      return fail(err, errlen, C4_EINVAL,
                  "avoid[%zu] is not a path name (a string of 1 to 255 bytes)", i);
    if (!(p->avoid[i] = strdup(json_string_value(v))))
      return fail(err, errlen, C4_ENOMEM, "out of memory");
    p->navoid = i + 1;
  }
  return 0;
}

static int parse_flows(json_t *flows, struct c4_planfile *p, char *err, size_t errlen) {
  if (!flows) return 0;
  if (!json_is_array(flows)) return fail(err, errlen, C4_EINVAL, "\"flows\" is not an array");
  size_t n = json_array_size(flows);
  if (n && !(p->flows = calloc(n, sizeof *p->flows)))
    return fail(err, errlen, C4_ENOMEM, "out of memory");
  return parse_items(flows, p->flows, sizeof *p->flows, &p->nflows, parse_flow, err, errlen);
}

/* One of paths[] into out, a struct c4_planfile_path (parse_item_fn). */
static int parse_path(json_t *path, size_t i, void *item, char *err, size_t errlen) {
  struct c4_planfile_path *out = item;
  const char *id = json_string_value(json_object_get(path, "id"));
  json_t *list = json_object_get(path, "pairs"), *pair;
  if (!id || !json_is_array(list))
    return fail(err, errlen, C4_EINVAL, "paths[%zu] needs a string \"id\" and an array \"pairs\"",
                i);
  size_t n = json_array_size(list), k;
  if (!(out->id = strdup(id)) || (n && !(out->pairs = calloc(n, sizeof *out->pairs))))
    return fail(err, errlen, C4_ENOMEM, "out of memory");
  json_array_foreach(list, k, pair) {
    if (json_array_size(pair) != 2 ||
        host_name(json_array_get(pair, 0), out->pairs[k].src, C4_HOST_MAX) != 0 ||
        host_name(json_array_get(pair, 1), out->pairs[k].dst, C4_HOST_MAX) != 0)
      return fail(err, errlen, C4_EINVAL, "paths[%zu].pairs[%zu] is not [SRC_HOST, DST_HOST]", i,
                  k);
    out->npairs = k + 1;
  }
  return 0;
}

static int parse_paths(json_t *paths, struct c4_planfile *p, char *err, size_t errlen) {
  if (!json_is_array(paths))
    return fail(err, errlen, C4_EINVAL, "\"paths\" is missing or not an array");
  size_t n = json_array_size(paths);
  if (n && !(p->paths = calloc(n, sizeof *p->paths)))
    return fail(err, errlen, C4_ENOMEM, "out of memory");
  return parse_items(paths, p->paths, sizeof *p->paths, &p->npaths, parse_path, err, errlen);
}

int c4_planfile_parse(const char *buf, size_t len, unsigned parts, struct c4_planfile **out,
                      char *err, size_t errlen) {
  *out = NULL;
  json_error_t jerr;
  json_t *root = json_loadb(buf, len, JSON_REJECT_DUPLICATES, &jerr);
  if (!root) return fail(err, errlen, C4_EINVAL, "not JSON: line %d: %s", jerr.line, jerr.text);
  struct c4_planfile *p = NULL;
  json_t *v = json_object_get(root, "v");
  int rc = C4_EINVAL;
  if (!json_is_object(root))
    fail(err, errlen, rc, "not a JSON object");
  else if (!json_is_integer(v) || json_integer_value(v) != 1)
    fail(err, errlen, rc, "\"v\" is not 1 (this reader knows version 1 only)");
  else if (!(p = calloc(1, sizeof *p)))
    rc = fail(err, errlen, C4_ENOMEM, "out of memory");
  else {
    rc =
        parts & C4_PLANFILE_FLOWS ? parse_flows(json_object_get(root, "flows"), p, err, errlen) : 0;
    if (rc == 0 && (parts & C4_PLANFILE_FLOWS))
      rc = parse_avoid(json_object_get(root, "avoid"), p, err, errlen);
    if (rc == 0 && (parts & C4_PLANFILE_PATHS))
      rc = parse_paths(json_object_get(root, "paths"), p, err, errlen);
  }
  json_decref(root);
  if (rc == 0)
    *out = p;
  else
    c4_planfile_free(p);
  return rc;
}

/* The whole of a regular file, read without blocking on anything else; NULL with err filled. */
static char *read_all(int fd, size_t *len, int *code, char *err, size_t errlen) {
  struct stat st;
  *code = C4_EINVAL;
  if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    fail(err, errlen, 0, "not a regular file");
    return NULL;
  }
  if (st.st_size > C4_PLANFILE_MAX_BYTES) {
    fail(err, errlen, 0, "larger than %d bytes", C4_PLANFILE_MAX_BYTES);
    return NULL;
  }
  size_t size = (size_t)st.st_size, got = 0;
  char *buf = malloc(size + 1);
  if (!buf) {
    *code = fail(err, errlen, C4_ENOMEM, "out of memory");
    return NULL;
  }
  while (got < size) {
    ssize_t k = read(fd, buf + got, size - got);
    if (k < 0 && errno == EINTR) continue;
    if (k < 0) {
      *code = fail(err, errlen, C4_ESYS, "read failed: %s", strerror(errno));
      free(buf);
      return NULL;
    }
    if (k == 0) break; /* shrank while we read: parse what is there */
    got += (size_t)k;
  }
  *len = got;
  return buf;
}

int c4_planfile_read(const char *path, unsigned parts, struct c4_planfile **out, char *err,
                     size_t errlen) {
  *out = NULL;
  int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return fail(err, errlen, errno == ENOENT ? C4_ENOTFOUND : C4_ESYS, "cannot open: %s",
                strerror(errno));
  size_t len = 0;
  int rc;
  char *buf = read_all(fd, &len, &rc, err, errlen);
  close(fd);
  if (!buf) return rc;
  rc = c4_planfile_parse(buf, len, parts, out, err, errlen);
  free(buf);
  return rc;
}

json_t *c4_planfile_flow_json(const struct c4_planfile_flow *f) {
  json_t *o = json_pack("{s:s, s:s}", "src", f->src, "dst", f->dst);
  int bad = !o;
  if (!bad && f->src_port) bad |= json_object_set_new(o, "src_port", json_integer(f->src_port));
  if (!bad && f->ifname[0]) bad |= json_object_set_new(o, "ifname", json_string(f->ifname));
  if (!bad && f->flow_label >= 0)
    bad |= json_object_set_new(o, "flow_label", json_integer(f->flow_label));
  if (!bad && f->sl >= 0) bad |= json_object_set_new(o, "sl", json_integer(f->sl));
  if (!bad && f->path_bits >= 0)
    bad |= json_object_set_new(o, "path_bits", json_integer(f->path_bits));
  if (!bad && f->path) bad |= json_object_set_new(o, "path", json_string(f->path));
  if (bad) {
    json_decref(o);
    return NULL;
  }
  return o;
}
