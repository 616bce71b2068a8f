/* test_varlen.c -- variable-length training data: packed micro-batches never attend across a
 * sequence boundary (a sequence's losses are those it has alone, whatever is packed beside it),
 * their loss and gradient equal the sequences' run one by one, a full-length sequence packed
 * equals the fixed-window path, gradients weighted by tokens are the same however the sequences
 * are assigned to ranks and micro-batches; documents read from paragraphs and JSON lines, cut at
 * --max-context, with errors that name the file and line; and the program: c4train trains the
 * same losses step by step whether a step's sequences are assigned by cost or by token count,
 * and a checkpoint on documents resumes on other ranks with the losses of a run that never
 * stopped and the cost model it had. */
#include <check.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../check_run.h"
#include "c4_err.h"
#include "ckpt.h"
#include "docs.h"
#include "gpt.h"
#include "seq_assign.h"

static const struct gpt_config tiny = {
    .vocab = 256, .context = 8, .layers = 2, .heads = 2, .width = 8};

static void fill_tokens(int *tok, int *tgt, int n, unsigned seed) {
  for (int i = 0; i < n; i++) {
    seed = seed * 1103515245u + 12345u;
    tok[i] = (int)(seed >> 16) % 256;
    tgt[i] = (int)(seed >> 8) % 256;
  }
}

static double max_diff(const float *a, const float *b, size_t n, double *scale) {
  double worst = 0;
  *scale = 0;
  for (size_t k = 0; k < n; k++) {
    worst = fmax(worst, fabs((double)a[k] - b[k]));
    *scale = fmax(*scale, fabs((double)a[k]));
  }
  return worst;
}

/* Every sequence's position losses in a packed micro-batch are exactly its losses alone; changing
 * another sequence's tokens changes none of them. */
START_TEST(packed_sequences_never_attend_across_their_boundary) {
  struct gpt m;
  char err[256];
  ck_assert_int_eq(gpt_init(&m, &tiny, &c4k_cpu_ops, 2, 5, err, sizeof err), 0);
  int len[] = {3, 5, 8}, tok[16], tgt[16], other[16];
  ck_assert(gpt_packed_fits(&m, len, 3));
  fill_tokens(tok, tgt, 16, 21);
  gpt_eval_packed(&m, tok, tgt, len, 3);
  float packed[16];
  memcpy(packed, m.host_losses, sizeof packed);
  for (int s = 0, at = 0; s < 3; at += len[s++]) {
    gpt_eval_packed(&m, tok + at, tgt + at, &len[s], 1);
    for (int t = 0; t < len[s]; t++)
      ck_assert_msg(fabsf(packed[at + t] - m.host_losses[t]) <= 1e-6f * fabsf(m.host_losses[t]),
                    "sequence %d position %d: packed %g, alone %g", s, t, packed[at + t],
                    m.host_losses[t]);
  }
  /* the first and last sequences' tokens changed: the middle one's losses stay the same */
  memcpy(other, tok, sizeof other);
  for (int t = 0; t < 3; t++)
    other[t] = (other[t] + 17) % 256;
  for (int t = 8; t < 16; t++)
    other[t] = (other[t] + 91) % 256;
  gpt_eval_packed(&m, other, tgt, len, 3);
  for (int t = 3; t < 8; t++)
    ck_assert_float_eq(m.host_losses[t], packed[t]);
  int changed = 0;
  for (int t = 8; t < 16; t++)
    changed += m.host_losses[t] != packed[t];
  ck_assert_int_gt(changed, 0); /* the change did reach the last sequence */
  int too_long[] = {9}, too_many[] = {8, 8, 1};
  ck_assert(!gpt_packed_fits(&m, too_long, 1));
  ck_assert(!gpt_packed_fits(&m, too_many, 3));
  gpt_free(&m);
}
END_TEST

