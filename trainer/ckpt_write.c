/* ckpt_write.c -- c4_ckpt_save: validates a tensor list, lays it out after a checksummed JSON
 * header and writes it through a temporary file renamed into place. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4_err.h"
#include "ckpt.h"
#include "ckpt_format.h"

static int fail(char *err, size_t errlen, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static int fail(char *err, size_t errlen, int code, const char *fmt, ...) {
  if (err && errlen) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
  }
  return code;
}

static int cmp_name(const void *a, const void *b) {
  return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Bytes of tensor t, or -1 when its shape is invalid or its size does not fit in memory. */
static int64_t tensor_bytes(const struct c4_ckpt_tensor *t) {
  if (t->ndim < 0 || t->ndim > C4_CKPT_MAX_DIMS) return C4_EINVAL;
  int64_t elems = 1;
  for (int d = 0; d < t->ndim; d++)
    if (t->shape[d] < 0) return C4_EINVAL;
  for (int d = 0; d < t->ndim; d++) {
    if (t->shape[d] == 0) return 0;
    if (elems > (INT64_MAX / 4) / t->shape[d]) return C4_EINVAL;
    elems *= t->shape[d];
  }
  if ((uint64_t)elems * 4 > SIZE_MAX) return C4_EINVAL;
  return elems * 4;
}

/* Checks every tensor (name, shape, data) and that names are unique and the whole file's size
 * fits in an int64; fills bytes[i]. */
static int check_tensors(const char *path, const struct c4_ckpt_tensor *t, int n, int64_t *bytes,
                         char *err, size_t errlen) {
  int64_t total = CKPT_PREAMBLE + C4_CKPT_MAX_HEADER;
  for (int i = 0; i < n; i++) {
    const char *name = t[i].name;
    if (!name || !name[0] || strlen(name) > C4_CKPT_MAX_NAME)
      return fail(err, errlen, C4_EINVAL, "%s: tensor %d: name missing, empty or over %d bytes",
                  path, i, C4_CKPT_MAX_NAME);
    json_t *utf8 = json_string(name); /* NULL unless valid UTF-8, which JSON requires */
    if (!utf8)
      return fail(err, errlen, C4_EINVAL, "%s: tensor %d: name is not valid UTF-8", path, i);
    json_decref(utf8);
    bytes[i] = tensor_bytes(&t[i]);
    if (bytes[i] < 0)
      return fail(err, errlen, C4_EINVAL, "%s: tensor \"%s\": invalid shape (ndim %d)", path, name,
                  t[i].ndim);
    if (bytes[i] > 0 && !t[i].data)
      return fail(err, errlen, C4_EINVAL, "%s: tensor \"%s\": no data", path, name);
    if (bytes[i] > INT64_MAX - CKPT_ALIGN - total)
      return fail(err, errlen, C4_EINVAL, "%s: tensors too large for one file", path);
    total += CKPT_ALIGN + bytes[i];
  }
  if (n < 2) return 0;
  const char **names = malloc((size_t)n * sizeof *names);
  if (!names) return fail(err, errlen, C4_ENOMEM, "%s: out of memory", path);
  for (int i = 0; i < n; i++)
    names[i] = t[i].name;
  qsort(names, (size_t)n, sizeof *names, cmp_name);
  int rc = 0;
  for (int i = 1; i < n && !rc; i++)
    if (!strcmp(names[i - 1], names[i]))
      rc = fail(err, errlen, C4_EINVAL, "%s: tensor \"%s\" given twice", path, names[i]);
  free(names);
  return rc;
}

/* The header: {"meta": meta, "tensors": [{name, dtype, shape, offset, length, sha256}, ...]}.
 * Offsets are filled in by place_tensors. */
