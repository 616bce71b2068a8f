/* c4k_gpu_check.c -- c4k-gpu-check: runs every op of libc4k-cuda.so and of the CPU kernels on the
 * same random inputs and compares the results. Needs an NVIDIA GPU; `make gpu-check` runs it.
 *
 * Exit status: 0 every op matched, 1 some op did not (or the device ran out of memory), 2 nothing
 * could be run (bad usage, library not loadable, no CUDA device).
 */
#include <dlfcn.h>
#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "c4_err.h"
#include "c4k.h"

/* Exported by libc4k-cuda.so next to C4K_CUDA_SYMBOL (see kernels/cuda_memory.cu). */
#define DEVICE_COUNT_SYMBOL "c4k_cuda_device_count"
typedef int (*device_count_fn)(const char **why);

static const struct c4k_ops *cpu = &c4k_cpu_ops, *gpu;
static int failures;
static uint64_t rng = 0x2545F4914F6CDD1DULL;

/* xorshift64*: uniform in [0, 1), the same sequence on every run */
static double frand(void) {
  rng ^= rng >> 12;
  rng ^= rng << 25;
  rng ^= rng >> 27;
  return (double)((rng * 0x2545F4914F6CDD1DULL) >> 11) / 9007199254740992.0;
}

static void *host_alloc(size_t bytes) {
  void *p = cpu->alloc(bytes);
  if (!p) {
    fprintf(stderr, "c4k-gpu-check: cannot allocate %zu bytes of host memory\n", bytes);
    exit(1);
  }
  return p;
}

static void *dev_alloc(size_t bytes) {
  void *p = gpu->alloc(bytes);
  if (!p) {
    fprintf(stderr, "c4k-gpu-check: cannot allocate %zu bytes of device memory\n", bytes);
    exit(1);
  }
  return p;
}

/* One tensor twice: h for the CPU op, d (device) for the CUDA op, equal when made. */
struct pair {
  float *h, *d;
  size_t n;
};

/* n floats uniform in [lo, hi) on both sides (lo == hi gives that constant) */
static struct pair pair_new(size_t n, double lo, double hi) {
  struct pair p = {host_alloc(n * sizeof(float)), dev_alloc(n * sizeof(float)), n};
  for (size_t i = 0; i < n; i++)
    p.h[i] = (float)(lo + (hi - lo) * frand());
  gpu->upload(p.d, p.h, n * sizeof(float));
  return p;
}

static void pair_free(struct pair *p) {
  cpu->free(p->h);
  gpu->free(p->d);
}

struct ipair {
  int *h, *d;
};

/* n ints uniform in [0, bound) on both sides */
static struct ipair ipair_new(size_t n, int bound) {
  struct ipair p = {host_alloc(n * sizeof(int)), dev_alloc(n * sizeof(int))};
  for (size_t i = 0; i < n; i++)
    p.h[i] = (int)(frand() * bound);
  gpu->upload(p.d, p.h, n * sizeof(int));
  return p;
}

static void ipair_free(struct ipair *p) {
  cpu->free(p->h);
  gpu->free(p->d);
}

/* One table row: the CUDA result must be within atol + rtol * |cpu| of the CPU result at every
 * element (NaN never is). The relative error is reported where |cpu| > atol / rtol, i.e. where
 * the relative bound is the one that counts. */
static void check(const char *op, const char *shape, const char *what, const struct pair *p,
                  double atol, double rtol) {
  float *g = malloc(p->n * sizeof(float));
  if (!g) {
    fprintf(stderr, "c4k-gpu-check: cannot allocate %zu floats of host memory\n", p->n);
    exit(1);
  }
  gpu->download(g, p->d, p->n * sizeof(float));
  double max_abs = 0, max_rel = 0;
  size_t bad = 0;
  for (size_t i = 0; i < p->n; i++) {
    double c = p->h[i], e = fabs((double)g[i] - c);
    if (!(e <= atol + rtol * fabs(c))) bad++;
    if (isnan(e)) e = INFINITY;
    if (e > max_abs) max_abs = e;
    if (fabs(c) > atol / rtol && e / fabs(c) > max_rel) max_rel = e / fabs(c);
  }
  printf("%-18s %-28s %-8s %11.3e %11.3e  %s", op, shape, what, max_abs, max_rel,
         bad ? "MISMATCH" : "ok");
  if (bad) printf(" (%zu of %zu elements)", bad, p->n);
  printf("\n");
  failures += bad > 0;
  free(g);
}

