/* test_kernels.c -- the CPU kernels (c4k_cpu_ops): every backward op matches central differences
 * of its forward op and adds into its gradients; matmul and attention match naive loops;
 * attention is causal; cross-entropy and AdamW match hand-computed values; memory ops behave as
 * c4k.h says; and a forward and backward pass through every op gives the same bits twice. */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../check_run.h"
#include "c4k.h"

static const struct c4k_ops *K = &c4k_cpu_ops;

/* ---- buffers and random numbers ---- */

/* Every buffer a test allocates goes through K->alloc and is freed by pool_release at its end. */
#define POOL_MAX 128
static void *pool[POOL_MAX];
static int npool;

static void *mem(size_t bytes) {
  ck_assert_int_lt(npool, POOL_MAX);
  void *p = K->alloc(bytes);
  ck_assert_ptr_nonnull(p);
  pool[npool++] = p;
  return p;
}

static float *fbuf(size_t n) { return mem(n * sizeof(float)); }

static void pool_release(void) {
  while (npool > 0)
    K->free(pool[--npool]);
}

static uint64_t rng;

static void seed(uint64_t s) { rng = s * 0x9E3779B97F4A7C15ull + 1; }

/* xorshift64*: uniform in [lo, hi), the same sequence on every machine */
static float frand(float lo, float hi) {
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  double u = (double)((rng * 0x2545F4914F6CDD1Dull) >> 11) / 9007199254740992.0;
  return lo + (float)u * (hi - lo);
}

static float *rnd(size_t n, float lo, float hi) {
  float *p = fbuf(n);
  for (size_t i = 0; i < n; i++)
    p[i] = frand(lo, hi);
  return p;
}

static int *rnd_tokens(size_t n, int V) {
  int *p = mem(n * sizeof(int));
  for (size_t i = 0; i < n; i++)
    p[i] = (int)frand(0, (float)V) % V;
  return p;
}

static float *copy(const float *x, size_t n) {
  float *p = fbuf(n);
  memcpy(p, x, n * sizeof(float));
  return p;
}

static double dot(const float *a, const float *b, size_t n) {
  double s = 0.0;
  for (size_t i = 0; i < n; i++)
    s += (double)a[i] * b[i];
  return s;
}

/* ---- the gradient check ---- */

#define FD_EPS 1e-3f
#define FD_RTOL 1e-2
#define FD_ATOL 1e-3

/* One tensor an op is differentiated with respect to, and the gradient its backward wrote. */
struct wrt {
  const char *name;
  float *x, *grad;
  size_t n;
};

/* grad[i] against (loss(x + eps e_i) - loss(x - eps e_i)) / 2 eps for every i, where loss runs
 * the forward op and returns sum(out * weights), so its gradient is what backward computes from
 * dout = weights. At least one entry must be clearly non-zero, or the check proves nothing. */
static void expect_grad(double (*loss)(void *), void *ctx, const struct wrt *w) {
  double largest = 0.0;
  for (size_t i = 0; i < w->n; i++) {
    float keep = w->x[i], up_x = keep + FD_EPS, down_x = keep - FD_EPS;
    w->x[i] = up_x;
    double up = loss(ctx);
    w->x[i] = down_x;
    double down = loss(ctx);
    w->x[i] = keep;
    double num = (up - down) / ((double)up_x - down_x), got = w->grad[i];
    double tol = FD_ATOL + FD_RTOL * fmax(fabs(num), fabs(got));
    ck_assert_msg(fabs(got - num) <= tol, "%s[%zu]: backward %.6g, central difference %.6g",
                  w->name, i, got, num);
    largest = fmax(largest, fabs(num));
  }
  ck_assert_msg(largest > 0.05, "%s: the gradient is ~0 everywhere (%.3g)", w->name, largest);
}

/* Zeroes every gradient, runs the forward and backward ops, checks each gradient against central
 * differences, then runs them again without zeroing and checks that each gradient doubled:
 * backward adds into what is there. */
static void check_backward(double (*loss)(void *), void (*bwd)(void *), void *ctx, struct wrt *w,
                           int nw) {
  float *first[8];
  ck_assert_int_le(nw, 8);
  for (int i = 0; i < nw; i++)
    K->zero(w[i].grad, w[i].n * sizeof(float));
  loss(ctx);
  bwd(ctx);
  for (int i = 0; i < nw; i++) {
    first[i] = copy(w[i].grad, w[i].n);
    expect_grad(loss, ctx, &w[i]);
  }
  loss(ctx); /* the last central difference left perturbed saved tensors (mean, att, probs) */
  bwd(ctx);
  for (int i = 0; i < nw; i++)
    for (size_t j = 0; j < w[i].n; j++)
      ck_assert_msg(fabsf(w[i].grad[j] - 2.0f * first[i][j]) <= 1e-5f * fabsf(first[i][j]) + 1e-7f,
                    "%s[%zu]: second backward gave %.9g, not 2 x %.9g", w[i].name, j, w[i].grad[j],
                    first[i][j]);
}