/* The loss and gradient of a packed micro-batch equal the sums over its sequences run alone. */
START_TEST(packed_loss_and_gradient_equal_the_sequences_one_by_one) {
  struct gpt m;
  char err[256];
  ck_assert_int_eq(gpt_init(&m, &tiny, &c4k_cpu_ops, 2, 5, err, sizeof err), 0);
  int len[] = {8, 1, 4, 2}, tok[15], tgt[15];
  fill_tokens(tok, tgt, 15, 33);
  float d = 1.0f / 15;
  gpt_zero_grad(&m);
  double packed = gpt_step_packed(&m, tok, tgt, len, 4, d);
  float *g = malloc(m.nparams * sizeof *g);
  ck_assert_ptr_nonnull(g);
  memcpy(g, m.grads, m.nparams * sizeof *g);
  gpt_zero_grad(&m);
  double alone = 0;
  for (int s = 0, at = 0; s < 4; at += len[s++])
    alone += gpt_step_packed(&m, tok + at, tgt + at, &len[s], 1, d);
  ck_assert_double_le(fabs(packed - alone), 1e-6 * alone);
  double scale, worst = max_diff(g, m.grads, m.nparams, &scale);
  ck_assert_double_gt(scale, 1e-3);
  ck_assert_double_le(worst, 1e-5 * scale);
  free(g);
  gpt_free(&m);
}
END_TEST

/* Two sequences of the full context, packed, are the fixed-window path's micro-batch of 2. */
START_TEST(full_length_sequences_packed_equal_fixed_windows) {
  struct gpt m;
  char err[256];
  ck_assert_int_eq(gpt_init(&m, &tiny, &c4k_cpu_ops, 2, 5, err, sizeof err), 0);
  int len[] = {8, 8}, tok[16], tgt[16];
  fill_tokens(tok, tgt, 16, 44);
  double window = gpt_eval_microbatch(&m, tok, tgt) * 16.0;
  double packed = gpt_eval_packed(&m, tok, tgt, len, 2);
  ck_assert_double_le(fabs(packed - window), 1e-5 * window);
  gpt_free(&m);
}
END_TEST

/* A step's sequences assigned to 4 ranks by cost and packed into micro-batches, each gradient
 * scaled by one over the step's tokens and summed over the ranks (the allreduce), give the same
 * gradient as an even split by count (round robin, one sequence a micro-batch). */
START_TEST(token_weighted_gradients_equal_the_even_split) {
  struct gpt m;
  char err[256];
  ck_assert_int_eq(gpt_init(&m, &tiny, &c4k_cpu_ops, 2, 6, err, sizeof err), 0);
  enum { N = 10, RANKS = 4 };
  int len[N] = {8, 1, 3, 7, 2, 8, 5, 1, 6, 4}, start[N], total = 0;
  for (int i = 0; i < N; i++) {
    start[i] = total;
    total += len[i];
  }
  int *tok = malloc(sizeof(int) * total), *tgt = malloc(sizeof(int) * total);
  float *even = malloc(m.nparams * sizeof *even);
  ck_assert(tok && tgt && even);
  fill_tokens(tok, tgt, total, 55);
  float d = 1.0f / (float)total;
  gpt_zero_grad(&m);
  for (int i = 0; i < N; i++)
    gpt_step_packed(&m, tok + start[i], tgt + start[i], &len[i], 1, d);
  memcpy(even, m.grads, m.nparams * sizeof *even);
  double cost[N], speed[RANKS] = {1, 1, 2, 1};
  int rank_of[N];
  for (int i = 0; i < N; i++)
    cost[i] = len[i] + 0.5 * len[i] * len[i];
  seq_assign_ranks(N, cost, RANKS, speed, 0, rank_of);
  gpt_zero_grad(&m); /* the ranks' gradients summed: each adds into the same buffer */
  for (int r = 0; r < RANKS; r++) {
    int mine[N], mlen[N], n = 0, mb_of[N];
    for (int i = 0; i < N; i++)
      if (rank_of[i] == r) {
        mine[n] = i;
        mlen[n++] = len[i];
      }
    int nmb = seq_assign_pack(n, mlen, 2 * tiny.context, mb_of);
    for (int b = 0; b < nmb; b++) {
      int btok[16], btgt[16], blen[N], nseg = 0, at = 0;
      for (int k = 0; k < n; k++)
        if (mb_of[k] == b) {
          memcpy(btok + at, tok + start[mine[k]], sizeof(int) * mlen[k]);
          memcpy(btgt + at, tgt + start[mine[k]], sizeof(int) * mlen[k]);
          at += mlen[k];
          blen[nseg++] = mlen[k];
        }
      ck_assert(gpt_packed_fits(&m, blen, nseg));
      gpt_step_packed(&m, btok, btgt, blen, nseg, d);
    }
  }
  double scale, worst = max_diff(even, m.grads, m.nparams, &scale);
  ck_assert_double_gt(scale, 1e-3);
  ck_assert_double_le(worst, 1e-5 * scale);
  free(tok);
  free(tgt);
  free(even);
  gpt_free(&m);
}
END_TEST