static void test_memory(size_t n) {
  char shape[64];
  snprintf(shape, sizeof shape, "n=%zu", n);
  struct pair r = pair_new(n, -1, 1);
  check("upload/download", shape, "data", &r, 0, 1e-30);
  /* leave data behind in freed device memory, so a fresh allocation is not zero by luck */
  float *junk = dev_alloc(n * sizeof(float));
  gpu->upload(junk, r.h, n * sizeof(float));
  gpu->free(junk);
  struct pair z = {host_alloc(n * sizeof(float)), dev_alloc(n * sizeof(float)), n};
  check("alloc", shape, "zeroed", &z, 0, 1e-30);
  gpu->zero(r.d, n * sizeof(float));
  memset(r.h, 0, n * sizeof(float));
  check("zero", shape, "data", &r, 0, 1e-30);
  pair_free(&z);
  pair_free(&r);
}

static void test_encoder(int B, int T, int C, int V) {
  char shape[64];
  snprintf(shape, sizeof shape, "B=%d T=%d C=%d V=%d", B, T, C, V);
  size_t n = (size_t)B * T * C;
  struct ipair tok = ipair_new((size_t)B * T, V);
  struct pair wte = pair_new((size_t)V * C, -1, 1), wpe = pair_new((size_t)T * C, -1, 1);
  struct pair out = pair_new(n, -1, 1), dout = pair_new(n, -1, 1);
  struct pair dwte = pair_new((size_t)V * C, -1, 1), dwpe = pair_new((size_t)T * C, -1, 1);

  cpu->encoder_fwd(out.h, tok.h, wte.h, wpe.h, B, T, C);
  gpu->encoder_fwd(out.d, tok.d, wte.d, wpe.d, B, T, C);
  check("encoder_fwd", shape, "out", &out, 1e-6, 1e-5);
  cpu->encoder_bwd(dwte.h, dwpe.h, dout.h, tok.h, B, T, C);
  gpu->encoder_bwd(dwte.d, dwpe.d, dout.d, tok.d, B, T, C);
  check("encoder_bwd", shape, "dwte", &dwte, 1e-5, 1e-5);
  check("encoder_bwd", shape, "dwpe", &dwpe, 1e-5, 1e-5);

  ipair_free(&tok);
  struct pair *all[] = {&wte, &wpe, &out, &dout, &dwte, &dwpe};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    pair_free(all[i]);
}

static void test_layernorm(int N, int C) {
  char shape[64];
  snprintf(shape, sizeof shape, "N=%d C=%d", N, C);
  size_t n = (size_t)N * C;
  struct pair inp = pair_new(n, -2, 2), w = pair_new(C, 0.5, 1.5), b = pair_new(C, -1, 1);
  struct pair out = pair_new(n, -1, 1), mean = pair_new(N, -1, 1), rstd = pair_new(N, -1, 1);
  struct pair dout = pair_new(n, -1, 1), dinp = pair_new(n, -1, 1), dw = pair_new(C, -1, 1),
              db = pair_new(C, -1, 1);

  cpu->layernorm_fwd(out.h, mean.h, rstd.h, inp.h, w.h, b.h, N, C);
  gpu->layernorm_fwd(out.d, mean.d, rstd.d, inp.d, w.d, b.d, N, C);
  check("layernorm_fwd", shape, "out", &out, 1e-5, 1e-4);
  check("layernorm_fwd", shape, "mean", &mean, 1e-6, 1e-4);
  check("layernorm_fwd", shape, "rstd", &rstd, 1e-6, 1e-4);
  /* backward from the CPU's saved statistics on both sides, so only the backward is compared */
  gpu->upload(mean.d, mean.h, N * sizeof(float));
  gpu->upload(rstd.d, rstd.h, N * sizeof(float));
  cpu->layernorm_bwd(dinp.h, dw.h, db.h, dout.h, inp.h, w.h, mean.h, rstd.h, N, C);
  gpu->layernorm_bwd(dinp.d, dw.d, db.d, dout.d, inp.d, w.d, mean.d, rstd.d, N, C);
  check("layernorm_bwd", shape, "dinp", &dinp, 1e-4, 1e-4);
  check("layernorm_bwd", shape, "dw", &dw, 1e-4, 1e-4);
  check("layernorm_bwd", shape, "db", &db, 1e-4, 1e-4);

  struct pair *all[] = {&inp, &w, &b, &out, &mean, &rstd, &dout, &dinp, &dw, &db};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    pair_free(all[i]);
}