/* |got - want| <= atol + rtol |want| for every element */
static void expect_close(const char *what, const float *got, const double *want, size_t n,
                         double atol, double rtol) {
  for (size_t i = 0; i < n; i++)
    ck_assert_msg(fabs(got[i] - want[i]) <= atol + rtol * fabs(want[i]), "%s[%zu]: %.9g, want %.9g",
                  what, i, got[i], want[i]);
}

/* ---- encoder ---- */

struct enc {
  int B, T, C, V, Tmax;
  int *tokens;
  float *out, *wte, *wpe, *wts, *dwte, *dwpe;
};

static double enc_loss(void *p) {
  struct enc *e = p;
  K->encoder_fwd(e->out, e->tokens, e->wte, e->wpe, e->B, e->T, e->C);
  return dot(e->out, e->wts, (size_t)e->B * e->T * e->C);
}

static void enc_bwd(void *p) {
  struct enc *e = p;
  K->encoder_bwd(e->dwte, e->dwpe, e->wts, e->tokens, e->B, e->T, e->C);
}

START_TEST(encoder_adds_token_and_position_rows_and_sums_repeated_tokens_in_backward) {
  seed(1);
  struct enc e = {.B = 2, .T = 5, .C = 8, .V = 11, .Tmax = 7};
  size_t n = (size_t)e.B * e.T * e.C;
  e.tokens = rnd_tokens((size_t)e.B * e.T, e.V);
  e.tokens[3] = e.tokens[0]; /* a token seen twice in one sequence */
  e.tokens[7] = e.tokens[0]; /* and again in the other */
  e.out = fbuf(n);
  e.wte = rnd((size_t)e.V * e.C, -1, 1);
  e.wpe = rnd((size_t)e.Tmax * e.C, -1, 1);
  e.wts = rnd(n, -1, 1);
  e.dwte = fbuf((size_t)e.V * e.C);
  e.dwpe = fbuf((size_t)e.Tmax * e.C);
  enc_loss(&e);
  for (int b = 0; b < e.B; b++)
    for (int t = 0; t < e.T; t++)
      for (int c = 0; c < e.C; c++) {
        size_t bt = (size_t)b * e.T + t;
        ck_assert_float_eq(e.out[bt * e.C + c],
                           e.wte[(size_t)e.tokens[bt] * e.C + c] + e.wpe[(size_t)t * e.C + c]);
      }
  struct wrt w[] = {{"dwte", e.wte, e.dwte, (size_t)e.V * e.C},
                    {"dwpe", e.wpe, e.dwpe, (size_t)e.Tmax * e.C}};
  check_backward(enc_loss, enc_bwd, &e, w, 2);
  for (size_t i = (size_t)e.T * e.C; i < (size_t)e.Tmax * e.C; i++)
    ck_assert_float_eq(e.dwpe[i], 0.0f); /* positions past T get nothing */
  pool_release();
}
END_TEST

/* ---- layernorm ---- */

struct ln {
  int N, C;
  float *out, *mean, *rstd, *inp, *w, *b, *wts, *dinp, *dw, *db;
};

static double ln_loss(void *p) {
  struct ln *l = p;
  K->layernorm_fwd(l->out, l->mean, l->rstd, l->inp, l->w, l->b, l->N, l->C);
  return dot(l->out, l->wts, (size_t)l->N * l->C);
}

static void ln_bwd(void *p) {
  struct ln *l = p;
  K->layernorm_bwd(l->dinp, l->dw, l->db, l->wts, l->inp, l->w, l->mean, l->rstd, l->N, l->C);
}

START_TEST(layernorm_normalizes_each_row_with_eps_1e5_and_its_gradients_match) {
  seed(2);
  struct ln l = {.N = 10, .C = 8};
  size_t n = (size_t)l.N * l.C;
  l.out = fbuf(n);
  l.mean = fbuf(l.N);
  l.rstd = fbuf(l.N);
  l.inp = rnd(n, -2, 3);
  l.w = rnd(l.C, 0.5f, 1.5f);
  l.b = rnd(l.C, -1, 1);
  l.wts = rnd(n, -1, 1);
  l.dinp = fbuf(n);
  l.dw = fbuf(l.C);
  l.db = fbuf(l.C);
  ln_loss(&l);
  for (int i = 0; i < l.N; i++) {
    const float *x = l.inp + (size_t)i * l.C;
    double m = 0.0, v = 0.0;
    for (int c = 0; c < l.C; c++)
      m += x[c] / (double)l.C;
    for (int c = 0; c < l.C; c++)
      v += (x[c] - m) * (x[c] - m) / l.C;
    double r = 1.0 / sqrt(v + 1e-5), want[64];
    for (int c = 0; c < l.C; c++)
      want[c] = (x[c] - m) * r * l.w[c] + l.b[c];
    ck_assert_double_eq_tol(l.mean[i], m, 1e-6);
    ck_assert_double_eq_tol(l.rstd[i], r, 1e-5 * r);
    expect_close("layernorm out", l.out + (size_t)i * l.C, want, l.C, 1e-5, 1e-5);
  }
  struct wrt w[] = {{"layernorm dinp", l.inp, l.dinp, n},
                    {"layernorm dw", l.w, l.dw, l.C},
                    {"layernorm db", l.b, l.db, l.C}};
  check_backward(ln_loss, ln_bwd, &l, w, 3);
  pool_release();
}
END_TEST

