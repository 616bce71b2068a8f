/* fuzz_docs.c -- fuzz target for c4train's document reader (--max-context): paragraphs or JSON
 * lines. The first byte picks the max context (1..256), the rest is the file. Whatever it reads
 * must hold: at least 10 sequences, each 1..max_context positions whose bytes and next-token
 * target lie inside what was read, a tenth held out; whatever it refuses names the file. */
#include <stdlib.h>
#include <string.h>

#include "docs.h"
#include "fuzz.h"

static void must(int cond) {
  if (!cond) abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1) return 0;
  int max_context = 1 + data[0];
  struct doc_set d;
  char err[512] = "";
  if (docs_parse(&d, data + 1, size - 1, "fuzz", max_context, err, sizeof err)) {
    must(strncmp(err, "fuzz: ", 6) == 0 && strlen(err) > 6);
    return 0;
  }
  must(d.n >= 10 && d.ntrain == d.n - (d.n + 9) / 10);
  int tok[257], tgt[257];
  for (int i = 0; i < d.n; i++) {
    must(d.len[i] >= 1 && d.len[i] <= max_context);
    must(d.start[i] + (size_t)d.len[i] < d.nbytes);
    docs_copy(&d, i, tok, tgt);
  }
  docs_free(&d);
  return 0;
}

static const char *seeds[] = {
    "\x40"
    "one\n\ntwo\n\nthree\n\nfour\n\nfive\n\nsix\n\nseven\n\neight\n\nnine\n\nten\n\neleven",
    "\x08{\"text\": \"a long enough document\"}\n{\"text\": \"b\\u00e9b\"}\n{\"text\": \"cc\"}\n"
    "{\"text\": \"dd\"}\n{\"text\": \"ee\"}\n{\"text\": \"ff\"}\n{\"text\": \"gg\"}\n"
    "{\"text\": \"hh\"}\n{\"text\": \"ii\"}\n\n{\"text\": \"jj\", \"id\": 3}\n",
};

size_t c4_fuzz_seed(int i, uint8_t *buf, size_t cap) {
  if (i < 0 || i >= (int)(sizeof seeds / sizeof seeds[0])) return 0;
  size_t n = strlen(seeds[i]);
  if (n > cap) return 0;
  memcpy(buf, seeds[i], n);
  return n;
}