/* GEMM outputs sum C (or N) products of numbers in [-1, 1]; summation order differs between
 * OpenBLAS and cuBLAS, hence the looser bounds. An indexing error is off by O(1). */
static void test_matmul(int N, int C, int OC, int with_bias) {
  char shape[64];
  snprintf(shape, sizeof shape, "N=%d C=%d OC=%d%s", N, C, OC, with_bias ? " bias" : "");
  struct pair inp = pair_new((size_t)N * C, -1, 1), w = pair_new((size_t)OC * C, -1, 1);
  struct pair bias = pair_new(with_bias ? OC : 1, -1, 1), out = pair_new((size_t)N * OC, -1, 1);
  struct pair dout = pair_new((size_t)N * OC, -1, 1), dinp = pair_new((size_t)N * C, -1, 1);
  struct pair dw = pair_new((size_t)OC * C, -1, 1), dbias = pair_new(with_bias ? OC : 1, -1, 1);

  cpu->matmul_fwd(out.h, inp.h, w.h, with_bias ? bias.h : NULL, N, C, OC);
  gpu->matmul_fwd(out.d, inp.d, w.d, with_bias ? bias.d : NULL, N, C, OC);
  check("matmul_fwd", shape, "out", &out, 1e-3, 1e-3);
  cpu->matmul_bwd(dinp.h, dw.h, with_bias ? dbias.h : NULL, dout.h, inp.h, w.h, N, C, OC);
  gpu->matmul_bwd(dinp.d, dw.d, with_bias ? dbias.d : NULL, dout.d, inp.d, w.d, N, C, OC);
  check("matmul_bwd", shape, "dinp", &dinp, 1e-3, 1e-3);
  check("matmul_bwd", shape, "dw", &dw, 1e-3, 1e-3);
  if (with_bias) check("matmul_bwd", shape, "dbias", &dbias, 1e-3, 1e-3);

  struct pair *all[] = {&inp, &w, &bias, &out, &dout, &dinp, &dw, &dbias};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    pair_free(all[i]);
}

static void test_attention(int B, int T, int C, int NH) {
  char shape[64];
  snprintf(shape, sizeof shape, "B=%d T=%d C=%d NH=%d", B, T, C, NH);
  size_t n = (size_t)B * T * C, natt = (size_t)B * NH * T * T;
  struct pair qkv = pair_new(3 * n, -1, 1), out = pair_new(n, -1, 1), att = pair_new(natt, -1, 1);
  struct pair dout = pair_new(n, -1, 1), dqkv = pair_new(3 * n, -1, 1), datt = pair_new(natt, 0, 0);

  cpu->attention_fwd(out.h, att.h, qkv.h, B, T, C, NH);
  gpu->attention_fwd(out.d, att.d, qkv.d, B, T, C, NH);
  check("attention_fwd", shape, "out", &out, 1e-4, 1e-3);
  check("attention_fwd", shape, "att", &att, 1e-5, 1e-3);
  /* datt is scratch whose contents c4k.h leaves open, so it is not compared */
  gpu->upload(att.d, att.h, natt * sizeof(float));
  cpu->attention_bwd(dqkv.h, datt.h, dout.h, qkv.h, att.h, B, T, C, NH);
  gpu->attention_bwd(dqkv.d, datt.d, dout.d, qkv.d, att.d, B, T, C, NH);
  check("attention_bwd", shape, "dqkv", &dqkv, 1e-4, 1e-3);

  struct pair *all[] = {&qkv, &out, &att, &dout, &dqkv, &datt};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    pair_free(all[i]);
}

