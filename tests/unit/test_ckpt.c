/* test_ckpt.c -- checkpoints round-trip bit for bit with their metadata; a missing tensor or a
 * shape mismatch names file and tensor; every truncation, every flipped byte and every lying
 * header is an error, never a crash; saves are atomic and latest() finds the newest intact one. */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_err.h"
#include "ckpt.h"

static char dir[64];
static char err[1024];

static void setup(void) {
  snprintf(dir, sizeof dir, "%s", "/tmp/c4-ckpt-XXXXXX");
  ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void teardown(void) {
  DIR *d = opendir(dir);
  struct dirent *de;
  char p[512];
  while (d && (de = readdir(d)))
    if (strcmp(de->d_name, ".") && strcmp(de->d_name, "..")) {
      snprintf(p, sizeof p, "%s/%s", dir, de->d_name);
      unlink(p);
    }
  if (d) closedir(d);
  rmdir(dir);
}

static char *path_in(const char *name) {
  static char p[512];
  snprintf(p, sizeof p, "%s/%s", dir, name);
  return p;
}

static unsigned char *slurp(const char *path, size_t *len) {
  FILE *f = fopen(path, "rb");
  ck_assert_ptr_nonnull(f);
  fseek(f, 0, SEEK_END);
  *len = (size_t)ftell(f);
  rewind(f);
  unsigned char *b = malloc(*len + 1);
  ck_assert_uint_eq(fread(b, 1, *len, f), *len);
  fclose(f);
  return b;
}

static void spit(const char *path, const void *b, size_t len) {
  FILE *f = fopen(path, "wb");
  ck_assert_ptr_nonnull(f);
  ck_assert_uint_eq(fwrite(b, 1, len, f), len);
  fclose(f);
}

static int count_files(void) {
  DIR *d = opendir(dir);
  int n = 0;
  struct dirent *de;
  while ((de = readdir(d)))
    n += de->d_name[0] != '.';
  closedir(d);
  return n;
}

/* A small checkpoint: two tensors and a meta object. */
static float small_a[6] = {1, -2, 3.5f, 0, -0.0f, 1e-40f}, small_b[2] = {7, 8};
/* A small checkpoint at path whose metadata's step is its name's (3 for another name). */
static void save_small(const char *path) {
  struct c4_ckpt_tensor t[2] = {{"h.0.ln1.w", 2, {2, 3}, small_a}, {"adam.m.wte", 1, {2}, small_b}};
  uint64_t step = 3;
  const char *name = strrchr(path, '/');
  if (name && c4_ckpt_parse_step_name(name + 1, &step)) step = 3;
  json_t *meta = json_pack("{s:I, s:i}", "step", (json_int_t)step, "world_size", 4);
  ck_assert_int_eq(c4_ckpt_save(path, meta, t, 2, err, sizeof err), 0);
  json_decref(meta);
}

static float bits(uint32_t u) {
  float f;
  memcpy(&f, &u, 4);
  return f;
}

START_TEST(round_trip_is_bit_identical_from_file_and_from_memory) {
  /* NaN payloads, infinities, -0 and denormals must come back as the same bits. */
  float special[8] = {bits(0x7fc00001), bits(0xffa00000), INFINITY, -INFINITY, -0.0f,
                      bits(0x00000001), bits(0x807fffff), 3.25f};
  float scalar = 42, *big = malloc(1000 * 700 * sizeof *big); /* > 1 MiB: chunked hashing */
  for (int i = 0; i < 1000 * 700; i++)
    big[i] = (float)i * 0.001f - 17;
  struct c4_ckpt_tensor t[5] = {{"wte", 2, {2, 4}, special},
                                {"step_scale", 0, {0}, &scalar},
                                {"empty", 2, {3, 0}, NULL},
                                {"h.0.attn.w", 3, {10, 100, 700}, big},
                                {"wpe", 1, {1}, &scalar}};
  const char *p = path_in("rt.c4ck");
  ck_assert_int_eq(c4_ckpt_save(p, NULL, t, 5, err, sizeof err), 0);
  size_t len;
  unsigned char *file = slurp(p, &len);
  for (int pass = 0; pass < 2; pass++) {
    struct c4_ckpt *c = pass ? c4_ckpt_open_mem(file, len, "buf", err, sizeof err)
                             : c4_ckpt_open(p, err, sizeof err);
    ck_assert_msg(c != NULL, "%s", err);
    ck_assert_int_eq(c4_ckpt_verify(c, err, sizeof err), 0);
    ck_assert_int_eq(c4_ckpt_count(c), 5);
    for (int i = 0; i < 5; i++) {
      const struct c4_ckpt_tensor *in = c4_ckpt_tensor_at(c, i);
      ck_assert_str_eq(in->name, t[i].name);
      ck_assert_int_eq(in->ndim, t[i].ndim);
      for (int d = 0; d < in->ndim; d++)
        ck_assert_int_eq(in->shape[d], t[i].shape[d]);
      ck_assert_ptr_eq(c4_ckpt_find(c, t[i].name), in);
    }
    ck_assert_ptr_null(c4_ckpt_tensor_at(c, 5));
    ck_assert_ptr_null(c4_ckpt_find(c, "nope"));
    ck_assert_int_eq(json_object_size(c4_ckpt_meta(c)), 0);
    float back[8], back_scalar, *back_big = malloc(1000 * 700 * sizeof *back_big);
    struct c4_ckpt_tensor want[4] = {{"h.0.attn.w", 3, {10, 100, 700}, back_big},
                                     {"wte", 2, {2, 4}, back},
                                     {"step_scale", 0, {0}, &back_scalar},
                                     {"empty", 2, {3, 0}, NULL}};
    ck_assert_msg(c4_ckpt_load(c, want, 4, err, sizeof err) == 0, "%s", err);
    ck_assert_mem_eq(back, special, sizeof special);
    ck_assert_mem_eq(back_big, big, 1000 * 700 * sizeof *big);
    ck_assert_mem_eq(&back_scalar, &scalar, 4);
    free(back_big);
    c4_ckpt_close(c);
  }
  /* every tensor starts 64-byte aligned: the first one's offset is in the header */
  ck_assert_ptr_nonnull(strstr((char *)file + 48, "\"offset\":"));
  free(file);
  free(big);
}
END_TEST

START_TEST(meta_round_trips_whole) {
  json_t *meta = json_pack("{s:I, s:i, s:s, s:f, s:{s:i, s:i, s:i}, s:[i, i], s:n}", "step",
                           (json_int_t)1234567890123, "world_size", 8, "seed", "0x5eed", "lr", 3e-4,
                           "config", "layers", 4, "heads", 4, "width", 128, "micro", 3, 5, "note");
  float x = 1;
  struct c4_ckpt_tensor t = {"x", 1, {1}, &x};
  const char *p = path_in("meta.c4ck");
  ck_assert_int_eq(c4_ckpt_save(p, meta, &t, 1, err, sizeof err), 0);
  struct c4_ckpt *c = c4_ckpt_open(p, err, sizeof err);
  ck_assert_ptr_nonnull(c);
  ck_assert(json_equal(meta, c4_ckpt_meta(c)));
  c4_ckpt_close(c);
  json_decref(meta);
}
END_TEST

START_TEST(missing_tensor_and_shape_mismatch_name_the_file_and_the_tensor) {
  const char *p = path_in("m.c4ck");
  save_small(p);
  struct c4_ckpt *c = c4_ckpt_open(p, err, sizeof err);
  ck_assert_ptr_nonnull(c);
  float buf[8];
  struct c4_ckpt_tensor missing = {"adam.v.wte", 1, {2}, buf};
  ck_assert_int_eq(c4_ckpt_load(c, &missing, 1, err, sizeof err), C4_ENOTFOUND);
  ck_assert_ptr_nonnull(strstr(err, p));
  ck_assert_ptr_nonnull(strstr(err, "\"adam.v.wte\""));
  struct c4_ckpt_tensor wrong = {"h.0.ln1.w", 2, {3, 2}, buf};
  ck_assert_int_eq(c4_ckpt_load(c, &wrong, 1, err, sizeof err), C4_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, p));
  ck_assert_ptr_nonnull(strstr(err, "\"h.0.ln1.w\": shape [2,3] in the checkpoint"));
  ck_assert_ptr_nonnull(strstr(err, "expects [3,2]"));
  struct c4_ckpt_tensor rank = {"h.0.ln1.w", 1, {6}, buf};
  ck_assert_int_eq(c4_ckpt_load(c, &rank, 1, err, sizeof err), C4_EINVAL);
  struct c4_ckpt_tensor nodata = {"h.0.ln1.w", 2, {2, 3}, NULL};
  ck_assert_int_eq(c4_ckpt_load(c, &nodata, 1, err, sizeof err), C4_EINVAL);
  c4_ckpt_close(c);
  ck_assert_ptr_null(c4_ckpt_open(path_in("absent.c4ck"), err, sizeof err));
  ck_assert_ptr_nonnull(strstr(err, "absent.c4ck"));
  ck_assert_ptr_null(c4_ckpt_open(dir, err, sizeof err));
  ck_assert_ptr_nonnull(strstr(err, "not a regular file"));
}
END_TEST