/* ---- matmul ---- */

struct mm {
  int N, C, OC;
  float *out, *inp, *w, *bias, *wts, *dinp, *dw, *dbias;
};

static double mm_loss(void *p) {
  struct mm *m = p;
  K->matmul_fwd(m->out, m->inp, m->w, m->bias, m->N, m->C, m->OC);
  return dot(m->out, m->wts, (size_t)m->N * m->OC);
}

static void mm_bwd(void *p) {
  struct mm *m = p;
  K->matmul_bwd(m->dinp, m->dw, m->dbias, m->wts, m->inp, m->w, m->N, m->C, m->OC);
}

/* out[i, o] = sum_c inp[i, c] w[o, c] (+ bias[o]), in double */
static void naive_matmul(double *out, const float *inp, const float *w, const float *bias, int N,
                         int C, int OC) {
  for (int i = 0; i < N; i++)
    for (int o = 0; o < OC; o++) {
      double s = bias ? bias[o] : 0.0;
      for (int c = 0; c < C; c++)
        s += (double)inp[(size_t)i * C + c] * w[(size_t)o * C + c];
      out[(size_t)i * OC + o] = s;
    }
}

static struct mm mm_new(int N, int C, int OC, int with_bias) {
  struct mm m = {.N = N, .C = C, .OC = OC};
  m.out = fbuf((size_t)N * OC);
  m.inp = rnd((size_t)N * C, -1, 1);
  m.w = rnd((size_t)OC * C, -1, 1);
  m.bias = with_bias ? rnd(OC, -1, 1) : NULL;
  m.wts = rnd((size_t)N * OC, -1, 1);
  m.dinp = fbuf((size_t)N * C);
  m.dw = fbuf((size_t)OC * C);
  m.dbias = with_bias ? fbuf(OC) : NULL;
  return m;
}

START_TEST(matmul_matches_naive_loops_with_and_without_bias) {
  seed(3);
  int shapes[][3] = {{10, 8, 24}, {3, 5, 7}, {37, 70, 33}, {1, 1, 1}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    int N = shapes[s][0], C = shapes[s][1], OC = shapes[s][2];
    for (int with_bias = 0; with_bias < 2; with_bias++) {
      struct mm m = mm_new(N, C, OC, with_bias);
      double *want = malloc((size_t)N * OC * sizeof(double));
      m.out[0] = NAN; /* out is overwritten, whatever it held */
      mm_loss(&m);
      naive_matmul(want, m.inp, m.w, m.bias, N, C, OC);
      expect_close(with_bias ? "matmul+bias" : "matmul", m.out, want, (size_t)N * OC, 1e-5, 1e-5);
      free(want);
      pool_release();
    }
  }
}
END_TEST

START_TEST(matmul_gradients_match_and_a_null_dbias_leaves_the_others_unchanged) {
  seed(4);
  int shapes[][3] = {{10, 8, 24}, {3, 5, 7}};
  for (int s = 0; s < 2; s++) {
    struct mm m = mm_new(shapes[s][0], shapes[s][1], shapes[s][2], 1);
    size_t nin = (size_t)m.N * m.C, nw = (size_t)m.OC * m.C;
    struct wrt w[] = {{"matmul dinp", m.inp, m.dinp, nin},
                      {"matmul dw", m.w, m.dw, nw},
                      {"matmul dbias", m.bias, m.dbias, (size_t)m.OC}};
    check_backward(mm_loss, mm_bwd, &m, w, 3);
    /* without a bias: the same dinp and dw, bit for bit */
    float *dinp = copy(m.dinp, nin), *dw = copy(m.dw, nw);
    K->zero(m.dinp, nin * sizeof(float));
    K->zero(m.dw, nw * sizeof(float));
    m.bias = m.dbias = NULL;
    mm_bwd(&m);
    mm_bwd(&m);
    ck_assert_mem_eq(m.dinp, dinp, nin * sizeof(float));
    ck_assert_mem_eq(m.dw, dw, nw * sizeof(float));
    pool_release();
  }
}
END_TEST

/* ---- attention ---- */

