/* train_ckpt.h -- c4train's use of the checkpoint format (ckpt.h): the model's parameters and
 * AdamW state as per-parameter tensors, and the step (the data position: samples are named by
 * step and index), so any number of ranks can resume. */
#ifndef C4_TRAIN_CKPT_H
#define C4_TRAIN_CKPT_H

#include <jansson.h>
#include <stddef.h>

#include "gpt.h"
#include "train_loop.h"

/* Writes o->ckpt_dir/step-NNNNNNNN.c4ck (atomically) after `step` steps on `world` ranks, and
 * removes older ones beyond the two newest. The tensors come from full (the whole model's
 * params, adam_m and adam_v: 3 x gpt_full_floats, gathered from a pipeline's stages) or, full
 * NULL, from m, which then holds every layer. The metadata holds the run's shape and step, and
 * extra's keys when extra is not NULL (documents: the cost model). 0, or -1 with err. */
int train_ckpt_save(struct gpt *m, float *full, const struct train_opts *o, int step, int world,
                    const json_t *extra, char *err, size_t errlen);

/* Loads the newest intact checkpoint of o->ckpt_dir into m (the layers it holds), *step and, when
 * meta is not NULL, its metadata into *meta (a new reference; NULL when there was none): 1 (err
 * holds its file name; warn, when not empty, names the newer checkpoints that were damaged and
 * skipped: the newest's file and why), 0 when there is none at all (a fresh start; the directory is
 * created when missing), -1 with err: the directory cannot be made or read, checkpoints exist but
 * none is intact (never a silent start from step 0), a newer one is damaged and o->ckpt_strict is
 * set, or the checkpoint is for another model shape or another kind of data (documents of another
 * --max-context, or fixed windows). */
int train_ckpt_resume(struct gpt *m, const struct train_opts *o, int *step, json_t **meta,
                      char *err, size_t errlen, char *warn, size_t warnlen);

/* What train_ckpt_resume would refuse, found before a run starts (--layout auto probes first):
 * 0 when o->ckpt_dir has no checkpoint or its newest intact one is for o's model, global batch
 * and kind of data; else -1 with err as train_ckpt_resume's. */
int train_ckpt_check(const struct train_opts *o, char *err, size_t errlen);

/* Rank 0's warnings after train_ckpt_resume found the checkpoint at path (on stderr): warn, a
 * newer checkpoint that was damaged (train_ckpt_resume's, "" when none); and --seed, --lr or
 * --data not those meta (the checkpoint's) was written with: allowed, but the steps from here are
 * then not those the first run would have taken, and nothing else says so. */
void train_ckpt_say_warnings(const json_t *meta, const struct train_opts *o, const char *warn,
                             const char *path);

/* Says (on stdout) that a run starting at step `from` has nothing to train: the checkpoint it
 * resumed from is at or past --steps, or --steps is 0 and there was none. */
void train_ckpt_say_done(const struct train_opts *o, int from);

/* Whether --ckpt-every asks for a checkpoint after `done` steps: at its interval and at the last
 * step, with a checkpoint directory. */
static inline int train_ckpt_due(const struct train_opts *o, int done) {
  return o->ckpt_dir && o->ckpt_every > 0 && (done % o->ckpt_every == 0 || done == o->steps);
}

/* Where a run stands at a checkpoint: its options, its pipeline depth, this rank, the ranks, and
 * the steps done. */
struct train_ckpt_at {
  const struct train_opts *o;
  int pp, rank, world, done;
};

struct train_pipe;
struct dp;

/* The checkpoint after at->done steps, called on every rank when one is due: with --pp (at->pp >
 * 1) the stages gather the whole model over tp and dp first, then rank 0 writes it with extra's
 * keys (NULL: none). A checkpoint not written does not stop the run. Returns 0; -1 when rank 0
 * could not write it (said, with err); C4TRAIN_EXIT_PEER_LOST when the gather's peer was lost; 1
 * when memory is short (said). */
int train_ckpt_step(const struct train_ckpt_at *at, struct gpt *m, struct train_pipe *tp,
                    struct dp *dp, const json_t *extra, char *err, size_t errlen);

#endif
