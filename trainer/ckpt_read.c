/* ckpt_read.c -- the checkpoint reader: trusts nothing in the file (every length, offset, shape
 * and checksum is checked before use), loads tensors by name into the caller's memory, and finds
 * the newest intact checkpoint of a directory. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "c4_err.h"
#include "ckpt.h"
#include "ckpt_format.h"

struct entry {
  struct c4_ckpt_tensor t; /* name points into the reader's JSON; data stays NULL */
  uint64_t offset, length;
  unsigned char sha[CKPT_SHA_LEN];
};

struct c4_ckpt {
  char *label;              /* the path, or the caller's label for a buffer */
  int fd;                   /* -1 for a buffer */
  const unsigned char *mem; /* the buffer, or NULL for a file */
  uint64_t size;
  uint64_t header_end; /* where the first tensor's padding starts */
  json_t *root, *meta;
  int n;
  struct entry *e;       /* in file order */
  struct entry **sorted; /* by name, for c4_ckpt_find */
};

/* Fills err with "<label>: <message>" and returns code. */
static int fail(const struct c4_ckpt *c, char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int fail(const struct c4_ckpt *c, char *err, size_t errlen, int code, const char *fmt, ...) {
  if (err && errlen) {
    int k = snprintf(err, errlen, "%s: ", c->label);
    if (k >= 0 && (size_t)k < errlen) {
      va_list ap;
      va_start(ap, fmt);
      vsnprintf(err + k, errlen - (size_t)k, fmt, ap);
      va_end(ap);
    }
  }
  return code;
}

/* Copies len bytes at off (already checked to lie inside the file) into dst. A file that shrank
 * since it was opened is an error, not a short read. */
static int read_at(const struct c4_ckpt *c, uint64_t off, void *dst, size_t len, char *err,
                   size_t errlen) {
  if (off > c->size || len > c->size - off)
    return fail(c, err, errlen, C4_EPROTO, "read of %zu bytes at %" PRIu64 " past the end", len,
                off);
  if (c->mem) {
    if (len) memcpy(dst, c->mem + off, len);
    return 0;
  }
  unsigned char *p = dst;
  while (len) {
    ssize_t r = pread(c->fd, p, len < (1u << 30) ? len : (1u << 30), (off_t)off);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return fail(c, err, errlen, C4_ESYS, "read failed: %s", strerror(errno));
    if (r == 0) return fail(c, err, errlen, C4_EPROTO, "file shrank while being read");
    p += r;
    off += (uint64_t)r;
    len -= (size_t)r;
  }
  return 0;
}

static void format_shape(char *buf, size_t len, int ndim, const int64_t *shape) {
  int k = snprintf(buf, len, "[");
  for (int d = 0; d < ndim && k >= 0 && (size_t)k < len; d++)
    k += snprintf(buf + k, len - (size_t)k, "%s%" PRId64, d ? "," : "", shape[d]);
  if (k >= 0 && (size_t)k < len) snprintf(buf + k, len - (size_t)k, "]");
}

static int cmp_entry(const void *a, const void *b) {
  return strcmp((*(struct entry *const *)a)->t.name, (*(struct entry *const *)b)->t.name);
}

static int hexval(char ch) {
  if (ch >= '0' && ch <= '9') return ch - '0';
  if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
  return C4_NONE;
}

/* Reads JSON integer j into *v when it is one and lies in [lo, hi]. */
static int get_int(const json_t *j, int64_t lo, int64_t hi, int64_t *v) {
  if (!json_is_integer(j)) return C4_EINVAL;
  json_int_t x = json_integer_value(j);
  if (x < lo || x > hi) return C4_EINVAL;
  *v = x;
  return 0;
}

/* Entry e's shape (at most C4_CKPT_MAX_DIMS non-negative dimensions) and the bytes it holds
 * (*bytes), refused as soon as they could not fit in the file. */
static int parse_shape(struct c4_ckpt *c, const json_t *j, struct entry *e, uint64_t *bytes,
                       char *err, size_t errlen) {
  const char *nm = e->t.name;
  const json_t *shape = json_object_get(j, "shape");
  if (!json_is_array(shape) || json_array_size(shape) > C4_CKPT_MAX_DIMS)
    return fail(c, err, errlen, C4_EPROTO, "tensor \"%s\": shape is not an array of at most %d", nm,
                C4_CKPT_MAX_DIMS);
  e->t.ndim = (int)json_array_size(shape);
  int zero = 0;
  for (int d = 0; d < e->t.ndim; d++) {
    if (get_int(json_array_get(shape, (size_t)d), 0, INT64_MAX, &e->t.shape[d]))
      return fail(c, err, errlen, C4_EPROTO,
                  "tensor \"%s\": dimension %d is not a non-negative integer", nm, d);
    zero |= e->t.shape[d] == 0;
  }
  *bytes = zero ? 0 : 4;
  for (int d = 0; d < e->t.ndim && *bytes; d++) {
    if ((uint64_t)e->t.shape[d] > c->size / *bytes)
      return fail(c, err, errlen, C4_EPROTO,
                  "tensor \"%s\": shape holds more than the file's %" PRIu64 " bytes", nm, c->size);
    *bytes *= (uint64_t)e->t.shape[d];
  }
  return 0;
}

/* Entry e's sha256: 64 hex digits into e->sha. */
static int parse_sha(struct c4_ckpt *c, const json_t *j, struct entry *e, char *err,
                     size_t errlen) {
  const char *nm = e->t.name, *hex = json_string_value(json_object_get(j, "sha256"));
  if (!hex || strlen(hex) != 2 * CKPT_SHA_LEN)
    return fail(c, err, errlen, C4_EPROTO, "tensor \"%s\": sha256 is not 64 hex digits", nm);
  for (int k = 0; k < CKPT_SHA_LEN; k++) {
    int hi = hexval(hex[2 * k]), lo = hexval(hex[2 * k + 1]);
    if (hi < 0 || lo < 0)
      return fail(c, err, errlen, C4_EPROTO, "tensor \"%s\": sha256 is not 64 hex digits", nm);
    e->sha[k] = (unsigned char)(hi << 4 | lo);
  }
  return 0;
}

/* Checks header entry i and fills e from it. *pos is where the previous tensor ended: this one
 * must start at the next 64-byte boundary, lie inside the file, and its length must be exactly
 * what its shape holds. */
static int parse_entry(struct c4_ckpt *c, int i, const json_t *j, struct entry *e, uint64_t *pos,
                       char *err, size_t errlen) {
  const json_t *name = json_object_get(j, "name");
  if (!json_is_object(j) || !json_is_string(name) || json_string_length(name) == 0 ||
      json_string_length(name) > C4_CKPT_MAX_NAME)
    return fail(c, err, errlen, C4_EPROTO, "tensor %d: not an object with a name of 1..%d bytes", i,
                C4_CKPT_MAX_NAME);
  const char *nm = json_string_value(name);
  e->t.name = nm;
  const char *dtype = json_string_value(json_object_get(j, "dtype"));
  if (!dtype || strcmp(dtype, "f32"))
    return fail(c, err, errlen, C4_EPROTO, "tensor \"%s\": dtype %s%s%s is not \"f32\"", nm,
                dtype ? "\"" : "", dtype ? dtype : "missing", dtype ? "\"" : "");
  uint64_t bytes = 0;
  int rc = parse_shape(c, j, e, &bytes, err, errlen);
  if (rc) return rc;
  int64_t off, len;
  if (get_int(json_object_get(j, "offset"), 0, INT64_MAX, &off) ||
      get_int(json_object_get(j, "length"), 0, INT64_MAX, &len))
    return fail(c, err, errlen, C4_EPROTO,
                "tensor \"%s\": offset or length missing or not a non-negative integer", nm);
  if ((uint64_t)len != bytes)
    return fail(c, err, errlen, C4_EPROTO,
                "tensor \"%s\": length %" PRId64 " is not the %" PRIu64 " bytes its shape holds",
                nm, len, bytes);
  if ((uint64_t)off != ckpt_align(*pos))
    return fail(c, err, errlen, C4_EPROTO,
                "tensor \"%s\": offset %" PRId64 ", expected %" PRIu64
                " (tensors follow each other, 64-byte aligned)",
                nm, off, ckpt_align(*pos));
  if ((uint64_t)off > c->size || bytes > c->size - (uint64_t)off)
    return fail(c, err, errlen, C4_EPROTO,
                "truncated: tensor \"%s\" ends at %" PRIu64 ", past the file's %" PRIu64 " bytes",
                nm, (uint64_t)off + bytes, c->size);
  if ((rc = parse_sha(c, j, e, err, errlen)) != 0) return rc;
  e->offset = (uint64_t)off;
  e->length = bytes;
  *pos = e->offset + bytes;
  return 0;
}

/* The preamble: magic, version, and the header's length (*hlen) within bounds. */
static int read_preamble(struct c4_ckpt *c, unsigned char *pre, uint64_t *hlen, char *err,
                         size_t errlen) {
  if (c->size < CKPT_PREAMBLE)
    return fail(c, err, errlen, C4_EPROTO,
                "truncated or not a checkpoint: %" PRIu64 " bytes, less than the %d-byte preamble",
                c->size, CKPT_PREAMBLE);
  int rc = read_at(c, 0, pre, CKPT_PREAMBLE, err, errlen);
  if (rc) return rc;
  if (memcmp(pre, CKPT_MAGIC_PREFIX, CKPT_MAGIC_PREFIX_LEN))
    return fail(c, err, errlen, C4_EPROTO, "not a c4 checkpoint (bad magic)");
  if (pre[CKPT_MAGIC_PREFIX_LEN] != CKPT_VERSION || pre[CKPT_MAGIC_PREFIX_LEN + 1] != '\n')
    return fail(c, err, errlen, C4_EPROTO, "unsupported checkpoint version (byte 0x%02x)",
                pre[CKPT_MAGIC_PREFIX_LEN]);
  *hlen = 0;
  for (int k = 0; k < 8; k++)
    *hlen |= (uint64_t)pre[CKPT_HLEN_AT + k] << (8 * k);
  if (*hlen == 0 || *hlen > C4_CKPT_MAX_HEADER)
    return fail(c, err, errlen, C4_EPROTO, "header length %" PRIu64 " is outside 1..%u", *hlen,
                C4_CKPT_MAX_HEADER);
  if (*hlen > c->size - CKPT_PREAMBLE)
    return fail(c, err, errlen, C4_EPROTO,
                "truncated: the %" PRIu64 "-byte header ends past the file's %" PRIu64 " bytes",
                *hlen, c->size);
  return 0;
}

/* The header (hlen bytes after the preamble): its checksum against the preamble's, then its
 * JSON into c->root. */
static int read_header(struct c4_ckpt *c, const unsigned char *pre, uint64_t hlen, char *err,
                       size_t errlen) {
  char *hdr = malloc(hlen);
  if (!hdr) return fail(c, err, errlen, C4_ENOMEM, "out of memory for the header");
  unsigned char md[CKPT_SHA_LEN];
  int rc = read_at(c, CKPT_PREAMBLE, hdr, hlen, err, errlen);
  if (!rc && !EVP_Digest(hdr, hlen, md, NULL, EVP_sha256(), NULL))
    rc = fail(c, err, errlen, C4_ENOMEM, "SHA-256 failed");
  if (!rc && memcmp(md, pre + CKPT_SHA_AT, CKPT_SHA_LEN))
    rc = fail(c, err, errlen, C4_EPROTO, "header checksum mismatch (header corrupt)");
  json_error_t je;
  if (!rc && !(c->root = json_loadb(hdr, hlen, JSON_REJECT_DUPLICATES, &je)))
    rc = fail(c, err, errlen, C4_EPROTO, "header is not valid JSON: %s at byte %d", je.text,
              je.position);
  free(hdr);
  return rc;
}

/* The tensor table from the header's "tensors": every entry checked, the tensors filling the
 * file to its end, no name twice. */
static int build_table(struct c4_ckpt *c, uint64_t hlen, char *err, size_t errlen) {
  c->meta = json_object_get(c->root, "meta");
  const json_t *arr = json_object_get(c->root, "tensors");
  if (!json_is_object(c->meta) || !json_is_array(arr))
    return fail(c, err, errlen, C4_EPROTO, "header lacks a \"meta\" object or a \"tensors\" array");
  /* Every entry takes well over 64 header bytes, so this bounds the table a hostile header asks
   * for (jansson has already parsed it, within the header's size limit). */
  size_t n = json_array_size(arr);
  if (n > hlen / 64)
    return fail(c, err, errlen, C4_EPROTO, "header lists %zu tensors in %" PRIu64 " bytes", n,
                hlen);
  c->n = (int)n;
  c->e = calloc(n + 1, sizeof *c->e);
  c->sorted = calloc(n + 1, sizeof *c->sorted);
  if (!c->e || !c->sorted) return fail(c, err, errlen, C4_ENOMEM, "out of memory");
  uint64_t pos = c->header_end = CKPT_PREAMBLE + hlen;
  for (size_t i = 0; i < n; i++) {
    int rc = parse_entry(c, (int)i, json_array_get(arr, i), &c->e[i], &pos, err, errlen);
    if (rc) return rc;
    c->sorted[i] = &c->e[i];
  }
  if (pos != c->size)
    return fail(c, err, errlen, C4_EPROTO,
                "%" PRIu64 " bytes after the last tensor (the file should end at %" PRIu64 ")",
                c->size - pos, pos);
  qsort(c->sorted, n, sizeof *c->sorted, cmp_entry);
  for (size_t i = 1; i < n; i++)
    if (!strcmp(c->sorted[i - 1]->t.name, c->sorted[i]->t.name))
      return fail(c, err, errlen, C4_EPROTO, "tensor \"%s\" appears twice", c->sorted[i]->t.name);
  return 0;
}

/* Checks the preamble and header and builds the tensor table. */
static int parse(struct c4_ckpt *c, char *err, size_t errlen) {
  unsigned char pre[CKPT_PREAMBLE];
  uint64_t hlen = 0;
  int rc = read_preamble(c, pre, &hlen, err, errlen);
  if (!rc) rc = read_header(c, pre, hlen, err, errlen);
  return rc ? rc : build_table(c, hlen, err, errlen);
}

static struct c4_ckpt *open_common(struct c4_ckpt *c, char *err, size_t errlen) {
  if (parse(c, err, errlen)) {
    c4_ckpt_close(c);
    return NULL;
  }
  return c;
}

struct c4_ckpt *c4_ckpt_open(const char *path, char *err, size_t errlen) {
  struct c4_ckpt *c = calloc(1, sizeof *c);
  if (c) c->label = strdup(path);
  if (!c || !c->label) {
    if (err && errlen) snprintf(err, errlen, "%s: out of memory", path);
    free(c);
    return NULL;
  }
  struct stat st;
  c->fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK); /* a FIFO named like one: no wait */
  if (c->fd < 0 || fstat(c->fd, &st)) {
    fail(c, err, errlen, errno == ENOENT ? C4_ENOTFOUND : C4_ESYS, "%s", strerror(errno));
    c4_ckpt_close(c);
    return NULL;
  }
  if (!S_ISREG(st.st_mode)) {
    fail(c, err, errlen, C4_EINVAL, "not a regular file");
    c4_ckpt_close(c);
    return NULL;
  }
  fcntl(c->fd, F_SETFL, fcntl(c->fd, F_GETFL) & ~O_NONBLOCK); /* only the open was not to wait */
  c->size = (uint64_t)st.st_size;
  return open_common(c, err, errlen);
}

