/* scen_truth.c -- writes c4scen's truth and plan files with Jansson. */
#include "scen_truth.h"

#include <stdio.h>
#include <stdlib.h>

#include "c4_err.h"

/* Writes doc to path with a final newline. Returns 0 or C4_ESYS. */
static int dump(const json_t *doc, const char *path, size_t flags) {
  FILE *f = fopen(path, "w");
  if (!f) return C4_ESYS;
  int bad = json_dumpf(doc, f, flags) != 0 || fputc('\n', f) == EOF;
  bad |= fclose(f) != 0;
  return bad ? C4_ESYS : 0;
}

int c4_scen_write_plan(const struct c4_scen_job *j, const char *path) {
  uint64_t *pairs = NULL;
  long n = c4_scen_pairs(j, &pairs);
  json_t *paths = json_array(), *doc = json_pack("{s:i, s:o}", "v", 1, "paths", paths);
  if (n < 0 || !doc) {
    free(pairs);
    json_decref(doc);
    return C4_ENOMEM;
  }
  for (int s = 0; s < j->spines; s++) {
    json_t *list = json_array();
    for (long i = 0; i < n; i++) {
      int a = (int)(pairs[i] / (uint64_t)j->hosts), b = (int)(pairs[i] % (uint64_t)j->hosts);
      if (c4_scen_spine(j, a, b) == s)
        json_array_append_new(list, json_pack("[s, s]", j->names[a], j->names[b]));
    }
    char id[32];
    snprintf(id, sizeof id, "spine%d", s);
    json_array_append_new(paths, json_pack("{s:s, s:o}", "id", id, "pairs", list));
  }
  free(pairs);
  int rc = dump(doc, path, JSON_COMPACT);
  json_decref(doc);
  return rc;
}

int c4_scen_write_truth(const struct c4_scen_job *j, const struct c4_scen_fault *f, int nf,
                        const struct c4_scen_blip *b, int nb, uint64_t seed, uint64_t collectives,
                        const char *path) {
  json_t *faults = json_array(), *blips = json_array();
  for (int i = 0; i < nf; i++)
    json_array_append_new(faults, c4_scen_fault_truth(j, &f[i]));
  for (int i = 0; i < nb; i++)
    if (b[i].at) json_array_append_new(blips, c4_scen_blip_truth(j, &b[i]));
  json_t *doc = json_pack(
      "{s:i, s:i, s:i, s:i, s:f, s:f, s:I, s:I, s:I, s:I, s:I, s:i, s:o, s:o}", "v", 1, "hosts",
      j->hosts, "gpus", j->gpus, "ranks", j->nranks, "rate", j->rate, "seconds", j->seconds, "seed",
      (json_int_t)seed, "start_ns", (json_int_t)C4_SCEN_T0, "trace_end_ns", (json_int_t)j->t_end,
      "hang_threshold_ns", (json_int_t)C4_SCEN_HANG_NS, "collectives", (json_int_t)collectives,
      "spines", j->spines, "faults", faults, "blips", blips);
  if (!doc) return C4_ENOMEM;
  int rc = dump(doc, path, JSON_INDENT(2));
  json_decref(doc);
  return rc;
}
