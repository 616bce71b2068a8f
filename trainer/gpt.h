/* gpt.h -- a GPT-2-style decoder (token and position embedding, pre-norm blocks of causal
 * self-attention and a GELU MLP with residuals, final layernorm, logits tied to the token
 * embedding), its parameters, activations and gradients, run through a c4k_ops table so the same
 * code trains on CPU or GPU. One forward+backward call processes one micro-batch and ADDS its
 * gradients, so a rank runs any number of micro-batches before the gradients are all-reduced. */
#ifndef C4_GPT_H
#define C4_GPT_H

#include <stddef.h>
#include <stdint.h>

#include "c4k.h"

struct gpt_config {
  int vocab;   /* V: 256 for bytes */
  int context; /* T: positions the model sees */
  int layers;  /* L */
  int heads;   /* NH */
  int width;   /* C, a multiple of heads */
};

/* The parameter tensors, in the order they sit in one flat buffer. */
enum gpt_param {
  GPT_WTE,      /* V x C */
  GPT_WPE,      /* T x C */
  GPT_LN1W,     /* L x C */
  GPT_LN1B,     /* L x C */
  GPT_QKVW,     /* L x 3C x C */
  GPT_QKVB,     /* L x 3C */
  GPT_ATTPROJW, /* L x C x C */
  GPT_ATTPROJB, /* L x C */
  GPT_LN2W,     /* L x C */
  GPT_LN2B,     /* L x C */
  GPT_FCW,      /* L x 4C x C */
  GPT_FCB,      /* L x 4C */
  GPT_FCPROJW,  /* L x C x 4C */
  GPT_FCPROJB,  /* L x C */
  GPT_LNFW,     /* C */
  GPT_LNFB,     /* C */
  GPT_NPARAMS
};

/* Name and shape of parameter tensor i as a checkpoint stores it (per layer tensors are stacked:
 * leading dimension L). */
struct gpt_tensor_info {
  const char *name;
  int ndim;
  long shape[3];
  size_t offset; /* in floats from the start of the flat buffer */
  size_t count;
};

/* Views into an activation buffer (and, with the same offsets, into its gradient buffer). */
struct gpt_layer_acts {
  float *ln1, *ln1_mean, *ln1_rstd, *qkv, *atty, *att, *attproj, *res2, *ln2, *ln2_mean, *ln2_rstd,
      *fch, *fch_gelu, *fcproj, *res3; /* res3: the layer's output */
};
struct gpt_acts {
  float *encoded; /* the residual stream entering layer 0 */
  struct gpt_layer_acts *layer;
  float *lnf, *lnf_mean, *lnf_rstd, *logits, *probs, *losses;
};

/* One micro-batch in flight: its activations, their gradients (the same layout) and its
 * tokens, all ops memory. A pipeline stage keeps one per micro-batch it has run forward and not
 * yet backward. */
struct gpt_slot {
  float *acts, *dacts; /* nacts floats each */
  struct gpt_acts a, d;
  int *tokens, *targets; /* B x T */
  int nseg;              /* 0: B x T positions; else a packed micro-batch of nseg sequences */
  int *seg_len;          /* host: their lengths, in the order they sit in tokens */
};

struct gpt {
  struct gpt_config cfg;
  const struct c4k_ops *ops;
  int B; /* micro-batch size the activations are sized for */
  struct gpt_tensor_info
      info[GPT_NPARAMS]; /* the whole model's tensors, as checkpoints hold them */
  /* The layers held, [l0, l1): all of them, or a pipeline stage's. The token and position
   * embeddings and the final layernorm are held whatever the window (they are small, and every
   * stage then applies the same AdamW step to them). Per-layer tensors hold only the window's
   * layers, stacked: tensor p starts at at[p] in params (grads, m, v); activations are carved
   * for the window only, the head's only on the stage with the last layer. */
  int l0, l1;
  size_t at[GPT_NPARAMS];
  size_t nparams;         /* floats in params (and grads, m, v): the window's */
  float *params, *grads;  /* ops memory */
  float *adam_m, *adam_v; /* ops memory */
  size_t nacts;           /* floats in one slot's activations */
  struct gpt_slot *slot;  /* nslots, 1 after gpt_init */
  int nslots;
  float *host_losses; /* B x T, host */
  /* Seconds on the compute clock (gpt_compute_clock: the calling thread's CPU time, a GPU's wall
   * time after a sync) in the held layers' passes, added up by every forward and backward (the
   * caller resets it): what a pipeline stage's time is divided by to tell a slow stage from one
   * with more layers */
  double layers_s;
  int time_layers; /* 1: keep layers_s (pipeline stages set it); 0: not timed, no extra syncs */
};

/* Fills cfg's derived sizes into m->info and allocates everything through ops for micro-batches
 * of B sequences. Parameters are initialised from seed (GPT-2's scheme: normal(0, 0.02), the
 * residual projections scaled by 1/sqrt(2L), layernorm weights 1, biases 0), the same bits on
 * every rank and every device. Returns 0, or -1 with err filled (bad config, out of memory). */
int gpt_init(struct gpt *m, const struct gpt_config *cfg, const struct c4k_ops *ops, int B,
             unsigned long long seed, char *err, size_t errlen);
void gpt_free(struct gpt *m);

/* gpt_init holding only layers [l0, l1) (a pipeline stage): the same bits for those layers as
 * the whole model's gpt_init, the others never allocated. */
int gpt_init_layers(struct gpt *m, const struct gpt_config *cfg, const struct c4k_ops *ops, int B,
                    unsigned long long seed, int l0, int l1, char *err, size_t errlen);

