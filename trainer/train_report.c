/* train_report.c -- c4train's JSON lines, each one Jansson object printed once and flushed. */
#include "train_report.h"
#include "c4_env.h"

#include <jansson.h>
#include <stdlib.h>

/* Prints o as one line and frees it; a line that cannot be built is left out, never half. */
static void emit(FILE *f, json_t *o) {
  if (!o) return;
  if (json_dumpf(o, f, JSON_COMPACT | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(8)) == 0)
    fputc('\n', f);
  fflush(f);
  json_decref(o);
}

static json_t *int_array(const int *v, int n) {
  json_t *a = json_array();
  for (int i = 0; i < n && a; i++)
    json_array_append_new(a, json_integer(v[i]));
  return a;
}

static json_t *real_array(const double *v, int n) {
  json_t *a = json_array();
  for (int i = 0; i < n && a; i++)
    json_array_append_new(a, json_real(v[i]));
  return a;
}

static json_t *eval_json(double loss) { return loss >= 0 ? json_real(loss) : json_null(); }

const char *train_eval_text(char *buf, size_t n, double start, double end) {
  if (start < 0)
    snprintf(buf, n, "no eval loss (--eval-windows 0)");
  else if (end >= 0)
    snprintf(buf, n, "eval loss %.4f -> %.4f", start, end);
  else
    snprintf(buf, n, "eval loss %.4f", start);
  return buf;
}

void train_report_start(FILE *f, int world, const char *device, size_t params, int step,
                        double eval_loss) {
  /* the job's name, as the ranks give it to c4mon: c4mon timeline draws that job's verdicts */
  emit(f, json_pack("{s:s, s:s, s:i, s:s, s:I, s:i, s:o}", "event", "start", "job", c4_env_job(),
                    "ranks", world, "device", device, "params", (json_int_t)params, "step", step,
                    "eval_loss", eval_json(eval_loss)));
}

void train_report_step(FILE *f, const struct train_step_report *r) {
  json_t *j = json_pack(
      "{s:s, s:i, s:f, s:f, s:f, s:I, s:I, s:o, s:o, s:o, s:o}", "event", "step", "step", r->step,
      "loss", r->loss, "tokens_per_s", r->tokens_per_s, "step_ms", r->step_ms, "t_start_ns",
      (json_int_t)r->t_start_ns, "t_ns", (json_int_t)r->t_ns, "split",
      int_array(r->split, r->world), "slowdown", real_array(r->slowdown, r->world), "compute_ms",
      real_array(r->compute_ms, r->ranks), "rank_tokens_per_s", real_array(r->rank_tps, r->ranks));
  if (j && r->layers) {
    json_object_set_new(j, "layers", int_array(r->layers, r->stages));
    json_object_set_new(j, "pipe_slowdown", real_array(r->pipe_slowdown, r->ranks));
  }
  emit(f, j);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

/* A phase's median tokens/s, or null when it had no timed step (0). */
static json_t *tps_or_null(double tps) { return tps > 0 ? json_real(tps) : json_null(); }

void train_slow_phases(const double *tps, int first, int last, int from, int to, double out[3]) {
  int n = last - first + 1 > 0 ? last - first + 1 : 0, cnt[3] = {0, 0, 0};
  double *v = calloc((size_t)n * 3 + 1, sizeof *v);
  out[0] = out[1] = out[2] = 0;
  if (!v) return;
  for (int s = first; s <= last; s++) {
    int k = s < from ? 0 : s <= to ? 1 : 2;
    v[(size_t)k * n + cnt[k]++] = tps[s];
  }
  for (int k = 0; k < 3; k++) {
    double *p = v + (size_t)k * n;
    if (!cnt[k]) continue;
    qsort(p, (size_t)cnt[k], sizeof *p, cmp_double);
    out[k] = cnt[k] % 2 ? p[cnt[k] / 2] : 0.5 * (p[cnt[k] / 2 - 1] + p[cnt[k] / 2]);
  }
  free(v);
}

void train_report_end(FILE *f, const struct train_end_report *r) {
  json_t *o = json_pack("{s:s, s:i, s:f, s:o, s:o, s:f, s:f, s:f, s:f, s:f, s:f, s:o}", "event",
                        "end", "steps", r->steps, "loss", r->loss, "eval_loss_start",
                        eval_json(r->eval_loss_start), "eval_loss", eval_json(r->eval_loss),
                        "tokens_per_s", r->tokens_per_s, "gemm_share", r->gemm_share, "gemm_gflops",
                        r->gemm_gflops, "model_gflops", r->model_gflops, "planned_speedup",
                        r->planned_speedup, "bound_tokens_per_s", r->bound_tokens_per_s, "split",
                        int_array(r->split, r->world));
  if (o) json_object_set_new(o, "pipeline_bubble", json_real(r->pipeline_bubble));
  if (o && r->pipeline_bubble > 0)
    json_object_set_new(o, "pipeline_bubble_bound", json_real(r->pipeline_bubble_bound));
  if (o && r->slow_phases)
    json_object_set_new(o, "slow_phases",
                        json_pack("{s:o, s:o, s:o}", "before", tps_or_null(r->slow_phases[0]),
                                  "during", tps_or_null(r->slow_phases[1]), "after",
                                  tps_or_null(r->slow_phases[2])));
  emit(f, o);
}