struct c4_ckpt *c4_ckpt_open_mem(const void *buf, size_t size, const char *label, char *err,
                                 size_t errlen) {
  struct c4_ckpt *c = calloc(1, sizeof *c);
  if (c) c->label = strdup(label ? label : "(memory)");
  if (!c || !c->label) {
    if (err && errlen) snprintf(err, errlen, "%s: out of memory", label ? label : "(memory)");
    free(c);
    return NULL;
  }
  c->fd = -1;
  c->mem = buf ? buf : (const unsigned char *)"";
  c->size = buf ? size : 0;
  return open_common(c, err, errlen);
}

void c4_ckpt_close(struct c4_ckpt *c) {
  if (!c) return;
  if (c->fd >= 0) close(c->fd);
  json_decref(c->root);
  free(c->e);
  free(c->sorted);
  free(c->label);
  free(c);
}

json_t *c4_ckpt_meta(const struct c4_ckpt *c) { return c->meta; }

int c4_ckpt_count(const struct c4_ckpt *c) { return c->n; }

const struct c4_ckpt_tensor *c4_ckpt_tensor_at(const struct c4_ckpt *c, int i) {
  return i >= 0 && i < c->n ? &c->e[i].t : NULL;
}

static struct entry *find(const struct c4_ckpt *c, const char *name) {
  struct entry key = {.t.name = name}, *k = &key;
  struct entry **hit = bsearch(&k, c->sorted, (size_t)c->n, sizeof *c->sorted, cmp_entry);
  return hit ? *hit : NULL;
}

