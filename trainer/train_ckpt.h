/* train_ckpt.h -- c4train's use of the checkpoint format (ckpt.h): the model's parameters and
 * AdamW state as per-parameter tensors, and the step (the data position: samples are named by
 * step and index), so any number of ranks can resume. */
#ifndef C4_TRAIN_CKPT_H
#define C4_TRAIN_CKPT_H

#include <stddef.h>

#include "gpt.h"
#include "train_loop.h"

/* Writes o->ckpt_dir/step-NNNNNNNN.c4ck (atomically) after `step` steps on `world` ranks, and
 * removes older ones beyond the two newest. The tensors come from full (the whole model's
 * params, adam_m and adam_v: 3 x gpt_full_floats, gathered from a pipeline's stages) or, full
 * NULL, from m, which then holds every layer. 0, or -1 with err. */
int train_ckpt_save(struct gpt *m, float *full, const struct train_opts *o, int step, int world,
                    char *err, size_t errlen);

/* Loads the newest intact checkpoint of o->ckpt_dir into m (the layers it holds) and *step: 1 (err
 * holds its file name; warn, when not empty, names the newer checkpoints that were damaged and
 * skipped: the newest's file and why), 0 when there is none at all (a fresh start; the directory is
 * created when missing), -1 with err: the directory cannot be made or read, checkpoints exist but
 * none is intact (never a silent start from step 0), a newer one is damaged and o->ckpt_strict is
 * set, or the checkpoint is for another model shape. */
int train_ckpt_resume(struct gpt *m, const struct train_opts *o, int *step, char *err,
                      size_t errlen, char *warn, size_t warnlen);

#endif
