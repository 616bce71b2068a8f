/* scen_cli.h -- c4scen's two commands, each a main over its own arguments (argv[0] is the
 * command's name). Exit codes: 0 ok, 1 failure (unreadable input, write error), 2 bad usage. */
#ifndef C4_SCEN_CLI_H
#define C4_SCEN_CLI_H

/* c4scen gen: writes a trace, its truth file and optionally a plan. */
int c4_scen_gen_main(int argc, char **argv);

/* c4scen score: scores c4mon's events against a truth file. */
int c4_scen_score_main(int argc, char **argv);

#endif
