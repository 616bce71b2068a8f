#!/usr/bin/env bash
# relayout_docs.sh -- relayout.sh on documents of varied lengths (--max-context): the layout
# chosen again when c4mon names a straggler, the job resumed from its checkpoint with its cost
# model. Usage: relayout_docs.sh [BUILD_DIR].
RELAYOUT_DOCS=1 exec bash "$(dirname "$0")/relayout.sh" "$@"
