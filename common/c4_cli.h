/* c4_cli.h -- the command-line convention every c4 tool follows (docs/cli.md): one-line usage
 * errors that name the flag, value or subcommand (exit 2), failures as "PROG: PATH: REASON"
 * (exit 1), --help and --version on standard output (exit 0). */
#ifndef C4_CLI_H
#define C4_CLI_H

#include <jansson.h>
#include <stdio.h>

/* Exit statuses of every c4 tool. */
enum { C4_EXIT_OK = 0, C4_EXIT_FAIL = 1, C4_EXIT_USAGE = 2 };

/* Prints "PROG VERSION" on standard output. */
void c4_cli_version(const char *prog);

/* Prints one usage error line, "PROG: MESSAGE (see PROG --help)", on stderr.
 * Returns C4_EXIT_USAGE so that callers can `return c4_cli_usage(...)`. */
int c4_cli_usage(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* The usage error for what getopt_long just rejected (c is its return, '?' or ':'; the
 * optstring must start with ':' and opterr be 0): names the unknown option, the option that
 * needs a value or the option that takes none. Returns C4_EXIT_USAGE. */
int c4_cli_bad_option(const char *prog, char **argv, int c);

/* What a tool's main returns: rc, or C4_EXIT_FAIL when rc is C4_EXIT_OK but what it wrote on
 * standard output was lost (a full disk, a broken file system), said as "PROG: standard output:
 * REASON". A table or --json that never arrived is no success. */
int c4_cli_exit(const char *prog, int rc);

/* Prints one failure line, "PROG: MESSAGE", on stderr. Returns C4_EXIT_FAIL. */
int c4_cli_fail(const char *prog, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Parses arg as an integer in [min, max] into *out; on a bad value prints the usage error naming
 * flag ("--iters") and the value, and returns -1. */
int c4_cli_long(const char *prog, const char *flag, const char *arg, long min, long max, long *out);

/* As c4_cli_long for a finite real number in [min, max]. */
int c4_cli_double(const char *prog, const char *flag, const char *arg, double min, double max,
                  double *out);

/* Checks that s is HOST:PORT with a port in 1..65535 (0 too when allow_zero: any free port);
 * otherwise prints the usage error naming flag and value and returns -1. */
int c4_cli_addr(const char *prog, const char *flag, const char *s, int allow_zero);

/* The reason part of "PATH: REASON" for a failed json_load_file: the system's words ("No such
 * file or directory") when the file could not be opened, else "line N: what". Returns buf. */
const char *c4_cli_json_why(const json_error_t *e, char *buf, size_t len);

#endif