struct att {
  int B, T, C, NH;
  float *out, *att, *qkv, *wts, *dqkv, *datt;
};

static double att_loss(void *p) {
  struct att *a = p;
  K->attention_fwd(a->out, a->att, a->qkv, a->B, a->T, a->C, a->NH);
  return dot(a->out, a->wts, (size_t)a->B * a->T * a->C);
}

/* c4k.h: the caller zeroes datt (scratch) before each backward */
static void att_bwd(void *p) {
  struct att *a = p;
  K->zero(a->datt, (size_t)a->B * a->NH * a->T * a->T * sizeof(float));
  K->attention_bwd(a->dqkv, a->datt, a->wts, a->qkv, a->att, a->B, a->T, a->C, a->NH);
}

static struct att att_new(int B, int T, int C, int NH) {
  struct att a = {.B = B, .T = T, .C = C, .NH = NH};
  size_t n = (size_t)B * T * C, natt = (size_t)B * NH * T * T;
  a.out = fbuf(n);
  a.att = fbuf(natt);
  a.qkv = rnd(3 * n, -1.5f, 1.5f);
  a.wts = rnd(n, -1, 1);
  a.dqkv = fbuf(3 * n);
  a.datt = fbuf(natt);
  return a;
}

/* The textbook definition, in double: per (b, h, t), softmax over j <= t of q_t . k_j / sqrt(hs),
 * then the weighted sum of v_j. */
static void naive_attention(double *out, double *att, const float *qkv, int B, int T, int C,
                            int NH) {
  int hs = C / NH;
  for (int b = 0; b < B; b++)
    for (int h = 0; h < NH; h++)
      for (int t = 0; t < T; t++) {
        const float *q = qkv + ((size_t)b * T + t) * 3 * C + (size_t)h * hs;
        double *row = att + (((size_t)b * NH + h) * T + t) * T, mx = -INFINITY, sum = 0.0;
        for (int j = 0; j < T; j++) {
          const float *k = qkv + ((size_t)b * T + j) * 3 * C + C + (size_t)h * hs;
          double s = 0.0;
          for (int d = 0; d < hs; d++)
            s += (double)q[d] * k[d];
          row[j] = s / sqrt((double)hs);
          if (j <= t) mx = fmax(mx, row[j]);
        }
        for (int j = 0; j < T; j++) {
          row[j] = j <= t ? exp(row[j] - mx) : 0.0;
          sum += row[j];
        }
        for (int d = 0; d < hs; d++) {
          double o = 0.0;
          for (int j = 0; j < T; j++)
            o += row[j] / sum * qkv[((size_t)b * T + j) * 3 * C + 2 * C + (size_t)h * hs + d];
          out[((size_t)b * T + t) * C + (size_t)h * hs + d] = o;
        }
        for (int j = 0; j < T; j++)
          row[j] /= sum;
      }
}

START_TEST(attention_matches_the_naive_definition) {
  seed(5);
  /* B, T, C, NH, and a factor on qkv: 40 makes scores of several hundred, which overflow expf
   * unless the softmax subtracts the row's max */
  int shapes[][5] = {
      {2, 5, 8, 2, 1}, {1, 7, 12, 3, 1}, {1, 33, 20, 2, 1}, {3, 1, 4, 1, 1}, {2, 6, 8, 2, 40}};
  for (size_t s = 0; s < sizeof shapes / sizeof shapes[0]; s++) {
    struct att a = att_new(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3]);
    size_t n = (size_t)a.B * a.T * a.C, natt = (size_t)a.B * a.NH * a.T * a.T;
    K->scale(a.qkv, a.qkv, (float)shapes[s][4], 3 * n);
    double *out = malloc(n * sizeof(double)), *att = malloc(natt * sizeof(double));
    for (size_t i = 0; i < natt; i++)
      a.att[i] = NAN; /* att is overwritten, the masked part included */
    att_loss(&a);
    naive_attention(out, att, a.qkv, a.B, a.T, a.C, a.NH);
    expect_close("attention out", a.out, out, n, 1e-5, 1e-5);
    expect_close("attention att", a.att, att, natt, 1e-6, 1e-5);
    free(out);
    free(att);
    pool_release();
  }
}
END_TEST

START_TEST(attention_gradients_match_central_differences) {
  seed(6);
  int shapes[][4] = {{2, 5, 8, 2}, {1, 7, 12, 3}};
  for (int s = 0; s < 2; s++) {
    struct att a = att_new(shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3]);
    struct wrt w[] = {{"attention dqkv", a.qkv, a.dqkv, (size_t)a.B * a.T * 3 * a.C}};
    check_backward(att_loss, att_bwd, &a, w, 1);
    pool_release();
  }
}
END_TEST

