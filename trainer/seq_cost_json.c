/* seq_cost_json.c -- the cost model's coefficients to and from a checkpoint's metadata. */
#include "seq_cost_json.h"

#include <math.h>
#include <stdio.h>

#include "c4_err.h"

json_t *seq_cost_to_json(const struct seq_cost *m) {
  if (!m->fitted) return NULL;
  json_t *knots = json_array(), *c = json_array();
  for (int j = 0; knots && c && j < m->nknots; j++) {
    json_array_append_new(knots, json_real(m->knot[j]));
    json_array_append_new(c, json_real(m->c[j]));
  }
  return json_pack("{s:f,s:f,s:f,s:o,s:o}", "fixed", m->fixed, "a", m->a, "b", m->b, "knots", knots,
                   "c", c);
}

/* A finite number >= 0 from j (an integer or a real), or -1. */
static double coefficient(const json_t *j) {
  double v = json_is_number(j) ? json_number_value(j) : -1;
  return isfinite(v) && v >= 0 ? v : -1;
}

int seq_cost_from_json(struct seq_cost *m, const json_t *j, char *err, size_t errlen) {
  double fixed = coefficient(json_object_get(j, "fixed")), a = coefficient(json_object_get(j, "a")),
         b = coefficient(json_object_get(j, "b")), c[SEQ_COST_KNOTS];
  const json_t *knots = json_object_get(j, "knots"), *cs = json_object_get(j, "c");
  if (fixed < 0 || a < 0 || b < 0) {
    snprintf(err, errlen, "cost_model: fixed, a and b must be numbers >= 0");
    return C4_EINVAL;
  }
  if (!json_is_array(knots) || !json_is_array(cs) || (int)json_array_size(knots) != m->nknots ||
      (int)json_array_size(cs) != m->nknots) {
    snprintf(err, errlen, "cost_model: knots and c must be arrays of %d (this --max-context's)",
             m->nknots);
    return C4_EINVAL;
  }
  for (int k = 0; k < m->nknots; k++) {
    c[k] = coefficient(json_array_get(cs, (size_t)k));
    if (coefficient(json_array_get(knots, (size_t)k)) != m->knot[k] || c[k] < 0) {
      snprintf(err, errlen, "cost_model: knot %d is not at %g, or its c is not a number >= 0", k,
               m->knot[k]);
      return C4_EINVAL;
    }
  }
  m->fixed = fixed;
  m->a = a;
  m->b = b;
  for (int k = 0; k < m->nknots; k++)
    m->c[k] = c[k];
  m->fitted = 1;
  return 0;
}