const struct c4_ckpt_tensor *c4_ckpt_find(const struct c4_ckpt *c, const char *name) {
  struct entry *e = name ? find(c, name) : NULL;
  return e ? &e->t : NULL;
}

static int check_sha(const struct c4_ckpt *c, const struct entry *e, const unsigned char *md,
                     char *err, size_t errlen) {
  if (memcmp(md, e->sha, CKPT_SHA_LEN))
    return fail(c, err, errlen, C4_EPROTO, "tensor \"%s\": checksum mismatch (data corrupt)",
                e->t.name);
  return 0;
}

int c4_ckpt_load(struct c4_ckpt *c, const struct c4_ckpt_tensor *t, int n, char *err,
                 size_t errlen) {
  if (n < 0 || (n > 0 && !t)) return fail(c, err, errlen, C4_EINVAL, "bad arguments to load");
  for (int i = 0; i < n; i++) {
    if (!t[i].name) return fail(c, err, errlen, C4_EINVAL, "tensor %d to load has no name", i);
    struct entry *e = find(c, t[i].name);
    if (!e) return fail(c, err, errlen, C4_ENOTFOUND, "no tensor \"%s\"", t[i].name);
    int same = t[i].ndim == e->t.ndim;
    for (int d = 0; same && d < e->t.ndim; d++)
      same = t[i].shape[d] == e->t.shape[d];
    if (!same) {
      char have[128], want[128];
      format_shape(have, sizeof have, e->t.ndim, e->t.shape);
      format_shape(want, sizeof want, t[i].ndim < 0 || t[i].ndim > C4_CKPT_MAX_DIMS ? 0 : t[i].ndim,
                   t[i].shape);
      return fail(c, err, errlen, C4_EINVAL,
                  "tensor \"%s\": shape %s in the checkpoint, the caller expects %s (ndim %d)",
                  e->t.name, have, want, t[i].ndim);
    }
    if (e->length && !t[i].data)
      return fail(c, err, errlen, C4_EINVAL, "tensor \"%s\": no memory to load into", e->t.name);
    unsigned char md[CKPT_SHA_LEN];
    int rc = read_at(c, e->offset, t[i].data, e->length, err, errlen);
    if (rc) return rc;
    if (!EVP_Digest(e->length ? (const void *)t[i].data : "", e->length, md, NULL, EVP_sha256(),
                    NULL))
      return fail(c, err, errlen, C4_ENOMEM, "SHA-256 failed");
    rc = check_sha(c, e, md, err, errlen);
    if (rc) return rc;
  }
  return 0;
}