/* --- documents --- */

static char path[64];

static void write_file(const char *text) {
  strcpy(path, "/tmp/c4-varlen-XXXXXX");
  int fd = mkstemp(path);
  ck_assert_int_ge(fd, 0);
  ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
  close(fd);
}

START_TEST(paragraphs_become_sequences_cut_at_the_max_context) {
  /* 12 paragraphs: "p0".."p9" style lines, one two-line paragraph, one of 25 bytes */
  char text[1024] = "\n\n";
  for (int i = 0; i < 10; i++)
    sprintf(text + strlen(text), "para %d\n\n  \n", i);
  strcat(text, "two\nlines\n\nabcdefghijklmnopqrstuvwxy");
  write_file(text);
  struct doc_set d;
  char err[256];
  ck_assert_int_eq(docs_load(&d, path, 10, err, sizeof err), 0);
  ck_assert(!d.jsonl);
  /* 10 of "para N" (6 positions), "two\nlines" (8), 25 bytes cut as 10 + 10 + 4 positions */
  ck_assert_int_eq(d.n, 14);
  ck_assert_int_eq(d.len[0], 5);
  ck_assert_int_eq(d.len[10], 8);
  ck_assert_int_eq(d.len[11], 10);
  ck_assert_int_eq(d.len[12], 10);
  ck_assert_int_eq(d.len[13], 4);
  ck_assert_int_eq(d.ntrain, 12);
  int tok[10], tgt[10];
  docs_copy(&d, 12, tok, tgt);
  ck_assert_int_eq(tok[0], 'k'); /* the second piece starts where the first's targets end */
  ck_assert_int_eq(tgt[9], 'u');
  docs_copy(&d, 10, tok, tgt);
  ck_assert_int_eq(tok[3], '\n');
  int idx[64];
  int n = docs_step(&d, 1, 7, 40, idx, 64), tokens = 0;
  for (int i = 0; i < n; i++) {
    ck_assert_int_lt(idx[i], d.ntrain); /* never a held-out sequence */
    tokens += d.len[idx[i]];
  }
  ck_assert_int_ge(tokens, 40);
  ck_assert_int_lt(tokens - d.len[idx[n - 1]], 40);
  docs_free(&d);
  unlink(path);
}
END_TEST