START_TEST(a_file_truncated_at_every_length_is_an_error) {
  const char *p = path_in("t.c4ck");
  save_small(p);
  size_t len;
  unsigned char *file = slurp(p, &len);
  const char *cut = path_in("cut.c4ck");
  for (size_t k = 0; k < len; k++) {
    err[0] = 0;
    ck_assert_ptr_null(c4_ckpt_open_mem(file, k, "cut", err, sizeof err));
    ck_assert_msg(!strncmp(err, "cut: ", 5) && strlen(err) > 5, "length %zu: \"%s\"", k, err);
    spit(cut, file, k);
    ck_assert_ptr_null(c4_ckpt_open(cut, err, sizeof err));
    ck_assert_ptr_nonnull(strstr(err, cut));
  }
  /* one byte too many is refused too */
  unsigned char *more = malloc(len + 1);
  memcpy(more, file, len);
  more[len] = 0;
  ck_assert_ptr_null(c4_ckpt_open_mem(more, len + 1, "more", err, sizeof err));
  ck_assert_ptr_nonnull(strstr(err, "after the last tensor"));
  free(more);
  free(file);
}
END_TEST

START_TEST(a_flipped_data_byte_is_a_checksum_error_naming_the_tensor) {
  const char *p = path_in("f.c4ck");
  save_small(p);
  size_t len;
  unsigned char *file = slurp(p, &len);
  struct c4_ckpt *c = c4_ckpt_open_mem(file, len, "f", err, sizeof err);
  ck_assert_ptr_nonnull(c);
  c4_ckpt_close(c);
  /* b (8 bytes) ends the file; a (24 bytes) starts at the 64-byte boundary before it */
  size_t at = len - 8 - 64 + 5;
  file[at] ^= 0x10;
  c = c4_ckpt_open_mem(file, len, "f", err, sizeof err);
  ck_assert_msg(c != NULL, "%s", err); /* the structure is intact */
  float a[6], b[2];
  struct c4_ckpt_tensor tb = {"adam.m.wte", 1, {2}, b}, ta = {"h.0.ln1.w", 2, {2, 3}, a};
  ck_assert_int_eq(c4_ckpt_load(c, &tb, 1, err, sizeof err), 0);
  ck_assert_int_eq(c4_ckpt_load(c, &ta, 1, err, sizeof err), C4_EPROTO);
  ck_assert_str_eq(err, "f: tensor \"h.0.ln1.w\": checksum mismatch (data corrupt)");
  ck_assert_int_eq(c4_ckpt_verify(c, err, sizeof err), C4_EPROTO);
  ck_assert_ptr_nonnull(strstr(err, "h.0.ln1.w"));
  c4_ckpt_close(c);
  free(file);
}
END_TEST