/* SHA-256 of e's bytes: straight from the buffer, or from the file in 1 MiB reads. */
static int hash_entry(const struct c4_ckpt *c, const struct entry *e, unsigned char *md, char *err,
                      size_t errlen) {
  if (c->mem)
    return EVP_Digest(c->mem + e->offset, e->length, md, NULL, EVP_sha256(), NULL)
               ? 0
               : fail(c, err, errlen, C4_ENOMEM, "SHA-256 failed");
  enum { CHUNK = 1 << 20 };
  EVP_MD_CTX *ctx = EVP_MD_CTX_new();
  unsigned char *buf = malloc(CHUNK);
  int rc = ctx && buf && EVP_DigestInit_ex(ctx, EVP_sha256(), NULL)
               ? 0
               : fail(c, err, errlen, C4_ENOMEM, "out of memory");
  for (uint64_t done = 0; !rc && done < e->length;) {
    size_t len = e->length - done < CHUNK ? (size_t)(e->length - done) : CHUNK;
    rc = read_at(c, e->offset + done, buf, len, err, errlen);
    if (!rc && !EVP_DigestUpdate(ctx, buf, len))
      rc = fail(c, err, errlen, C4_ENOMEM, "SHA-256 failed");
    done += len;
  }
  if (!rc && !EVP_DigestFinal_ex(ctx, md, NULL))
    rc = fail(c, err, errlen, C4_ENOMEM, "SHA-256 failed");
  EVP_MD_CTX_free(ctx);
  free(buf);
  return rc;
}

