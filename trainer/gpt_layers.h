/* gpt_layers.h -- a model's held layers as host buffers: packed to move to a neighbouring
 * pipeline stage (weights and AdamW's moments together), assembled into a new window, and
 * spread to or gathered from the checkpoint's whole-model layout (gpt.h's info[]). */
#ifndef C4_GPT_LAYERS_H
#define C4_GPT_LAYERS_H

#include <stddef.h>

#include "gpt.h"

/* Floats of one layer's parameters (one of params, adam_m, adam_v). */
size_t gpt_layer_floats(const struct gpt *m);

/* Floats of the whole model's parameters (the checkpoint's layout). */
size_t gpt_full_floats(const struct gpt *m);

/* Copies held layers [a, b) of params, adam_m and adam_v into host, in that order, each as the
 * per-layer tensors in enum order with the layers' rows stacked: 3 x (b - a) x
 * gpt_layer_floats floats, what gpt_move_window takes. */
void gpt_pack_layers(const struct gpt *m, int a, int b, float *host);

/* Makes m hold layers [l0, l1), which must overlap or touch the held window: the layers it keeps
 * stay, layers [l0, m->l0) come from `below` and [m->l1, l1) from `above` (packs of
 * gpt_pack_layers, NULL when none), every bit as it was. 0, or a C4_E* code with err filled. */
int gpt_move_window(struct gpt *m, int l0, int l1, const float *below, const float *above,
                    char *err, size_t errlen);

/* Copies the held window of `win` (nparams floats, one of params, grads, m, v on the host) into
 * the same tensors' places in `full` (gpt_full_floats); the rest of full is untouched. */
void gpt_window_to_full(const struct gpt *m, const float *win, float *full);

/* The other way: the held window's part of `full` into `win`. */
void gpt_full_to_window(const struct gpt *m, const float *full, float *win);

#endif
