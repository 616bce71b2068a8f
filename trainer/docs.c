/* docs.c -- documents read from paragraphs or JSON lines, cut to --max-context, and the sequences
 * of each step. */
#include "docs.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "gpt_rng.h"

#define DOCS_MIN 10 /* sequences a file must give: one tenth is held out */

/* The sequences being built: bytes and spans that grow. */
struct builder {
  struct doc_set *d;
  size_t nbytes, cap_bytes;
  int cap_seq;
};

static int grow_bytes(struct builder *b, size_t more) {
  if (b->nbytes + more <= b->cap_bytes) return 0;
  size_t cap = b->cap_bytes ? b->cap_bytes : 1 << 16;
  while (cap < b->nbytes + more)
    cap *= 2;
  unsigned char *p = realloc(b->d->bytes, cap);
  if (!p) return C4_ENOMEM;
  b->d->bytes = p;
  b->cap_bytes = cap;
  return 0;
}

static int add_span(struct builder *b, size_t start, int len) {
  struct doc_set *d = b->d;
  if (d->n == b->cap_seq) {
    int cap = b->cap_seq ? 2 * b->cap_seq : 1024;
    size_t *s = realloc(d->start, (size_t)cap * sizeof *s);
    if (s) d->start = s;
    int *l = realloc(d->len, (size_t)cap * sizeof *l);
    if (l) d->len = l;
    if (!s || !l) return C4_ENOMEM;
    b->cap_seq = cap;
  }
  d->start[d->n] = start;
  d->len[d->n++] = len;
  return 0;
}

/* One document of n bytes: copied, then its pieces of at most max_context positions (piece k
 * starts at byte k x max_context and ends one byte past its last position, so the pieces share
 * a byte and no target is lost). */
static int add_doc(struct builder *b, const unsigned char *text, size_t n) {
  if (n < 2) return 0;
  if (grow_bytes(b, n)) return C4_ENOMEM;
  size_t at = b->nbytes;
  memcpy(b->d->bytes + at, text, n);
  b->nbytes += n;
  size_t max = (size_t)b->d->max_context;
  for (size_t off = 0; off + 1 < n; off += max) {
    size_t len = n - 1 - off < max ? n - 1 - off : max;
    if (add_span(b, at + off, (int)len)) return C4_ENOMEM;
  }
  return 0;
}

static int blank(const unsigned char *p, size_t n) {
  for (size_t i = 0; i < n; i++)
    if (p[i] != ' ' && p[i] != '\t' && p[i] != '\r') return 0;
  return 1;
}

/* Paragraphs: the lines between blank lines, with their newlines (the last one's dropped). */
static int read_paragraphs(struct builder *b, const unsigned char *buf, size_t len) {
  size_t para = 0, line = 0;
  int in_para = 0;
  while (line <= len) {
    const unsigned char *nl = line < len ? memchr(buf + line, '\n', len - line) : NULL;
    size_t end = nl ? (size_t)(nl - buf) : len;
    int is_blank = blank(buf + line, end - line);
    if (is_blank && in_para) {
      if (add_doc(b, buf + para, line - para - 1)) return C4_ENOMEM;
      in_para = 0;
    } else if (!is_blank && !in_para) {
      para = line;
      in_para = 1;
    }
    if (!nl) break;
    line = end + 1;
  }
  if (in_para && add_doc(b, buf + para, len - para)) return C4_ENOMEM;
  return 0;
}

/* JSON lines: each non-blank line an object with a string "text". */
static int read_jsonl(struct builder *b, const unsigned char *buf, size_t len, const char *path,
                      char *err, size_t errlen) {
  size_t line = 0;
  for (long lineno = 1; line < len; lineno++) {
    const unsigned char *nl = memchr(buf + line, '\n', len - line);
    size_t end = nl ? (size_t)(nl - buf) : len;
    if (!blank(buf + line, end - line)) {
      json_error_t je;
      json_t *o = json_loadb((const char *)buf + line, end - line, 0, &je);
      json_t *t = o ? json_object_get(o, "text") : NULL;
      if (!o || !json_is_string(t)) {
        snprintf(err, errlen, "%s: line %ld: %s", path, lineno,
                 !o ? je.text : "not an object with a string \"text\"");
        json_decref(o);
        return C4_EINVAL;
      }
      int rc = add_doc(b, (const unsigned char *)json_string_value(t), json_string_length(t));
      json_decref(o);
      if (rc) {
        snprintf(err, errlen, "%s: out of memory at line %ld", path, lineno);
        return C4_ENOMEM;
      }
    }
    line = end + 1;
  }
  return 0;
}

static unsigned char *read_file(const char *path, size_t *len, char *err, size_t errlen) {
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return NULL;
  }
  size_t cap = 1 << 16, n = 0;
  unsigned char *buf = malloc(cap);
  while (buf) {
    n += fread(buf + n, 1, cap - n, f);
    if (n < cap) break;
    unsigned char *bigger = realloc(buf, cap * 2);
    if (!bigger) free(buf);
    buf = bigger;
    cap *= 2;
  }
  int bad = ferror(f) ? errno : 0; /* a directory: EISDIR */
  fclose(f);
  if (!buf || bad) {
    snprintf(err, errlen, "%s: %s", path, buf ? strerror(bad) : "out of memory");
    free(buf);
    return NULL;
  }
  *len = n;
  return buf;
}