static json_t *header_json(const json_t *meta, const struct c4_ckpt_tensor *t, int n,
                           const int64_t *bytes) {
  json_t *root = json_object(), *arr = json_array();
  json_t *m = meta ? json_deep_copy(meta) : json_object();
  if (!root || !arr || !m || json_object_set_new(root, "meta", m) ||
      json_object_set_new(root, "tensors", arr)) {
    json_decref(root);
    return NULL;
  }
  for (int i = 0; i < n; i++) {
    unsigned char md[CKPT_SHA_LEN];
    char hex[2 * CKPT_SHA_LEN + 1];
    if (!EVP_Digest(t[i].data, (size_t)bytes[i], md, NULL, EVP_sha256(), NULL)) break;
    for (int k = 0; k < CKPT_SHA_LEN; k++)
      snprintf(hex + 2 * k, 3, "%02x", md[k]);
    json_t *shape = json_array(), *e = json_object();
    for (int d = 0; shape && d < t[i].ndim; d++)
      json_array_append_new(shape, json_integer(t[i].shape[d]));
    if (!shape || !e || json_array_size(shape) != (size_t)t[i].ndim ||
        json_object_set_new(e, "name", json_string(t[i].name)) ||
        json_object_set_new(e, "dtype", json_string("f32")) ||
        json_object_set_new(e, "shape", shape) ||
        json_object_set_new(e, "length", json_integer(bytes[i])) ||
        json_object_set_new(e, "sha256", json_string(hex)) || json_array_append_new(arr, e))
      break;
  }
  if (json_array_size(arr) != (size_t)n) {
    json_decref(root);
    return NULL;
  }
  return root;
}

/* Sets each tensor's offset for data starting at `start`: each follows the previous one at the
 * next 64-byte boundary. */
static int place_tensors(json_t *hdr, const int64_t *bytes, int n, uint64_t start) {
  json_t *arr = json_object_get(hdr, "tensors");
  uint64_t pos = start;
  for (int i = 0; i < n; i++) {
    pos = ckpt_align(pos);
    if (json_object_set_new(json_array_get(arr, (size_t)i), "offset",
                            json_integer((json_int_t)pos)))
      return C4_ENOMEM;
    pos += (uint64_t)bytes[i];
  }
  return 0;
}

/* Serialises the header so that the first tensor starts exactly at the first 64-byte boundary
 * after it. The offsets are inside the header, so its length depends on them: start from the
 * smallest possible data start and move it past the header until the two agree (the header only
 * grows as offsets grow, so this ends after a step or two). */
static char *dump_header(json_t *hdr, const int64_t *bytes, int n, size_t *len) {
  uint64_t start = ckpt_align(CKPT_PREAMBLE);
  for (;;) {
    if (place_tensors(hdr, bytes, n, start)) return NULL;
    char *s = json_dumps(hdr, JSON_COMPACT);
    if (!s) return NULL;
    *len = strlen(s);
    if (ckpt_align(CKPT_PREAMBLE + *len) <= start) return s;
    start = ckpt_align(CKPT_PREAMBLE + *len);
    free(s);
  }
}

static int write_all(int fd, const void *buf, size_t len) {
  const char *p = buf;
  while (len) {
    ssize_t w = write(fd, p, len < (1u << 30) ? len : (1u << 30));
    if (w < 0 && errno == EINTR) continue;
    if (w == 0) errno = EIO; /* no progress and no reason given */
    if (w <= 0) return C4_ESYS;
    p += w;
    len -= (size_t)w;
  }
  return 0;
}

/* The preamble, header, then each tensor after zero padding to its offset. */
static int write_file(int fd, const char *hdr, size_t hlen, const struct c4_ckpt_tensor *t, int n,
                      const int64_t *bytes) {
  static const unsigned char zeros[CKPT_ALIGN];
  unsigned char pre[CKPT_PREAMBLE] = {0};
  memcpy(pre, CKPT_MAGIC_PREFIX, CKPT_MAGIC_PREFIX_LEN);
  pre[CKPT_MAGIC_PREFIX_LEN] = CKPT_VERSION;
  pre[CKPT_MAGIC_PREFIX_LEN + 1] = '\n';
  for (int k = 0; k < 8; k++)
    pre[CKPT_HLEN_AT + k] = (unsigned char)((uint64_t)hlen >> (8 * k));
  if (!EVP_Digest(hdr, hlen, pre + CKPT_SHA_AT, NULL, EVP_sha256(), NULL)) return C4_ENOMEM;
  if (write_all(fd, pre, sizeof pre) || write_all(fd, hdr, hlen)) return C4_ESYS;
  uint64_t pos = CKPT_PREAMBLE + hlen;
  for (int i = 0; i < n; i++) {
    uint64_t off = ckpt_align(pos);
    if (write_all(fd, zeros, off - pos) || write_all(fd, t[i].data, (size_t)bytes[i]))
      return C4_ESYS;
    pos = off + (uint64_t)bytes[i];
  }
  return 0;
}

