/* train_pipe_move.c -- a new layer split without a restart. Every stage knows every stage's
 * layers (the split is decided alike everywhere), so each replays the same rounds: in a round,
 * each boundary between two stages moves toward its new place by as many layers as the stage it
 * moves into holds, those layers (weights and AdamW's moments, packed) going across that
 * boundary over the pipeline link. A stage's layers stay one range, and no stage is left empty
 * when none was and none is meant to be. Layers travel one stage a round, so a stage's memory
 * can hold, for a round, the layers passing through it as well. */
#include "train_pipe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "c4_err.h"
#include "gpt_layers.h"

#define MOVE_CHUNK_MIN ((size_t)1 << 20)
#define MOVE_CHUNKS 16 /* at most, per direction: both directions' stay under PIPE_PENDING */

static size_t chunk_of(size_t bytes) {
  size_t c = (bytes + MOVE_CHUNKS - 1) / MOVE_CHUNKS;
  return c > MOVE_CHUNK_MIN ? c : MOVE_CHUNK_MIN;
}

/* Posts bytes of buf to a neighbour in chunks; the handles go to h[], -1 after the last. */
static int send_chunks(struct pipe *p, int to_next, const float *buf, size_t bytes, int *h) {
  size_t c = chunk_of(bytes);
  int n = 0;
  for (size_t at = 0; at < bytes; at += c) {
    h[n] = pipe_isend(p, to_next, (const char *)buf + at, bytes - at < c ? bytes - at : c);
    if (h[n++] < 0) return C4_EREMOTE;
  }
  h[n] = -1;
  return 0;
}

static int recv_chunks(struct pipe *p, int from_next, float *buf, size_t bytes) {
  size_t c = chunk_of(bytes);
  for (size_t at = 0; at < bytes; at += c)
    if (pipe_recv(p, from_next, (char *)buf + at, bytes - at < c ? bytes - at : c))
      return C4_EREMOTE;
  return 0;
}

/* One round at this stage: a[] are the stages' first layers now (a[stages] = layers), to[] the
 * new ones; *moved says whether any boundary moved anywhere. */
static int one_round(struct train_pipe *tp, struct gpt *model, int *a, const int *to, int *moved,
                     char *err, size_t errlen) {
  int S = tp->stages, s = tp->stage, na[S + 1];
  na[0] = 0;
  na[S] = a[S];
  *moved = 0;
  for (int b = 1; b < S; b++) {
    na[b] = to[b] > a[b] ? (to[b] < a[b + 1] ? to[b] : a[b + 1])
                         : (to[b] > a[b - 1] ? to[b] : a[b - 1]);
    if (na[b] != a[b]) *moved = 1;
  }
  size_t lf = 3 * gpt_layer_floats(model) * sizeof(float);
  int give_lo = s > 0 && na[s] > a[s], give_hi = s < S - 1 && na[s + 1] < a[s + 1];
  int take_lo = s > 0 && na[s] < a[s], take_hi = s < S - 1 && na[s + 1] > a[s + 1];
  size_t glo = give_lo ? (size_t)(na[s] - a[s]) * lf : 0;
  size_t ghi = give_hi ? (size_t)(a[s + 1] - na[s + 1]) * lf : 0;
  size_t tlo = take_lo ? (size_t)(a[s] - na[s]) * lf : 0;
  size_t thi = take_hi ? (size_t)(na[s + 1] - a[s + 1]) * lf : 0;
  float *out_lo = glo ? malloc(glo) : NULL, *out_hi = ghi ? malloc(ghi) : NULL;
  float *in_lo = tlo ? malloc(tlo) : NULL, *in_hi = thi ? malloc(thi) : NULL;
  int h_lo[MOVE_CHUNKS + 1] = {-1}, h_hi[MOVE_CHUNKS + 1] = {-1}, rc = 0;
  if ((glo && !out_lo) || (ghi && !out_hi) || (tlo && !in_lo) || (thi && !in_hi)) {
    snprintf(err, errlen, "out of memory for the layers moving");
    rc = -1;
  }
  if (!rc && glo) gpt_pack_layers(model, a[s], na[s], out_lo);
  if (!rc && ghi) gpt_pack_layers(model, na[s + 1], a[s + 1], out_hi);
  if (!rc && ((glo && send_chunks(&tp->link, 0, out_lo, glo, h_lo)) ||
              (ghi && send_chunks(&tp->link, 1, out_hi, ghi, h_hi)) ||
              (tlo && recv_chunks(&tp->link, 0, in_lo, tlo)) ||
              (thi && recv_chunks(&tp->link, 1, in_hi, thi)))) {
    snprintf(err, errlen, "moving layers: a pipeline neighbour was lost");
    rc = -1;
  }
  for (int i = 0; i <= MOVE_CHUNKS && h_lo[i] >= 0; i++)
    if (pipe_wait(&tp->link, h_lo[i])) rc = -1;
  for (int i = 0; i <= MOVE_CHUNKS && h_hi[i] >= 0; i++)
    if (pipe_wait(&tp->link, h_hi[i])) rc = -1;
  if (!rc && (na[s] != a[s] || na[s + 1] != a[s + 1]))
    rc = gpt_move_window(model, na[s], na[s + 1], in_lo, in_hi, err, errlen);
  free(out_lo);
  free(out_hi);
  free(in_lo);
  free(in_hi);
  memcpy(a, na, sizeof na);
  return rc;
}

int train_pipe_move(struct train_pipe *tp, struct gpt *model, const int *split, char *err,
                    size_t errlen) {
  int S = tp->stages, a[S + 1], to[S + 1];
  a[0] = to[0] = 0;
  for (int s = 0; s < S; s++) {
    if (split[s] < 1) {
      snprintf(err, errlen, "stage %d would hold no layer", s);
      return C4_EINVAL;
    }
    a[s + 1] = a[s] + tp->split[s];
    to[s + 1] = to[s] + split[s];
  }
  if (to[S] != a[S]) {
    snprintf(err, errlen, "a split of %d layers for a model of %d", to[S], a[S]);
    return C4_EINVAL;
  }
  for (int moved = 1, rounds = 0; moved; rounds++) {
    if (rounds > a[S] || one_round(tp, model, a, to, &moved, err, errlen)) {
      if (rounds > a[S]) snprintf(err, errlen, "the layers did not reach their stages");
      return C4_EREMOTE;
    }
  }
  memcpy(tp->split, split, (size_t)S * sizeof *split);
  tp->l0 = model->l0;
  tp->l1 = model->l1;
  return 0;
}