START_TEST(attention_is_causal_rows_sum_to_one_and_a_future_token_changes_nothing_before_it) {
  seed(7);
  struct att a = att_new(2, 6, 8, 2);
  int T = a.T, C = a.C, NH = a.NH;
  size_t n = (size_t)a.B * T * C, natt = (size_t)a.B * NH * T * T;
  att_loss(&a);
  for (size_t r = 0; r < natt / T; r++) {
    int t = (int)(r % T);
    double sum = 0.0;
    for (int j = 0; j < T; j++) {
      float v = a.att[r * T + j];
      if (j > t)
        ck_assert_float_eq(v, 0.0f);
      else
        ck_assert_float_gt(v, 0.0f);
      sum += v;
    }
    ck_assert_double_eq_tol(sum, 1.0, 1e-6);
  }
  float *out = copy(a.out, n), *att = copy(a.att, natt);
  int changed[2] = {4, 5}; /* per batch entry, the position whose q, k and v change */
  for (int b = 0; b < a.B; b++)
    for (int i = 0; i < 3 * C; i++)
      a.qkv[((size_t)b * T + changed[b]) * 3 * C + i] = frand(-3, 3);
  att_loss(&a);
  for (int b = 0; b < a.B; b++) {
    int tc = changed[b];
    size_t row = (size_t)b * T * C;
    ck_assert_mem_eq(a.out + row, out + row, (size_t)tc * C * sizeof(float));
    ck_assert_int_ne(
        memcmp(a.out + row + (size_t)tc * C, out + row + (size_t)tc * C, (size_t)C * sizeof(float)),
        0);
    for (int h = 0; h < NH; h++) {
      size_t head = ((size_t)b * NH + h) * T * T;
      ck_assert_mem_eq(a.att + head, att + head, (size_t)tc * T * sizeof(float));
    }
  }
  pool_release();
}
END_TEST

/* ---- gelu, residual, scale ---- */

struct pw {
  size_t n;
  float *out, *a, *b, *wts, *da, *db;
};

static double gelu_loss(void *p) {
  struct pw *g = p;
  K->gelu_fwd(g->out, g->a, g->n);
  return dot(g->out, g->wts, g->n);
}

static void gelu_bwd(void *p) {
  struct pw *g = p;
  K->gelu_bwd(g->da, g->a, g->wts, g->n);
}

static double residual_loss(void *p) {
  struct pw *r = p;
  K->residual_fwd(r->out, r->a, r->b, r->n);
  return dot(r->out, r->wts, r->n);
}

static void residual_bwd(void *p) {
  struct pw *r = p;
  K->residual_bwd(r->da, r->db, r->wts, r->n);
}

static struct pw pw_new(size_t n, float lo, float hi) {
  struct pw p = {.n = n};
  p.out = fbuf(n);
  p.a = rnd(n, lo, hi);
  p.b = rnd(n, lo, hi);
  p.wts = rnd(n, -1, 1);
  p.da = fbuf(n);
  p.db = fbuf(n);
  return p;
}

START_TEST(gelu_is_the_tanh_approximation_and_its_gradient_matches) {
  seed(8);
  /* the last two: far out in the tails, where exp overflows or underflows and nothing may break */
  float x[6] = {1.0f, -0.5f, 2.0f, 0.0f, -20.0f, 20.0f}, y[6], one[6], dx[6] = {0};
  double want[6] = {0.8411919906082768, -0.15428599017485606, 1.954597694087775, 0.0, 0.0, 20.0};
  double want_dx[2] = {0.0, 1.0};
  for (int i = 0; i < 6; i++)
    one[i] = 1.0f;
  K->gelu_fwd(y, x, 6);
  expect_close("gelu", y, want, 6, 1e-7, 1e-6);
  K->gelu_bwd(dx, x, one, 6);
  expect_close("gelu' in the tails", dx + 4, want_dx, 2, 1e-7, 0);
  struct pw g = pw_new(80, -4, 4);
  struct wrt w[] = {{"gelu dinp", g.a, g.da, g.n}};
  check_backward(gelu_loss, gelu_bwd, &g, w, 1);
  pool_release();
}
END_TEST

START_TEST(residual_adds_and_its_backward_adds_dout_into_both_even_in_place) {
  seed(9);
  struct pw r = pw_new(80, -1, 1);
  residual_loss(&r);
  for (size_t i = 0; i < r.n; i++)
    ck_assert_float_eq(r.out[i], r.a[i] + r.b[i]);
  struct wrt w[] = {{"residual da", r.a, r.da, r.n}, {"residual db", r.b, r.db, r.n}};
  check_backward(residual_loss, residual_bwd, &r, w, 2);
  /* dout passed as da: the residual stream's gradient flows on and feeds the branch */
  float *d = copy(r.wts, r.n);
  K->zero(r.db, r.n * sizeof(float));
  K->residual_bwd(d, r.db, d, r.n);
  for (size_t i = 0; i < r.n; i++) {
    ck_assert_float_eq(d[i], 2.0f * r.wts[i]);
    ck_assert_float_eq(r.db[i], r.wts[i]);
  }
  pool_release();
}
END_TEST