START_TEST(json_lines_are_read_and_bad_lines_named) {
  char text[2048] = "";
  for (int i = 0; i < 11; i++)
    sprintf(text + strlen(text), "{\"text\": \"doc %d\\nwith \\u00e9\", \"id\": %d}\n\n", i, i);
  write_file(text);
  struct doc_set d;
  char err[256];
  ck_assert_int_eq(docs_load(&d, path, 64, err, sizeof err), 0);
  ck_assert(d.jsonl);
  ck_assert_int_eq(d.n, 11);
  ck_assert_int_eq(d.len[0], 12); /* "doc 0\nwith " and a two-byte e-acute: 13 bytes */
  docs_free(&d);
  unlink(path);
  write_file("{\"text\": \"fine\"}\n{\"text\": 3}\n");
  ck_assert_int_eq(docs_load(&d, path, 64, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "line 2"));
  ck_assert_ptr_nonnull(strstr(err, "\"text\""));
  unlink(path);
  write_file("{\"text\": \"fine\"}\n{\"text\": \"broken\n");
  ck_assert_int_eq(docs_load(&d, path, 64, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "line 2"));
  unlink(path);
  write_file("one\n\ntwo\n");
  ck_assert_int_eq(docs_load(&d, path, 64, err, sizeof err), -1);
  ck_assert_ptr_nonnull(strstr(err, "at least 10"));
  unlink(path);
  ck_assert_int_eq(docs_load(&d, "/nonexistent/c4-docs", 64, err, sizeof err), C4_ENOTFOUND);
  ck_assert_ptr_nonnull(strstr(err, "/nonexistent/c4-docs"));
}
END_TEST

/* The synthetic corpus reads back with the long tail it promises. */
START_TEST(synthetic_corpus_is_long_tailed) {
  unsigned char src[8192];
  for (size_t i = 0; i < sizeof src; i++)
    src[i] = (unsigned char)('a' + i % 26);
  strcpy(path, "/tmp/c4-varlen-XXXXXX");
  close(mkstemp(path));
  char err[256];
  ck_assert_int_eq(docs_write_synthetic(path, src, sizeof src, 4000, 2048, 3, err, sizeof err), 0);
  struct doc_set d;
  ck_assert_int_eq(docs_load(&d, path, 2048, err, sizeof err), 0);
  ck_assert_int_eq(d.n, 4000);
  int under128 = 0, over1024 = 0, at_cap = 0, shortest = 1 << 30;
  for (int i = 0; i < d.n; i++) {
    under128 += d.len[i] < 128;
    over1024 += d.len[i] > 1024;
    at_cap += d.len[i] == 2048;
    shortest = d.len[i] < shortest ? d.len[i] : shortest;
  }
  /* Pareto(32, 1.1): P(len < 128) = 0.78, P(> 1024) = 0.022, P(cap) = 0.010; 4,000 draws keep
   * each within a few standard deviations of these bounds */
  ck_assert_int_ge(shortest, 31);
  ck_assert_int_ge(under128, 3000);
  ck_assert_int_le(under128, 3240);
  ck_assert_int_ge(over1024, 50);
  ck_assert_int_le(over1024, 130);
  ck_assert_int_ge(at_cap, 20);
  docs_free(&d);
  unlink(path);
}
END_TEST

/* --- the program ($C4_BUILD_DIR/bin/c4train) --- */

static void c4train(char *out, size_t len, const char *args) {
  const char *b = getenv("C4_BUILD_DIR");
  snprintf(out, len, "%s/bin/c4train %s", b ? b : "build", args);
}

/* Writes a synthetic corpus of 400 documents up to 64 positions into the temporary file named
 * by the template corpus (its XXXXXX filled in, as mkstemp does). */
static void synth_corpus(char *corpus) {
  char cmd[2048], args[1024];
  int fd = mkstemp(corpus);
  ck_assert_int_ge(fd, 0);
  close(fd);
  snprintf(args, sizeof args, "--max-context 64 --synth-corpus %s --synth-docs 400", corpus);
  c4train(cmd, sizeof cmd, args);
  ck_assert_int_eq(system(cmd), 0);
}

/* The step lines' losses, rank 0's and all ranks' tokens of one run, and in *policies one bit per
 * policy that assigned a step (cost 1, tokens 2, tokens-sorted 4) and 8 when the end line has
 * tokens/s for all three; returns the steps read. */