/* Every byte of the file is covered: preamble, header (by its checksum), padding (must be zero)
 * and data (by its checksums). */
START_TEST(every_flipped_byte_is_caught_by_open_or_verify) {
  const char *p = path_in("e.c4ck");
  save_small(p);
  size_t len;
  unsigned char *file = slurp(p, &len);
  int header_errors = 0;
  for (size_t k = 0; k < len; k++) {
    file[k] ^= 0x01;
    err[0] = 0;
    struct c4_ckpt *c = c4_ckpt_open_mem(file, len, "e", err, sizeof err);
    if (c) ck_assert_int_ne(c4_ckpt_verify(c, err, sizeof err), 0);
    ck_assert_msg(strlen(err) > 3, "byte %zu", k);
    header_errors += strstr(err, "header checksum mismatch") != NULL;
    c4_ckpt_close(c);
    file[k] ^= 0x01;
  }
  ck_assert_int_gt(header_errors, 100); /* each byte of the JSON header */
  free(file);
}
END_TEST

/* A file with a correct preamble and checksum around header text padded to hdr_pad bytes, so data
 * starts at the next 64-byte boundary, then size zero bytes of data. */
static unsigned char *craft(const char *hdr, size_t hdr_pad, size_t size, size_t *len) {
  size_t h = strlen(hdr) > hdr_pad ? strlen(hdr) : hdr_pad;
  size_t start = (48 + h + 63) / 64 * 64;
  *len = size ? start + size : 48 + h;
  unsigned char *f = calloc(1, *len + 1);
  memcpy(f, "C4CKPT1\n", 8);
  for (int k = 0; k < 8; k++)
    f[8 + k] = (unsigned char)((uint64_t)h >> (8 * k));
  memset(f + 48, ' ', h);
  memcpy(f + 48, hdr, strlen(hdr));
  EVP_Digest(f + 48, h, f + 16, NULL, EVP_sha256(), NULL);
  return f;
}

