/* mon_replay.h -- feeding a trace file through c4mon's pipeline and detection, for `c4mon replay`
 * and `c4mon matrix --trace`. */
#ifndef C4_MON_REPLAY_H
#define C4_MON_REPLAY_H

#include <stdio.h>

#include "mon_pipeline.h"

/* Reads the trace at path (JSON lines or the binary form) into detection (started by the caller)
 * through sink, writing trace lines to trace_out when not NULL; speed 0 is as fast as possible,
 * else X times the recorded pace. Bad lines are reported on stderr as "PROG: PATH: line N: ..."
 * and counted in *bad. Records out of range (c4_mon_record_check) count as bad lines too.
 * Stops early when *stop becomes nonzero. Returns 0, or a negative C4_E* code with "PROG: PATH:
 * reason" on stderr when the file cannot be opened or is a directory, a read fails, a binary
 * trace stops at a bad record (truncated, another version, garbage: its byte offset is said), or
 * the file holds no valid record at all. */
int c4_mon_replay_file(const char *prog, const char *path, FILE *trace_out, double speed,
                       struct mon_sink *sink, unsigned long *bad, volatile int *stop);

#endif
