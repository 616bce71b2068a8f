/* text_data.h -- training text as bytes (the tokenizer is the identity: vocabulary 256) and a
 * sampler that names each sample by (seed, step, index in the global batch), so which text a
 * sample holds never depends on how many ranks there are or how the batch is split. */
#ifndef C4_TEXT_DATA_H
#define C4_TEXT_DATA_H

#include <stddef.h>
#include <stdint.h>

/* Present on every Debian system (package base-files, which is Essential). */
#define C4_DEFAULT_DATA "/usr/share/common-licenses/GPL-3"

struct text_data {
  unsigned char *bytes;
  size_t len;       /* all bytes */
  size_t train_len; /* the first 90% train; the rest is held out for evaluation */
};

/* Reads path whole. Returns 0, or a C4_E* code with err naming the file and the reason (missing,
 * unreadable, shorter than context + 2 bytes in either part). */
int text_data_load(struct text_data *d, const char *path, int context, char *err, size_t errlen);
void text_data_free(struct text_data *d);

/* Sample `index` of global step `step`: context tokens and the next-token targets, from a window
 * of the training part chosen by a hash of (seed, step, index). */
void text_data_sample(const struct text_data *d, uint64_t seed, uint64_t step, uint64_t index,
                      int context, int *tokens, int *targets);

/* Held-out window k (0, 1, ...): evenly spaced over the evaluation part. */
void text_data_eval(const struct text_data *d, int k, int nwindows, int context, int *tokens,
                    int *targets);

#endif