#define ZSHA "\"sha256\":\"df3f619804a92fdb4057192dc43dd748ea778adc52bc498ce80524c014b81119\""
#define EMPTY_SHA "\"sha256\":\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\""

START_TEST(headers_that_lie_are_refused_with_a_reason) {
  static const struct {
    const char *hdr;
    size_t data;
    const char *why;
  } cases[] = {
      /* the honest one: one float 0.0f at 448 (ZSHA is SHA-448 of 4 zero bytes) */
      {"{\"meta\":{},\"tensors\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[1],\"offset\":448,"
       "\"length\":4," ZSHA "}]}",
       4, NULL},
      {"{\"meta\":{},\"tensors\":[]", 0, "not valid JSON"},
      {"{\"meta\":{},\"meta\":{},\"tensors\":[]}", 0, "not valid JSON"},
      {"{\"meta\":[],\"tensors\":[]}", 0, "\"meta\" object"},
      {"[]", 0, "\"meta\" object"},
      {"{\"meta\":{},\"tensors\":[{\"name\":\"w\",\"dtype\":\"f16\",\"shape\":[2],\"offset\":448,"
       "\"length\":4," ZSHA "}]}",
       4, "dtype \"f16\" is not \"f32\""},
      {"{\"meta\":{},\"tensors\":[{\"name\":\"w\",\"shape\":[1],\"offset\":448,\"length\":4," ZSHA
       "}]}",
       4, "dtype missing"},
      {"{\"meta\":{},\"tensors\":[{\"name\":\"\",\"dtype\":\"f32\",\"shape\":[1],\"offset\":448,"
       "\"length\":4," ZSHA "}]}",
       4, "tensor 0: not an object with a name"},
      {"{\"meta\":{},\"tensors\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[-1],\"offset\":448,"
       "\"length\":4," ZSHA "}]}",
       4, "dimension 0 is not a non-negative integer"},
      {"{\"meta\":{},\"tensors\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[1.5],\"offset\":448,"
       "\"length\":4," ZSHA "}]}",
       4, "dimension 0"},
      {"{\"meta\":{},\"tensors\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[1,1,1,1,1],"
       "\"offset\":448,\"length\":4," ZSHA "}]}",
       4, "at most 4"},
      /* 2^62 x 2^62 x 4 bytes wraps to 0 in 64 bits */
      {"{\"meta\":{},\"tensors\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[4611686018427387904,"
       "4611686018427387904],\"offset\":448,\"length\":0," ZSHA "}]}",
       4, "shape holds more than the file's"},
      {"{\"meta\":{},\"tensors\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[1],\"offset\":448,"
       "\"length\":8," ZSHA "}]}",
       4, "length 8 is not the 4 bytes"},
      {"{\"meta\":{},\"tensors\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[1],\"offset\":452,"
       "\"length\":4," ZSHA "}]}",
       4, "offset 452, expected 448"},
      {"{\"meta\":{},\"tensors\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[1],"
       "\"offset\":18446744073709551615,\"length\":4," ZSHA "}]}",
       4, "not valid JSON"}, /* beyond int64: jansson refuses it */
      {"{\"meta\":{},\"tensors\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[2],\"offset\":448,"
       "\"length\":8," ZSHA "}]}",
       4, "truncated: tensor \"w\" ends at 456"},
      {"{\"meta\":{},\"tensors\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[1],\"offset\":448,"
       "\"length\":4,\"sha256\":\"xyz\"}]}",
       4, "sha256 is not 64 hex digits"},
      {"{\"meta\":{},\"tensors\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[1],\"offset\":448,"
       "\"length\":4," ZSHA "}]}",
       68, "64 bytes after the last tensor"},
      {"{\"meta\":{},\"tensors\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[1],\"offset\":448,"
       "\"length\":4," ZSHA "},{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[0],\"offset\":512,"
       "\"length\":0," EMPTY_SHA "}]}",
       4, "truncated: tensor \"w\" ends at 512, past the file's 452 bytes"},
      {"{\"meta\":{},\"tensors\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[1],\"offset\":448,"
       "\"length\":4," ZSHA "},{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[0],\"offset\":452,"
       "\"length\":0," EMPTY_SHA "}]}",
       4, "offset 452, expected 512"},
      {"{\"meta\":{},\"tensors\":[{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[1],\"offset\":448,"
       "\"length\":4," ZSHA "},{\"name\":\"w\",\"dtype\":\"f32\",\"shape\":[0],\"offset\":512,"
       "\"length\":0," EMPTY_SHA "}]}",
       64, "tensor \"w\" appears twice"},
  };
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    size_t len;
    unsigned char *f = craft(cases[i].hdr, 400, cases[i].data, &len);
    err[0] = 0;
    struct c4_ckpt *c = c4_ckpt_open_mem(f, len, "lie", err, sizeof err);
    if (!cases[i].why) {
      ck_assert_msg(c != NULL, "case %zu: %s", i, err);
      ck_assert_int_eq(c4_ckpt_verify(c, err, sizeof err), 0);
    } else {
      ck_assert_msg(c == NULL, "case %zu accepted", i);
      ck_assert_msg(strstr(err, cases[i].why) && !strncmp(err, "lie: ", 5),
                    "case %zu: \"%s\", wanted \"%s\"", i, err, cases[i].why);
    }
    c4_ckpt_close(c);
    free(f);
  }
}
END_TEST

