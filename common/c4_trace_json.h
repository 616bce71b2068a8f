/* c4_trace_json.h -- turns records into trace lines (docs/trace-format.md): the C4_TRACE writer
 * and c4mon share it, so both write one schema. */
#ifndef C4_TRACE_JSON_H
#define C4_TRACE_JSON_H

#include <jansson.h>

#include "c4_record.h"

/* A new JSON object for r (the caller owns it), or NULL for an unknown kind or no memory. */
json_t *c4_record_json(const struct c4_record *r);

#endif
