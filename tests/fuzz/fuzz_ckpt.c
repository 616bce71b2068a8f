/* fuzz_ckpt.c -- fuzz target for the checkpoint reader. The first byte picks how the rest is read:
 * even, as a whole file (the preamble and checksums get fuzzed); odd, as a header length (2
 * bytes), header text and data, around which the target writes a correct preamble with the
 * header's SHA-256, so that mutations reach the JSON and layout checks behind the checksum.
 * Whatever opens must list, verify and load without crashing, and a shape other than the one
 * listed must be refused; a `cost_model` in its metadata (c4train's, on documents) is taken into
 * a cost model or refused with a message, never taken with a negative or non-finite number. */
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4_err.h"
#include "ckpt.h"
#include "fuzz.h"
#include "seq_cost_json.h"

static void must(int cond) {
  if (!cond) abort();
}

/* What c4train does with a documents' checkpoint's cost model: takes it whole or not at all. */
static void read_cost_model(const json_t *j) {
  struct seq_cost m;
  char err[256] = "";
  must(seq_cost_init(&m, 2, 2048, 1, 1) == 0); /* knots 256 .. 1536 */
  if (seq_cost_from_json(&m, j, err, sizeof err) == 0) {
    must(m.fitted && isfinite(m.fixed) && m.fixed >= 0 && isfinite(m.a) && m.a >= 0 &&
         isfinite(m.b) && m.b >= 0);
    for (int k = 0; k < m.nknots; k++)
      must(isfinite(m.c[k]) && m.c[k] >= 0);
  } else {
    must(!m.fitted && m.a == 1 && m.b == 1 && !strncmp(err, "cost_model: ", 12));
  }
  seq_cost_free(&m);
}

/* Opens the file and exercises everything a reader offers. */
static void read_file(const uint8_t *file, size_t size) {
  char err[512] = "";
  struct c4_ckpt *c = c4_ckpt_open_mem(file, size, "fuzz", err, sizeof err);
  if (!c) {
    must(!strncmp(err, "fuzz: ", 6) && strlen(err) > 6);
    return;
  }
  must(json_is_object(c4_ckpt_meta(c)));
  json_t *cost = json_object_get(c4_ckpt_meta(c), "cost_model");
  if (cost) read_cost_model(cost);
  int n = c4_ckpt_count(c), verified = c4_ckpt_verify(c, err, sizeof err) == 0;
  for (int i = 0; i < n; i++) {
    struct c4_ckpt_tensor t = *c4_ckpt_tensor_at(c, i);
    must(c4_ckpt_find(c, t.name) == c4_ckpt_tensor_at(c, i));
    size_t elems = 1;
    for (int d = 0; d < t.ndim; d++)
      elems *= (size_t)t.shape[d]; /* the reader bounded it by the file's size */
    must(elems * 4 <= size);
    t.data = malloc(elems * 4 + 1);
    int rc = c4_ckpt_load(c, &t, 1, err, sizeof err);
    must(rc == 0 || (rc == C4_EPROTO && strstr(err, "checksum")));
    must(!verified || rc == 0);
    t.ndim = t.ndim == C4_CKPT_MAX_DIMS ? 0 : t.ndim + 1;
    must(c4_ckpt_load(c, &t, 1, err, sizeof err) == C4_EINVAL);
    free(t.data);
  }
  c4_ckpt_close(c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size == 0) return 0;
  if (!(data[0] & 1)) {
    read_file(data + 1, size - 1);
    return 0;
  }
  if (size < 3) return 0;
  size_t hlen = (size_t)data[1] | (size_t)data[2] << 8, rest = size - 3;
  if (hlen > rest) hlen = rest;
  uint8_t *file = malloc(48 + rest);
  memcpy(file, "C4CKPT1\n", 8);
  for (int k = 0; k < 8; k++)
    file[8 + k] = (uint8_t)((uint64_t)hlen >> (8 * k));
  EVP_Digest(data + 3, hlen, file + 16, NULL, EVP_sha256(), NULL);
  memcpy(file + 48, data + 3, rest);
  read_file(file, 48 + rest);
  free(file);
  return 0;
}

/* Seeds: real checkpoints from c4_ckpt_save, each in both input forms. */
static uint8_t seeds[6][1024];
static size_t seed_len[6];

static void make_seeds(void) {
  char dir[] = "/tmp/c4-fuzz-ckpt-XXXXXX", path[64];
  must(mkdtemp(dir) != NULL);
  snprintf(path, sizeof path, "%s/seed.c4ck", dir);
  float a[6] = {1, 2, 3, 4, 5, 6}, s = -1;
  struct c4_ckpt_tensor t[3] = {
      {"wte", 2, {2, 3}, a}, {"adam.m.wte", 0, {0}, &s}, {"empty", 1, {0}, NULL}};
  json_t *meta = json_pack("{s:i, s:i, s:{s:i}, s:{s:f, s:f, s:f, s:[iiiiii], s:[ffffff]}}", "step",
                           7, "world_size", 2, "data", "pos", 9, "cost_model", "fixed", 1e-3, "a",
                           3e-6, "b", 1.5e-8, "knots", 256, 384, 512, 768, 1024, 1536, "c", 0.0,
                           1e-9, 0.0, 2e-9, 0.0, 3e-9);
  char err[256];
  for (int k = 0; k < 3; k++) {
    must(c4_ckpt_save(path, meta, t, k + 1, err, sizeof err) == 0);
    FILE *f = fopen(path, "rb");
    must(f != NULL);
    uint8_t *raw = seeds[2 * k], *framed = seeds[2 * k + 1];
    size_t len = fread(raw + 1, 1, sizeof seeds[0] - 1, f);
    fclose(f);
    must(len > 48 && len < sizeof seeds[0] - 1);
    raw[0] = 0;
    seed_len[2 * k] = len + 1;
    size_t hlen = (size_t)raw[1 + 8] | (size_t)raw[1 + 9] << 8;
    framed[0] = 1;
    framed[1] = (uint8_t)hlen;
    framed[2] = (uint8_t)(hlen >> 8);
    memcpy(framed + 3, raw + 1 + 48, len - 48);
    seed_len[2 * k + 1] = 3 + len - 48;
  }
  json_decref(meta);
  unlink(path);
  rmdir(dir);
}

size_t c4_fuzz_seed(int i, uint8_t *buf, size_t cap) {
  if (!seed_len[0]) make_seeds();
  if (i < 0 || i >= 6 || seed_len[i] > cap) return 0;
  memcpy(buf, seeds[i], seed_len[i]);
  return seed_len[i];
}
