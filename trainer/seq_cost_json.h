/* seq_cost_json.h -- the sequence cost model's coefficients as JSON, so that a checkpoint carries
 * what the run measured a sequence to cost and a resumed run assigns by it from its first step.
 * Only the coefficients travel: each rank's speed factor belongs to the process that measured it,
 * and a resumed run may have other ranks, so the factors start at 1 and are fitted again. */
#ifndef C4_SEQ_COST_JSON_H
#define C4_SEQ_COST_JSON_H

#include <jansson.h>

#include "seq_cost.h"

/* {"fixed":s,"a":s,"b":s,"knots":[...],"c":[...]} of a fitted model (new reference), or NULL when
 * m has not been fitted (its a and b are still FLOPs, not seconds) or out of memory. */
json_t *seq_cost_to_json(const struct seq_cost *m);

/* Takes j's coefficients into m (marked fitted) when j is what seq_cost_to_json writes for the
 * same knots (the same --max-context) with finite, non-negative numbers. Returns 0, or C4_EINVAL
 * with m unchanged and err saying what is wrong. */
int seq_cost_from_json(struct seq_cost *m, const json_t *j, char *err, size_t errlen);

#endif
