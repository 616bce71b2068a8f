/* c4_env.h -- reading c4's environment variables with range checks and clear warnings. */
#ifndef C4_ENV_H
#define C4_ENV_H

#include <stddef.h>
#include <stdint.h>

/* Returns the integer in variable `name`, or `def` when unset. A value that is not an integer
 * or lies outside [min, max] is refused: a warning naming the variable, its value and the range
 * goes to stderr (and to NCCL's log inside NCCL) and `def` is used. Code that can stop instead
 * (the command-line tools) reads its variables with c4_ranks.h or checks them itself. */
long c4_env_long(const char *name, long def, long min, long max);

/* The job's name: C4_JOB, or "default" when it is unset or empty (every reader of it alike: the
 * reporter, the trace, c4train's subscription). */
const char *c4_env_job(void);

/* C4_TOKEN's first line (up to a '\r' or '\n'), in buf; NULL when it is unset. A token written
 * to a file with Windows line ends and passed as C4_TOKEN=$(cat FILE) kept its '\r', while
 * --token-file takes the first line: the ranks were refused, and status worked. */
const char *c4_env_token(char *buf, size_t n);

/* Returns the first set variable of `names` (NULL-terminated), or NULL. */
const char *c4_env_first(const char *const *names);

/* This process's rank as the launcher gave it (RANK, OMPI_COMM_WORLD_RANK, SLURM_PROCID,
 * PMI_RANK, in that order), or -1 when none is set or it is not a non-negative integer. */
int c4_env_rank(void);

/* The host name c4 reports for this process, NUL-terminated in buf (len >= 2): C4_HOSTNAME when
 * set, "%r" in it replaced by the launcher rank (ranks that share a machine can stand for
 * separate hosts in demos and tests), else gethostname's, else "unknown". */
void c4_host_name(char *buf, size_t len);

/* "<this program's directory>/<rel>" in buf when that file is readable (a build's bin/ next to
 * its lib/), else `fallback` (a bare name for the library path). Returns buf or fallback. */
const char *c4_beside_program(char *buf, size_t len, const char *rel, const char *fallback);

#endif