/* Makes the rename itself durable: fsync of the directory holding path. */
static int sync_dir(const char *path) {
  const char *slash = strrchr(path, '/');
  char *dir = slash == path ? strdup("/")
              : slash       ? strndup(path, (size_t)(slash - path))
                            : strdup(".");
  if (!dir) return C4_ENOMEM;
  int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  free(dir);
  if (fd < 0) return C4_ESYS;
  int rc = fsync(fd);
  close(fd);
  return rc;
}

int c4_ckpt_save(const char *path, const json_t *meta, const struct c4_ckpt_tensor *t, int n,
                 char *err, size_t errlen) {
  if (!path || n < 0 || (n > 0 && !t))
    return fail(err, errlen, C4_EINVAL, "%s: bad arguments", path ? path : "(null)");
  if (meta && !json_is_object(meta))
    return fail(err, errlen, C4_EINVAL, "%s: meta is not a JSON object", path);
  int64_t *bytes = calloc((size_t)n + 1, sizeof *bytes);
  if (!bytes) return fail(err, errlen, C4_ENOMEM, "%s: out of memory", path);
  int rc = check_tensors(path, t, n, bytes, err, errlen);
  if (rc) goto out_bytes;
  json_t *hdr = header_json(meta, t, n, bytes);
  size_t hlen = 0;
  char *text = hdr ? dump_header(hdr, bytes, n, &hlen) : NULL;
  json_decref(hdr);
  if (!text) {
    rc = fail(err, errlen, C4_ENOMEM, "%s: cannot build the header", path);
    goto out_bytes;
  }
  if (hlen > C4_CKPT_MAX_HEADER) {
    rc = fail(err, errlen, C4_EINVAL, "%s: header of %zu bytes exceeds the %u-byte limit", path,
              hlen, C4_CKPT_MAX_HEADER);
    goto out_text;
  }
  char tmp[4096];
  if (snprintf(tmp, sizeof tmp, "%s.tmp.%ld", path, (long)getpid()) >= (int)sizeof tmp) {
    rc = fail(err, errlen, C4_EINVAL, "%s: path too long", path);
    goto out_text;
  }
  int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) {
    rc = fail(err, errlen, C4_ESYS, "%s: cannot create %s: %s", path, tmp, strerror(errno));
    goto out_text;
  }
  const char *step = "write";
  if (write_file(fd, text, hlen, t, n, bytes) == 0) step = fsync(fd) ? "fsync" : NULL;
  int saved = errno;
  if (close(fd) && !step) {
    step = "close";
    saved = errno;
  }
  if (!step && rename(tmp, path)) {
    step = "rename";
    saved = errno;
  }
  if (step) {
    unlink(tmp);
    rc = fail(err, errlen, C4_ESYS, "%s: %s of %s failed: %s", path, step, tmp, strerror(saved));
    goto out_text;
  }
  if (sync_dir(path))
    rc = fail(err, errlen, C4_ESYS, "%s: written, but fsync of its directory failed: %s", path,
              strerror(errno));
out_text:
  free(text);
out_bytes:
  free(bytes);
  return rc;
}

int c4_ckpt_step_path(char *buf, size_t buflen, const char *dir, uint64_t step) {
  int k = snprintf(buf, buflen, "%s/step-%08" PRIu64 C4_CKPT_SUFFIX, dir, step);
  return k < 0 || (size_t)k >= buflen ? C4_EINVAL : 0;
}