START_TEST(scale_multiplies_every_element_also_in_place) {
  float in[5] = {1.0f, -2.0f, 0.5f, 0.0f, 3.0f}, out[5];
  K->scale(out, in, 0.25f, 5);
  K->scale(in, in, -2.0f, 5);
  float want_out[5] = {0.25f, -0.5f, 0.125f, 0.0f, 0.75f}, want_in[5] = {-2, 4, -1, 0, -6};
  for (int i = 0; i < 5; i++) {
    ck_assert_float_eq(out[i], want_out[i]);
    ck_assert_float_eq(in[i], want_in[i]);
  }
}
END_TEST

/* ---- softmax and cross-entropy ---- */

struct xent {
  int N, V;
  int *targets;
  float dloss;
  float *losses, *probs, *logits, *dlogits;
};

/* The loss whose gradient softmax_xent_bwd computes: dloss * sum of the rows' losses. */
static double xent_loss(void *p) {
  struct xent *x = p;
  K->softmax_xent_fwd(x->losses, x->probs, x->logits, x->targets, x->N, x->V);
  double s = 0.0;
  for (int i = 0; i < x->N; i++)
    s += x->losses[i];
  return x->dloss * s;
}

static void xent_bwd(void *p) {
  struct xent *x = p;
  K->softmax_xent_bwd(x->dlogits, x->probs, x->targets, x->dloss, x->N, x->V);
}

START_TEST(softmax_xent_matches_hand_computed_losses_even_for_huge_logits) {
  float logits[4][3] = {{1, 2, 3}, {0, 0, 0}, {1000, 1001, 1002}, {-1, 0.5f, -1e4f}};
  int targets[4] = {2, 1, 2, 0};
  float losses[4], probs[12];
  K->softmax_xent_fwd(losses, probs, &logits[0][0], targets, 4, 3);
  /* log(e + e^2 + e^3) - 3; log 3; the first row shifted by 1000; log(e^-1 + e^0.5) + 1 */
  double want[4] = {0.40760596444438013, 1.0986122886681098, 0.40760596444438013,
                    1.7014132779827524};
  expect_close("losses", losses, want, 4, 1e-6, 1e-6);
  double p0[3] = {0.09003057317038046, 0.24472847105479767, 0.6652409557748219};
  double p1[3] = {1.0 / 3, 1.0 / 3, 1.0 / 3};
  expect_close("probs row 0", probs, p0, 3, 1e-7, 1e-6);
  expect_close("probs row 1", probs + 3, p1, 3, 1e-7, 1e-6);
  expect_close("probs row 2", probs + 6, p0, 3, 1e-7, 1e-6);
  ck_assert_float_eq(probs[11], 0.0f); /* e^-10000 underflows to zero, and nothing breaks */
  /* backward: dlogits += (probs - onehot) * dloss */
  float dlogits[12] = {0};
  dlogits[0] = 1.0f;
  K->softmax_xent_bwd(dlogits, probs, targets, 0.5f, 4, 3);
  ck_assert_double_eq_tol(dlogits[0], 1.0 + 0.5 * p0[0], 1e-7);
  ck_assert_double_eq_tol(dlogits[2], 0.5 * (p0[2] - 1.0), 1e-7);
  ck_assert_double_eq_tol(dlogits[4], 0.5 * (1.0 / 3 - 1.0), 1e-7);
}
END_TEST

START_TEST(softmax_xent_gradient_matches_central_differences) {
  seed(10);
  struct xent x = {.N = 10, .V = 11, .dloss = 0.37f};
  x.targets = rnd_tokens(x.N, x.V);
  x.losses = fbuf(x.N);
  x.probs = fbuf((size_t)x.N * x.V);
  x.logits = rnd((size_t)x.N * x.V, -3, 3);
  x.dlogits = fbuf((size_t)x.N * x.V);
  struct wrt w[] = {{"dlogits", x.logits, x.dlogits, (size_t)x.N * x.V}};
  check_backward(xent_loss, xent_bwd, &x, w, 1);
  pool_release();
}
END_TEST

/* ---- AdamW ---- */

