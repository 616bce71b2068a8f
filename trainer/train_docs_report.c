/* train_docs_report.c -- rank 0's step lines and closing figures on documents (text or JSON). */
#include "train_docs_report.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>

#include "assign_policy.h"
#include "train_report.h"

void docs_print_step(FILE *jf, int text, int step, double loss, const struct docs_step_rec *r,
                     const struct docs_report *rep, const double *rank_pred, int world) {
  double predicted = r->fitted ? r->pred[r->policy] : 0;
  if (jf) {
    json_t *rt = json_array(), *rs = json_array(), *rc = json_array(), *rp = json_array();
    for (int i = 0; i < world; i++) {
      json_array_append_new(rt, json_integer((json_int_t)rep[i].f[0]));
      json_array_append_new(rs, json_real(rep[i].f[1]));
      json_array_append_new(rc, json_real(rep[i].compute_s * 1e3));
      json_array_append_new(rp, json_real(rank_pred[i] * 1e3));
    }
    json_t *o = json_pack(
        "{s:s, s:i, s:s, s:f, s:I, s:f, s:f, s:I, s:I, s:f, s:f, s:o, s:o, s:o, s:o}", "event",
        "step", "step", step, "assign", train_assign_policy_name(r->policy), "loss", loss, "tokens",
        (json_int_t)r->tokens, "tokens_per_s", r->tokens / r->secs, "step_ms", r->secs * 1e3,
        "t_start_ns", (json_int_t)r->t_start_ns, "t_ns",
        (json_int_t)(r->t_start_ns + (uint64_t)(r->secs * 1e9)), "compute_ms", r->compute * 1e3,
        "predicted_ms", predicted * 1e3, "rank_tokens", rt, "rank_sumsq", rs, "rank_compute_ms", rc,
        "rank_predicted_ms", rp);
    if (o) json_dumpf(o, jf, JSON_COMPACT);
    fputc('\n', jf);
    json_decref(o);
  }
  if (text) {
    printf("step %4d  loss %.4f  %9.0f tok/s  %8.1f ms, compute %6.1f (model %6.1f)  tokens ", step,
           loss, r->tokens / r->secs, r->secs * 1e3, r->compute * 1e3, predicted * 1e3);
    for (int i = 0; i < world; i++)
      printf("%s%.0f", i ? "," : "", rep[i].f[0]);
    printf("\n");
  }
  fflush(stdout);
}

static int cmp_double(const void *a, const void *b) {
  double x = *(const double *)a, y = *(const double *)b;
  return (x > y) - (x < y);
}

