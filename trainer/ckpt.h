/* ckpt.h -- c4train's checkpoints: named float tensors plus a JSON object of metadata in one file
 * whose layout does not depend on how many ranks wrote it or will read it (Universal
 * Checkpointing's idea; docs/checkpoint-format.md). The library knows nothing of parameter
 * names: the trainer chooses them ("wte", "adam.m.wte", ...) and what the metadata holds. */
#ifndef C4_CKPT_H
#define C4_CKPT_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define C4_CKPT_MAX_DIMS 4
#define C4_CKPT_MAX_NAME 256           /* bytes in a tensor name, not counting the NUL */
#define C4_CKPT_MAX_HEADER (16u << 20) /* bytes of JSON header a reader accepts */
#define C4_CKPT_SUFFIX ".c4ck"

/* One tensor of 32-bit floats in host memory, row-major: ndim 0 is a scalar (one float), a
 * dimension may be 0 (no floats). */
struct c4_ckpt_tensor {
  const char *name;
  int ndim;
  int64_t shape[C4_CKPT_MAX_DIMS];
  float *data;
};

/* Writes the n tensors t (names unique) and meta (a JSON object, or NULL for {}) to path,
 * atomically: through "path.tmp.<pid>", fsync, rename over path, fsync of the directory, so a
 * crash leaves either the old file or the new one under path, never a torn one. Returns 0, or a
 * negative C4_E* code with err naming the file and the reason (C4_EINVAL: bad tensor list or
 * meta, naming the tensor; C4_ESYS: an I/O error, the temporary file removed). */
int c4_ckpt_save(const char *path, const json_t *meta, const struct c4_ckpt_tensor *t, int n,
                 char *err, size_t errlen);

/* An open checkpoint. Opening checks the whole structure (magic, header checksum, every entry,
 * every offset and length against the file's size); tensor data is checked as it is loaded. */
struct c4_ckpt;

/* Opens the file at path (read with pread, never mapped). Returns the reader, or NULL with err
 * naming the file and what is wrong with it. The caller frees it with c4_ckpt_close. */
struct c4_ckpt *c4_ckpt_open(const char *path, char *err, size_t errlen);

/* The same over size bytes at buf, which must outlive the reader; label names it in errors. */
struct c4_ckpt *c4_ckpt_open_mem(const void *buf, size_t size, const char *label, char *err,
                                 size_t errlen);

/* Frees the reader and everything it returned (meta, tensor listings); c may be NULL. */
void c4_ckpt_close(struct c4_ckpt *c);

/* The metadata object saved with the checkpoint. Owned by the reader (valid until close): take a
 * reference with json_incref to keep it longer. */
json_t *c4_ckpt_meta(const struct c4_ckpt *c);

/* Tensors in the order they were saved: c4_ckpt_tensor_at(c, i) for 0 <= i < c4_ckpt_count(c)
 * gives name, ndim and shape (data is NULL); owned by the reader. c4_ckpt_find returns the tensor
 * called name, or NULL. */
int c4_ckpt_count(const struct c4_ckpt *c);
const struct c4_ckpt_tensor *c4_ckpt_tensor_at(const struct c4_ckpt *c, int i);
const struct c4_ckpt_tensor *c4_ckpt_find(const struct c4_ckpt *c, const char *name);

/* Loads each of the n tensors t[i] by name into t[i].data (the caller's memory), after checking
 * that the checkpoint holds it with exactly t[i]'s shape, then checks its SHA-256. Returns 0, or a
 * negative C4_E* code with err naming the file and the tensor (C4_ENOTFOUND: missing; C4_EINVAL:
 * other shape; C4_EPROTO: checksum mismatch; C4_ESYS: read error). On error the data of the
 * failing tensor is unspecified. */
int c4_ckpt_load(struct c4_ckpt *c, const struct c4_ckpt_tensor *t, int n, char *err,
                 size_t errlen);

/* Reads every tensor and checks its SHA-256 and that the padding between tensors is zero, so that
 * every byte of the file has been checked. Returns 0 or a negative C4_E* code with err filled. */
int c4_ckpt_verify(struct c4_ckpt *c, char *err, size_t errlen);

/* Writes "<dir>/step-<step, at least 8 digits>.c4ck" into buf. Returns 0, or C4_EINVAL when it
 * does not fit. */
int c4_ckpt_step_path(char *buf, size_t buflen, const char *dir, uint64_t step);

/* The step of a file name "step-<digits>.c4ck" into *step: 0, or C4_EINVAL for any other name
 * (temporary files, signs, blanks included). */
int c4_ckpt_parse_step_name(const char *name, uint64_t *step);

/* Finds the newest checkpoint in dir that opens and verifies: among the files named as
 * c4_ckpt_step_path names them (temporary files never match), the highest step first, then the
 * next. Returns 0 with its path in buf and its step in *step (step may be NULL); err is then empty,
 * or, when newer files were damaged and skipped, counts them and names the newest and why. Returns
 * C4_ENOTFOUND when no file qualifies, or another negative C4_E* code (dir unreadable, buf too
 * small), with err filled. */
int c4_ckpt_latest(const char *dir, char *buf, size_t buflen, uint64_t *step, char *err,
                   size_t errlen);

#endif
