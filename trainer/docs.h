/* docs.h -- training text as documents of their own lengths (--max-context): read from a file of
 * paragraphs split at blank lines, or of JSON lines with one {"text": ...} a line; each document
 * is a sequence of its bytes (the tokenizer is the identity), cut into pieces of at most
 * max_context positions; and the documents of each global step, named by (seed, step) alone so
 * that which sequences a step trains never depends on the ranks or how they are assigned. */
#ifndef C4_DOCS_H
#define C4_DOCS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct doc_set {
  unsigned char *bytes; /* every sequence's bytes, end to end */
  size_t nbytes;
  size_t *start; /* sequence i: bytes[start[i] .. start[i] + len[i]] (len + 1 bytes) */
  int *len;      /* its positions (tokens with a next-token target): 1..max_context */
  int n, ntrain; /* sequences; the first ntrain train, the rest are held out */
  int max_context;
  int jsonl; /* 1: the file was JSON lines */
};

/* Reads path: JSON lines when its first non-blank byte is '{' (every non-blank line an object
 * with a string "text"), else paragraphs between blank lines. A document of n bytes has n - 1
 * positions; longer than max_context, it is cut into pieces of max_context; one of one byte has
 * none and is left out. The last tenth of the sequences (at least one) is held out. Returns 0,
 * or a C4_E* code with err naming the file, the line and what is wrong (unreadable, bad JSON, no
 * "text", fewer than 10 sequences). */
int docs_load(struct doc_set *d, const char *path, int max_context, char *err, size_t errlen);

/* The same from len bytes in memory, named `name` in errors. */
int docs_parse(struct doc_set *d, const unsigned char *buf, size_t len, const char *name,
               int max_context, char *err, size_t errlen);
void docs_free(struct doc_set *d);

/* The training sequences of global step `step`: drawn by a hash of (seed, step, k), k = 0, 1, ...
 * until they hold at least `tokens` positions or max_out are drawn. Writes their indices into out
 * and returns how many. */
int docs_step(const struct doc_set *d, uint64_t seed, uint64_t step, long tokens, int *out,
              int max_out);

/* Sequence i's tokens and next-token targets (len[i] each) into tok and tgt. */
void docs_copy(const struct doc_set *d, int i, int *tok, int *tgt);

/* The length distribution of the sequences: count, tokens, min, median, mean, p90, p99, max, and
 * a histogram in powers of two, as text on f (c4train --data-stats). */
void docs_print_stats(const struct doc_set *d, const char *path, FILE *f);

/* Writes a synthetic long-tailed corpus as JSON lines to path: ndocs documents whose lengths
 * follow a Pareto law (at least 32 bytes, tail index 1.1: a median near 60, a fifth over 128,
 * about one in a hundred at the cap), capped at max_context + 1 bytes, the text cut from src
 * (nsrc bytes) at places drawn from seed. Returns 0, or a C4_E* code with err naming the file. */
int docs_write_synthetic(const char *path, const unsigned char *src, size_t nsrc, int ndocs,
                         int max_context, uint64_t seed, char *err, size_t errlen);

#endif