/* Makes m hold layers [l0, l1) instead: the old buffers are freed, new ones allocated for the
 * window and filled from host params, adam_m and adam_v (m->nparams floats each, in the new
 * window's layout: gpt_layers.h builds them), the gradients zero, the activation slots carved
 * again. 0, or a C4_E* code with err filled when memory is short (m then holds nothing usable). */
int gpt_window(struct gpt *m, int l0, int l1, float *params, float *adam_m, float *adam_v,
               char *err, size_t errlen);

/* Bytes a model holding `layers` layers (the head's activations too when with_head) takes on
 * its device with `slots` micro-batches in flight: parameters, gradients, AdamW's moments and
 * the activations with their gradients. */
size_t gpt_stage_bytes(const struct gpt *m, int layers, int with_head, int slots);

/* 1 for the per-layer tensors, 0 for the embeddings and the final layernorm. */
int gpt_is_layer_param(int p);

/* Floats of per-layer tensor p in one layer. */
size_t gpt_per_layer(const struct gpt *m, int p);

/* Parameter p of layer `layer` (ignored for wte, wpe, lnf) inside base: m->params, m->grads,
 * m->adam_m or m->adam_v. */
float *gpt_param(const struct gpt *m, float *base, enum gpt_param p, int layer);

/* Zeroes the gradients (before the first micro-batch of a step). */
void gpt_zero_grad(struct gpt *m);

/* One micro-batch: tokens and targets (host, B x T each, values < vocab) are uploaded, the
 * forward pass computes the mean loss over its B*T positions (returned), and the backward pass
 * adds the gradient of (sum of the position losses) * dloss into m->grads. dloss is
 * 1/(positions in the whole global batch), so that summing every rank's gradients gives the
 * gradient of the global batch's mean loss whatever the split. */
float gpt_step_microbatch(struct gpt *m, const int *tokens, const int *targets, float dloss);

/* Forward only (no gradients): mean loss over the micro-batch. */
float gpt_eval_microbatch(struct gpt *m, const int *tokens, const int *targets);

/* --- packed micro-batches: sequences of their own lengths end to end, none attending to
 * another, each with positions from 0 (docs.h) --- */

/* 1 when nseg sequences of lengths seg_len fit one micro-batch: each 1..T long and B x T
 * positions in all (what the activations were sized for). */
int gpt_packed_fits(const struct gpt *m, const int *seg_len, int nseg);

/* One packed micro-batch: tokens and targets (host) hold the sequences end to end (sum of
 * seg_len positions; gpt_packed_fits must hold). Like gpt_step_microbatch, but returns the SUM
 * of the position losses, and the backward pass adds the gradient of that sum times dloss (one
 * over the tokens of the global batch, so every token weighs the same whatever the packing). */
double gpt_step_packed(struct gpt *m, const int *tokens, const int *targets, const int *seg_len,
                       int nseg, float dloss);

/* Forward only: the sum of the position losses of a packed micro-batch. */
double gpt_eval_packed(struct gpt *m, const int *tokens, const int *targets, const int *seg_len,
                       int nseg);

/* --- pipeline stages: the held layers [l0, l1) on slot `slot` (the first stage's l0 is 0, the
 * last stage's l1 is layers; tokens and targets are host B x T for every stage) --- */

/* Makes room for n micro-batches in flight (slots 0..n-1; n >= 1). Returns 0, or a C4_E* code with
 * err filled when memory is short (the slots there were stay). */
int gpt_slots(struct gpt *m, int n, char *err, size_t errlen);

/* Bytes of the residual stream between two layers of one micro-batch (B x T x C floats): what
 * one stage sends the next, and the gradient it gets back; the most a slot's can be. */
size_t gpt_boundary_bytes(const struct gpt *m);

/* The same for the micro-batch now in `slot`: a packed one's positions x C floats. */
size_t gpt_slot_boundary_bytes(const struct gpt *m, int slot);

/* Forward through the held layers: from the tokens when l0 is 0, else from `in` (host, the
 * previous stage's output); through the head when l1 is the last layer, returning the mean
 * position loss (else 0). */
float gpt_stage_forward(struct gpt *m, int slot, const int *tokens, const int *targets,
                        const float *in);

/* The same for a packed micro-batch (as gpt_step_packed's): `in` holds its positions x C floats
 * (gpt_slot_boundary_bytes once it is in the slot); returns the SUM of the position losses on the
 * last stage (else 0), the backward pass scaling by dloss per token. */
double gpt_stage_forward_packed(struct gpt *m, int slot, const int *tokens, const int *targets,
                                const int *seg_len, int nseg, const float *in);

/* The output of layer l1 - 1 of that forward pass into host `out` (gpt_slot_boundary_bytes). */
void gpt_stage_output(struct gpt *m, int slot, float *out);

/* Backward through layers [l1 - 1 .. l0], adding into m->grads: from the loss (scaled by dloss
 * as in gpt_step_microbatch) when l1 is the last layer, else from `dout` (host, the gradient of
 * the output the next stage sent back). */
void gpt_stage_backward(struct gpt *m, int slot, float dloss, const float *dout);

/* The gradient of that stage's input (l0 > 0) into host `din`, for the previous stage. */
void gpt_stage_input_grad(struct gpt *m, int slot, float *din);

/* The clock a stage's compute is timed on, read once the device is done: the thread's CPU time
 * on the CPU (on a machine with more ranks than cores, wall time counts the other ranks' turns
 * as this one's slowness), wall time on a GPU (there the CPU only waits for the device). */
uint64_t gpt_compute_clock(const struct gpt *m);

/* AdamW on every parameter with the (already reduced) gradients; t is the 1-based step. */
void gpt_adamw(struct gpt *m, float lr, float weight_decay, int t);

/* The FLOPs of one token's forward+backward (6 per parameter, plus attention), for tokens/s
 * to model FLOP/s. */
double gpt_flops_per_token(const struct gpt *m);

#endif