static int run_steps(const char *args, double *loss, int *rank0_tokens, int *tokens, int max,
                     int *policies) {
  char cmd[2048];
  c4train(cmd, sizeof cmd, args);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  char line[4096];
  int n = 0;
  const char *names[] = {"cost", "tokens", "tokens-sorted"};
  *policies = 0;
  while (fgets(line, sizeof line, p)) {
    json_t *j = json_loads(line, 0, NULL);
    ck_assert_msg(j != NULL, "not JSON: %s", line);
    const char *ev = json_string_value(json_object_get(j, "event"));
    json_t *tps = json_object_get(j, "policy_tokens_per_s");
    int all = strcmp(ev, "end") == 0;
    for (int k = 0; k < 3; k++) {
      const char *a = json_string_value(json_object_get(j, "assign"));
      if (strcmp(ev, "step") == 0 && a && strcmp(a, names[k]) == 0) *policies |= 1 << k;
      all &= json_real_value(json_object_get(tps, names[k])) > 0;
    }
    *policies |= all ? 8 : 0;
    if (strcmp(ev, "step") == 0 && n < max) {
      loss[n] = json_real_value(json_object_get(j, "loss"));
      tokens[n] = (int)json_integer_value(json_object_get(j, "tokens"));
      rank0_tokens[n++] =
          (int)json_integer_value(json_array_get(json_object_get(j, "rank_tokens"), 0));
    }
    json_decref(j);
  }
  ck_assert_int_eq(pclose(p), 0);
  return n;
}

/* Two ranks, 12 steps, the same seed: assigned by cost or by token count, the ranks get
 * different sequences, but every token weighs the same in the gradient, so the losses are the
 * same step by step (measured: within 7e-10 relative, the order of the sums being all that
 * differs; the bound allows 1,000 times that), and they fall. Rotate runs each draw three steps
 * running, once by each policy: its steps name all three policies, each three hold the same
 * tokens, and its end line has tokens/s for each. */
START_TEST(the_assignment_does_not_change_the_losses) {
  char corpus[] = "/tmp/c4-varlen-corpus-XXXXXX", args[1024];
  synth_corpus(corpus);
  double loss[3][12];
  int tok[3][12], total[3][12], seen[3];
  const char *policy[3] = {"cost", "tokens", "rotate"};
  for (int k = 0; k < 3; k++) {
    snprintf(args, sizeof args,
             "--local-ranks 2 --max-context 64 --data %s --layers 1 --width 16 --heads 2 "
             "--micro-batch 2 --microbatches 4 --steps 12 --eval-windows 4 --json --assign %s",
             corpus, policy[k]);
    ck_assert_int_eq(run_steps(args, loss[k], tok[k], total[k], 12, &seen[k]), 12);
  }
  ck_assert_int_eq(seen[0], 1);
  ck_assert_int_eq(seen[1], 2);
  ck_assert_int_eq(seen[2], 15);
  int differ = 0;
  for (int s = 0; s < 12; s++) {
    differ += tok[0][s] != tok[1][s];
    ck_assert_msg(fabs(loss[0][s] - loss[1][s]) <= 1e-6 * loss[1][s], "step %d: %.9f vs %.9f",
                  s + 1, loss[0][s], loss[1][s]);
    ck_assert_int_eq(total[2][s], total[2][s - s % 3]);
  }
  ck_assert_int_ne(total[2][0], total[2][3]);
  ck_assert_int_gt(differ, 0);
  ck_assert_double_lt(loss[0][11], loss[0][0] - 0.1);
  unlink(corpus);
}
END_TEST

/* The step lines of c4train ARGS (exit status 0): their step numbers and losses (up to max), the
 * first one's predicted compute of rank 0 in *first_pred, and when tokens is not NULL the tokens
 * of ranks (or pipelines) 0 and 1 summed over steps from `from` on; returns the lines read. */