START_TEST(the_preamble_is_checked_before_anything_is_trusted) {
  size_t len;
  unsigned char *f = craft("{\"meta\":{},\"tensors\":[]}", 0, 0, &len);
  struct c4_ckpt *c = c4_ckpt_open_mem(f, len, "pre", err, sizeof err);
  ck_assert_msg(c != NULL, "%s", err);
  ck_assert_int_eq(c4_ckpt_count(c), 0);
  c4_ckpt_close(c);
  f[6] = '2';
  ck_assert_ptr_null(c4_ckpt_open_mem(f, len, "pre", err, sizeof err));
  ck_assert_ptr_nonnull(strstr(err, "unsupported checkpoint version"));
  f[6] = '1';
  f[0] = 'X';
  ck_assert_ptr_null(c4_ckpt_open_mem(f, len, "pre", err, sizeof err));
  ck_assert_ptr_nonnull(strstr(err, "bad magic"));
  f[0] = 'C';
  f[8 + 7] = 0x80; /* header length 2^63 + ... */
  ck_assert_ptr_null(c4_ckpt_open_mem(f, len, "pre", err, sizeof err));
  ck_assert_ptr_nonnull(strstr(err, "is outside 1.."));
  f[8 + 7] = 0;
  f[8] = (unsigned char)(f[8] + 1);
  ck_assert_ptr_null(c4_ckpt_open_mem(f, len, "pre", err, sizeof err));
  ck_assert_ptr_nonnull(strstr(err, "ends past the file"));
  ck_assert_ptr_null(c4_ckpt_open_mem(NULL, 0, NULL, err, sizeof err));
  ck_assert_ptr_nonnull(strstr(err, "(memory): truncated or not a checkpoint: 0 bytes"));
  free(f);
}
END_TEST