static double median(double *v, int n) {
  if (n < 1) return NAN;
  qsort(v, (size_t)n, sizeof *v, cmp_double);
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct docs_summary {
  double overhead;                              /* median seconds of a step beyond its compute */
  double tps, compute_tps;                      /* the run's, over its fitted steps */
  double policy_tps[TRAIN_ASSIGN_POLICIES];     /* per policy, over its own steps */
  double policy_ctps[TRAIN_ASSIGN_POLICIES];    /* the same over the slowest rank's compute */
  double bound[TRAIN_ASSIGN_POLICIES];          /* the model's, every fitted step, with overhead */
  double cbound[TRAIN_ASSIGN_POLICIES];         /* the same, compute alone */
  double lbound[TRAIN_ASSIGN_POLICIES];         /* with overhead, at each step's measured load */
  double paired[TRAIN_ASSIGN_POLICIES];         /* rotate: the median over draws of its step's
                                                   time over the cost-balanced step's */
  double paired_compute[TRAIN_ASSIGN_POLICIES]; /* the same, the slowest rank's compute */
};

/* --assign rotate's draws: steps 3j, 3j + 1, 3j + 2 ran the same sequences by the three policies;
 * the draws whose steps were all assigned by a fitted model (past the first step) give, per
 * policy, the median of its step's time over the cost-balanced one's. NAN when none. */
static void summarize_pairs(const struct docs_step_rec *rec, int nrec, double *v,
                            struct docs_summary *s) {
  const int P = TRAIN_ASSIGN_POLICIES;
  for (int p = 0; p < P; p++)
    for (int what = 0; what < 2; what++) {
      int n = 0;
      for (int j = 0; (j + 1) * P <= nrec; j++) {
        const struct docs_step_rec *d = rec + j * P, *by[TRAIN_ASSIGN_POLICIES] = {0};
        int ok = j > 0;
        for (int k = 0; k < P; k++) {
          ok &= d[k].fitted && d[k].tokens == d[0].tokens;
          by[d[k].policy] = &d[k];
        }
        if (!ok || !by[p] || !by[TRAIN_ASSIGN_COST]) continue;
        v[n++] = what ? by[p]->compute / by[TRAIN_ASSIGN_COST]->compute
                      : by[p]->secs / by[TRAIN_ASSIGN_COST]->secs;
      }
      (what ? s->paired_compute : s->paired)[p] = median(v, n);
    }
}

/* The medians of docs_print_end's figures; v holds nrec doubles. */
static void summarize(const struct docs_step_rec *rec, int nrec, double *v,
                      struct docs_summary *s) {
  int n = 0;
  for (int k = 1; k < nrec; k++)
    v[n++] = rec[k].secs - rec[k].compute;
  s->overhead = n ? median(v, n) : 0;
  /* tokens/s over the step and over compute: each policy's over its steps assigned by a fitted
   * model, or over all its steps when none was (under load the fit can come so late that
   * rotate's last fitted steps miss a policy, which then had no figure at all) */
  for (int what = 0; what < 2; what++) {
    for (int p = -1; p < TRAIN_ASSIGN_POLICIES; p++) {
      int fitted_p = 0;
      for (int k = 1; k < nrec; k++)
        fitted_p += (p < 0 || rec[k].policy == p) && rec[k].fitted;
      n = 0;
      for (int k = 1; k < nrec; k++)
        if ((p < 0 || rec[k].policy == p) && (rec[k].fitted || !fitted_p))
          v[n++] = rec[k].tokens / (what ? rec[k].compute : rec[k].secs);
      double m = median(v, n);
      if (p < 0)
        *(what ? &s->compute_tps : &s->tps) = m;
      else
        (what ? s->policy_ctps : s->policy_tps)[p] = m;
    }
  }
  for (int p = 0; p < TRAIN_ASSIGN_POLICIES; p++)
    for (int what = 0; what < 3; what++) {
      double *out = what == 0 ? s->bound : what == 1 ? s->cbound : s->lbound;
      n = 0;
      for (int k = 1; k < nrec; k++)
        if (rec[k].fitted)
          v[n++] = rec[k].tokens /
                   (rec[k].pred[p] * (what == 2 ? rec[k].load : 1) + (what == 1 ? 0 : s->overhead));
      out[p] = median(v, n);
    }
}

/* A number, or JSON null when it is not one (a policy with no steps). */
static json_t *real_or_null(double x) { return isfinite(x) ? json_real(x) : json_null(); }
static json_t *eval_or_null(double x) { return x >= 0 ? json_real(x) : json_null(); }

static json_t *per_policy(const double *v) {
  json_t *o = json_object();
  for (int p = 0; p < TRAIN_ASSIGN_POLICIES; p++)
    json_object_set_new(o, train_assign_policy_name(p), real_or_null(v[p]));
  return o;
}

static void print_end_json(FILE *jf, const struct train_opts *o, const struct seq_cost *model,
                           const struct docs_summary *s, int steps, double loss, double eval_start,
                           double eval_end) {
  int main_policy = o->assign == TRAIN_ASSIGN_ROTATE ? TRAIN_ASSIGN_COST : o->assign;
  json_t *speed = json_array(), *noise = json_array(), *hinges = json_array();
  for (int i = 0; i < model->ranks; i++) {
    json_array_append_new(speed, json_real(model->speed[i]));
    json_array_append_new(noise, json_real(model->noise[i]));
  }
  for (int j = 0; j < model->nknots; j++)
    json_array_append_new(
        hinges, json_pack("{s:f, s:f}", "knot", model->knot[j], "s_per_token_beyond", model->c[j]));
  json_t *e = json_pack(
      "{s:s, s:s, s:i, s:f, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:f, "
      "s:{s:b, s:f, s:f, s:f, s:o, s:o, s:o, s:o, s:o}}",
      "event", "end", "assign", train_assign_policy_name(o->assign), "steps", steps, "loss", loss,
      "eval_loss_start", eval_or_null(eval_start), "eval_loss", eval_or_null(eval_end),
      "tokens_per_s", real_or_null(s->tps), "compute_tokens_per_s", real_or_null(s->compute_tps),
      "bound_tokens_per_s", real_or_null(s->bound[main_policy]), "compute_bound_tokens_per_s",
      real_or_null(s->cbound[main_policy]), "policy_tokens_per_s", per_policy(s->policy_tps),
      "policy_compute_tokens_per_s", per_policy(s->policy_ctps), "policy_bounds",
      per_policy(s->bound), "policy_compute_bounds", per_policy(s->cbound),
      "policy_bounds_at_step_load", per_policy(s->lbound), "step_overhead_ms", s->overhead * 1e3,
      "cost_model", "fitted", model->fitted, "fixed_s", model->fixed, "s_per_token", model->a,
      "s_per_sq_token", model->b, "hinges", hinges, "speed", speed, "noise", noise, "fit_error",
      real_or_null(model->fitted ? model->err : NAN), "fit_error_quadratic",
      real_or_null(model->fitted ? model->err_quadratic : NAN));
  if (e && o->assign == TRAIN_ASSIGN_ROTATE) {
    json_object_set_new(e, "paired_time_ratio", per_policy(s->paired));
    json_object_set_new(e, "paired_compute_ratio", per_policy(s->paired_compute));
  }
  if (e) json_dumpf(e, jf, JSON_COMPACT);
  fputc('\n', jf);
  json_decref(e);
}

static void print_end_text(const struct train_opts *o, const struct seq_cost *model,
                           const struct docs_summary *s, int steps, double loss, double eval_start,
                           double eval_end) {
  char eval[64];
  printf("done: %d steps, assign %s, loss %.4f, %s, %.0f tok/s (%.0f over "
         "the slowest rank's compute)",
         steps, train_assign_policy_name(o->assign), loss,
         train_eval_text(eval, sizeof eval, eval_start, eval_end), s->tps, s->compute_tps);
  if (!model->fitted) {
    printf("; the cost model is not fitted yet (%d steps after the first)\n", SEQ_COST_MIN_STEPS);
    return;
  }
  printf(";\n");
  for (int p = 0; p < TRAIN_ASSIGN_POLICIES; p++) {
    printf("  %-13s", train_assign_policy_name(p));
    if (isfinite(s->policy_tps[p]))
      printf(" %9.0f tok/s (%.0f over compute),", s->policy_tps[p], s->policy_ctps[p]);
    printf(" the cost model's bound %.0f (%.0f over compute, %.0f at each step's load)",
           s->bound[p], s->cbound[p], s->lbound[p]);
    if (o->assign == TRAIN_ASSIGN_ROTATE)
      printf("; its step over cost-balanced on the same sequences %.3f (compute %.3f)",
             s->paired[p], s->paired_compute[p]);
    printf("\n");
  }
  printf("  fit: %.2f ms + %.3g s/token + %.3g s/token^2", model->fixed * 1e3, model->a, model->b);
  for (int j = 0; j < model->nknots; j++)
    if (model->c[j] > 0) printf(" + %.3g s/token x (len - %.0f)", model->c[j], model->knot[j]);
  printf(" (error %.1f%%, the quadratic alone %.1f%%), factors ", 100 * model->err,
         100 * model->err_quadratic);
  for (int i = 0; i < model->ranks; i++)
    printf("%s%.2f", i ? "," : "", model->speed[i]);
  printf(" (noise ");
  for (int i = 0; i < model->ranks; i++)
    printf("%s%.0f%%", i ? "," : "", 100 * model->noise[i]);
  printf("); a step's exchange and optimizer %.1f ms\n", s->overhead * 1e3);
}

void docs_print_end(FILE *jf, int text, const struct train_opts *o, const struct seq_cost *model,
                    const struct docs_step_rec *rec, int nrec, double loss, double eval_start,
                    double eval_end) {
  struct docs_summary s;
  double *v = malloc((size_t)(nrec + 1) * sizeof *v);
  if (!v) return;
  summarize(rec, nrec, v, &s);
  summarize_pairs(rec, nrec, v, &s);
  free(v);
  if (jf) print_end_json(jf, o, model, &s, nrec, loss, eval_start, eval_end);
  if (text) print_end_text(o, model, &s, nrec, loss, eval_start, eval_end);
  fflush(stdout);
}
