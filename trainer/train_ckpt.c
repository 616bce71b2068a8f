/* train_ckpt.c -- the model as checkpoint tensors: each parameter whole (per-layer tensors
 * stacked, leading dimension L) under its name, AdamW's moments as "adam.m.<name>" and
 * "adam.v.<name>"; the metadata holds the model shape, the global batch and the step. Nothing
 * depends on the number of ranks, so a job on N ranks resumes on M. */
#include "train_ckpt.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "c4_err.h"
#include "ckpt.h"
#include "gpt_layers.h"

/* The tensor list over whole-model host copies of params, m and v (3 * GPT_NPARAMS entries). */
static void tensors(const struct gpt *m, float *host, struct c4_ckpt_tensor *t,
                    char names[][C4_CKPT_MAX_NAME]) {
  size_t n = gpt_full_floats(m);
  static const char *prefix[3] = {"", "adam.m.", "adam.v."};
  for (int part = 0; part < 3; part++)
    for (int p = 0; p < GPT_NPARAMS; p++) {
      const struct gpt_tensor_info *info = &m->info[p];
      int i = part * GPT_NPARAMS + p;
      snprintf(names[i], C4_CKPT_MAX_NAME, "%s%s", prefix[part], info->name);
      t[i].name = names[i];
      t[i].ndim = info->ndim;
      for (int d = 0; d < info->ndim; d++)
        t[i].shape[d] = info->shape[d];
      t[i].data = host + (size_t)part * n + info->offset;
    }
}

static json_t *config_json(const struct gpt_config *c) {
  return json_pack("{s:i,s:i,s:i,s:i,s:i}", "vocab", c->vocab, "context", c->context, "layers",
                   c->layers, "heads", c->heads, "width", c->width);
}

/* Keeps the step just saved and the newest step file before it (by step, not by distance in
 * steps: with --ckpt-every 2 the one before is saved - 2), so that a damaged newest still leaves
 * one to resume from, and removes older ones. Files of later steps (a longer run's, damaged, or
 * skipped by the resume) are neither counted nor removed: counted, a damaged step-30 beside a
 * run that resumed from 20 and saved 24 had 20 and 22 removed, leaving one intact file. Names
 * are read as the resume reads them: a "step-+0000030.c4ck" counts for neither. */
static void prune(const char *dir, uint64_t saved) {
  DIR *d = opendir(dir);
  if (!d) return;
  uint64_t s, before = 0;
  int have = 0;
  struct dirent *e;
  while ((e = readdir(d)))
    if (!c4_ckpt_parse_step_name(e->d_name, &s) && s < saved && (!have || s > before))
      before = s, have = 1;
  rewinddir(d);
  while (have && (e = readdir(d))) {
    char path[4096];
    if (!c4_ckpt_parse_step_name(e->d_name, &s) && s < before &&
        (size_t)snprintf(path, sizeof path, "%s/%s", dir, e->d_name) < sizeof path)
      unlink(path);
  }
  closedir(d);
}

int train_ckpt_save(struct gpt *m, float *full, const struct train_opts *o, int step, int world,
                    const json_t *extra, char *err, size_t errlen) {
  if (mkdir(o->ckpt_dir, 0755) != 0 && errno != EEXIST) {
    snprintf(err, errlen, "%s: %s", o->ckpt_dir, strerror(errno));
    return C4_ESYS;
  }
  size_t n = m->nparams;
  float *host = full ? NULL : malloc(3 * n * sizeof(float));
  struct c4_ckpt_tensor t[3 * GPT_NPARAMS];
  static char names[3 * GPT_NPARAMS][C4_CKPT_MAX_NAME];
  char path[4096];
  if (!full && !host) {
    snprintf(err, errlen, "out of memory for %zu parameters", n);
    return C4_ENOMEM;
  }
  if (!full) { /* the whole model is held: its layout is the checkpoint's */
    m->ops->download(host, m->params, n * sizeof(float));
    m->ops->download(host + n, m->adam_m, n * sizeof(float));
    m->ops->download(host + 2 * n, m->adam_v, n * sizeof(float));
  }
  tensors(m, full ? full : host, t, names);
  json_t *meta = json_pack("{s:i,s:i,s:o,s:i,s:i,s:I,s:f,s:s,s:i}", "step", step, "world", world,
                           "model", config_json(&m->cfg), "micro_batch", o->micro_batch,
                           "microbatches", o->microbatches, "seed", (json_int_t)o->seed, "lr",
                           (double)o->lr, "data", o->data, "max_context", o->max_context);
  if (meta && extra) json_object_update(meta, (json_t *)extra);
  int rc = c4_ckpt_step_path(path, sizeof path, o->ckpt_dir, (uint64_t)step);
  if (rc == 0)
    rc = c4_ckpt_save(path, meta, t, 3 * GPT_NPARAMS, err, errlen);
  else
    snprintf(err, errlen, "%s: directory name too long", o->ckpt_dir);
  json_decref(meta);
  free(host);
  if (rc == 0) prune(o->ckpt_dir, (uint64_t)step);
  return rc ? -1 : 0;
}