START_TEST(a_save_that_fails_leaves_the_old_checkpoint_and_no_temporary_file) {
  const char *p = path_in("s.c4ck");
  save_small(p);
  size_t len0, len1;
  unsigned char *before = slurp(p, &len0);
  float x[4] = {0};
  struct {
    struct c4_ckpt_tensor t[2];
    const char *why;
  } bad[] = {
      {{{"a", 1, {1}, x}, {"a", 1, {1}, x}}, "tensor \"a\" given twice"},
      {{{"a", 5, {1}, x}, {"b", 1, {1}, x}}, "invalid shape (ndim 5)"},
      {{{"a", 1, {-3}, x}, {"b", 1, {1}, x}}, "invalid shape"},
      {{{"a", 2, {INT64_MAX, 3}, x}, {"b", 1, {1}, x}}, "invalid shape"},
      {{{"a", 1, {2}, NULL}, {"b", 1, {1}, x}}, "\"a\": no data"},
      {{{"", 1, {1}, x}, {"b", 1, {1}, x}}, "tensor 0: name missing"},
      {{{"a", 1, {1}, x}, {NULL, 1, {1}, x}}, "tensor 1: name missing"},
      {{{"a", 1, {1}, x}, {"\xff", 1, {1}, x}}, "tensor 1: name is not valid UTF-8"},
  };
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    ck_assert_int_eq(c4_ckpt_save(p, NULL, bad[i].t, 2, err, sizeof err), C4_EINVAL);
    ck_assert_msg(strstr(err, bad[i].why) && strstr(err, p), "case %zu: %s", i, err);
  }
  json_t *arr = json_array();
  ck_assert_int_eq(c4_ckpt_save(p, arr, bad[0].t, 1, err, sizeof err), C4_EINVAL);
  ck_assert_ptr_nonnull(strstr(err, "meta is not a JSON object"));
  json_decref(arr);
  ck_assert_int_eq(c4_ckpt_save("/nonexistent-dir/x.c4ck", NULL, bad[0].t, 1, err, sizeof err),
                   C4_ESYS);
  ck_assert_ptr_nonnull(strstr(err, "cannot create /nonexistent-dir/x.c4ck.tmp."));
  unsigned char *after = slurp(p, &len1);
  ck_assert_uint_eq(len0, len1);
  ck_assert_mem_eq(before, after, len0);
  ck_assert_int_eq(count_files(), 1);
  free(before);
  free(after);
}
END_TEST

START_TEST(an_existing_checkpoint_is_replaced_whole) {
  const char *p = path_in("r.c4ck");
  float *big = calloc(100000, sizeof *big);
  struct c4_ckpt_tensor t = {"w", 1, {100000}, big};
  ck_assert_int_eq(c4_ckpt_save(p, NULL, &t, 1, err, sizeof err), 0);
  save_small(p); /* much shorter: nothing of the old file may remain */
  struct stat st;
  ck_assert_int_eq(stat(p, &st), 0);
  ck_assert_int_lt(st.st_size, 1024);
  struct c4_ckpt *c = c4_ckpt_open(p, err, sizeof err);
  ck_assert_msg(c != NULL, "%s", err);
  ck_assert_int_eq(c4_ckpt_verify(c, err, sizeof err), 0);
  ck_assert_ptr_null(c4_ckpt_find(c, "w"));
  ck_assert_int_eq(json_integer_value(json_object_get(c4_ckpt_meta(c), "step")), 3);
  c4_ckpt_close(c);
  ck_assert_int_eq(count_files(), 1);
  free(big);
}
END_TEST

/* A checkpoint copied to a later step's name resumed at that step with the older weights: its
 * metadata's step must be its name's, else it is skipped as damaged. */
START_TEST(latest_skips_a_checkpoint_whose_metadata_step_is_not_its_names) {
  char p[512], got[512];
  uint64_t step = 0;
  ck_assert_int_eq(c4_ckpt_step_path(p, sizeof p, dir, 20), 0);
  save_small(p);
  struct c4_ckpt_tensor t = {"w", 1, {2}, small_b};
  json_t *meta = json_pack("{s:i}", "step", 20);
  ck_assert_int_eq(c4_ckpt_step_path(p, sizeof p, dir, 50), 0);
  ck_assert_int_eq(c4_ckpt_save(p, meta, &t, 1, err, sizeof err), 0);
  json_decref(meta);
  ck_assert_int_eq(c4_ckpt_latest(dir, got, sizeof got, &step, err, sizeof err), 0);
  ck_assert_uint_eq(step, 20);
  ck_assert_msg(strstr(err, "step-00000050.c4ck: its metadata's step (20) is not its name's (50)"),
                "%s", err);
}
END_TEST