static void test_pointwise(size_t n) {
  char shape[64];
  snprintf(shape, sizeof shape, "n=%zu", n);
  struct pair inp = pair_new(n, -4, 4), b = pair_new(n, -1, 1), out = pair_new(n, -1, 1);
  struct pair dout = pair_new(n, -1, 1), dinp = pair_new(n, -1, 1), db = pair_new(n, -1, 1);

  cpu->gelu_fwd(out.h, inp.h, n);
  gpu->gelu_fwd(out.d, inp.d, n);
  check("gelu_fwd", shape, "out", &out, 1e-6, 1e-5);
  cpu->gelu_bwd(dinp.h, inp.h, dout.h, n);
  gpu->gelu_bwd(dinp.d, inp.d, dout.d, n);
  check("gelu_bwd", shape, "dinp", &dinp, 1e-6, 1e-5);
  cpu->residual_fwd(out.h, inp.h, b.h, n);
  gpu->residual_fwd(out.d, inp.d, b.d, n);
  check("residual_fwd", shape, "out", &out, 1e-6, 1e-6);
  cpu->residual_bwd(dinp.h, db.h, dout.h, n);
  gpu->residual_bwd(dinp.d, db.d, dout.d, n);
  check("residual_bwd", shape, "da", &dinp, 1e-6, 1e-6);
  check("residual_bwd", shape, "db", &db, 1e-6, 1e-6);
  cpu->scale(out.h, inp.h, 0.37f, n);
  gpu->scale(out.d, inp.d, 0.37f, n);
  check("scale", shape, "out", &out, 1e-6, 1e-6);
  cpu->scale(inp.h, inp.h, -2.5f, n); /* in place, as gradient averaging does */
  gpu->scale(inp.d, inp.d, -2.5f, n);
  check("scale", shape, "inplace", &inp, 1e-6, 1e-6);

  struct pair *all[] = {&inp, &b, &out, &dout, &dinp, &db};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    pair_free(all[i]);
}

static void test_xent(int N, int V) {
  char shape[64];
  snprintf(shape, sizeof shape, "N=%d V=%d", N, V);
  size_t n = (size_t)N * V;
  struct ipair targets = ipair_new(N, V);
  struct pair logits = pair_new(n, -8, 8), probs = pair_new(n, -1, 1), losses = pair_new(N, -1, 1);
  struct pair dlogits = pair_new(n, -1, 1);

  cpu->softmax_xent_fwd(losses.h, probs.h, logits.h, targets.h, N, V);
  gpu->softmax_xent_fwd(losses.d, probs.d, logits.d, targets.d, N, V);
  check("softmax_xent_fwd", shape, "losses", &losses, 1e-5, 1e-5);
  check("softmax_xent_fwd", shape, "probs", &probs, 1e-9, 1e-4);
  gpu->upload(probs.d, probs.h, n * sizeof(float));
  cpu->softmax_xent_bwd(dlogits.h, probs.h, targets.h, 1.0f / N, N, V);
  gpu->softmax_xent_bwd(dlogits.d, probs.d, targets.d, 1.0f / N, N, V);
  check("softmax_xent_bwd", shape, "dlogits", &dlogits, 1e-6, 1e-5);

  ipair_free(&targets);
  struct pair *all[] = {&logits, &probs, &losses, &dlogits};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    pair_free(all[i]);
}

/* Three steps, so the bias correction is exercised past t = 1. */
static void test_adamw(size_t n) {
  char shape[64];
  snprintf(shape, sizeof shape, "n=%zu", n);
  struct pair p = pair_new(n, -1, 1), g = pair_new(n, -1, 1), m = pair_new(n, -0.1, 0.1),
              v = pair_new(n, 0, 0.01);

  for (int t = 1; t <= 3; t++) {
    cpu->adamw(p.h, g.h, m.h, v.h, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, t);
    gpu->adamw(p.d, g.d, m.d, v.d, n, 1e-3f, 0.9f, 0.95f, 1e-8f, 0.1f, t);
  }
  check("adamw", shape, "p", &p, 1e-6, 1e-5);
  check("adamw", shape, "m", &m, 1e-6, 1e-5);
  check("adamw", shape, "v", &v, 1e-8, 1e-5);

  struct pair *all[] = {&p, &g, &m, &v};
  for (size_t i = 0; i < sizeof all / sizeof *all; i++)
    pair_free(all[i]);
}

/* ../lib/libc4k-cuda.so next to this binary, as the build lays them out */
static int default_lib(char *path, size_t len) {
  char exe[PATH_MAX];
  ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
  if (k < 0) return C4_ESYS;
  exe[k] = '\0';
  char *slash = strrchr(exe, '/');
  if (!slash) return C4_ENOTFOUND;
  *slash = '\0';
  return snprintf(path, len, "%s/../lib/libc4k-cuda.so", exe) < (int)len ? 0 : -1;
}