START_TEST(adamw_matches_hand_computed_steps_with_bias_correction_and_decoupled_decay) {
  /* step 1 from zero moments: mhat = g, vhat = g^2, so p moves by lr (1 + wd p) */
  float p = 1.0f, g = 0.5f, m = 0.0f, v = 0.0f;
  K->adamw(&p, &g, &m, &v, 1, 0.1f, 0.9f, 0.999f, 1e-8f, 0.01f, 1);
  ck_assert_double_eq_tol(m, 0.05, 1e-7); /* 1 - 0.9f is not exactly 0.1 */
  ck_assert_double_eq_tol(v, 0.00025, 1e-8);
  ck_assert_double_eq_tol(p, 0.899000002, 1e-7);
  /* step 3 from earlier moments: m = 0.9 * 0.1 + 0.1 * -1, v = 0.99 * 0.04 + 0.01 * 1,
   * corrected by 1 - 0.9^3 and 1 - 0.99^3 */
  float p2[2] = {-2.0f, -2.0f}, g2[2] = {-1.0f, -1.0f}, m2[2] = {0.1f, 0.1f},
        v2[2] = {0.04f, 0.04f};
  K->adamw(p2, g2, m2, v2, 2, 0.01f, 0.9f, 0.99f, 1e-6f, 0.1f, 3);
  for (int i = 0; i < 2; i++) {
    ck_assert_double_eq_tol(m2[i], -0.01, 1e-7);
    ck_assert_double_eq_tol(v2[i], 0.0496, 1e-7);
    ck_assert_double_eq_tol(p2[i], -1.9977144546641574, 1e-6);
  }
}
END_TEST

/* ---- memory ---- */

START_TEST(alloc_gives_zeroed_aligned_memory_and_copies_round_trip) {
  ck_assert_str_eq(K->name, "cpu");
  unsigned char *p = K->alloc(1000), *z = K->alloc(0);
  ck_assert_ptr_nonnull(p);
  ck_assert_ptr_nonnull(z);
  ck_assert_uint_eq((uintptr_t)p % 64, 0);
  for (int i = 0; i < 1000; i++)
    ck_assert_uint_eq(p[i], 0);
  unsigned char src[1000], back[1000];
  for (int i = 0; i < 1000; i++)
    src[i] = (unsigned char)(i * 7 + 1);
  K->upload(p, src, sizeof src);
  K->sync();
  K->download(back, p, sizeof back);
  ck_assert_mem_eq(back, src, sizeof src);
  K->zero(p + 10, 20);
  K->download(back, p, sizeof back);
  for (int i = 0; i < 1000; i++)
    ck_assert_uint_eq(back[i], i >= 10 && i < 30 ? 0 : src[i]);
  K->free(p);
  K->free(z);
}
END_TEST

/* ---- a whole pass, twice ---- */

/* What one forward and backward pass through every op produced, for comparing two runs. */
struct pass {
  float *losses, *dwte, *dwpe, *dlnw, *dlnb, *dwqkv, *dbqkv, *dwout, *wqkv;
};

/* A one-block model on shapes large enough for OpenBLAS to block and thread:
 * x = enc(tokens); h = ln(x); y = attention(h @ wqkv^T + bqkv); z = gelu(y) + h;
 * logits = z @ wout^T; losses = xent(logits), then the backward pass in reverse and one AdamW
 * step on wqkv. Inputs come from a fixed seed, so two calls see identical inputs. */
static struct pass run_pass(void) {
  enum { B = 2, T = 64, C = 128, NH = 4, V = 97, N = B * T };
  struct pass r;
  seed(11);
  int *tokens = rnd_tokens(N, V), *targets = rnd_tokens(N, V);
  float *wte = rnd((size_t)V * C, -0.1f, 0.1f), *wpe = rnd((size_t)T * C, -0.1f, 0.1f);
  float *lnw = rnd(C, 0.8f, 1.2f), *lnb = rnd(C, -0.1f, 0.1f);
  float *wqkv = rnd((size_t)3 * C * C, -0.1f, 0.1f), *bqkv = rnd(3 * C, -0.1f, 0.1f);
  float *wout = rnd((size_t)V * C, -0.1f, 0.1f);
  float *x = fbuf((size_t)N * C), *h = fbuf((size_t)N * C), *mean = fbuf(N), *rstd = fbuf(N);
  float *qkv = fbuf((size_t)N * 3 * C), *y = fbuf((size_t)N * C), *z = fbuf((size_t)N * C);
  float *g = fbuf((size_t)N * C), *att = fbuf((size_t)B * NH * T * T);
  float *logits = fbuf((size_t)N * V), *probs = fbuf((size_t)N * V);
  r.losses = fbuf(N);
  K->encoder_fwd(x, tokens, wte, wpe, B, T, C);
  K->layernorm_fwd(h, mean, rstd, x, lnw, lnb, N, C);
  K->matmul_fwd(qkv, h, wqkv, bqkv, N, C, 3 * C);
  K->attention_fwd(y, att, qkv, B, T, C, NH);
  K->gelu_fwd(g, y, (size_t)N * C);
  K->residual_fwd(z, g, h, (size_t)N * C);
  K->matmul_fwd(logits, z, wout, NULL, N, C, V);
  K->softmax_xent_fwd(r.losses, probs, logits, targets, N, V);