int c4_ckpt_verify(struct c4_ckpt *c, char *err, size_t errlen) {
  uint64_t end = c->header_end;
  for (int i = 0; i < c->n; i++) {
    const struct entry *e = &c->e[i];
    unsigned char pad[CKPT_ALIGN], md[CKPT_SHA_LEN];
    size_t gap = (size_t)(e->offset - end); /* < 64: parse checked the offsets */
    int rc = read_at(c, end, pad, gap, err, errlen);
    if (rc) return rc;
    for (size_t k = 0; k < gap; k++)
      if (pad[k])
        return fail(c, err, errlen, C4_EPROTO, "nonzero padding before tensor \"%s\"", e->t.name);
    rc = hash_entry(c, e, md, err, errlen);
    if (!rc) rc = check_sha(c, e, md, err, errlen);
    if (rc) return rc;
    end = e->offset + e->length;
  }
  return 0;
}

struct candidate {
  uint64_t step;
  char *name;
};

/* Newest first; equal steps (step-1 and step-00000001) by name, so the order is fixed. */
static int cmp_candidate(const void *a, const void *b) {
  const struct candidate *x = a, *y = b;
  if (x->step != y->step) return x->step < y->step ? 1 : -1;
  return strcmp(y->name, x->name);
}

int c4_ckpt_parse_step_name(const char *name, uint64_t *step) {
  if (strncmp(name, "step-", 5)) return C4_EINVAL;
  const char *p = name + 5;
  uint64_t v = 0;
  int digits = 0;
  for (; *p >= '0' && *p <= '9'; p++, digits++) {
    if (v > (UINT64_MAX - 9) / 10) return C4_EINVAL;
    v = v * 10 + (uint64_t)(*p - '0');
  }
  if (!digits || strcmp(p, C4_CKPT_SUFFIX)) return C4_EINVAL;
  *step = v;
  return 0;
}