START_TEST(latest_picks_the_newest_intact_checkpoint_and_ignores_temporary_files) {
  char p[512], got[512];
  uint64_t step = 0;
  ck_assert_int_eq(c4_ckpt_latest(dir, got, sizeof got, &step, err, sizeof err), C4_ENOTFOUND);
  ck_assert_ptr_nonnull(strstr(err, "no checkpoint"));
  uint64_t steps[] = {5, 99999999, 100000000, 20}; /* 9 digits sorts after 8 by value */
  for (int i = 0; i < 4; i++) {
    ck_assert_int_eq(c4_ckpt_step_path(p, sizeof p, dir, steps[i]), 0);
    save_small(p);
  }
  ck_assert_str_eq(strrchr(p, '/'), "/step-00000020.c4ck");
  ck_assert_int_eq(c4_ckpt_latest(dir, got, sizeof got, &step, err, sizeof err), 0);
  ck_assert_uint_eq(step, 100000000);
  ck_assert_str_eq(strrchr(got, '/'), "/step-100000000.c4ck");
  ck_assert_str_eq(err, "");
  /* a crash mid-save leaves a temporary file: never a candidate, even when newer */
  spit(path_in("step-200000000.c4ck.tmp.4242"), "C4CKPT1\n", 8);
  spit(path_in("notes.txt"), "x", 1);
  /* a damaged newer checkpoint (torn by something other than save) is skipped and reported */
  ck_assert_int_eq(c4_ckpt_step_path(p, sizeof p, dir, 300000000), 0);
  save_small(p);
  size_t len;
  unsigned char *f = slurp(p, &len);
  f[len - 1] ^= 1;
  spit(p, f, len);
  free(f);
  ck_assert_int_eq(c4_ckpt_latest(dir, got, sizeof got, NULL, err, sizeof err), 0);
  ck_assert_str_eq(strrchr(got, '/'), "/step-100000000.c4ck");
  ck_assert_ptr_nonnull(strstr(err, "1 damaged checkpoint(s) skipped"));
  ck_assert_ptr_nonnull(strstr(err, "step-300000000.c4ck: tensor \"adam.m.wte\": checksum"));
  ck_assert_int_eq(c4_ckpt_latest(dir, got, 8, NULL, err, sizeof err), C4_EINVAL);
  ck_assert_int_ne(c4_ckpt_latest(path_in("missing"), got, sizeof got, NULL, err, sizeof err), 0);
  ck_assert_int_eq(c4_ckpt_step_path(p, 10, dir, 1), C4_EINVAL);
}
END_TEST

int main(void) {
  Suite *s = suite_create("ckpt");
  TCase *tc = tcase_create("ckpt");
  tcase_add_checked_fixture(tc, setup, teardown);
  tcase_add_test(tc, round_trip_is_bit_identical_from_file_and_from_memory);
  tcase_add_test(tc, meta_round_trips_whole);
  tcase_add_test(tc, missing_tensor_and_shape_mismatch_name_the_file_and_the_tensor);
  tcase_add_test(tc, a_file_truncated_at_every_length_is_an_error);
  tcase_add_test(tc, a_flipped_data_byte_is_a_checksum_error_naming_the_tensor);
  tcase_add_test(tc, every_flipped_byte_is_caught_by_open_or_verify);
  tcase_add_test(tc, headers_that_lie_are_refused_with_a_reason);
  tcase_add_test(tc, the_preamble_is_checked_before_anything_is_trusted);
  tcase_add_test(tc, a_save_that_fails_leaves_the_old_checkpoint_and_no_temporary_file);
  tcase_add_test(tc, an_existing_checkpoint_is_replaced_whole);
  tcase_add_test(tc, latest_picks_the_newest_intact_checkpoint_and_ignores_temporary_files);
  tcase_add_test(tc, latest_skips_a_checkpoint_whose_metadata_step_is_not_its_names);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