  float *dlogits = fbuf((size_t)N * V), *dz = fbuf((size_t)N * C), *dg = fbuf((size_t)N * C);
  float *dh = fbuf((size_t)N * C), *dy = fbuf((size_t)N * C), *dqkv = fbuf((size_t)N * 3 * C);
  float *datt = fbuf((size_t)B * NH * T * T), *dx = fbuf((size_t)N * C);
  r.dwte = fbuf((size_t)V * C);
  r.dwpe = fbuf((size_t)T * C);
  r.dlnw = fbuf(C);
  r.dlnb = fbuf(C);
  r.dwqkv = fbuf((size_t)3 * C * C);
  r.dbqkv = fbuf(3 * C);
  r.dwout = fbuf((size_t)V * C);
  K->softmax_xent_bwd(dlogits, probs, targets, 1.0f / N, N, V);
  K->matmul_bwd(dz, r.dwout, NULL, dlogits, z, wout, N, C, V);
  K->residual_bwd(dg, dh, dz, (size_t)N * C);
  K->gelu_bwd(dy, y, dg, (size_t)N * C);
  K->attention_bwd(dqkv, datt, dy, qkv, att, B, T, C, NH);
  K->matmul_bwd(dh, r.dwqkv, r.dbqkv, dqkv, h, wqkv, N, C, 3 * C);
  K->layernorm_bwd(dx, r.dlnw, r.dlnb, dh, x, lnw, mean, rstd, N, C);
  K->encoder_bwd(r.dwte, r.dwpe, dx, tokens, B, T, C);
  float *m = fbuf((size_t)3 * C * C), *v = fbuf((size_t)3 * C * C);
  K->adamw(wqkv, r.dwqkv, m, v, (size_t)3 * C * C, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, 1);
  r.wqkv = wqkv;
  return r;
}

START_TEST(a_forward_and_backward_pass_gives_the_same_bits_twice) {
  struct pass a = run_pass(), b = run_pass();
  enum { T = 64, C = 128, V = 97, N = 2 * T };
  double mean_loss = 0.0;
  for (int i = 0; i < N; i++)
    mean_loss += a.losses[i] / N;
  ck_assert_double_eq_tol(mean_loss, log(V), 0.5); /* small weights: near uniform */
  ck_assert_mem_eq(a.losses, b.losses, N * sizeof(float));
  ck_assert_mem_eq(a.dwte, b.dwte, (size_t)V * C * sizeof(float));
  ck_assert_mem_eq(a.dwpe, b.dwpe, (size_t)T * C * sizeof(float));
  ck_assert_mem_eq(a.dlnw, b.dlnw, C * sizeof(float));
  ck_assert_mem_eq(a.dlnb, b.dlnb, C * sizeof(float));
  ck_assert_mem_eq(a.dwqkv, b.dwqkv, (size_t)3 * C * C * sizeof(float));
  ck_assert_mem_eq(a.dbqkv, b.dbqkv, 3 * C * sizeof(float));
  ck_assert_mem_eq(a.dwout, b.dwout, (size_t)V * C * sizeof(float));
  ck_assert_mem_eq(a.wqkv, b.wqkv, (size_t)3 * C * C * sizeof(float));
  pool_release();
}
END_TEST

int main(void) {
  Suite *s = suite_create("kernels");
  TCase *tc = tcase_create("cpu");
  tcase_add_test(tc, encoder_adds_token_and_position_rows_and_sums_repeated_tokens_in_backward);
  tcase_add_test(tc, layernorm_normalizes_each_row_with_eps_1e5_and_its_gradients_match);
  tcase_add_test(tc, matmul_matches_naive_loops_with_and_without_bias);
  tcase_add_test(tc, matmul_gradients_match_and_a_null_dbias_leaves_the_others_unchanged);
  tcase_add_test(tc, attention_matches_the_naive_definition);
  tcase_add_test(tc, attention_gradients_match_central_differences);
  tcase_add_test(tc,
                 attention_is_causal_rows_sum_to_one_and_a_future_token_changes_nothing_before_it);
  tcase_add_test(tc, gelu_is_the_tanh_approximation_and_its_gradient_matches);
  tcase_add_test(tc, residual_adds_and_its_backward_adds_dout_into_both_even_in_place);
  tcase_add_test(tc, scale_multiplies_every_element_also_in_place);
  tcase_add_test(tc, softmax_xent_matches_hand_computed_losses_even_for_huge_logits);
  tcase_add_test(tc, softmax_xent_gradient_matches_central_differences);
  tcase_add_test(tc, adamw_matches_hand_computed_steps_with_bias_correction_and_decoupled_decay);
  tcase_add_test(tc, alloc_gives_zeroed_aligned_memory_and_copies_round_trip);
  tcase_add_test(tc, a_forward_and_backward_pass_gives_the_same_bits_twice);
  suite_add_tcase(s, tc);
  return c4_check_run(s);
}