/* The newest intact checkpoint of o->ckpt_dir (made here when missing, as saving needs it) into
 * path and *at. Returns 1 with warn saying why a newer one was passed over (or empty), 0 when
 * there is none to resume from, -1 with err: none intact (never silently from step 0), or
 * --ckpt-strict and the newest damaged. */
static int latest(const struct train_opts *o, char *path, size_t pathlen, uint64_t *at, char *err,
                  size_t errlen, char *warn, size_t warnlen) {
  warn[0] = 0;
  if (mkdir(o->ckpt_dir, 0755) != 0 && errno != EEXIST) { /* saving later would fail too */
    snprintf(err, errlen, "--ckpt-dir %s: cannot create it: %s", o->ckpt_dir, strerror(errno));
    return C4_ESYS;
  }
  int rc = c4_ckpt_latest(o->ckpt_dir, path, pathlen, at, err, errlen);
  if (rc == C4_ENOTFOUND && strstr(err, "damaged")) { /* checkpoints, none intact */
    size_t k = strlen(err);
    snprintf(err + k, errlen - k,
             "; not starting again from step 0 (move the damaged files out of %s to do that)",
             o->ckpt_dir);
    return C4_EPROTO;
  }
  if (rc == C4_ENOTFOUND) {
    err[0] = 0;
    return 0;
  }
  if (rc) return rc;
  if (err[0] && o->ckpt_strict) { /* a newer one was damaged */
    size_t k = strlen(err);
    snprintf(err + k, errlen - k, "; --ckpt-strict: not falling back to %s", path);
    return C4_EPROTO;
  }
  snprintf(warn, warnlen, "%s", err);
  return 1;
}

/* 0 when ck was saved by this model, global batch and kind of data, else -1 with err naming
 * path. A checkpoint from before documents has no max_context: it trained on windows (0). The
 * global batch is the sequences (or positions) of a step, whatever micro-batches cut it: a
 * step's draw is named by the step and a sequence's place in it, so another micro-batch size
 * (--layout auto choosing again) goes on with the same data. */
static int same_run(struct c4_ckpt *ck, const struct gpt_config *cfg, const struct train_opts *o,
                    const char *path, char *err, size_t errlen) {
  json_t *meta = c4_ckpt_meta(ck), *want = config_json(cfg);
  int same_model = json_equal(json_object_get(meta, "model"), want);
  json_decref(want);
  long mb = (long)json_integer_value(json_object_get(meta, "micro_batch"));
  long mbs = (long)json_integer_value(json_object_get(meta, "microbatches"));
  long maxctx = (long)json_integer_value(json_object_get(meta, "max_context"));
  if (maxctx != o->max_context) {
    char was[64];
    if (maxctx > 0)
      snprintf(was, sizeof was, "documents of --max-context %ld", maxctx);
    else
      snprintf(was, sizeof was, "fixed windows (no --max-context)");
    snprintf(err, errlen,
             "%s was written training on %s: its step names that data's draws, so give the same "
             "--max-context (or none), or another --ckpt-dir",
             path, was);
    return C4_EINVAL;
  }
  if (same_model && mb * mbs == (long)o->micro_batch * o->microbatches) return 0;
  if (!same_model) { /* name the shape it was written by beside this run's */
    json_t *mine = config_json(cfg);
    char *was = json_dumps(json_object_get(meta, "model"), JSON_COMPACT | JSON_SORT_KEYS);
    char *now = json_dumps(mine, JSON_COMPACT | JSON_SORT_KEYS);
    snprintf(err, errlen,
             "%s is for another model: it was written by %s, this run is %s: give the same "
             "--layers/--width/--heads/--context, or another --ckpt-dir",
             path, was ? was : "?", now ? now : "?");
    free(was);
    free(now);
    json_decref(mine);
    return C4_EINVAL;
  }
  snprintf(err, errlen,
           "%s is for another global batch: it was written with --micro-batch %ld "
           "--microbatches %ld, this run has %d and %d: give the same product (sequences a step), "
           "or another --ckpt-dir",
           path, mb, mbs, o->micro_batch, o->microbatches);
  return C4_EINVAL;
}