static int step_lines(const char *args, int *step, double *loss, int max, double *first_pred,
                      int from, long *tokens) {
  char cmd[2048], line[8192];
  c4train(cmd, sizeof cmd, args);
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  int n = 0;
  while (fgets(line, sizeof line, p)) {
    json_t *j = json_loads(line, 0, NULL);
    const char *ev = json_string_value(json_object_get(j, "event"));
    if (ev && strcmp(ev, "step") == 0 && n < max) {
      if (n == 0)
        *first_pred = json_real_value(json_array_get(json_object_get(j, "rank_predicted_ms"), 0));
      step[n] = (int)json_integer_value(json_object_get(j, "step"));
      loss[n++] = json_real_value(json_object_get(j, "loss"));
      for (int k = 0; tokens && step[n - 1] >= from && k < 2; k++)
        tokens[k] += json_integer_value(json_array_get(json_object_get(j, "rank_tokens"), k));
    }
    json_decref(j);
  }
  ck_assert_int_eq(pclose(p), 0);
  return n;
}

/* Whether the checkpoint of step `step` in dir/ck carries the cost model (a fitted one: its a or
 * b positive), which it does once the run's model was fitted: a fit needs the steps' features to
 * differ, and cost-balanced steps can be too alike to tell the fixed part from the per-token one
 * (a fresh-clone CI had none by step 8). Its max_context must be the run's, 64. */
static int carries_cost_model(const char *dir, int step) {
  char path[4200], err[512];
  snprintf(path, sizeof path, "%s/ck/step-%08d.c4ck", dir, step);
  struct c4_ckpt *ck = c4_ckpt_open(path, err, sizeof err);
  ck_assert_msg(ck != NULL, "%s", err);
  json_t *meta = c4_ckpt_meta(ck), *cost = json_object_get(meta, "cost_model");
  ck_assert_int_eq(json_integer_value(json_object_get(meta, "max_context")), 64);
  int carried = cost != NULL;
  if (carried)
    ck_assert_double_gt(json_real_value(json_object_get(cost, "a")) +
                            json_real_value(json_object_get(cost, "b")),
                        0);
  c4_ckpt_close(ck);
  return carried;
}

/* Four ranks train 8 steps on documents with a checkpoint every 4; two ranks resume from it to
 * step 12, then three from there to 16. Every step names its draw of sequences and the gradient
 * is weighted by tokens, so the resumed losses are those of 16 steps that never stopped (to the
 * order of the sums: measured within 4e-10 relative; the bound allows 2,500 times that). A
 * checkpoint of a fitted run carries the cost model's coefficients, and the resumed run's first
 * step is predicted by them; one of a run not yet fitted carries none, and the first step has no
 * prediction (0), as before any fit (test_seq_cost checks the coefficients' round trip). A run on
 * fixed windows refuses the documents' checkpoint, naming --max-context. */
