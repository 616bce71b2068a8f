/* sgemm_rate.c -- OpenBLAS's own sgemm rate on the GEMM shapes of one c4train step: the
 * reference that the trainer's in-step GEMM rate is compared with in `make bench`.
 * Usage: c4-sgemm-rate N C V THREADS   (N = micro-batch x context rows, C width, V vocabulary)
 * Prints GFLOP/s: the median of 5 passes over every forward and backward product a layer and
 * the logits make (out = in W^T, din = dout W, dW += dout^T in), called as the kernels call it. */
#include <cblas.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

int main(int argc, char **argv) {
  if (argc != 5) {
    fprintf(stderr, "usage: c4-sgemm-rate N C V THREADS\n");
    return 2;
  }
  int N = atoi(argv[1]), C = atoi(argv[2]), V = atoi(argv[3]), threads = atoi(argv[4]);
  if (N < 1 || C < 1 || V < 1 || threads < 1) {
    fprintf(stderr, "c4-sgemm-rate: N, C, V and THREADS must be positive\n");
    return 2;
  }
  openblas_set_num_threads(threads);
  int shapes[5][2] = {{C, 3 * C}, {C, C}, {C, 4 * C}, {4 * C, C}, {C, V}}; /* in, out channels */
  size_t big =
      (size_t)N * (size_t)(4 * C > V ? 4 * C : V) + (size_t)4 * C * (V > 4 * C ? V : 4 * C);
  float *a = calloc(big, sizeof(float)), *b = calloc(big, sizeof(float)),
        *c = calloc(big, sizeof(float));
  if (!a || !b || !c) {
    fprintf(stderr, "c4-sgemm-rate: out of memory\n");
    return 1;
  }
  for (size_t i = 0; i < big; i++)
    a[i] = b[i] = (float)(i % 7) * 0.01f;
  double rates[5];
  for (int pass = 0; pass < 5; pass++) {
    double flops = 0, t0 = now();
    for (int s = 0; s < 5; s++) {
      int IC = shapes[s][0], OC = shapes[s][1];
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, N, OC, IC, 1, a, IC, b, IC, 0, c, OC);
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, N, IC, OC, 1, a, OC, b, IC, 0, c, IC);
      cblas_sgemm(CblasRowMajor, CblasTrans, CblasNoTrans, OC, IC, N, 1, a, OC, b, IC, 1, c, IC);
      flops += 6.0 * N * IC * OC;
    }
    rates[pass] = flops / (now() - t0) * 1e-9;
  }
  qsort(rates, 5, sizeof rates[0], cmp);
  printf("%.3f\n", rates[2]);
  free(a);
  free(b);
  free(c);
  return 0;
}