int docs_parse(struct doc_set *d, const unsigned char *buf, size_t len, const char *name,
               int max_context, char *err, size_t errlen) {
  memset(d, 0, sizeof *d);
  d->max_context = max_context;
  size_t first = 0;
  while (first < len &&
         (buf[first] == ' ' || buf[first] == '\t' || buf[first] == '\r' || buf[first] == '\n'))
    first++;
  d->jsonl = first < len && buf[first] == '{';
  struct builder b = {.d = d};
  int rc = d->jsonl ? read_jsonl(&b, buf, len, name, err, errlen) : read_paragraphs(&b, buf, len);
  if (rc && !d->jsonl) snprintf(err, errlen, "%s: out of memory", name);
  if (!rc && d->n < DOCS_MIN) {
    snprintf(err, errlen,
             "%s: %d sequences of two bytes or more; at least %d are needed (a tenth is held out)",
             name, d->n, DOCS_MIN);
    rc = -1;
  }
  if (rc) {
    docs_free(d);
    return C4_EINVAL;
  }
  d->nbytes = b.nbytes;
  d->ntrain = d->n - (d->n + 9) / 10;
  return 0;
}

int docs_load(struct doc_set *d, const char *path, int max_context, char *err, size_t errlen) {
  memset(d, 0, sizeof *d);
  size_t len = 0;
  unsigned char *buf = read_file(path, &len, err, errlen);
  if (!buf) return C4_ENOTFOUND;
  int rc = docs_parse(d, buf, len, path, max_context, err, errlen);
  free(buf);
  return rc;
}

void docs_free(struct doc_set *d) {
  free(d->bytes);
  free(d->start);
  free(d->len);
  memset(d, 0, sizeof *d);
}

int docs_step(const struct doc_set *d, uint64_t seed, uint64_t step, long tokens, int *out,
              int max_out) {
  long have = 0;
  int n = 0;
  while (have < tokens && n < max_out) {
    int i = (int)(gpt_hash3(seed ^ 0x646f6373u, step, (uint64_t)n) % (uint64_t)d->ntrain);
    out[n++] = i;
    have += d->len[i];
  }
  return n;
}

void docs_copy(const struct doc_set *d, int i, int *tok, int *tgt) {
  const unsigned char *p = d->bytes + d->start[i];
  for (int t = 0; t < d->len[i]; t++) {
    tok[t] = p[t];
    tgt[t] = p[t + 1];
  }
}

static int cmp_int(const void *a, const void *b) {
  int x = *(const int *)a, y = *(const int *)b;
  return (x > y) - (x < y);
}

void docs_print_stats(const struct doc_set *d, const char *path, FILE *f) {
  int *v = malloc((size_t)d->n * sizeof *v);
  if (!v) {
    fprintf(f, "%s: out of memory for the statistics\n", path);
    return;
  }
  memcpy(v, d->len, (size_t)d->n * sizeof *v);
  qsort(v, (size_t)d->n, sizeof *v, cmp_int);
  long tokens = 0;
  double sq = 0;
  for (int i = 0; i < d->n; i++) {
    tokens += v[i];
    sq += (double)v[i] * v[i];
  }
  fprintf(f,
          "%s (%s): %d sequences (%d train, %d held out), %ld tokens, max context %d\n"
          "length: min %d, median %d, mean %.1f, p90 %d, p99 %d, max %d; "
          "sum of squares over sum %.1f (the length a token's attention sees, on average)\n",
          path, d->jsonl ? "JSON lines" : "paragraphs", d->n, d->ntrain, d->n - d->ntrain, tokens,
          d->max_context, v[0], v[d->n / 2], (double)tokens / d->n, v[d->n * 9 / 10],
          v[d->n * 99 / 100], v[d->n - 1], sq / (double)tokens);
  fprintf(f, "%-14s %8s %7s %8s\n", "length", "seqs", "share", "tokens");
  int lo = 1;
  while (2 * lo <= v[0])
    lo *= 2;
  for (int i = 0; i < d->n; lo *= 2) {
    int count = 0;
    long tok = 0;
    for (; i < d->n && v[i] < 2 * lo; i++, count++)
      tok += v[i];
    char range[32];
    snprintf(range, sizeof range, "%d-%d", lo, 2 * lo - 1);
    fprintf(f, "%-14s %8d %6.1f%% %8ld\n", range, count, 100.0 * count / d->n, tok);
  }
  free(v);
}

int docs_write_synthetic(const char *path, const unsigned char *src, size_t nsrc, int ndocs,
                         int max_context, uint64_t seed, char *err, size_t errlen) {
  size_t cap = (size_t)max_context + 1;
  if (nsrc < cap) {
    snprintf(err, errlen, "%s: the source text (%zu bytes) is shorter than a document of %zu", path,
             nsrc, cap);
    return C4_EINVAL;
  }
  FILE *f = fopen(path, "w");
  if (!f) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return C4_ESYS;
  }
  struct gpt_rng rng;
  gpt_rng_seed(&rng, seed);
  int bad = 0;
  for (int i = 0; i < ndocs && !bad; i++) {
    double u = ((double)(gpt_rng_next(&rng) >> 11) + 0.5) / 9007199254740992.0; /* (0, 1) */
    double want = 32.0 * pow(u, -1.0 / 1.1);
    size_t n = want >= (double)cap ? cap : (size_t)want;
    size_t at = gpt_rng_next(&rng) % (nsrc - n + 1);
    json_t *o = json_pack("{s:s%}", "text", (const char *)src + at, n);
    char *line = o ? json_dumps(o, JSON_COMPACT) : NULL;
    bad = !line || fprintf(f, "%s\n", line) < 0;
    free(line);
    json_decref(o);
  }
  if (fclose(f) || bad) {
    snprintf(err, errlen, "%s: write failed", path);
    return C4_ESYS;
  }
  return 0;
}