START_TEST(a_checkpoint_on_documents_resumes_on_other_ranks) {
  char corpus[] = "/tmp/c4-varlen-ckpt-XXXXXX", dir[] = "/tmp/c4-varlen-ckdir-XXXXXX";
  char cmd[4096], args[2048], model[1024], path[4200], err[512];
  synth_corpus(corpus);
  ck_assert_ptr_nonnull(mkdtemp(dir));
  /* 64 wide: a step's compute (about 10 ms) over the noise of a loaded machine, so the cost
   * model usually has a per-token cost fitted by step 8 (the assertions hold either way) */
  snprintf(model, sizeof model,
           "--layers 1 --width 64 --heads 2 --micro-batch 2 --microbatches 4 --eval-windows 4 "
           "--json");
  double whole[16], loss[16], pred;
  int step[16];
  snprintf(args, sizeof args, "%s --max-context 64 --data %s --local-ranks 4 --steps 16", model,
           corpus);
  ck_assert_int_eq(step_lines(args, step, whole, 16, &pred, 0, NULL), 16);
  snprintf(args, sizeof args,
           "%s --max-context 64 --data %s --local-ranks 4 --steps 8 --ckpt-dir %s/ck "
           "--ckpt-every 4",
           model, corpus, dir);
  ck_assert_int_eq(step_lines(args, step, loss, 16, &pred, 0, NULL), 8);
  for (int ranks = 2; ranks <= 3; ranks++) {
    int to = ranks == 2 ? 12 : 16, carried = carries_cost_model(dir, to - 4);
    snprintf(args, sizeof args,
             "%s --max-context 64 --data %s --local-ranks %d --steps %d "
             "--ckpt-dir %s/ck",
             model, corpus, ranks, to, dir);
    ck_assert_int_eq(step_lines(args, step, loss, 16, &pred, 0, NULL), 4);
    ck_assert_msg((pred > 0) == carried,
                  "%d ranks: the checkpoint %s a cost model, the first step "
                  "was predicted at %g ms",
                  ranks, carried ? "carries" : "carries no", pred);
    for (int k = 0; k < 4; k++) {
      ck_assert_int_eq(step[k], to - 3 + k);
      double want = whole[step[k] - 1];
      ck_assert_msg(fabs(loss[k] - want) <= 1e-6 * want, "%d ranks, step %d: %.9f vs %.9f", ranks,
                    step[k], loss[k], want);
    }
  }
  snprintf(args, sizeof args,
           "%s --context 64 --local-ranks 1 --steps 20 --ckpt-dir %s/ck 2>%s/err", model, dir, dir);
  c4train(cmd, sizeof cmd, args);
  int st = system(cmd);
  ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 1, "windows on a documents' checkpoint: %d",
                st);
  snprintf(path, sizeof path, "%s/err", dir);
  FILE *f = fopen(path, "r");
  ck_assert_ptr_nonnull(f);
  size_t got = fread(err, 1, sizeof err - 1, f);
  err[got] = 0;
  fclose(f);
  ck_assert_msg(strstr(err, "--max-context 64") != NULL, "the refusal does not name it: %s", err);
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir, corpus);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* --pp: the sequences go to the pipelines and each runs its packed micro-batches through its
 * stages. Two pipelines of two stages train the losses of two ranks holding the whole model
 * (measured within 1.7e-9 relative; the bound allows 500 times that); their checkpoint resumes on
 * one rank with the losses of the run that never stopped; and a pipeline with a stage three times
 * slow is given fewer tokens once the cost model has its steps (steps 21-40 measured: 0.29 to 0.40
 * of the healthy pipeline's; the bound is 0.8). */
START_TEST(documents_run_through_pipelines) {
  char corpus[] = "/tmp/c4-varlen-pp-XXXXXX", dir[] = "/tmp/c4-varlen-ppdir-XXXXXX";
  char cmd[4096], args[2048], model[1024];
  synth_corpus(corpus);
  ck_assert_ptr_nonnull(mkdtemp(dir));
  snprintf(model, sizeof model,
           "--max-context 64 --data %s --layers 2 --width 16 --heads 2 --micro-batch 2 "
           "--microbatches 4 --eval-windows 4 --json",
           corpus);
  double whole[12], piped[12], pred;
  int step[12];
  snprintf(args, sizeof args, "%s --local-ranks 2 --steps 12", model);
  ck_assert_int_eq(step_lines(args, step, whole, 12, &pred, 0, NULL), 12);
  snprintf(args, sizeof args, "%s --local-ranks 4 --pp 2 --steps 12", model);
  ck_assert_int_eq(step_lines(args, step, piped, 12, &pred, 0, NULL), 12);
  for (int k = 0; k < 12; k++)
    ck_assert_msg(fabs(piped[k] - whole[k]) <= 1e-6 * whole[k], "step %d: %.9f vs %.9f", k + 1,
                  piped[k], whole[k]);

  snprintf(args, sizeof args, "%s --local-ranks 4 --pp 2 --steps 8 --ckpt-dir %s/ck", model, dir);
  ck_assert_int_eq(step_lines(args, step, piped, 12, &pred, 0, NULL), 8);
  snprintf(args, sizeof args, "%s --local-ranks 1 --steps 12 --ckpt-dir %s/ck", model, dir);
  ck_assert_int_eq(step_lines(args, step, piped, 12, &pred, 0, NULL), 4);
  for (int k = 0; k < 4; k++) {
    ck_assert_int_eq(step[k], 9 + k);
    ck_assert_msg(fabs(piped[k] - whole[8 + k]) <= 1e-6 * whole[8 + k],
                  "resumed step %d: %.9f vs %.9f", step[k], piped[k], whole[8 + k]);
  }

  /* a model four times as wide, so that a step's compute (20 ms) stands above another suite's
   * turns on the cores (with 16 wide, 6 ms a step, two suites at once left 0.88) */
  long tokens[2] = {0, 0};
  double loss[40];
  int steps[40];
  snprintf(args, sizeof args,
           "--max-context 64 --data %s --layers 2 --width 64 --heads 2 --micro-batch 2 "
           "--microbatches 4 --eval-windows 4 --json --local-ranks 4 --pp 2 --steps 40 "
           "--slow 3:3.0",
           corpus);
  ck_assert_int_eq(step_lines(args, steps, loss, 40, &pred, 21, tokens), 40);
  ck_assert_msg(tokens[1] < 0.8 * tokens[0], "the slow pipeline ran %ld tokens, the other %ld",
                tokens[1], tokens[0]);
  snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s'", dir, corpus);
  ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* --data-stats prints the distribution; misuse is a usage error naming the flag. */
START_TEST(data_stats_and_usage_errors) {
  char cmd[2048], line[512];
  c4train(cmd, sizeof cmd, "--max-context 512 --data-stats");
  FILE *p = popen(cmd, "r");
  ck_assert_ptr_nonnull(p);
  int saw_summary = 0, saw_bucket = 0;
  while (fgets(line, sizeof line, p)) {
    saw_summary |= strstr(line, "sequences (") != NULL && strstr(line, "tokens") != NULL;
    saw_bucket |= strncmp(line, "256-511", 7) == 0;
  }
  ck_assert_int_eq(pclose(p), 0);
  ck_assert(saw_summary && saw_bucket);
  const char *bad[] = {"--data-stats", "--max-context 64 --assign fastest",
                       "--max-context 0 --data-stats"};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    char args[256];
    snprintf(args, sizeof args, "%s 2>/dev/null", bad[i]);
    c4train(cmd, sizeof cmd, args);
    int st = system(cmd);
    ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 2, "%s: status %d", bad[i], st);
  }
}
END_TEST