static int list_candidates(const char *dir, struct candidate **out, int *n, char *err,
                           size_t errlen) {
  DIR *d = opendir(dir);
  if (!d) {
    if (err && errlen) snprintf(err, errlen, "%s: %s", dir, strerror(errno));
    return errno == ENOENT ? C4_ENOTFOUND : C4_ESYS;
  }
  struct candidate *v = NULL;
  int cnt = 0, cap = 0;
  struct dirent *de;
  while ((de = readdir(d))) {
    uint64_t step;
    if (c4_ckpt_parse_step_name(de->d_name, &step)) continue;
    if (cnt == cap) {
      cap = cap ? 2 * cap : 16;
      struct candidate *nv = realloc(v, (size_t)cap * sizeof *v);
      if (!nv) break;
      v = nv;
    }
    v[cnt].step = step;
    if (!(v[cnt].name = strdup(de->d_name))) break;
    cnt++;
  }
  closedir(d);
  if (de) { /* the loop stopped early: out of memory */
    for (int i = 0; i < cnt; i++)
      free(v[i].name);
    free(v);
    if (err && errlen) snprintf(err, errlen, "%s: out of memory", dir);
    return C4_ENOMEM;
  }
  if (cnt) qsort(v, (size_t)cnt, sizeof *v, cmp_candidate);
  *out = v;
  *n = cnt;
  return 0;
}