/* ck's parameters and AdamW moments into m, the layers this rank holds. 0, or -1 with err. */
static int load(struct gpt *m, struct c4_ckpt *ck, char *err, size_t errlen) {
  size_t n = gpt_full_floats(m), w = m->nparams;
  float *host = malloc(3 * n * sizeof(float)), *win = malloc(w * sizeof(float));
  struct c4_ckpt_tensor t[3 * GPT_NPARAMS];
  static char names[3 * GPT_NPARAMS][C4_CKPT_MAX_NAME];
  if (!host || !win) {
    free(host);
    free(win);
    snprintf(err, errlen, "out of memory for %zu parameters", n);
    return C4_ENOMEM;
  }
  tensors(m, host, t, names);
  int rc = c4_ckpt_load(ck, t, 3 * GPT_NPARAMS, err, errlen);
  if (rc == 0) {
    float *part[3] = {m->params, m->adam_m, m->adam_v};
    for (int k = 0; k < 3; k++) {
      gpt_full_to_window(m, host + (size_t)k * n, win);
      m->ops->upload(part[k], win, w * sizeof(float));
    }
  }
  free(host);
  free(win);
  return rc ? -1 : 0;
}

int train_ckpt_resume(struct gpt *m, const struct train_opts *o, int *step, json_t **meta,
                      char *err, size_t errlen, char *warn, size_t warnlen) {
  if (meta) *meta = NULL;
  char path[4096];
  uint64_t at = 0;
  int rc = latest(o, path, sizeof path, &at, err, errlen, warn, warnlen);
  if (rc <= 0) return rc;
  struct c4_ckpt *ck = c4_ckpt_open(path, err, errlen);
  if (!ck) return C4_EPROTO;
  rc = same_run(ck, &m->cfg, o, path, err, errlen);
  if (rc == 0) rc = load(m, ck, err, errlen);
  if (rc == 0 && meta) *meta = json_incref(c4_ckpt_meta(ck));
  c4_ckpt_close(ck);
  if (rc) return C4_EINVAL;
  *step = (int)at;
  snprintf(err, errlen, "%s", path);
  return 1;
}

/* Whether two --data paths name one file (a relative path and an absolute one may). */
static int same_file(const char *a, const char *b) {
  struct stat sa, sb;
  if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
    return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  return strcmp(a, b) == 0;
}

void train_ckpt_say_warnings(const json_t *meta, const struct train_opts *o, const char *warn,
                             const char *path) {
  if (warn[0])
    fprintf(stderr, "c4train: %s; resuming from the newest intact one, %s\n", warn, path);
  char said[1024] = "";
  size_t k = 0;
  json_t *seed = json_object_get(meta, "seed"), *lr = json_object_get(meta, "lr");
  const char *data = json_string_value(json_object_get(meta, "data"));
  if (json_is_integer(seed) && (uint64_t)json_integer_value(seed) != o->seed)
    k += (size_t)snprintf(said + k, sizeof said - k, " --seed %" JSON_INTEGER_FORMAT " (now %llu)",
                          json_integer_value(seed), (unsigned long long)o->seed);
  /* stored as a double from a float: equal when this run's float is the same */
  if (json_is_number(lr) && (float)json_number_value(lr) != o->lr && k < sizeof said)
    k += (size_t)snprintf(said + k, sizeof said - k, " --lr %g (now %g)", json_number_value(lr),
                          (double)o->lr);
  if (data && o->data && !same_file(data, o->data) && k < sizeof said)
    snprintf(said + k, sizeof said - k, " --data %s (now %s)", data, o->data);
  if (said[0])
    fprintf(stderr,
            "c4train: warning: %s was written with%s: going on, but the steps from here are not "
            "those its run would have taken\n",
            path, said);
}

void train_ckpt_say_done(const struct train_opts *o, int from) {
  if (from > 0)
    printf("c4train: the checkpoint in %s is at step %d, at or past --steps %d: nothing to train "
           "(give a larger --steps to go on)\n",
           o->ckpt_dir, from, o->steps);
  else
    printf("c4train: --steps 0: nothing to train\n");
}

int train_ckpt_check(const struct train_opts *o, char *err, size_t errlen) {
  char path[4096], warn[512];
  uint64_t at = 0;
  int rc = latest(o, path, sizeof path, &at, err, errlen, warn, sizeof warn);
  if (rc <= 0) return rc;
  struct c4_ckpt *ck = c4_ckpt_open(path, err, errlen);
  if (!ck) return C4_EPROTO;
  struct gpt_config cfg = o->cfg; /* the model as the run will build it */
  if (o->max_context > 0) cfg.context = o->max_context;
  rc = same_run(ck, &cfg, o, path, err, errlen);
  c4_ckpt_close(ck);
  return rc;
}
