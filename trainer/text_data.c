/* text_data.c -- the training text, read once, and its deterministic windows. */
#include "text_data.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "gpt_rng.h"

int text_data_load(struct text_data *d, const char *path, int context, char *err, size_t errlen) {
  memset(d, 0, sizeof *d);
  FILE *f = fopen(path, "rb");
  if (!f) {
    snprintf(err, errlen, "%s: %s", path, strerror(errno));
    return C4_ENOTFOUND;
  }
  size_t cap = 1 << 16, len = 0;
  unsigned char *buf = malloc(cap);
  while (buf) {
    size_t n = fread(buf + len, 1, cap - len, f);
    len += n;
    if (len < cap) break;
    unsigned char *bigger = realloc(buf, cap * 2);
    if (!bigger) {
      free(buf);
      buf = NULL;
      break;
    }
    buf = bigger;
    cap *= 2;
  }
  int read_error = ferror(f) ? errno : 0; /* a directory: EISDIR */
  fclose(f);
  if (!buf || read_error) {
    snprintf(err, errlen, "%s: %s", path, buf ? strerror(read_error) : "out of memory");
    free(buf);
    return C4_ESYS;
  }
  size_t train = len / 10 * 9, need = (size_t)context + 2;
  if (train < need || len - train < need) {
    snprintf(err, errlen,
             "%s: %zu bytes is too short for context %d (each of the 90%% training and 10%% "
             "held-out parts needs %zu)",
             path, len, context, need);
    free(buf);
    return C4_EINVAL;
  }
  d->bytes = buf;
  d->len = len;
  d->train_len = train;
  return 0;
}

void text_data_free(struct text_data *d) {
  free(d->bytes);
  memset(d, 0, sizeof *d);
}

static void window(const unsigned char *p, int context, int *tokens, int *targets) {
  for (int t = 0; t < context; t++) {
    tokens[t] = p[t];
    targets[t] = p[t + 1];
  }
}

void text_data_sample(const struct text_data *d, uint64_t seed, uint64_t step, uint64_t index,
                      int context, int *tokens, int *targets) {
  size_t starts = d->train_len - (size_t)context - 1;
  window(d->bytes + gpt_hash3(seed, step, index) % starts, context, tokens, targets);
}

void text_data_eval(const struct text_data *d, int k, int nwindows, int context, int *tokens,
                    int *targets) {
  size_t starts = d->len - d->train_len - (size_t)context - 1;
  size_t at = nwindows > 1 ? starts * (size_t)k / (size_t)(nwindows - 1) : 0;
  window(d->bytes + d->train_len + at, context, tokens, targets);
}