/* 1 with why filled when c's metadata "step" is missing or not the step its name says: the step
 * is the data position and the learning-rate schedule, and a file copied or renamed to a later
 * name resumed at that name's step with the older weights, without a word. */
static int step_disagrees(struct c4_ckpt *c, const char *path, uint64_t named, char *why,
                          size_t whylen) {
  json_t *s = json_object_get(c4_ckpt_meta(c), "step");
  if (json_is_integer(s) && json_integer_value(s) >= 0 && (uint64_t)json_integer_value(s) == named)
    return 0;
  char was[32] = "none";
  if (json_is_integer(s)) snprintf(was, sizeof was, "%lld", (long long)json_integer_value(s));
  snprintf(why, whylen, "%s: its metadata's step (%s) is not its name's (%llu): renamed or copied?",
           path, was, (unsigned long long)named);
  return 1;
}

int c4_ckpt_latest(const char *dir, char *buf, size_t buflen, uint64_t *step, char *err,
                   size_t errlen) {
  struct candidate *v = NULL;
  int n = 0, skipped = 0, rc = list_candidates(dir, &v, &n, err, errlen);
  if (rc) return rc;
  char first_skip[512] = "", why[512];
  rc = C4_ENOTFOUND;
  for (int i = 0; i < n && rc == C4_ENOTFOUND; i++) {
    char *path = malloc(strlen(dir) + strlen(v[i].name) + 2);
    if (!path) {
      rc = C4_ENOMEM;
      break;
    }
    sprintf(path, "%s/%s", dir, v[i].name);
    struct c4_ckpt *c = c4_ckpt_open(path, why, sizeof why);
    if (c && c4_ckpt_verify(c, why, sizeof why) == 0 &&
        !step_disagrees(c, path, v[i].step, why, sizeof why)) {
      if (strlen(path) >= buflen) {
        rc = C4_EINVAL;
        if (err && errlen)
          snprintf(err, errlen, "%s: path does not fit in %zu bytes", path, buflen);
      } else {
        strcpy(buf, path);
        if (step) *step = v[i].step;
        rc = 0;
      }
    } else if (!skipped++) {
      snprintf(first_skip, sizeof first_skip, "%s", why);
    }
    c4_ckpt_close(c);
    free(path);
  }
  if (rc == C4_ENOMEM && err && errlen) snprintf(err, errlen, "%s: out of memory", dir);
  if ((rc == 0 || rc == C4_ENOTFOUND) && err && errlen) {
    if (skipped)
      snprintf(err, errlen, "%s%d damaged checkpoint(s) skipped, the newest: %s",
               rc ? "no intact checkpoint: " : "", skipped, first_skip);
    else if (rc)
      snprintf(err, errlen, "%s: no checkpoint (step-<n>%s)", dir, C4_CKPT_SUFFIX);
    else
      err[0] = '\0';
  }
  for (int i = 0; i < n; i++)
    free(v[i].name);
  free(v);
  return rc;
}