static Suite *suite(void) {
  Suite *s = suite_create("varlen");
  TCase *tc = tcase_create("core");
  tcase_set_timeout(tc, 60);
  tcase_add_test(tc, packed_sequences_never_attend_across_their_boundary);
  tcase_add_test(tc, packed_loss_and_gradient_equal_the_sequences_one_by_one);
  tcase_add_test(tc, full_length_sequences_packed_equal_fixed_windows);
  tcase_add_test(tc, token_weighted_gradients_equal_the_even_split);
  tcase_add_test(tc, paragraphs_become_sequences_cut_at_the_max_context);
  tcase_add_test(tc, json_lines_are_read_and_bad_lines_named);
  tcase_add_test(tc, synthetic_corpus_is_long_tailed);
  suite_add_tcase(s, tc);
  TCase *prog = tcase_create("program");
  tcase_set_timeout(prog, 240);
  tcase_add_test(prog, the_assignment_does_not_change_the_losses);
  tcase_add_test(prog, data_stats_and_usage_errors);
  tcase_add_test(prog, a_checkpoint_on_documents_resumes_on_other_ranks);
  tcase_add_test(prog, documents_run_through_pipelines);
  suite_add_tcase(s, prog);
  return s;
}

int main(void) { return c4_check_run(suite()); }