static void usage(FILE *f) {
  fprintf(f, "usage: c4k-gpu-check [LIBC4K_CUDA_SO]\n"
             "Runs every c4k op on the GPU and on the CPU with the same inputs and compares.\n"
             "LIBC4K_CUDA_SO defaults to ../lib/libc4k-cuda.so next to this program.\n"
             "Exit status: 0 all match, 1 a mismatch, 2 nothing run (no CUDA device, bad usage).\n"
             "  -h, --help   -V, --version\n");
}

/* The library's path from the command line, or the default. Returns -1 to go on, or the exit
 * status to leave with (help, version, bad usage). */
static int parse_args(int argc, char **argv, char *path, size_t len) {
  if (argc > 1 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help"))) {
    usage(stdout);
    return 0;
  }
  if (argc > 1 && (!strcmp(argv[1], "-V") || !strcmp(argv[1], "--version"))) {
    printf("c4k-gpu-check %s\n", C4_VERSION);
    return 0;
  }
  if (argc > 2 || (argc == 2 && argv[1][0] == '-')) {
    usage(stderr);
    return 2;
  }
  if (argc == 2)
    snprintf(path, len, "%s", argv[1]);
  else if (default_lib(path, len) < 0) {
    fprintf(stderr, "c4k-gpu-check: cannot find this program's directory; name the library\n");
    return 2;
  }
  return C4_NONE;
}

/* Loads the CUDA kernels into gpu and counts the devices. Returns the count (>= 1), or C4_ENOTFOUND
 * with the reason on stderr. */
static int load_gpu(const char *path) {
  void *lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
  if (!lib) {
    fprintf(stderr, "c4k-gpu-check: cannot load the CUDA kernels: %s\n", dlerror());
    return C4_ENOTFOUND;
  }
  device_count_fn device_count = (device_count_fn)dlsym(lib, DEVICE_COUNT_SYMBOL);
  gpu = dlsym(lib, C4K_CUDA_SYMBOL);
  if (!device_count || !gpu) {
    fprintf(stderr, "c4k-gpu-check: %s does not export %s and %s\n", path, C4K_CUDA_SYMBOL,
            DEVICE_COUNT_SYMBOL);
    return C4_ENOTFOUND;
  }
  const char *why = NULL;
  int devices = device_count(&why);
  if (devices < 1) {
    fprintf(stderr,
            "c4k-gpu-check: no CUDA device (%s); nothing was run. Run it on a machine with an "
            "NVIDIA GPU and driver.\n",
            why ? why : "none found");
    return C4_ENOTFOUND;
  }
  return devices;
}

/* Every op at GPT-2 small's shapes and at small odd ones that catch indexing and tail errors. */
static void test_all(void) {
  test_memory(1001);
  test_encoder(4, 64, 768, 50257);
  test_encoder(3, 5, 7, 11);
  test_layernorm(256, 768);
  test_layernorm(7, 13);
  test_layernorm(33, 3);
  test_matmul(256, 768, 2304, 1);
  test_matmul(256, 768, 50257, 0);
  test_matmul(7, 13, 5, 1);
  test_matmul(33, 17, 1, 0);
  test_attention(4, 64, 768, 12);
  test_attention(2, 7, 12, 3);
  test_attention(1, 33, 20, 2);
  test_attention(3, 1, 4, 1);
  test_pointwise((size_t)256 * 3072);
  test_pointwise(1001);
  test_xent(256, 50257);
  test_xent(7, 11);
  test_adamw((size_t)1 << 20);
  test_adamw(1001);
  gpu->sync();
}

int main(int argc, char **argv) {
  char path[PATH_MAX];
  int rc = parse_args(argc, argv, path, sizeof path);
  if (rc >= 0) return rc;
  int devices = load_gpu(path);
  if (devices < 0) return 2;
  printf("c4k-gpu-check %s: %s (%d CUDA device(s), using the first) against %s\n", C4_VERSION, path,
         devices, cpu->name);
  printf("%-18s %-28s %-8s %11s %11s  %s\n", "op", "shape", "output", "max abs err", "max rel err",
         "ok");
  test_all();
  printf("%s: %d mismatch(es)\n", failures ? "FAILED" : "all ops match", failures);
  return failures ? 1 : 0;
}
